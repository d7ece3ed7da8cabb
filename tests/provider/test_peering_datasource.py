"""`data "liqo_peering"`: a peering's status, found by provider name or cluster id; a missing one is an error."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from provider.datasources.peering import PeeringDataSource
from provider.kube import Kube
from provider.resources.peer import PeerResource
from runtime.api import constants as c
from runtime.api.kinds import CONFIGMAPS, NAMESPACES
from runtime.core import Client

from . import harness
from .harness import Provider
from .runtime_double import peering_controller

PROVIDER_ID = "0b4d2a6e-7f0e-4c55-9a43-46b4e1b9d6a1"


def config(**values: Any) -> dict[str, Any]:
    return harness.config(PeeringDataSource, **values)


def test_it_needs_a_name_or_an_id() -> None:
    source = PeeringDataSource(Provider(Kube.unavailable("not configured in this test")))

    [(summary, _, _)] = harness.read_data(source, config()).errors

    assert summary == "Missing cluster_name or cluster_id"


@pytest.fixture
async def peered(provider: Provider, with_crds: Client) -> Client:
    """A consumer peered with `milan` (through liqo_peer and a stand-in controller)."""
    await with_crds.create(NAMESPACES, {"metadata": {"name": "liqo"}})
    identity = {"metadata": {"name": c.CLUSTER_IDENTITY_CONFIGMAP}, "data": {c.IDENTITY_CLUSTER_ID: "me"}}
    await with_crds.create(CONFIGMAPS, identity, namespace="liqo")
    element = PeerResource(provider)
    cfg = harness.config(
        PeerResource,
        cluster_id=PROVIDER_ID,
        cluster_name="milan",
        cluster_authurl="https://127.0.0.1:18443",
        cluster_token="ab" * 32,
        cpu="1",
    )
    planned = harness.plan(element, cfg).state
    assert planned is not None
    async with peering_controller(with_crds):
        created = await asyncio.to_thread(harness.create, element, planned, cfg)
    assert created.errors == []
    return with_crds


@pytest.mark.parametrize("by", ["name", "id"])
async def test_the_status_of_a_peering(provider: Provider, peered: Client, by: str) -> None:
    wanted = config(cluster_name="milan") if by == "name" else config(cluster_id=PROVIDER_ID)

    outcome = await asyncio.to_thread(harness.read_data, PeeringDataSource(provider), wanted)

    assert outcome.errors == []
    assert outcome.state is not None
    state = outcome.state
    conditions = {(entry["module"], entry["type"]): entry["status"] for entry in state.pop("conditions")}
    assert state == {
        "cluster_name": "milan",
        "cluster_id": PROVIDER_ID,
        "id": "milan",
        "auth_url": "https://127.0.0.1:18443",
        "role": "Provider",
        "authentication_status": "Established",
        "offloading_status": "Established",
        "incoming_status": "None",
        "networking_status": "Established",
        "remote_version": "0.1.0",
        "virtual_nodes": ["liqo-milan"],
        "resources": {"cpu": "1"},
    }
    assert conditions == {
        ("", "Ready"): "True",
        ("authentication", "AuthIdentityControlPlaneStatus"): "Established",
        ("offloading", "ResourcesGranted"): "Established",
        ("offloading", "OffloadingVirtualNodeStatus"): "Ready",
        ("networking", "NetworkConnectionStatus"): "Established",
    }


async def test_a_missing_peering_is_an_error(provider: Provider, peered: Client) -> None:
    outcome = await asyncio.to_thread(
        harness.read_data, PeeringDataSource(provider), config(cluster_name="milan", cluster_id="another-id")
    )

    [(summary, detail, _)] = outcome.errors
    assert summary == "Peering not found"
    assert "has no ForeignCluster with name milan and cluster ID another-id" in detail
