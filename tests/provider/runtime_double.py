"""A stand-in for the Liqo runtime, acting through the API as the real components would, so resources can be
tested against a bare API server emulator (no controllers, no node agent).

- `installed_runtime`: what a running installation shows: its Deployments rolled out, the
  webhooks' CA bundles patched in, the auth service's URL and key in the identity ConfigMap;
- `peering_controller`: what the consumer's ForeignCluster controller shows: a finalizer,
  the status (through the controller's own status builder) and a Ready virtual node with
  the capacity asked for; a deleted ForeignCluster loses its node and finalizer;
- `offloading_controller`: what the NamespaceOffloading controller shows for peered
  clusters with the given virtual-node labels: a finalizer and the status (through the
  forge's own status builder), twin namespaces created or failing per cluster; a deleted
  NamespaceOffloading loses its finalizer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS, NAMESPACEOFFLOADINGS
from runtime.api.kinds import CONFIGMAPS, DEPLOYMENTS, MUTATINGWEBHOOKS, NODES, VALIDATINGWEBHOOKS
from runtime.controllers.core.status import Observed, done, failed, foreign_cluster_status, waiting
from runtime.core import Client, ConflictError, NotFoundError
from runtime.forge import namespaceoffloading as offloading_forge
from runtime.forge.install import MUTATING_WEBHOOK, VALIDATING_WEBHOOK
from runtime.forge.namespaces import namespace_map, twin_namespace_name
from runtime.forge.virtualnode import node_name_for

AUTH_URL = "https://127.0.0.1:18443"
#: the auth service key fingerprint the stand-in publishes with its URL
AUTH_KEY = "sha256:" + "5e" * 32
CA_BUNDLE = "Y2EtYnVuZGxl"
#: the capacity a virtual node advertises when nothing specific was asked for
DEFAULT_SHARE = {"cpu": "4", "memory": "8Gi", "pods": "110"}


@contextlib.asynccontextmanager
async def installed_runtime(
    client: Client, namespace: str, *, auth_url: str = AUTH_URL
) -> AsyncIterator[None]:
    """While the block runs, the installation in `namespace` behaves as if its components ran."""
    task = asyncio.create_task(_run_installation(client, namespace, auth_url), name="runtime double: install")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _run_installation(client: Client, namespace: str, auth_url: str) -> None:
    while True:
        with contextlib.suppress(NotFoundError, ConflictError):
            await _roll_out(client, namespace)
            await _patch_webhook(client)
            await _publish(client, namespace, auth_url)
        await asyncio.sleep(0.05)


async def _roll_out(client: Client, namespace: str) -> None:
    for deployment in (await client.list(DEPLOYMENTS, namespace=namespace)).items:
        meta = deployment["metadata"]
        replicas = int(deployment["spec"].get("replicas", 1))
        status = {
            "observedGeneration": meta.get("generation", 1),
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
            "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}],
        }
        if deployment.get("status") != status:
            await client.patch_status(DEPLOYMENTS, meta["name"], {"status": status}, namespace=namespace)


async def _patch_webhook(client: Client) -> None:
    for resource, name in ((VALIDATINGWEBHOOKS, VALIDATING_WEBHOOK), (MUTATINGWEBHOOKS, MUTATING_WEBHOOK)):
        webhook = await client.get(resource, name)
        hooks = webhook.get("webhooks") or []
        if all(hook["clientConfig"].get("caBundle") for hook in hooks):
            continue
        for hook in hooks:
            hook["clientConfig"]["caBundle"] = CA_BUNDLE
            if "url" in hook["clientConfig"]:
                hook["clientConfig"]["url"] = f"https://127.0.0.1:19443/validate/{hook['name']}"
        await client.replace(resource, webhook, field_manager=c.FIELD_MANAGER_WEBHOOK)


async def _publish(client: Client, namespace: str, auth_url: str) -> None:
    identity = await client.get(CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace=namespace)
    if (identity.get("data") or {}).get(c.IDENTITY_AUTH_URL) != auth_url:
        await client.patch(
            CONFIGMAPS,
            c.CLUSTER_IDENTITY_CONFIGMAP,
            {"data": {c.IDENTITY_AUTH_URL: auth_url, c.IDENTITY_AUTH_KEY: AUTH_KEY}},
            namespace=namespace,
            field_manager=c.FIELD_MANAGER_AUTH,
        )


@dataclass
class PeeringBehaviour:
    """How the stand-in controller answers: `refuse` a token (AuthenticationFailed), stay `unreachable`,
    `resize` requests to at most these amounts, never finish unpeering (`stuck`), bring the network fabric's
    tunnel up (`tunnel`) when the peering has networking."""

    refuse: bool = False
    tunnel: bool = True
    unreachable: bool = False
    resize: dict[str, str] = field(default_factory=dict)
    stuck: bool = False
    remote_version: str = "0.1.0"


@contextlib.asynccontextmanager
async def peering_controller(
    client: Client, behaviour: PeeringBehaviour | None = None
) -> AsyncIterator[PeeringBehaviour]:
    """While the block runs, ForeignClusters are answered as the consumer's controller would (see `behaviour`)."""
    behaviour = behaviour or PeeringBehaviour()
    task = asyncio.create_task(_run_peerings(client, behaviour), name="runtime double: peerings")
    try:
        yield behaviour
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _run_peerings(client: Client, behaviour: PeeringBehaviour) -> None:
    while True:
        for fc in (await client.list(FOREIGNCLUSTERS)).items:
            with contextlib.suppress(NotFoundError, ConflictError):
                await _reconcile(client, fc, behaviour)
        await asyncio.sleep(0.05)


async def _reconcile(client: Client, fc: dict[str, Any], behaviour: PeeringBehaviour) -> None:
    meta = fc["metadata"]
    name = meta["name"]
    node = node_name_for(name)
    if meta.get("deletionTimestamp"):
        if behaviour.stuck:
            return
        with contextlib.suppress(NotFoundError):
            await client.delete(NODES, node)
        await client.patch(FOREIGNCLUSTERS, name, {"metadata": {"finalizers": None}})
        return
    if c.FINALIZER_FOREIGNCLUSTER not in (meta.get("finalizers") or []):
        await client.patch(FOREIGNCLUSTERS, name, {"metadata": {"finalizers": [c.FINALIZER_FOREIGNCLUSTER]}})
    requested = dict(fc["spec"].get("resources") or {})
    granted = {
        **(requested or DEFAULT_SHARE),
        **{k: v for k, v in behaviour.resize.items() if k in requested},
    }
    generation = int(meta.get("generation") or 1)
    if behaviour.refuse:
        auth = failed(
            c.REASON_AUTHENTICATION_FAILED, f"the auth service at {fc['spec']['authURL']} refused the token"
        )
    elif behaviour.unreachable:
        auth = failed(
            c.REASON_PROVIDER_UNREACHABLE, f"the auth service at {fc['spec']['authURL']} is unreachable"
        )
    else:
        auth = done(c.REASON_CREDENTIAL_ISSUED, "credential issued")
    established = auth.done
    resources = (
        done(
            c.REASON_RESOURCES_RESIZED if granted != requested and requested else c.REASON_RESOURCES_ACCEPTED,
            f"granted {granted}",
        )
        if established
        else waiting(c.REASON_RESOURCES_PENDING, "waiting for authentication")
    )
    virtual = (
        done(c.REASON_VIRTUAL_NODE_READY, "Ready")
        if established
        else waiting(c.REASON_VIRTUAL_NODE_NOT_READY, "no node")
    )
    if established:
        await _ensure_node(client, node, granted, cluster_id=fc["spec"]["clusterID"])
    networking = None
    if fc["spec"].get("networkingEnabled", True) is not False:
        networking = (
            done("TunnelConnected", "tunnel up")
            if established and behaviour.tunnel
            else waiting("NetworkPending", "tunnel to milan: Connecting: no handshake yet")
        )
    observed = Observed(
        generation=generation,
        authentication=auth,
        resources=resources,
        virtual_node=virtual,
        remote_version=behaviour.remote_version if established else "",
        virtual_nodes=[node] if established else [],
        networking=networking,
    )
    status = foreign_cluster_status(fc.get("status"), observed, at="2025-01-01T00:00:00Z")
    if fc.get("status") != status:
        await client.patch_status(FOREIGNCLUSTERS, name, {"status": status})


async def _ensure_node(client: Client, name: str, capacity: dict[str, str], *, cluster_id: str) -> None:
    body = {
        "metadata": {
            "name": name,
            "labels": {c.LABEL_TYPE: c.TYPE_VIRTUAL_NODE, c.LABEL_REMOTE_CLUSTER_ID: cluster_id},
        },
    }
    status = {
        "capacity": capacity,
        "allocatable": capacity,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}],
    }
    try:
        node = await client.get(NODES, name)
    except NotFoundError:
        node = await client.create(NODES, body)
    if (node.get("status") or {}).get("capacity") != capacity:
        await client.patch_status(NODES, name, {"status": status})


@dataclass
class OffloadingBehaviour:
    """The peered clusters (name -> their virtual node's labels), those whose twin namespace cannot be made
    (`failing`), and whether unoffloading never finishes (`stuck`)."""

    clusters: dict[str, dict[str, str]] = field(default_factory=lambda: {"milan": {"region": "north"}})
    failing: set[str] = field(default_factory=set)
    stuck: bool = False
    local_cluster_name: str = "rome"


@contextlib.asynccontextmanager
async def offloading_controller(
    client: Client, behaviour: OffloadingBehaviour | None = None
) -> AsyncIterator[OffloadingBehaviour]:
    """While the block runs, NamespaceOffloadings are answered as the consumer's controller would."""
    behaviour = behaviour or OffloadingBehaviour()
    task = asyncio.create_task(_run_offloadings(client, behaviour), name="runtime double: offloadings")
    try:
        yield behaviour
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _run_offloadings(client: Client, behaviour: OffloadingBehaviour) -> None:
    while True:
        for offloading in (await client.list(NAMESPACEOFFLOADINGS)).items:
            with contextlib.suppress(NotFoundError, ConflictError):
                await _offload(client, offloading, behaviour)
        await asyncio.sleep(0.05)


async def _offload(client: Client, offloading: dict[str, Any], behaviour: OffloadingBehaviour) -> None:
    meta = offloading["metadata"]
    namespace = meta["namespace"]
    if meta.get("deletionTimestamp"):
        if not behaviour.stuck:
            await client.patch(
                NAMESPACEOFFLOADINGS, meta["name"], {"metadata": {"finalizers": None}}, namespace=namespace
            )
        return
    if c.FINALIZER_NAMESPACEOFFLOADING not in (meta.get("finalizers") or []):
        await client.patch(
            NAMESPACEOFFLOADINGS,
            meta["name"],
            {"metadata": {"finalizers": [c.FINALIZER_NAMESPACEOFFLOADING]}},
            namespace=namespace,
        )
    spec = offloading.get("spec") or {}
    twin = twin_namespace_name(
        namespace,
        strategy=str(spec.get("namespaceMappingStrategy") or c.MAPPING_DEFAULT_NAME),
        local_cluster_name=behaviour.local_cluster_name,
        selected_name=str(spec.get("remoteNamespaceName") or ""),
    )
    maps = []
    for cluster, labels in behaviour.clusters.items():
        selected = offloading_forge.selects(
            offloading, {"metadata": {"name": f"liqo-{cluster}", "labels": labels}}
        )
        body = namespace_map(
            cluster, namespace=f"liqo-tenant-{cluster}", cluster_id=f"{cluster}-id", desired={}
        )
        if selected:
            body["spec"]["desiredMapping"] = {namespace: twin}
            failing = cluster in behaviour.failing
            body["status"] = {
                "currentMapping": {
                    namespace: {
                        "remoteNamespace": twin,
                        "phase": c.MAPPING_CREATION_LOOP_BACKOFF if failing else c.MAPPING_ACCEPTED,
                        **({"message": f"namespace {twin} already exists on {cluster}"} if failing else {}),
                    }
                }
            }
        maps.append(body)
    status = offloading_forge.offloading_status(
        offloading,
        maps,
        remote_namespace_name=twin,
        current=offloading.get("status"),
        now="2025-01-01T00:00:00Z",
    )
    if offloading_forge.status_differs(offloading.get("status"), status):
        await client.patch_status(NAMESPACEOFFLOADINGS, meta["name"], {"status": status}, namespace=namespace)
