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
consumer wrote: a consumer cannot turn an EndpointSlice of kube's into one of its own. Nor
can it point a Service at what is not its own (CVE-2021-25740): only the addresses inside the
networks this cluster's IPAM gave that consumer (the Networks of the tenant namespace its
twin namespace was made for) reach the EndpointSlice; a Warning Event on the
ShadowEndpointSlice names the others.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging

from runtime.api import constants as c
from runtime.api.crds import NETWORKS, SHADOWENDPOINTSLICES
from runtime.api.kinds import ENDPOINTSLICES, NAMESPACES
from runtime.api.objects import JSON, nested
from runtime.core import (
    AlreadyExistsError,
    Client,
    ConflictError,
    EventRecorder,
    Informer,
    Manager,
    NotFoundError,
    Request,
    Result,
)
from runtime.forge import cidrs
from runtime.forge import endpointslices as forge

from ..options import ControllerOptions

logger = logging.getLogger(__name__)


NAME = "shadowendpointslice"
EVENT_COMPONENT = "liqo-controller-manager"
REASON_FOREIGN_ADDRESSES = "ForeignAddressesRefused"
_OURS = f"{c.LABEL_REFLECTION_MANAGED_BY}={c.MANAGED_BY_SHADOWENDPOINTSLICE}"


def tenant_of(twin: JSON) -> str:
    """The tenant namespace a twin namespace was made for (its NamespaceMap's namespace; "" when none)."""
    reference = str(nested(twin["metadata"], "annotations", c.ANNOTATION_NAMESPACE_MAP) or "")
    return reference.split("/", 1)[0] if "/" in reference else ""


def given_networks(networks: list[JSON]) -> list[cidrs.Network]:
    """The networks the IPAM gave (their Networks' status), parsed."""
    given = []
    for network in networks:
        try:
            given.append(cidrs.network(nested(network, "status", "cidr")))
        except cidrs.CidrError:
            continue
    return given


class ShadowEndpointSliceReconciler:
    def __init__(
        self,
        client: Client,
        *,
        shadows: Informer,
        slices: Informer,
        twins: Informer,
        networks: Informer,
        recorder: EventRecorder,
    ) -> None:
        self._client = client
        self._shadows = shadows
        self._slices = slices
        self._twins = twins
        self._networks = networks
        self._recorder = recorder

    async def reconcile(self, request: Request) -> Result | None:
        shadow = self._shadows.store.get(request.name, namespace=request.namespace)
        current = self._slices.store.get(request.name, namespace=request.namespace)
        if shadow is None or shadow["metadata"].get("deletionTimestamp"):
            return None  # its EndpointSlice goes with it (owner reference)
        twin = self._twins.store.get(request.namespace)
        if twin is None:
            logger.warning(
                "%s: namespace %s is not a twin namespace of any consumer: its ShadowEndpointSlice is ignored",
                request,
                request.namespace,
            )
            return None
        tenant = tenant_of(twin)
        allowed = given_networks(list(self._networks.store.items(namespace=tenant))) if tenant else []
        foreign = forge.foreign_addresses(shadow, allowed=allowed)
        if foreign:
            networks = ", ".join(str(n) for n in allowed) or "none yet"
            await self._recorder.record(
                shadow,
                type="Warning",
                reason=REASON_FOREIGN_ADDRESSES,
                message=f"addresses left out of the EndpointSlice: {', '.join(foreign)}: not in the networks this"
                f" cluster gave the consumer ({networks})",
            )
        desired = forge.endpoint_slice(shadow, allowed=allowed)
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
    networks = manager.informer(NETWORKS)
    settings = dataclasses.replace(
        manager.settings,
        queueing=dataclasses.replace(
            manager.settings.queueing, workers=options.shadow_endpoint_slice_workers
        ),
    )
    controller = manager.controller(
        NAME,
        ShadowEndpointSliceReconciler(
            manager.client,
            shadows=shadows,
            slices=slices,
            twins=twins,
            networks=networks,
            recorder=EventRecorder(manager.client, component=EVENT_COMPONENT),
        ),
        primary=shadows,
        settings=settings,
    )
    controller.owns(slices)

    def in_namespace(namespace: JSON) -> list[Request]:
        name = str(namespace["metadata"]["name"])
        return [Request.of(shadow) for shadow in shadows.store.items(namespace=name)]

    controller.watches(twins, in_namespace)

    def of_tenant(network: JSON) -> list[Request]:
        tenant = str(network["metadata"].get("namespace") or "")
        return [
            request for twin in twins.store if tenant_of(twin) == tenant for request in in_namespace(twin)
        ]

    controller.watches(networks, of_tenant)
