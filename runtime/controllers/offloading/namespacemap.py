"""The NamespaceMap controller (consumer side): carries each NamespaceMap to its provider, and the answer back.

The consumer keeps one NamespaceMap per provider in its tenant namespace (the VirtualNode
controller makes it, owned by the VirtualNode; the NamespaceOffloading controller fills
its `desiredMapping`). This controller writes its copy into the consumer's tenant
namespace on the provider with the consumer's credential (the only place that credential
may write it), and copies the provider's `status.currentMapping` (which twin namespaces
exist, or why one cannot) back into the local map, where the NamespaceOffloading
controller and the virtual kubelet read it.

The provider is not watched: while a mapping is not settled the map is looked at again
every `namespace_map_poll` seconds, afterwards every `namespace_map_resync` seconds. An
unreachable provider leaves the local status as it was last seen.
"""

from __future__ import annotations

import logging

from runtime.api import constants as c
from runtime.api.crds import NAMESPACEMAPS, VIRTUALNODES
from runtime.api.kinds import CONFIGMAPS, SECRETS
from runtime.api.objects import JSON, nested
from runtime.core import (
    APIConnectionError,
    APIError,
    Client,
    ForbiddenError,
    Informer,
    Manager,
    NotFoundError,
    Request,
    Result,
    TemporaryError,
    UnauthorizedError,
)
from runtime.core.failures import explain
from runtime.forge import namespaces as forge
from runtime.forge import virtualnode as forge_vn

from ..core.negotiate import CredentialRejectedError, remote_client
from ..core.objects import kubeconfig_of
from ..core.peering import LocalCluster
from ..options import ControllerOptions

logger = logging.getLogger(__name__)


NAME = "namespacemap"
#: how soon a map whose credential or identity is missing is looked at again
MISSING_RETRY = 5.0


def namespace_map_selector() -> str:
    """The consumer's own NamespaceMaps (a provider's copies carry the origin cluster id instead)."""
    return f"{c.LABEL_REMOTE_CLUSTER_ID},!{c.LABEL_ORIGIN_CLUSTER_ID}"


def is_consumer_map(namespace_map: JSON) -> bool:
    """A NamespaceMap this cluster keeps for a provider: made by the VirtualNode controller, owned by a VirtualNode."""
    meta = namespace_map.get("metadata") or {}
    labels = meta.get("labels") or {}
    if not labels.get(c.LABEL_REMOTE_CLUSTER_ID) or c.LABEL_ORIGIN_CLUSTER_ID in labels:
        return False
    return any(
        ref.get("controller") and ref.get("kind") == VIRTUALNODES.kind
        for ref in meta.get("ownerReferences") or []
    )


def owner_name(namespace_map: JSON) -> str:
    return next(
        str(ref["name"])
        for ref in namespace_map["metadata"].get("ownerReferences") or []
        if ref.get("controller") and ref.get("kind") == VIRTUALNODES.kind
    )


def settled(namespace_map: JSON) -> bool:
    """Whether the provider reports every desired twin namespace Accepted and nothing else."""
    desired = forge.desired_mapping(namespace_map)
    current = forge.current_mapping(namespace_map)
    return set(current) == set(desired) and all(
        entry.get("phase") == c.MAPPING_ACCEPTED and entry.get("remoteNamespace") == desired[local]
        for local, entry in current.items()
    )


class NamespaceMapReconciler:
    def __init__(
        self,
        client: Client,
        *,
        namespace_maps: Informer,
        virtual_nodes: Informer,
        secrets: Informer,
        identity: Informer,
        options: ControllerOptions,
    ) -> None:
        self._client = client
        self._maps = namespace_maps
        self._virtual_nodes = virtual_nodes
        self._secrets = secrets
        self._identity = identity
        self._options = options

    async def reconcile(self, request: Request) -> Result | None:
        namespace_map = self._maps.store.get(request.name, namespace=request.namespace)
        if namespace_map is None or not is_consumer_map(namespace_map):
            return None
        virtual_node = self._virtual_nodes.store.get(owner_name(namespace_map), namespace=request.namespace)
        if virtual_node is None or virtual_node["metadata"].get("deletionTimestamp"):
            return None
        local = LocalCluster.of(next(iter(self._identity.store), None))
        try:
            secret_name = forge_vn.credential_secret(virtual_node)
        except ValueError:
            return None
        kubeconfig = kubeconfig_of(self._secrets.store.get(secret_name, namespace=request.namespace))
        if local is None or kubeconfig is None:
            raise TemporaryError(
                f"{request}: waiting for this cluster's identity and the credential for the provider",
                delay=MISSING_RETRY,
            )
        try:
            async with remote_client(kubeconfig, request_timeout=self._options.remote_timeout) as remote:
                status = await self._replicate(remote, namespace_map, local)
        except CredentialRejectedError as exc:
            raise TemporaryError(f"{request}: {exc}", delay=MISSING_RETRY) from None
        except (UnauthorizedError, ForbiddenError) as exc:
            raise TemporaryError(
                f"{request}: {_provider_failure(exc, virtual_node)}; waiting for a renewed credential",
                delay=MISSING_RETRY,
            ) from None
        except APIConnectionError as exc:
            raise TemporaryError(f"{request}: {_provider_failure(exc, virtual_node)}") from None
        namespace_map = await self._write_status(namespace_map, status)
        poll = self._options.namespace_map_poll
        return Result(requeue_after=self._options.namespace_map_resync if settled(namespace_map) else poll)

    async def _replicate(self, remote: Client, namespace_map: JSON, local: LocalCluster) -> JSON:
        """Write the copy on the provider; the status the provider gave it."""
        replica = forge.replica_namespace_map(
            namespace_map, remote_namespace=remote.config.namespace, origin_cluster_id=local.cluster_id
        )
        meta = replica["metadata"]
        try:
            current = await remote.get(NAMESPACEMAPS, meta["name"], namespace=meta["namespace"])
        except NotFoundError:
            current = await remote.create(
                NAMESPACEMAPS, replica, field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER
            )
            logger.info("%s/%s: copied to the provider", namespace_map["metadata"]["namespace"], meta["name"])
            return dict(current.get("status") or {})
        have = forge.desired_mapping(current)
        want = forge.desired_mapping(replica)
        level = replica["spec"]["podSecurity"]
        if have != want or nested(current, "spec", "podSecurity") != level:
            patch = {
                "spec": {"desiredMapping": {**{key: None for key in have}, **want}, "podSecurity": level}
            }
            current = await remote.patch(
                NAMESPACEMAPS,
                meta["name"],
                patch,
                namespace=meta["namespace"],
                field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
            )
        return dict(current.get("status") or {})

    async def _write_status(self, namespace_map: JSON, remote_status: JSON) -> JSON:
        have = forge.current_mapping(namespace_map)
        want = forge.current_mapping({"status": remote_status})
        if have == want:
            return namespace_map
        meta = namespace_map["metadata"]
        return await self._client.patch_status(
            NAMESPACEMAPS,
            meta["name"],
            {"status": {"currentMapping": {**{key: None for key in have}, **want}}},
            namespace=meta["namespace"],
            field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
        )


def setup(manager: Manager, options: ControllerOptions) -> None:
    namespace_maps = manager.informer(NAMESPACEMAPS, label_selector=namespace_map_selector())
    virtual_nodes = manager.informer(VIRTUALNODES)
    secrets = manager.informer(SECRETS, label_selector=f"{c.LABEL_COMPONENT}={c.COMPONENT_PEERING}")
    identity = manager.informer(
        CONFIGMAPS,
        namespace=options.namespace,
        field_selector=f"metadata.name={c.CLUSTER_IDENTITY_CONFIGMAP}",
    )
    reconciler = NamespaceMapReconciler(
        manager.client,
        namespace_maps=namespace_maps,
        virtual_nodes=virtual_nodes,
        secrets=secrets,
        identity=identity,
        options=options,
    )
    controller = manager.controller(NAME, reconciler, primary=namespace_maps)

    def by_virtual_node(virtual_node: JSON) -> list[Request]:
        meta = virtual_node["metadata"]
        return [Request.of(nm) for nm in namespace_maps.store.items(namespace=meta["namespace"])]

    controller.watches(virtual_nodes, by_virtual_node)
    controller.watches(
        secrets,
        lambda secret: [
            Request.of(nm)
            for nm in namespace_maps.store.items(namespace=str(secret["metadata"]["namespace"]))
        ],
    )


def _provider_failure(exc: APIError, virtual_node: JSON) -> str:
    """What failed on the provider of `virtual_node`, in `failures.explain`'s words."""
    return explain(
        exc, cluster=f"the API server of provider {forge_vn.provider_name(virtual_node)}", advice=False
    )
