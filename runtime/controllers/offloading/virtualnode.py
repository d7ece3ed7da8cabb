"""Consumer side of a virtual node: keeps each VirtualNode's virtual kubelet running, and cleans up after it.

It also makes the NamespaceMap of the VirtualNode's provider (same name and namespace,
owned by the VirtualNode): the NamespaceOffloading controller lists the namespaces offloaded
to that provider in it, and it goes with the VirtualNode when the peering does.

For every VirtualNode the controller applies (server-side apply, field manager
`liqo-controller-manager`) the virtual kubelet's ServiceAccount, its Role and bindings and
its Deployment (`runtime.forge.virtualnode`), writing only what differs from the caches;
binds `liqo-virtual-kubelet-reflection` in each namespace its NamespaceMap offloads to the
provider (and unbinds it from the namespaces that left), so the virtual kubelet reads what
it reflects there and nowhere else; and
reports in the VirtualNode's status whether the Deployment is available (`VirtualKubelet`),
whether the Node it registers is Ready (`Node`) and both at once (`Ready`).

Deletion goes through the `offloading.liqo.io/virtualnode` finalizer: the Deployment is
deleted first (foreground, so it is gone once its pods are) and waited for, because a
virtual kubelet still running would register the Node again; then the Node, the
ClusterRole and its binding (a cluster-scoped object cannot be owned by the VirtualNode) and the rest.
The wait is bounded: `virtual_node_deletion_timeout` after the deletion started, cleanup
goes on and the finalizer is removed whatever still fails, so no VirtualNode stays forever.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Iterable
from datetime import UTC, datetime
from typing import Any

from runtime.api import constants as c
from runtime.api.crds import NAMESPACEMAPS, VIRTUALNODES
from runtime.api.kinds import (
    CLUSTERROLEBINDINGS,
    CLUSTERROLES,
    CONFIGMAPS,
    DEPLOYMENTS,
    NODES,
    ROLEBINDINGS,
    ROLES,
    SERVICEACCOUNTS,
)
from runtime.api.objects import JSON, nested
from runtime.core import (
    AlreadyExistsError,
    APIError,
    Client,
    Informer,
    Manager,
    MapFunc,
    NotFoundError,
    PermanentError,
    Request,
    Resource,
    Result,
    TemporaryError,
)
from runtime.forge import conditions, podsecurity
from runtime.forge import virtualnode as forge
from runtime.forge.namespaces import desired_mapping, namespace_map

from ..core.peering import LocalCluster
from ..options import ControllerOptions
from .namespacemap import namespace_map_selector

logger = logging.getLogger(__name__)


NAME = "virtualnode"
#: how often a deletion waiting for the virtual kubelet's Deployment looks again (its removal also wakes it)
DELETION_POLL = 1.0
#: how soon a VirtualNode waiting for this cluster's identity looks again
IDENTITY_MISSING_RETRY = 5.0
_VK_SELECTOR = f"{c.LABEL_COMPONENT}={forge.COMPONENT}"
#: the kinds the VirtualNode cannot own (a cluster-scoped object cannot have a namespaced owner)
_CLUSTER_SCOPED = ("ClusterRole", "ClusterRoleBinding")
_KINDS: dict[str, Resource] = {
    "ServiceAccount": SERVICEACCOUNTS,
    "Role": ROLES,
    "RoleBinding": ROLEBINDINGS,
    "ClusterRole": CLUSTERROLES,
    "ClusterRoleBinding": CLUSTERROLEBINDINGS,
    "Deployment": DEPLOYMENTS,
}


class VirtualNodeReconciler:
    def __init__(
        self,
        client: Client,
        *,
        virtual_nodes: Informer,
        nodes: Informer,
        owned: dict[str, Informer],
        namespace_maps: Informer,
        identity: Informer,
        options: ControllerOptions,
    ) -> None:
        self._client = client
        self._virtual_nodes = virtual_nodes
        self._nodes = nodes
        self._maps = namespace_maps
        self._identity = identity
        #: kind -> the informer of the virtual kubelets' objects of that kind
        self._owned = owned
        self._options = options

    async def reconcile(self, request: Request) -> Result | None:
        virtual_node = self._virtual_nodes.store.get(request.name, namespace=request.namespace)
        if virtual_node is None:
            return None
        if virtual_node["metadata"].get("deletionTimestamp"):
            await self._delete(virtual_node, request)
            return None
        if c.FINALIZER_VIRTUALNODE not in (virtual_node["metadata"].get("finalizers") or []):
            virtual_node = await self._set_finalizers(
                virtual_node, [*(virtual_node["metadata"].get("finalizers") or []), c.FINALIZER_VIRTUALNODE]
            )
        local = LocalCluster.of(next(iter(self._identity.store), None))
        if local is None:
            raise TemporaryError(
                f"{request}: this cluster's identity ({self._options.namespace}/{c.CLUSTER_IDENTITY_CONFIGMAP}) is "
                "missing; the virtual kubelet needs its cluster id",
                delay=IDENTITY_MISSING_RETRY,
            )
        try:
            objects = forge.virtual_kubelet(
                virtual_node,
                home_cluster_id=local.cluster_id,
                home_api_server=self._options.api_server_url,
                default_image=self._options.image,
                reflection=self._options.reflection,
            )
        except ValueError as error:
            await self._write_status(virtual_node, _invalid(virtual_node, str(error)))
            raise PermanentError(f"{request}: {error}; fix the VirtualNode's spec") from None
        for obj in objects:
            if not self._is_current(obj):
                await self._unbind_other_role(obj)
                await self._client.apply(
                    _KINDS[obj["kind"]], obj, field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER, force=True
                )
                logger.info("%s: applied %s %s", request, obj["kind"], obj["metadata"]["name"])
        await self._ensure_namespace_map(virtual_node)
        await self._reflection_bindings(virtual_node, deleting=False)
        await self._write_status(virtual_node, self._conditions(virtual_node))
        return None

    async def _reflection_bindings(self, virtual_node: JSON, *, deleting: bool) -> None:
        """Bind the virtual kubelet's reflection role in exactly the namespaces its NamespaceMap offloads."""
        meta = virtual_node["metadata"]
        namespace_map = self._maps.store.get(meta["name"], namespace=meta["namespace"])
        wanted = set() if deleting or namespace_map is None else set(desired_mapping(namespace_map))
        have = {
            str(binding["metadata"]["namespace"])
            for binding in self._owned["RoleBinding"].store
            if forge.is_reflection_role_binding_of(binding, virtual_node)
        }
        name = forge.virtual_kubelet_name(virtual_node)
        for namespace in sorted(wanted - have):
            with contextlib.suppress(NotFoundError):  # the namespace is gone: nothing to bind
                await self._client.apply(
                    ROLEBINDINGS,
                    forge.reflection_role_binding(virtual_node, namespace),
                    field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
                    force=True,
                )
                logger.info(
                    "%s/%s: %s may read what it reflects from %s",
                    meta["namespace"],
                    meta["name"],
                    name,
                    namespace,
                )
        for namespace in sorted(have - wanted):
            with contextlib.suppress(NotFoundError):
                await self._client.delete(ROLEBINDINGS, name, namespace=namespace)

    async def _ensure_namespace_map(self, virtual_node: JSON) -> None:
        """Create the provider's NamespaceMap when missing (its mapping is the NamespaceOffloading controller's),
        and keep the Pod Security level it asks for the VirtualNode's."""
        meta = virtual_node["metadata"]
        level = podsecurity.level(nested(virtual_node, "spec", "podSecurity"))
        existing = self._maps.store.get(meta["name"], namespace=meta["namespace"])
        if existing is not None:
            if nested(existing, "spec", "podSecurity") != level:
                await self._client.patch(
                    NAMESPACEMAPS,
                    str(meta["name"]),
                    {"spec": {"podSecurity": level}},
                    namespace=str(meta["namespace"]),
                    field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
                )
                logger.info(
                    "%s/%s: the provider is asked for Pod Security %s", meta["namespace"], meta["name"], level
                )
            return
        body = namespace_map(
            str(meta["name"]),
            namespace=str(meta["namespace"]),
            cluster_id=str(nested(virtual_node, "spec", "clusterID") or ""),
            owner=virtual_node,
            desired={},
            pod_security=level,
        )
        with contextlib.suppress(AlreadyExistsError):
            await self._client.create(NAMESPACEMAPS, body, field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER)
            logger.info("%s/%s: created the NamespaceMap of the provider", meta["namespace"], meta["name"])

    async def _unbind_other_role(self, obj: JSON) -> None:
        """A binding's roleRef cannot change: one bound to another role (an older install's) is deleted first."""
        if "roleRef" not in obj:
            return
        meta = obj["metadata"]
        cached = self._cached(obj["kind"], meta["name"], meta.get("namespace"))
        if cached is not None and cached.get("roleRef") != obj["roleRef"]:
            with contextlib.suppress(NotFoundError):
                await self._client.delete(_KINDS[obj["kind"]], meta["name"], namespace=meta.get("namespace"))
            logger.info(
                "%s %s: bound another role; deleted to bind %s",
                obj["kind"],
                meta["name"],
                obj["roleRef"]["name"],
            )

    def _cached(self, kind: str, name: str, namespace: str | None) -> JSON | None:
        return self._owned[kind].store.get(name, namespace=namespace)

    def _is_current(self, obj: JSON) -> bool:
        meta = obj["metadata"]
        cached = self._cached(obj["kind"], meta["name"], meta.get("namespace"))
        return cached is not None and _contains(cached, obj)

    def _conditions(self, virtual_node: JSON) -> list[JSON]:
        meta = virtual_node["metadata"]
        generation = meta.get("generation")
        name = forge.virtual_kubelet_name(virtual_node)
        where = f"{meta['namespace']}/{name}"
        deployment = self._cached("Deployment", name, meta["namespace"])
        available = conditions.find(nested(deployment, "status", "conditions"), "Available")
        if deployment is None:
            kubelet = conditions.condition(
                c.CONDITION_VIRTUAL_KUBELET,
                False,
                reason="Creating",
                message=f"the virtual kubelet's Deployment {where} does not exist yet",
                observed_generation=generation,
            )
        elif available is not None and available.get("status") == "True":
            kubelet = conditions.condition(
                c.CONDITION_VIRTUAL_KUBELET,
                True,
                reason="Available",
                message=f"the virtual kubelet {where} is available",
                observed_generation=generation,
            )
        else:
            detail = f": {available['message']}" if available and available.get("message") else ""
            kubelet = conditions.condition(
                c.CONDITION_VIRTUAL_KUBELET,
                False,
                reason="Unavailable",
                message=f"the virtual kubelet {where} is not available yet{detail}",
                observed_generation=generation,
            )
        result = [kubelet]
        if nested(virtual_node, "spec", "createNode", default=True):
            result.append(self._node_condition(virtual_node))
        failing = [entry["message"] for entry in result if entry["status"] != "True"]
        result.append(
            conditions.condition(
                c.CONDITION_READY,
                not failing,
                reason="Ready" if not failing else "NotReady",
                message="; ".join(failing) if failing else "the virtual node is ready",
                observed_generation=generation,
            )
        )
        return result

    def _node_condition(self, virtual_node: JSON) -> JSON:
        generation = virtual_node["metadata"].get("generation")
        node_name = forge.node_name(virtual_node)
        node = self._nodes.store.get(node_name)
        ready = conditions.find(nested(node, "status", "conditions"), "Ready")
        if node is None:
            return conditions.condition(
                c.CONDITION_NODE,
                False,
                reason="NotRegistered",
                message=f"the virtual kubelet has not registered node {node_name} yet",
                observed_generation=generation,
            )
        if ready is not None and ready.get("status") == "True":
            return conditions.condition(
                c.CONDITION_NODE,
                True,
                reason="Ready",
                message=f"node {node_name} is Ready",
                observed_generation=generation,
            )
        detail = f": {ready['message']}" if ready and ready.get("message") else ""
        return conditions.condition(
            c.CONDITION_NODE,
            False,
            reason="NotReady",
            message=f"node {node_name} is not Ready{detail}",
            observed_generation=generation,
        )

    async def _write_status(self, virtual_node: JSON, wanted: list[JSON]) -> None:
        meta = virtual_node["metadata"]
        current = virtual_node.get("status") or {}
        node_name = forge.node_name(virtual_node)
        if (
            not conditions.differs(current.get("conditions"), wanted)
            and current.get("nodeName") == node_name
            and current.get("observedGeneration") == meta.get("generation")
        ):
            return
        status = {
            "nodeName": node_name,
            "observedGeneration": meta.get("generation"),
            "conditions": conditions.merged(current.get("conditions"), wanted, at=conditions.now()),
        }
        await self._client.apply(
            VIRTUALNODES,
            {"metadata": {"name": meta["name"], "namespace": meta["namespace"]}, "status": status},
            subresource="status",
            field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
            force=True,
        )

    async def _set_finalizers(self, virtual_node: JSON, finalizers: list[str]) -> JSON:
        """Write the finalizer list, conditional on the version read (a concurrent change means: look again)."""
        meta = virtual_node["metadata"]
        return await self._client.patch(
            VIRTUALNODES,
            meta["name"],
            {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}},
            namespace=meta["namespace"],
        )

    async def _delete(self, virtual_node: JSON, request: Request) -> None:
        meta = virtual_node["metadata"]
        finalizers = meta.get("finalizers") or []
        if c.FINALIZER_VIRTUALNODE not in finalizers:
            return
        overdue = _seconds_since(meta["deletionTimestamp"]) >= self._options.virtual_node_deletion_timeout
        namespace, name = meta["namespace"], forge.virtual_kubelet_name(virtual_node)
        deployment = self._cached("Deployment", name, namespace)
        if deployment is None or not deployment["metadata"].get("deletionTimestamp"):
            await self._step(
                request,
                overdue,
                f"delete Deployment {namespace}/{name}",
                self._client.delete(DEPLOYMENTS, name, namespace=namespace, propagation_policy="Foreground"),
            )
            deployment = self._cached("Deployment", name, namespace)
        if deployment is not None:
            if not overdue:
                raise TemporaryError(
                    f"waiting for the virtual kubelet's Deployment {namespace}/{name} to go",
                    delay=DELETION_POLL,
                )
            logger.warning(
                "%s: the virtual kubelet's Deployment %s/%s is still there after %g s; cleaning up anyway "
                "(check the garbage collector and the Deployment's finalizers)",
                request,
                namespace,
                name,
                self._options.virtual_node_deletion_timeout,
            )
        node = self._nodes.store.get(forge.node_name(virtual_node))
        if node is not None and _is_node_of(node, virtual_node):
            await self._step(
                request,
                overdue,
                f"delete Node {forge.node_name(virtual_node)}",
                self._client.delete(NODES, forge.node_name(virtual_node)),
            )
        await self._step(
            request,
            overdue,
            "remove the reflection RoleBindings",
            self._reflection_bindings(virtual_node, deleting=True),
        )
        for kind, resource in _KINDS.items():
            if kind != "Deployment":
                scope = None if kind in _CLUSTER_SCOPED else namespace
                await self._step(
                    request,
                    overdue,
                    f"delete {kind} {name}",
                    self._client.delete(resource, name, namespace=scope),
                )
        try:
            await self._set_finalizers(virtual_node, [f for f in finalizers if f != c.FINALIZER_VIRTUALNODE])
        except NotFoundError:
            return  # a stale cache: the finalizer was released already, and the VirtualNode is gone
        logger.info("%s: virtual kubelet and node removed; finalizer released", request)

    async def _step(self, request: Request, overdue: bool, what: str, call: Awaitable[JSON | None]) -> None:
        """One cleanup call: NotFound is done; another failure is retried, or once overdue, logged and skipped."""
        try:
            await call
        except NotFoundError:
            return
        except APIError as error:
            if not overdue:
                raise
            logger.error("%s: could not %s (%s); going on, the deletion is overdue", request, what, error)


def _invalid(virtual_node: JSON, message: str) -> list[JSON]:
    generation = virtual_node["metadata"].get("generation")
    return [
        conditions.condition(
            c.CONDITION_VIRTUAL_KUBELET,
            False,
            reason="InvalidSpec",
            message=message,
            observed_generation=generation,
        ),
        conditions.condition(
            c.CONDITION_READY, False, reason="InvalidSpec", message=message, observed_generation=generation
        ),
    ]


def _contains(actual: Any, wanted: Any) -> bool:
    """Whether `actual` has every field of `wanted` with the same value (the server may add defaults)."""
    if isinstance(wanted, dict):
        return isinstance(actual, dict) and all(
            key in actual and _contains(actual[key], value) for key, value in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(wanted)
            and all(_contains(have, want) for have, want in zip(actual, wanted, strict=True))
        )
    return bool(actual == wanted)


def _is_node_of(node: JSON, virtual_node: JSON) -> bool:
    """A virtual node standing for this VirtualNode's provider (any other Node is left alone)."""
    labels = node["metadata"].get("labels") or {}
    cluster_id = nested(virtual_node, "spec", "clusterID")
    return labels.get(c.LABEL_TYPE) == c.TYPE_VIRTUAL_NODE and labels.get(c.LABEL_REMOTE_CLUSTER_ID) in (
        None,
        cluster_id,
    )


def _seconds_since(timestamp: str) -> float:
    started = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return (datetime.now(UTC) - started).total_seconds()


def _by_node(virtual_nodes: Informer) -> MapFunc:
    def requests(node: JSON) -> Iterable[Request]:
        name = node["metadata"]["name"]
        return [Request.of(vn) for vn in virtual_nodes.store if forge.node_name(vn) == name]

    return requests


def _by_name(virtual_nodes: Informer) -> MapFunc:
    """A virtual kubelet's ClusterRole -> the VirtualNodes whose virtual kubelet it is named after."""

    def requests(role: JSON) -> Iterable[Request]:
        name = role["metadata"]["name"]
        return [Request.of(vn) for vn in virtual_nodes.store if forge.virtual_kubelet_name(vn) == name]

    return requests


def _by_subject(binding: JSON) -> Iterable[Request]:
    """A virtual kubelet's ClusterRoleBinding (or reflection RoleBinding) -> its VirtualNode (named in a label, in
    its subject's namespace)."""
    name = nested(binding["metadata"], "labels", c.LABEL_VIRTUAL_NODE_NAME)
    subjects = binding.get("subjects") or []
    if not name or not subjects:
        return []
    return [Request(str(subjects[0].get("namespace") or ""), str(name))]


def setup(manager: Manager, options: ControllerOptions) -> None:
    virtual_nodes = manager.informer(VIRTUALNODES)
    nodes = manager.informer(NODES, label_selector=f"{c.LABEL_TYPE}={c.TYPE_VIRTUAL_NODE}")
    owned = {
        kind: manager.informer(resource, label_selector=_VK_SELECTOR) for kind, resource in _KINDS.items()
    }
    namespace_maps = manager.informer(NAMESPACEMAPS, label_selector=namespace_map_selector())
    identity = manager.informer(
        CONFIGMAPS,
        namespace=options.namespace,
        field_selector=f"metadata.name={c.CLUSTER_IDENTITY_CONFIGMAP}",
    )
    reconciler = VirtualNodeReconciler(
        manager.client,
        virtual_nodes=virtual_nodes,
        nodes=nodes,
        owned=owned,
        namespace_maps=namespace_maps,
        identity=identity,
        options=options,
    )
    controller = manager.controller(NAME, reconciler, primary=virtual_nodes)
    for kind, informer in owned.items():
        if kind == "ClusterRoleBinding":
            controller.watches(informer, _by_subject)
        elif kind == "ClusterRole":
            controller.watches(informer, _by_name(virtual_nodes))
        else:
            controller.owns(informer)
    # the reflection RoleBindings, in the offloaded namespaces, cannot be owned by the VirtualNode
    controller.watches(owned["RoleBinding"], _by_subject)
    controller.watches(nodes, _by_node(virtual_nodes))
    controller.owns(namespace_maps)
    controller.watches(identity, lambda _: [Request.of(vn) for vn in virtual_nodes.store])
