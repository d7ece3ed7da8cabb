"""The ShadowEndpointSlice controller (provider side): an EndpointSlice for every slice a consumer reflected here.

A consumer's virtual kubelet writes, for each EndpointSlice of a reflected Service, a
ShadowEndpointSlice of the same name into the twin namespace: the endpoints this cluster
cannot see (pods on the consumer, or on other providers). This controller keeps an
EndpointSlice for each (`runtime.forge.endpointslices.endpoint_slice`), owned by it (the
garbage collector removes it with it), labelled with the Service's name, so kube-proxy
sends the Service's traffic there too, and with `endpointslice.kubernetes.io/managed-by=
endpointslice.reflection.liqo.io`, so kube's EndpointSlice controller, which manages only
its own slices, leaves it alone. An edited EndpointSlice is brought back in line; one whose
address type changed (immutable) is made again.

Only ShadowEndpointSlices in twin namespaces (made for a consumer's NamespaceMap) are
honoured, and the labels that make the slice ours are this controller's, whatever the
consumer wrote: a consumer cannot turn an EndpointSlice of kube's into one of its own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from typing import Any

from runtime.api import constants as c
from runtime.api.crds import SHADOWENDPOINTSLICES
from runtime.api.kinds import ENDPOINTSLICES, NAMESPACES
from runtime.core import (
    AlreadyExistsError,
    Client,
    ConflictError,
    Informer,
    Manager,
    NotFoundError,
    Request,
    Result,
)
from runtime.forge import endpointslices as forge

from ..options import ControllerOptions

logger = logging.getLogger(__name__)

JSON = dict[str, Any]

NAME = "shadowendpointslice"
_OURS = f"{c.LABEL_REFLECTION_MANAGED_BY}={c.MANAGED_BY_SHADOWENDPOINTSLICE}"


class ShadowEndpointSliceReconciler:
    def __init__(self, client: Client, *, shadows: Informer, slices: Informer, twins: Informer) -> None:
        self._client = client
        self._shadows = shadows
        self._slices = slices
        self._twins = twins

    async def reconcile(self, request: Request) -> Result | None:
        shadow = self._shadows.store.get(request.name, namespace=request.namespace)
        current = self._slices.store.get(request.name, namespace=request.namespace)
        if shadow is None or shadow["metadata"].get("deletionTimestamp"):
            return None  # its EndpointSlice goes with it (owner reference)
        if self._twins.store.get(request.namespace) is None:
            logger.warning(
                "%s: namespace %s is not a twin namespace of any consumer: its ShadowEndpointSlice is ignored",
                request,
                request.namespace,
            )
            return None
        desired = forge.endpoint_slice(shadow)
        if current is None:
            with contextlib.suppress(AlreadyExistsError):
                await self._client.create(
                    ENDPOINTSLICES, desired, field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER
                )
                logger.info("%s: created the EndpointSlice", request)
            return None
        if current.get("addressType") != desired["addressType"]:
            with contextlib.suppress(NotFoundError, ConflictError):
                await self._client.delete(
                    ENDPOINTSLICES,
                    request.name,
                    namespace=request.namespace,
                    preconditions={"uid": current["metadata"]["uid"]},
                )
            return None  # created again once its deletion is seen
        if forge.endpoint_slice_differs(current, desired):
            body = {
                **desired,
                "metadata": {
                    **desired["metadata"],
                    "resourceVersion": current["metadata"]["resourceVersion"],
                },
            }
            await self._client.replace(ENDPOINTSLICES, body, field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER)
        return None


def setup(manager: Manager, options: ControllerOptions) -> None:
    shadows = manager.informer(SHADOWENDPOINTSLICES)
    slices = manager.informer(ENDPOINTSLICES, label_selector=_OURS)
    twins = manager.informer(NAMESPACES, label_selector=c.LABEL_ORIGIN_CLUSTER_ID)
    settings = dataclasses.replace(
        manager.settings,
        queueing=dataclasses.replace(
            manager.settings.queueing, workers=options.shadow_endpoint_slice_workers
        ),
    )
    controller = manager.controller(
        NAME,
        ShadowEndpointSliceReconciler(manager.client, shadows=shadows, slices=slices, twins=twins),
        primary=shadows,
        settings=settings,
    )
    controller.owns(slices)

    def in_namespace(namespace: JSON) -> list[Request]:
        name = str(namespace["metadata"]["name"])
        return [Request.of(shadow) for shadow in shadows.store.items(namespace=name)]

    controller.watches(twins, in_namespace)
