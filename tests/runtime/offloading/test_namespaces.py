"""Namespace offloading on emulated clusters: NamespaceOffloading in, twin namespaces on the selected providers.

One consumer (rome) peers with two providers (milan, region north; naples, region south).
Every cluster runs the runtime in-process (`tests/runtime/peering/harness.py`, webhook
included); the tests write only what a user (or `liqo_offload`) writes: a namespace and
its NamespaceOffloading.
"""

from __future__ import annotations

import pytest

from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS, NAMESPACEMAPS, NAMESPACEOFFLOADINGS, SHADOWPODS
from runtime.api.kinds import NAMESPACES, ROLEBINDINGS
from runtime.controllers.core.objects import kubeconfig_of
from runtime.core import Client, ForbiddenError, InvalidError
from runtime.forge.namespaces import shortened
from tests.runtime.peering.harness import Cluster, Clusters

from .support import cluster_conditions, get, offload, offloading, peered, phase

NORTH = {"topology.liqo.io/region": "north"}
SOUTH = {"topology.liqo.io/region": "south"}


def region(name: str) -> list[dict[str, object]]:
    return [{"matchExpressions": [{"key": "topology.liqo.io/region", "operator": "In", "values": [name]}]}]


async def three(clusters: Clusters) -> tuple[Cluster, Cluster, Cluster]:
    rome = await clusters.cluster("rome")
    milan = await clusters.cluster("milan", labels=NORTH)
    naples = await clusters.cluster("naples", labels=SOUTH)
    await peered(clusters, rome, milan, naples)
    return rome, milan, naples


async def consumer_client(consumer: Cluster, provider: Cluster) -> Client:
    """A client of `provider` with the credential `consumer` holds for it."""
    from runtime.api.kinds import SECRETS

    secret = await consumer.admin.get(
        SECRETS, f"liqo-credential-{provider.name}", namespace=f"liqo-tenant-{provider.name}"
    )
    config = kubeconfig_of(secret)
    assert config is not None
    client = await Client.from_kubeconfig_dict(config)
    consumer.clients.append(client)
    return client


@pytest.mark.slow
async def test_the_selector_picks_the_clusters_that_get_a_twin_namespace(clusters: Clusters) -> None:
    rome, milan, naples = await three(clusters)
    await offload(
        rome, "demo", namespace_mapping_strategy="EnforceSameName", cluster_selector_terms=region("south")
    )
    found = await clusters.eventually(lambda: phase(rome, "demo", c.PHASE_READY), within=30)
    assert found["status"]["remoteNamespaceName"] == "demo"
    assert cluster_conditions(found, "naples") == {
        "OffloadingRequired": ("True", "ClusterSelected"),
        "Ready": ("True", "NamespaceCreated"),
    }
    assert cluster_conditions(found, "milan") == {"OffloadingRequired": ("False", "ClusterNotSelected")}
    twin = await get(naples.admin, NAMESPACES, "demo")
    assert twin is not None
    assert twin["metadata"]["labels"][c.LABEL_ORIGIN_CLUSTER_ID] == rome.cluster_id
    assert await get(milan.admin, NAMESPACES, "demo") is None
    namespace = await rome.admin.get(NAMESPACES, "demo")
    assert namespace["metadata"]["labels"][c.LABEL_SCHEDULING_ENABLED] == "true"

    # least privilege: the consumer works in its twin namespace and cannot make namespaces itself
    remote = await consumer_client(rome, naples)
    binding = await naples.admin.get(ROLEBINDINGS, "liqo-tenant-rome", namespace="demo")
    assert binding["roleRef"]["name"] == "liqo-remote-offloading"
    assert (await remote.list(SHADOWPODS, namespace="demo")).items == []
    with pytest.raises(ForbiddenError):
        await remote.create(NAMESPACES, {"metadata": {"name": "rome-made"}})
    with pytest.raises(ForbiddenError):
        await remote.list(SHADOWPODS, namespace="default")

    # moving the selector moves the twin namespace
    await rome.admin.patch(
        NAMESPACEOFFLOADINGS,
        "offloading",
        {"spec": {"clusterSelector": {"nodeSelectorTerms": region("north")}}},
        namespace="demo",
    )

    async def moved() -> bool:
        found = await phase(rome, "demo", c.PHASE_READY)
        return (
            found is not None
            and cluster_conditions(found, "milan").get("Ready") == ("True", "NamespaceCreated")
            and await get(naples.admin, NAMESPACES, "demo") is None
        )

    await clusters.eventually(moved, within=60)
    assert await get(milan.admin, NAMESPACES, "demo") is not None

    # the mapping strategy is immutable, and the webhook says why
    with pytest.raises(InvalidError) as refused:
        await rome.admin.patch(
            NAMESPACEOFFLOADINGS,
            "offloading",
            {"spec": {"namespaceMappingStrategy": "DefaultName"}},
            namespace="demo",
        )
    assert "the mapping strategy is immutable" in refused.value.message
    assert "unoffload the namespace" in refused.value.message

    # unoffloading removes the twin namespaces, the label and the NamespaceOffloading
    await rome.admin.delete(NAMESPACEOFFLOADINGS, "offloading", namespace="demo")

    async def unoffloaded() -> bool:
        namespace = await rome.admin.get(NAMESPACES, "demo")
        return (
            await offloading(rome, "demo") is None
            and await get(milan.admin, NAMESPACES, "demo") is None
            and c.LABEL_SCHEDULING_ENABLED not in (namespace["metadata"].get("labels") or {})
        )

    await clusters.eventually(unoffloaded, within=60)


@pytest.mark.slow
async def test_default_names_clashes_and_peerings_that_come_and_go(clusters: Clusters) -> None:
    rome, milan, naples = await three(clusters)
    # EnforceSameName never adopts a namespace that exists on the provider
    await naples.admin.create(NAMESPACES, {"metadata": {"name": "shop"}})
    await offload(
        rome, "shop", namespace_mapping_strategy="EnforceSameName", cluster_selector_terms=region("south")
    )
    failed = await clusters.eventually(lambda: phase(rome, "shop", c.PHASE_ALL_FAILED), within=30)
    assert cluster_conditions(failed, "naples")["Ready"] == ("False", "CreationLoopBackOff")
    message = failed["status"]["remoteNamespacesConditions"]["naples"][1]["message"]
    assert "already exists on this cluster and is not a twin namespace" in message
    shop = await naples.admin.get(NAMESPACES, "shop")
    assert c.ANNOTATION_NAMESPACE_MAP not in (shop["metadata"].get("annotations") or {})

    # DefaultName, every cluster: <namespace>-<consumer name>, shortened with a hash when too long
    long_name = "a-namespace-whose-name-is-long-enough-to-overflow-with-a-suffix"
    await offload(rome, long_name)
    found = await clusters.eventually(lambda: phase(rome, long_name, c.PHASE_READY), within=30)
    twin = shortened(f"{long_name}-rome")
    assert len(twin) == 63 and twin != f"{long_name}-rome"[:63]
    assert found["status"]["remoteNamespaceName"] == twin
    for provider in (milan, naples):
        assert await get(provider.admin, NAMESPACES, twin) is not None

    # a new peering that matches gets the namespace too; its unpeer takes it away
    venice = await clusters.cluster("venice", labels=SOUTH)
    await peered(clusters, rome, venice)

    async def on_venice() -> bool:
        found = await phase(rome, long_name, c.PHASE_READY)
        return found is not None and "venice" in found["status"]["remoteNamespacesConditions"]

    await clusters.eventually(on_venice, within=60)
    assert await get(venice.admin, NAMESPACES, twin) is not None
    await rome.admin.delete(FOREIGNCLUSTERS, "venice")

    async def venice_gone() -> bool:
        found = await phase(rome, long_name, c.PHASE_READY)
        return (
            found is not None
            and "venice" not in found["status"]["remoteNamespacesConditions"]
            and await get(venice.admin, NAMESPACES, twin) is None
        )

    await clusters.eventually(venice_gone, within=60)

    async def no_map_left() -> bool:
        return not (await venice.admin.list(NAMESPACEMAPS)).items

    # the provider's copy of the map goes with the tenant
    await clusters.eventually(no_map_left, within=30)
