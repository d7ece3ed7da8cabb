"""The components' dynamic providers against two playground clusters, called as Pulumi's dynamic provider
server calls them (synchronously, on a worker thread): the quick start, drift made by hand, changes in place,
and the teardown, with the provider cluster gone during delete.

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
from pulumi_liqo.providers.base import LiqoError
from pulumi_liqo.providers.install import DiscoveryProvider, RuntimeProvider
from pulumi_liqo.providers.peering import PeeringProvider
from pulumi_liqo.providers.token import TokenProvider
from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS
from runtime.api.kinds import NODES, SECRETS, SERVICES
from runtime.core import NotFoundError
from runtime.forge.install import InstallOptions
from runtime.operations import install

pytestmark = [pytest.mark.slow]

JSON = dict[str, Any]


def connection(cluster: Cluster, **timeouts: float) -> JSON:
    return {"kubeconfig": cluster.kubeconfig.read_text(), "context": None, "timeouts": timeouts}


async def call(method: Any, *args: Any) -> Any:
    """A provider method, on a thread as the dynamic provider server runs it."""
    return await asyncio.to_thread(method, *args)


async def install_runtime(cluster: Cluster) -> JSON:
    """What an Install does: discovery, its objects applied (pulumi_kubernetes' part), the readiness wait."""
    props = {**connection(cluster), "namespace": c.DEFAULT_NAMESPACE, "pod_cidr": None, "service_cidr": None}
    discovered = (await call(DiscoveryProvider().create, props)).outs
    options = InstallOptions(
        cluster_id=discovered["cluster_id"],
        cluster_name=cluster.name,
        api_server_url=discovered["api_server_url"],
        pod_cidr=discovered["discovered_pod_cidr"],
        service_cidr=discovered["discovered_service_cidr"],
        webhook_mode="url",
    )
    async with cluster.client() as api:
        await install.apply(api, options, field_manager=c.FIELD_MANAGER_PULUMI, progress=install.Progress())
    runtime_props = {**connection(cluster), "options": asdict(options), "force": False}
    created = await call(RuntimeProvider().create, runtime_props)
    assert created.id == c.DEFAULT_NAMESPACE
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
        "cpu": "1",
        "memory": None,
        "pods": None,
        "ephemeral_storage": None,
        "extended_resources": {},
        "node_labels": {"example.com/tier": "burst"},
        "networking_disabled": False,
    }
    peering = await call(peerings.create, peer_props)
    assert peering.id == "milan"
    assert peering.outs["virtual_node"] == "liqo-milan"
    assert peering.outs["offloading_status"] == "Established"
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
    assert peerings.diff(peering.id, peering.outs, {**peer_props, "cpu": "2"}).replaces == []

    # a change applied in place: new node labels reach the virtual node
    changed = {**peer_props, "node_labels": {"example.com/tier": "gold"}}
    updated = await call(peerings.update, peering.id, drifted.outs, changed)
    assert updated.outs["node_labels"] == {"example.com/tier": "gold"}
    async with rome.client() as api:
        node = await api.get(NODES, "liqo-milan")
        assert node["metadata"]["labels"]["example.com/tier"] == "gold"

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

    # an Install in use is not uninstalled (without force)
    with pytest.raises(LiqoError, match=r"still in use: .*ForeignCluster milan"):
        await call(runtimes.delete, c.DEFAULT_NAMESPACE, rome_runtime)

    # teardown with the provider cluster gone: the unpeer ends within its bound, the token is dropped with a warning
    await milan.stop()
    with caplog.at_level(logging.WARNING):
        await call(peerings.delete, peering.id, updated.outs)
        await call(tokens.delete, token.id, issued)
    async with rome.client() as api:
        with pytest.raises(NotFoundError):
            await api.get(FOREIGNCLUSTERS, "milan")
    assert "the cluster cannot be reached" in caplog.text
    await call(runtimes.delete, c.DEFAULT_NAMESPACE, rome_runtime)
