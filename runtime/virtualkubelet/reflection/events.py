"""Events brought back from the provider (Liqo's `reflection/event`): the one reflection from remote to local.

`kubectl describe pod` on the consumer shows why an offloaded pod fails on the provider:
each Event in a twin namespace about an object reflected there (the provider's Pod or
ShadowPod of an offloaded pod, a copy of a ConfigMap, Secret, Service, EndpointSlice or
Ingress) gets a copy of the same name in the local namespace, about the local object
(`runtime.forge.events`). The key is the Event's name; `handle` checks, mirroring the
outgoing reflectors' order:

1. the provider's Event asks not to be reflected (`liqo.io/skip-reflection`): treat it as absent;
2. the provider's Event is gone (Events expire): delete its copy;
3. it speaks of no object reflected from here (another kind, or an object this cluster
   does not have, or a kind whose reflection is off): nothing;
4. otherwise create the copy, or bring its count, message and last time up to date.

The local Events watched are only the copies of this provider's (labelled with the
reflection labels and the provider's cluster id), so other Events, and other providers'
copies, are never touched.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence

from runtime.api import constants as c
from runtime.api.kinds import CONFIGMAPS, ENDPOINTSLICES, EVENTS, INGRESSES, SECRETS, SERVICES
from runtime.api.objects import JSON, nested
from runtime.core import AlreadyExistsError, Manager, NotFoundError, Request, Resource, Result, Store
from runtime.forge import configmaps
from runtime.forge import events as forge
from runtime.forge.meta import is_skipped

from .generic import NamespacePair, Reflector, Watched
from .outgoing import ReflectionContext

logger = logging.getLogger(__name__)


#: the consumer's kinds an Event may speak of, and where their objects are cached (pods: cluster-wide)
_NAMESPACED: dict[tuple[str, str], Resource] = {
    ("v1", "ConfigMap"): CONFIGMAPS,
    ("v1", "Secret"): SECRETS,
    ("v1", "Service"): SERVICES,
    ("networking.k8s.io/v1", "Ingress"): INGRESSES,
    ("discovery.k8s.io/v1", "EndpointSlice"): ENDPOINTSLICES,
}


class EventReflector(Reflector):
    kind = "event"

    def __init__(
        self,
        manager: Manager,
        *,
        context: ReflectionContext,
        workers: int,
        pods: Store,
        provider_cluster_id: str,
    ) -> None:
        super().__init__(manager, workers=workers, metrics=context.metrics)
        self.context = context
        self._pods = pods
        self._selector = ",".join(
            f"{key}={value}"
            for key, value in forge.copy_labels(
                origin_cluster_id=context.origin_cluster_id, provider_cluster_id=provider_cluster_id
            ).items()
        )
        self._provider_cluster_id = provider_cluster_id

    def local_kinds(self) -> Sequence[Watched]:
        return (Watched(EVENTS, label_selector=self._selector),)

    def remote_kinds(self) -> Sequence[Watched]:
        return (Watched(EVENTS),)

    async def handle(self, request: Request, pair: NamespacePair) -> Result | None:
        copies = pair.local_store(EVENTS, self._selector)
        assert copies is not None
        local = copies.get(request.name, namespace=pair.local)
        remote = pair.remote_store(EVENTS).get(request.name, namespace=pair.remote)
        if remote is not None and is_skipped(remote):
            remote = None
        involved = self._involved(remote, pair) if remote is not None else None
        if involved is None or remote is None:
            if local is not None:
                with contextlib.suppress(NotFoundError):
                    await self.context.local_client.delete(
                        EVENTS,
                        request.name,
                        namespace=pair.local,
                        preconditions={"uid": local["metadata"]["uid"]},
                    )
            self.reflected(request, False)
            return None
        desired = forge.local_event(
            remote,
            namespace=pair.local,
            involved=involved,
            provider=self.context.provider,
            provider_cluster_id=self._provider_cluster_id,
            origin_cluster_id=self.context.origin_cluster_id,
        )
        client = self.context.local_client
        if local is None:
            with contextlib.suppress(AlreadyExistsError):
                await client.create(EVENTS, desired, field_manager=c.FIELD_MANAGER_VIRTUAL_KUBELET)
        else:
            changes = forge.event_changes(local, desired)
            if changes:
                with contextlib.suppress(NotFoundError):
                    await client.patch(
                        EVENTS,
                        request.name,
                        changes,
                        namespace=pair.local,
                        field_manager=c.FIELD_MANAGER_VIRTUAL_KUBELET,
                    )
        self.reflected(request, True)
        return None

    def _involved(self, remote: JSON, pair: NamespacePair) -> JSON | None:
        """The consumer's object the provider's Event speaks of (None: none reflected from here)."""
        kind = forge.local_kind(remote)
        if kind is None:
            return None
        name = str(nested(remote, "involvedObject", "name") or "")
        if kind == ("v1", "Pod"):
            return self._pods.get(name, namespace=pair.local)
        if kind == ("v1", "ConfigMap"):
            name = (
                configmaps.local_configmap_name(name, origin_cluster_id=self.context.origin_cluster_id) or ""
            )
        store = pair.local_store(_NAMESPACED[kind])
        return store.get(name, namespace=pair.local) if store is not None and name else None
