"""The NamespaceOffloading controller (consumer side): which peered clusters get a twin of the namespace.

For each NamespaceOffloading (one per namespace, named `offloading`), every reconcile:

1. works out the twin namespace's name from the mapping strategy
   (`runtime.forge.namespaces.twin_namespace_name`) and the clusters the selector picks,
   matching it against the labels of the virtual nodes (a cluster is picked when one of
   its virtual nodes is);
2. writes the namespace into the `desiredMapping` of the NamespaceMap of each picked
   cluster and takes it out of the others' (the NamespaceMap controller carries that to
   the providers, whose runtimes create and delete the twin namespaces);
3. labels the namespace `liqo.io/scheduling-enabled=true`, which turns the pod webhook on
   for it;
4. deletes the pods of the namespace that run on virtual nodes of clusters no longer
   picked, so their controllers make them again where they may run now;
5. reports the status from the NamespaceMaps: per cluster `OffloadingRequired` and
   `Ready`, and the phase (`runtime.forge.namespaceoffloading.offloading_status`).

A new peering gets a NamespaceMap (the VirtualNode controller makes it), whose events
wake every NamespaceOffloading, so a matching new cluster gets the namespace too; an
unpeer removes the NamespaceMap, and the cluster leaves the status.

Deletion (finalizer `offloading.liqo.io/namespaceoffloading`): the namespace leaves every
NamespaceMap and its pods on virtual nodes are deleted (brought back: their controllers
schedule them locally, the webhook no longer adds the virtual-node toleration); once the
providers report the twin namespaces gone the label and the finalizer go. Providers whose
virtual node is not Ready (unreachable) are not waited for, and the wait for the others
is bounded by `offloading_deletion_timeout` from the deletion timestamp, so a provider
never keeps a namespace offloaded forever (a Warning event says what was left; a
provider removes a consumer's twin namespaces anyway when the peering goes).
"""

from __future__ import annotations

import contextlib
import logging
from datetime import UTC, datetime

from runtime.api import constants as c
from runtime.api.crds import NAMESPACEMAPS, NAMESPACEOFFLOADINGS
from runtime.api.kinds import CONFIGMAPS, NAMESPACES, NODES, PODS
from runtime.api.objects import JSON, nested
from runtime.api.timestamps import parse_rfc3339
from runtime.api.views import NamespaceOffloadingSpec
from runtime.core import (
    Client,
    EventRecorder,
    Informer,
    Manager,
    MapFunc,
    NotFoundError,
    PermanentError,
    Request,
    Result,
    TemporaryError,
)
from runtime.forge import conditions
from runtime.forge import namespaceoffloading as forge
from runtime.forge.namespaces import current_mapping, desired_mapping, twin_namespace_name

from ..core.peering import LocalCluster
from ..options import ControllerOptions
from .namespacemap import is_consumer_map, namespace_map_selector

logger = logging.getLogger(__name__)


NAME = "namespaceoffloading"
EVENT_COMPONENT = "liqo-controller-manager"
#: how soon a deletion waiting for twin namespaces to go looks again (NamespaceMap events usually come first)
DELETION_POLL = 1.0
#: how soon a NamespaceOffloading waiting for this cluster's identity looks again
IDENTITY_MISSING_RETRY = 5.0
_VIRTUAL_NODES = f"{c.LABEL_TYPE}={c.TYPE_VIRTUAL_NODE}"


class NamespaceOffloadingReconciler:
    def __init__(
        self,
        client: Client,
        *,
        offloadings: Informer,
        namespace_maps: Informer,
        virtual_nodes: Informer,
        namespaces: Informer,
        identity: Informer,
        recorder: EventRecorder,
        options: ControllerOptions,
    ) -> None:
        self._client = client
        self._offloadings = offloadings
        self._maps = namespace_maps
        self._nodes = virtual_nodes
        self._namespaces = namespaces
        self._identity = identity
        self._recorder = recorder
        self._options = options

    async def reconcile(self, request: Request) -> Result | None:
        offloading = self._offloadings.store.get(request.name, namespace=request.namespace)
        if offloading is None:
            return None
        meta = offloading["metadata"]
        deleting = bool(meta.get("deletionTimestamp"))
        finalizers = list(meta.get("finalizers") or [])
        if deleting and c.FINALIZER_NAMESPACEOFFLOADING not in finalizers:
            return None
        if request.name != c.NAMESPACE_OFFLOADING_NAME:
            raise PermanentError(
                f"{request}: a namespace is offloaded by its NamespaceOffloading named "
                f"{c.NAMESPACE_OFFLOADING_NAME!r}; this one is ignored (delete it)"
            )
        local = LocalCluster.of(next(iter(self._identity.store), None))
        if local is None:
            raise TemporaryError(
                f"this cluster's identity ({self._options.namespace}/{c.CLUSTER_IDENTITY_CONFIGMAP}) is missing: "
                "is the runtime installed?",
                delay=IDENTITY_MISSING_RETRY,
            )
        if not deleting and c.FINALIZER_NAMESPACEOFFLOADING not in finalizers:
            await self._set_finalizers(offloading, [*finalizers, c.FINALIZER_NAMESPACEOFFLOADING])
            return None
        spec: NamespaceOffloadingSpec = offloading.get("spec") or {}
        try:
            remote_name = twin_namespace_name(
                request.namespace,
                strategy=forge.mapping_strategy(offloading),
                local_cluster_name=local.cluster_name,
                selected_name=str(spec.get("remoteNamespaceName") or ""),
            )
        except ValueError as exc:
            await self._write_status(offloading, [], remote_name="", failed=str(exc))
            raise PermanentError(f"{request}: {exc}; fix the NamespaceOffloading's spec") from None
        picked = set() if deleting else self._picked(offloading)
        maps = [nm for nm in self._maps.store if is_consumer_map(nm)]
        updated = [
            await self._map(nm, request.namespace, remote_name, want=_cluster_id(nm) in picked) for nm in maps
        ]
        await self._send_back(request.namespace, picked)
        if not deleting:
            await self._label_namespace(request.namespace, enabled=True)
        await self._write_status(offloading, updated, remote_name=remote_name)
        if deleting:
            return await self._finish(offloading, updated, finalizers)
        return None

    def _reachable(self) -> set[str]:
        """The cluster ids whose virtual node is Ready (their providers answer)."""
        return {
            str(nested(node["metadata"], "labels", c.LABEL_REMOTE_CLUSTER_ID))
            for node in self._nodes.store
            if conditions.is_true(nested(node, "status", "conditions"), "Ready")
        }

    def _picked(self, offloading: JSON) -> set[str]:
        """The cluster ids of the virtual nodes the selector picks."""
        return {
            str(node["metadata"]["labels"][c.LABEL_REMOTE_CLUSTER_ID])
            for node in self._nodes.store
            if nested(node["metadata"], "labels", c.LABEL_REMOTE_CLUSTER_ID)
            and forge.selects(offloading, node)
        }

    async def _map(self, namespace_map: JSON, namespace: str, remote_name: str, *, want: bool) -> JSON:
        """The NamespaceMap with `namespace` mapped to `remote_name` (or not mapped), written when that changes."""
        desired = desired_mapping(namespace_map)
        meta = namespace_map["metadata"]
        if want and desired.get(namespace) != remote_name and not meta.get("deletionTimestamp"):
            value: str | None = remote_name
        elif not want and namespace in desired:
            value = None
        else:
            return namespace_map
        try:
            written = await self._client.patch(
                NAMESPACEMAPS,
                meta["name"],
                {"spec": {"desiredMapping": {namespace: value}}},
                namespace=meta["namespace"],
                field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
            )
        except NotFoundError:
            return namespace_map
        logger.info(
            "%s: %s namespace %s %s NamespaceMap %s/%s",
            namespace,
            "mapped" if value else "unmapped",
            namespace,
            f"to {value} in" if value else "from",
            meta["namespace"],
            meta["name"],
        )
        return written

    async def _send_back(self, namespace: str, picked: set[str]) -> None:
        """Delete the namespace's pods on virtual nodes of clusters not picked (any more)."""
        for node in self._nodes.store:
            cluster_id = nested(node["metadata"], "labels", c.LABEL_REMOTE_CLUSTER_ID)
            if cluster_id in picked:
                continue
            name = str(node["metadata"]["name"])
            listed = await self._client.list(
                PODS, namespace=namespace, field_selector=f"spec.nodeName={name}"
            )
            for pod in listed.items:
                if pod["metadata"].get("deletionTimestamp"):
                    continue
                with contextlib.suppress(NotFoundError):
                    await self._client.delete(PODS, pod["metadata"]["name"], namespace=namespace)
                logger.info(
                    "%s/%s: deleted from %s, whose cluster the namespace is not offloaded to (any more); its "
                    "controller makes it again where it may run",
                    namespace,
                    pod["metadata"]["name"],
                    name,
                )

    async def _label_namespace(self, namespace: str, *, enabled: bool) -> None:
        current = self._namespaces.store.get(namespace)
        if current is None:
            return
        labels = current["metadata"].get("labels") or {}
        if (labels.get(c.LABEL_SCHEDULING_ENABLED) == "true") == enabled:
            return
        with contextlib.suppress(NotFoundError):
            await self._client.patch(
                NAMESPACES,
                namespace,
                {"metadata": {"labels": {c.LABEL_SCHEDULING_ENABLED: "true" if enabled else None}}},
                field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
            )

    async def _finish(self, offloading: JSON, maps: list[JSON], finalizers: list[str]) -> Result | None:
        namespace = str(offloading["metadata"]["namespace"])
        reachable = self._reachable()
        left: list[str] = []
        unreachable: list[str] = []
        for nm in maps:
            entry = current_mapping(nm).get(namespace)
            if entry is None:
                continue
            what = f"{nm['metadata']['name']} ({entry.get('remoteNamespace')}: {entry.get('phase')})"
            (left if _cluster_id(nm) in reachable else unreachable).append(what)
        if unreachable:
            await self._recorder.record(
                offloading,
                type="Warning",
                reason="TwinNamespacesLeft",
                message=f"not waiting for the twin namespaces on {', '.join(unreachable)}: the virtual node of that "
                "provider is not Ready (its provider removes them when the peering goes)",
            )
        if left:
            waited = _seconds_since(offloading["metadata"]["deletionTimestamp"])
            if waited < self._options.offloading_deletion_timeout:
                raise TemporaryError(
                    f"waiting for the twin namespaces to go on {', '.join(left)}", delay=DELETION_POLL
                )
            await self._recorder.record(
                offloading,
                type="Warning",
                reason="TwinNamespacesLeft",
                message=f"the twin namespaces were not reported gone within {self._options.offloading_deletion_timeout:g} s"
                f" on {', '.join(left)}; unoffloaded anyway (check those providers)",
            )
        await self._label_namespace(namespace, enabled=False)
        with contextlib.suppress(NotFoundError):
            await self._set_finalizers(
                offloading, [f for f in finalizers if f != c.FINALIZER_NAMESPACEOFFLOADING]
            )
        logger.info("%s: unoffloaded", namespace)
        return None

    async def _write_status(
        self, offloading: JSON, maps: list[JSON], *, remote_name: str, failed: str = ""
    ) -> None:
        meta = offloading["metadata"]
        current = offloading.get("status") or {}
        desired = forge.offloading_status(
            offloading, maps, remote_namespace_name=remote_name, current=current, now=conditions.now()
        )
        if failed:
            desired["offloadingPhase"] = c.PHASE_ALL_FAILED
        if not forge.status_differs(current, desired):
            return
        gone = {cluster: None for cluster in current.get("remoteNamespacesConditions") or {}}
        patch = {
            "status": {
                **desired,
                # a merge patch merges maps: clusters that left the status are removed by name
                "remoteNamespacesConditions": {**gone, **desired["remoteNamespacesConditions"]},
            }
        }
        with contextlib.suppress(NotFoundError):
            await self._client.patch_status(
                NAMESPACEOFFLOADINGS,
                meta["name"],
                patch,
                namespace=meta["namespace"],
                field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
            )

    async def _set_finalizers(self, offloading: JSON, finalizers: list[str]) -> None:
        meta = offloading["metadata"]
        await self._client.patch(
            NAMESPACEOFFLOADINGS,
            meta["name"],
            {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}},
            namespace=meta["namespace"],
            field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
        )


def _cluster_id(namespace_map: JSON) -> str:
    return str(nested(namespace_map["metadata"], "labels", c.LABEL_REMOTE_CLUSTER_ID) or "")


def _seconds_since(timestamp: str) -> float:
    try:
        return (datetime.now(UTC) - parse_rfc3339(timestamp)).total_seconds()
    except ValueError:
        return 0.0


def _every(offloadings: Informer) -> MapFunc:
    def requests(_: JSON) -> list[Request]:
        return [Request.of(offloading) for offloading in offloadings.store]

    return requests


def _in_namespace(offloadings: Informer) -> MapFunc:
    """A namespace or a pod -> the NamespaceOffloading of its namespace."""

    def requests(obj: JSON) -> list[Request]:
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or meta.get("name") or "")
        found = offloadings.store.get(c.NAMESPACE_OFFLOADING_NAME, namespace=namespace)
        return [Request.of(found)] if found is not None else []

    return requests


def setup(manager: Manager, options: ControllerOptions) -> None:
    offloadings = manager.informer(NAMESPACEOFFLOADINGS)
    namespace_maps = manager.informer(NAMESPACEMAPS, label_selector=namespace_map_selector())
    virtual_nodes = manager.informer(NODES, label_selector=_VIRTUAL_NODES)
    namespaces = manager.informer(NAMESPACES)
    identity = manager.informer(
        CONFIGMAPS,
        namespace=options.namespace,
        field_selector=f"metadata.name={c.CLUSTER_IDENTITY_CONFIGMAP}",
    )
    reconciler = NamespaceOffloadingReconciler(
        manager.client,
        offloadings=offloadings,
        namespace_maps=namespace_maps,
        virtual_nodes=virtual_nodes,
        namespaces=namespaces,
        identity=identity,
        recorder=EventRecorder(manager.client, component=EVENT_COMPONENT),
        options=options,
    )
    controller = manager.controller(NAME, reconciler, primary=offloadings)
    for informer in (namespace_maps, virtual_nodes, identity):
        controller.watches(informer, _every(offloadings))
    controller.watches(namespaces, _in_namespace(offloadings))
