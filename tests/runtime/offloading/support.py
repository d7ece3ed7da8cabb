"""What the offloading tests share: peering a consumer with providers, offloading a namespace, reading results."""

from __future__ import annotations

from typing import Any

from runtime.api import constants as c
from runtime.api.crds import NAMESPACEOFFLOADINGS
from runtime.api.kinds import NAMESPACES, NODES
from runtime.api.objects import JSON
from runtime.core import Client, NotFoundError
from runtime.forge import conditions
from runtime.forge.namespaceoffloading import namespace_offloading
from tests.runtime.peering.harness import Cluster, Clusters


async def get(client: Client, resource: Any, name: str, *, namespace: str | None = None) -> JSON | None:
    try:
        return await client.get(resource, name, namespace=namespace)
    except NotFoundError:
        return None


async def peered(clusters: Clusters, consumer: Cluster, *providers: Cluster) -> None:
    """Peer `consumer` with each provider and wait for their virtual nodes to be Ready."""
    for provider in providers:
        await clusters.peer(consumer, provider)
    for provider in providers:

        async def ready(name: str = f"liqo-{provider.name}") -> bool:
            node = await get(consumer.admin, NODES, name)
            return conditions.is_true(((node or {}).get("status") or {}).get("conditions"), "Ready")

        await clusters.eventually(ready, within=60)


async def offload(cluster: Cluster, namespace: str, *, create_namespace: bool = True, **spec: Any) -> JSON:
    """Create `namespace` (unless told not to) and its NamespaceOffloading, as `liqo_offload` writes it."""
    if create_namespace:
        await cluster.admin.create(NAMESPACES, {"metadata": {"name": namespace}})
    return await cluster.admin.create(NAMESPACEOFFLOADINGS, namespace_offloading(namespace, **spec))


async def offloading(cluster: Cluster, namespace: str) -> JSON | None:
    return await get(cluster.admin, NAMESPACEOFFLOADINGS, c.NAMESPACE_OFFLOADING_NAME, namespace=namespace)


async def phase(cluster: Cluster, namespace: str, wanted: str) -> JSON | None:
    """The NamespaceOffloading once its status speaks of its generation in phase `wanted`."""
    found = await offloading(cluster, namespace)
    status = (found or {}).get("status") or {}
    if found is None or status.get("observedGeneration") != found["metadata"].get("generation"):
        return None
    return found if status.get("offloadingPhase") == wanted else None


def cluster_conditions(found: JSON, cluster: str) -> dict[str, tuple[str, str]]:
    """One cluster's conditions: type -> (status, reason)."""
    entries = ((found.get("status") or {}).get("remoteNamespacesConditions") or {}).get(cluster) or []
    return {str(e["type"]): (str(e["status"]), str(e.get("reason"))) for e in entries}
