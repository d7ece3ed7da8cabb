"""The components' dynamic providers against two playground clusters, called as Pulumi's dynamic provider
server calls them (synchronously, on a worker thread): the quick start (install both, generate, peer,
offload, deploy, pods Running on the virtual node), no change planned right after each create, drift made
by hand, changes in place, a failed offload rolled back, and the teardown, with the provider cluster gone
during delete.

What pulumi_kubernetes does in a real run (applying the install manifests as resources) is
done here by `runtime.operations.install.apply` with the same objects; the run through the
real engine is `tests/examples/test_pulumi_engine.py`.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import asdict
from typing import Any

import pytest

from playground.cluster import Cluster
from playground.testing import Playground
from pulumi_liqo import _cluster
from pulumi_liqo._cluster import cluster_config
from pulumi_liqo.providers.base import LiqoError
from pulumi_liqo.providers.install import DiscoveryProvider, RuntimeProvider, install_options
from pulumi_liqo.providers.offload import OffloadingProvider
from pulumi_liqo.providers.peering import PeeringProvider
from pulumi_liqo.providers.token import TokenProvider
from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS, NAMESPACEOFFLOADINGS
from runtime.api.kinds import DEPLOYMENTS, NAMESPACES, NODES, PODS, SECRETS, SERVICES
from runtime.api.objects import JSON
from runtime.core import Client, NotFoundError
from runtime.forge.install import InstallOptions
from runtime.forge.nodes import names_loopback
from runtime.operations import install

from .mocks import engine_state

pytestmark = [pytest.mark.slow]

#: how long the offloaded pods may take to run on the virtual node (a bound, not a measure)
POD_SECONDS = 180.0
#: a Deployment whose pods must run on a virtual node (as the quick start's)
REMOTE_ONLY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "liqo.io/type", "operator": "In", "values": ["virtual-node"]}]}
            ]
        }
    }
}


def connection(cluster: Cluster, **timeouts: float) -> JSON:
    return {"kubeconfig": cluster.kubeconfig.read_text(), "context": None, "timeouts": timeouts}


async def call(method: Any, *args: Any) -> Any:
    """A provider method, on a thread as the dynamic provider server runs it."""
    return await asyncio.to_thread(method, *args)


def unchanged(provider: Any, id_: str, outs: JSON, props: JSON) -> bool:
    """Whether the engine would plan nothing right after: the state through the wire against the same inputs."""
    return not provider.diff(id_, engine_state(outs), engine_state(props)).changes


async def running_on(api: Client, namespace: str, node: str, replicas: int) -> list[str]:
    """The names of `replicas` pods Running on `node` in `namespace` (bounded wait; AssertionError past it)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + POD_SECONDS
    while True:
        pods = (await api.list(PODS, namespace=namespace)).items
        running = [
            pod["metadata"]["name"]
            for pod in pods
            if pod["spec"].get("nodeName") == node and (pod.get("status") or {}).get("phase") == "Running"
        ]
        if len(running) == replicas:
            return running
        if loop.time() > deadline:
            raise AssertionError(f"{namespace}: {len(running)}/{replicas} pods Running on {node}")
        await asyncio.sleep(0.5)


async def install_runtime(cluster: Cluster) -> JSON:
    """What an Install does: discovery, its objects applied (pulumi_kubernetes' part), the readiness wait."""
    props = {**connection(cluster), "namespace": c.DEFAULT_NAMESPACE, "pod_cidr": None, "service_cidr": None}
    discovered = (await call(DiscoveryProvider().create, props)).outs
    assert unchanged(DiscoveryProvider(), c.DEFAULT_NAMESPACE, discovered, props)
    # the kubeconfig names 127.0.0.1, which the other cluster's pods cannot reach: the control-plane node's
    # address is what consumers get, as with liqo_install
    assert names_loopback(_cluster.host(props)) and not names_loopback(
        discovered["discovered_api_server_url"]
    )
    options = InstallOptions(
        cluster_id=discovered["cluster_id"],
        cluster_name=cluster.name,
        api_server_url=discovered["discovered_api_server_url"],
        pod_cidr=discovered["discovered_pod_cidr"],
        service_cidr=discovered["discovered_service_cidr"],
    )
    async with cluster.client() as api:
        await install.apply(api, options, field_manager=c.FIELD_MANAGER_PULUMI, progress=install.Progress())
    runtime_props = {
        **connection(cluster),
        "namespace": c.DEFAULT_NAMESPACE,
        "options": asdict(options),
        "force": False,
    }
    created = await call(RuntimeProvider().create, runtime_props)
    assert created.id == c.DEFAULT_NAMESPACE
    assert unchanged(RuntimeProvider(), created.id, created.outs, runtime_props)
    assert created.outs["cluster_id"] == options.cluster_id
    assert created.outs["cluster_name"] == cluster.name
    assert created.outs["auth_url"].startswith("https://")
    return dict(created.outs)


async def test_quick_start_drift_and_teardown_with_the_provider_gone(
    playground: Playground, caplog: pytest.LogCaptureFixture
) -> None:
    rome, milan = await playground.up("rome", "milan")
    rome_runtime, milan_runtime = await asyncio.gather(install_runtime(rome), install_runtime(milan))

    # a second discovery finds the cluster id the install left: a reinstall keeps it
    again = await call(
        DiscoveryProvider().create,
        {**connection(milan), "namespace": c.DEFAULT_NAMESPACE, "pod_cidr": None, "service_cidr": None},
    )
    assert again.outs["cluster_id"] == milan_runtime["cluster_id"]

    # Generate on milan
    tokens = TokenProvider()
    token_props = {**connection(milan), "namespace": c.DEFAULT_NAMESPACE, "expires_in": ""}
    token = await call(tokens.create, token_props)
    issued = token.outs
    assert issued["cluster_id"] == milan_runtime["cluster_id"]
    assert issued["auth_ep"] == milan_runtime["auth_url"]
    assert len(issued["local_token"]) == 64
    assert unchanged(tokens, token.id, issued, token_props)
    assert (await call(tokens.read, token.id, issued)).id == token.id

    # Peer rome with it
    peerings = PeeringProvider()
    peer_props = {
        **connection(rome, delete=30.0),
        "cluster_id": issued["cluster_id"],
        "cluster_name": issued["cluster_name"],
        "cluster_authurl": issued["auth_ep"],
        "cluster_token": issued["local_token"],
        "namespace": c.DEFAULT_NAMESPACE,
        # the quick start's amounts: room for the offloaded pods below
        "cpu": "2",
        "memory": "4Gi",
        "pods": "20",
        "ephemeral_storage": None,
        "extended_resources": {},
        "node_labels": {"example.com/tier": "burst"},
        "networking_disabled": False,
        "pod_security": "baseline",
    }
    # a create that fails unpeers what it wrote: a token milan never issued is refused, and the next
    # `pulumi up` tries again from nothing (a ForeignCluster left behind would make it refuse the name)
    with pytest.raises(LiqoError, match=r"(?s)Peering with milan failed.*ForeignCluster milan was removed"):
        await call(peerings.create, {**peer_props, "cluster_token": "0" * 64})
    async with rome.client() as api:
        with pytest.raises(NotFoundError):
            await api.get(FOREIGNCLUSTERS, "milan")
    peering = await call(peerings.create, peer_props)
    assert peering.id == "milan"
    assert peering.outs["virtual_node"] == "liqo-milan"
    assert peering.outs["offloading_status"] == "Established"
    assert unchanged(peerings, peering.id, peering.outs, peer_props)
    async with rome.client() as api:
        node = await api.get(NODES, "liqo-milan")
        assert node["metadata"]["labels"]["example.com/tier"] == "burst"

    # nothing changed: read gives back what was applied, and diff sees no change
    read = await call(peerings.read, peering.id, peering.outs)
    assert {key: read.outs[key] for key in peer_props} == {key: peering.outs[key] for key in peer_props}
    assert not peerings.diff(peering.id, read.outs, peer_props).changes

    # drift by hand: the node labels edited on the ForeignCluster; read shows it, diff plans an update in place
    async with rome.client() as api:
        await api.patch(
            FOREIGNCLUSTERS,
            "milan",
            {"spec": {"nodeLabels": {"example.com/tier": "edited"}}},
            field_manager="kubectl",
        )
    drifted = await call(peerings.read, peering.id, peering.outs)
    assert drifted.outs["node_labels"] == {"example.com/tier": "edited"}
    plan = peerings.diff(peering.id, drifted.outs, peer_props)
    assert plan.changes and plan.replaces == []
    # identity changes replace the peering; amounts, labels and tokens change in place
    assert peerings.diff(peering.id, peering.outs, {**peer_props, "cluster_name": "paris"}).replaces == [
        "cluster_name"
    ]
    assert peerings.diff(peering.id, peering.outs, {**peer_props, "cpu": "3"}).replaces == []

    # a change applied in place: new node labels reach the virtual node
    changed = {**peer_props, "node_labels": {"example.com/tier": "gold"}}
    updated = await call(peerings.update, peering.id, drifted.outs, changed)
    assert updated.outs["node_labels"] == {"example.com/tier": "gold"}
    async with rome.client() as api:
        node = await api.get(NODES, "liqo-milan")
        assert node["metadata"]["labels"]["example.com/tier"] == "gold"

    # Offload liqo-demo (made first, as the example's Namespace resource does), then deploy there: the pods
    # run on the virtual node, that is on milan in the twin namespace
    async with rome.client() as api:
        await api.create(NAMESPACES, {"metadata": {"name": "liqo-demo"}})
    offloadings = OffloadingProvider()
    offload_props = {
        **connection(rome),
        "namespace": "liqo-demo",
        "pod_offloading_strategy": c.POD_OFFLOADING_LOCAL_AND_REMOTE,
        "namespace_mapping_strategy": c.MAPPING_DEFAULT_NAME,
        "remote_namespace_name": "",
        "cluster_selector_terms": [],
    }
    offloaded = await call(offloadings.create, offload_props)
    assert offloaded.id == "liqo-demo"
    assert offloaded.outs["offloading_phase"] == c.PHASE_READY
    assert offloaded.outs["twin_namespace_name"] == "liqo-demo-rome"
    assert offloaded.outs["cluster_status"]["milan"]["ready"] is True
    assert unchanged(offloadings, offloaded.id, offloaded.outs, offload_props)
    async with rome.client() as api:
        await api.create(
            DEPLOYMENTS,
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "nginx"},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"app": "nginx"}},
                    "template": {
                        "metadata": {"labels": {"app": "nginx"}},
                        "spec": {
                            "affinity": REMOTE_ONLY,
                            "containers": [{"name": "nginx", "image": "nginx"}],
                        },
                    },
                },
            },
            namespace="liqo-demo",
        )
        await running_on(api, "liqo-demo", "liqo-milan", 2)
    async with milan.client() as api:
        await running_on(api, "liqo-demo-rome", "milan-control-plane", 2)

    # drift by hand: the pod offloading strategy edited; read shows it, diff plans an update in place
    async with rome.client() as api:
        await api.patch(
            NAMESPACEOFFLOADINGS,
            "offloading",
            {"spec": {"podOffloadingStrategy": "Remote"}},
            namespace="liqo-demo",
            field_manager="kubectl",
        )
    drifted_offload = await call(offloadings.read, offloaded.id, offloaded.outs)
    assert drifted_offload.outs["pod_offloading_strategy"] == "Remote"
    plan = offloadings.diff(offloaded.id, engine_state(drifted_offload.outs), engine_state(offload_props))
    assert plan.changes and plan.replaces == []
    renamed = {**offload_props, "namespace_mapping_strategy": c.MAPPING_ENFORCE_SAME_NAME}
    assert offloadings.diff(offloaded.id, offloaded.outs, renamed).replaces == ["namespace_mapping_strategy"]
    # the program's value back, in place
    restored = await call(offloadings.update, offloaded.id, drifted_offload.outs, offload_props)
    assert restored.outs["pod_offloading_strategy"] == c.POD_OFFLOADING_LOCAL_AND_REMOTE
    async with rome.client() as api:
        live = await api.get(NAMESPACEOFFLOADINGS, "offloading", namespace="liqo-demo")
        assert live["spec"]["podOffloadingStrategy"] == c.POD_OFFLOADING_LOCAL_AND_REMOTE

    # a create that fails unoffloads what it wrote: milan has a namespace `clash` that is not a twin, so
    # EnforceSameName fails there, and the next `pulumi up` can try again from nothing
    async with milan.client() as api:
        await api.create(NAMESPACES, {"metadata": {"name": "clash"}})
    async with rome.client() as api:
        await api.create(NAMESPACES, {"metadata": {"name": "clash"}})
    clash = {**offload_props, "namespace": "clash", "namespace_mapping_strategy": c.MAPPING_ENFORCE_SAME_NAME}
    with pytest.raises(LiqoError, match=r"(?s)failed.*milan.*was removed, so the next `pulumi up`"):
        await call(offloadings.create, clash)
    async with rome.client() as api:
        with pytest.raises(NotFoundError):
            await api.get(NAMESPACEOFFLOADINGS, "offloading", namespace="clash")

    # unoffload: the twin namespace goes, the pods come home
    await call(offloadings.delete, offloaded.id, restored.outs)
    async with rome.client() as api:
        with pytest.raises(NotFoundError):
            await api.get(NAMESPACEOFFLOADINGS, "offloading", namespace="liqo-demo")
        assert (await call(offloadings.read, offloaded.id, restored.outs)).id == ""
    async with milan.client() as api:
        try:
            twin = await api.get(NAMESPACES, "liqo-demo-rome")
        except NotFoundError:
            pass
        else:
            assert twin["metadata"].get("deletionTimestamp"), "the twin namespace outlives its offloading"

    # drift on the provider: the token Secret deleted by hand reads as gone (the next up issues another)
    async with milan.client() as api:
        await api.delete(SECRETS, token.id, namespace=c.DEFAULT_NAMESPACE)
    assert (await call(tokens.read, token.id, issued)).id == ""

    # drift on an install: an object deleted by hand is reported missing, and diff plans an update
    async with rome.client() as api:
        await api.delete(SERVICES, "liqo-webhook", namespace=c.DEFAULT_NAMESPACE)
    runtimes = RuntimeProvider()
    observed = await call(runtimes.read, c.DEFAULT_NAMESPACE, rome_runtime)
    assert observed.outs["missing_objects"] == [f"Service {c.DEFAULT_NAMESPACE}/liqo-webhook"]
    assert runtimes.diff(c.DEFAULT_NAMESPACE, observed.outs, rome_runtime).changes
    # `pulumi up` puts it back (pulumi_kubernetes' part): the API server calls the webhook through it again
    async with rome.client() as api:
        await install.apply(
            api,
            install_options(rome_runtime),
            field_manager=c.FIELD_MANAGER_PULUMI,
            progress=install.Progress(),
        )
    assert (await call(runtimes.read, c.DEFAULT_NAMESPACE, rome_runtime)).outs["missing_objects"] == []

    # an Install in use is not uninstalled (without force)
    with pytest.raises(LiqoError, match=r"still in use: .*ForeignCluster milan"):
        await call(runtimes.delete, c.DEFAULT_NAMESPACE, rome_runtime)

    # teardown with the provider cluster gone: the unpeer ends within its bound; the token stays until forced,
    # then is dropped with a warning
    await milan.stop()
    with caplog.at_level(logging.WARNING):
        await call(peerings.delete, peering.id, updated.outs)
        with pytest.raises(LiqoError, match="cannot delete it, the cluster cannot be reached"):
            await call(tokens.delete, token.id, issued)
        await call(tokens.delete, token.id, {**issued, "force": True})
    async with rome.client() as api:
        with pytest.raises(NotFoundError):
            await api.get(FOREIGNCLUSTERS, "milan")
    milan_label = cluster_config(milan.kubeconfig.read_text()).cluster_label
    [dropped] = [
        record.getMessage()
        for record in caplog.records
        if record.levelno == logging.WARNING and record.getMessage().startswith("Generate ")
    ]
    assert dropped == (
        f"Generate {c.DEFAULT_NAMESPACE}/{token.id}: {_capital(milan_label)} cannot be reached: the connection"
        " was refused (nothing listens there). Check that it is running and that its address (host and "
        f"port) is right. So the token Secret {c.DEFAULT_NAMESPACE}/{token.id} was not deleted; it is removed from "
        "the state, as force is set. If the cluster comes back, delete that Secret to revoke the token."
    )
    await call(runtimes.delete, c.DEFAULT_NAMESPACE, rome_runtime)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
