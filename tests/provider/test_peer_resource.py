"""`liqo_peer`: validation and planning, then create, read, update, import and destroy against an API server
emulator where a stand-in for the consumer's ForeignCluster controller answers."""

from __future__ import annotations

import asyncio
import base64
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tf.types import Unknown

from provider.kube import Kube
from provider.resources.peer import PeerResource
from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS
from runtime.api.kinds import CONFIGMAPS, NAMESPACES, NODES, SECRETS
from runtime.core import Client, NotFoundError
from runtime.operations import peering as foreigncluster

from . import harness
from .harness import Provider
from .runtime_double import DEFAULT_SHARE, PeeringBehaviour, peering_controller

PROVIDER_ID = "0b4d2a6e-7f0e-4c55-9a43-46b4e1b9d6a1"
CONSUMER_ID = "5d0c3a0e-1111-4c55-9a43-46b4e1b9d6a2"
TOKEN = "ab" * 32
AUTH_URL = "https://127.0.0.1:18443"


def resource(provider: Provider | None = None) -> PeerResource:
    return PeerResource(provider or Provider(Kube.unavailable("not configured in this test")))


def config(**values: Any) -> dict[str, Any]:
    base = {
        "cluster_id": PROVIDER_ID,
        "cluster_name": "milan",
        "cluster_authurl": AUTH_URL,
        "cluster_token": TOKEN,
    }
    return harness.config(PeerResource, **{**base, **values})


# validation and planning


@pytest.mark.parametrize(
    ("values", "summary", "path"),
    [
        ({"cluster_id": "milan-id"}, "Invalid cluster_id", ["cluster_id"]),
        ({"cluster_name": "Milan"}, "Invalid cluster name", ["cluster_name"]),
        ({"cluster_authurl": "http://127.0.0.1:18443"}, "Invalid authentication URL", ["cluster_authurl"]),
        ({"cluster_authurl": "https://"}, "Invalid authentication URL", ["cluster_authurl"]),
        ({"cluster_token": "not-a-token"}, "Invalid cluster_token", ["cluster_token"]),
        ({"cpu": "two"}, "Invalid cpu", ["cpu"]),
        ({"memory": "-1Gi"}, "Invalid memory", ["memory"]),
        ({"ephemeral_storage": "10Zi"}, "Invalid ephemeral-storage", ["ephemeral_storage"]),
        ({"extended_resources": {"cpu": "2"}}, "Use the dedicated attribute", ["extended_resources", "cpu"]),
        ({"extended_resources": {"-gpu": "1"}}, "Invalid resource name", ["extended_resources", "-gpu"]),
        (
            {"extended_resources": {"example.com/gpu": "x"}},
            "Invalid example.com/gpu",
            ["extended_resources", "example.com/gpu"],
        ),
        ({"node_labels": {"zone": "a b"}}, "Invalid label value", ["node_labels", "zone"]),
        ({"node_labels": {"bad/key/x": "a"}}, "Invalid label key", ["node_labels", "bad/key/x"]),
        ({"pod_security": "privileged"}, "Invalid pod_security", ["pod_security"]),
        ({"auth_key_fingerprint": "sha256:ABC"}, "Invalid auth_key_fingerprint", ["auth_key_fingerprint"]),
        ({"pod_security": "Restricted"}, "Invalid pod_security", ["pod_security"]),
    ],
    ids=lambda value: str(value)[:30] if isinstance(value, dict) else None,
)
def test_an_invalid_input_is_an_error_on_its_attribute(
    values: dict[str, Any], summary: str, path: list[Any]
) -> None:
    [(got, _, got_path)] = harness.validate(resource(), config(**values)).errors

    assert (got, got_path) == (summary, path)


def test_the_liqo_guide_inputs_from_liqo_generate_are_valid_while_unknown() -> None:
    cfg = config(cluster_id=Unknown, cluster_name=Unknown, cluster_authurl=Unknown, cluster_token=Unknown)

    assert harness.validate(resource(), cfg).errors == []
    planned = harness.plan(resource(), cfg).state
    assert planned is not None
    assert planned["virtual_node"] is Unknown


def test_a_create_plan_knows_the_virtual_node_and_id() -> None:
    planned = harness.plan(resource(), config()).state

    assert planned is not None
    assert (planned["id"], planned["virtual_node"], planned["namespace"]) == ("milan", "liqo-milan", "liqo")
    assert planned["offloading_status"] is Unknown


def applied_state(**values: Any) -> dict[str, Any]:
    return {
        **config(),
        "id": "milan",
        "namespace": "liqo",
        "virtual_node": "liqo-milan",
        "authentication_status": "Established",
        "offloading_status": "Established",
        "networking_status": "None",
        "remote_version": "0.1.0",
        **values,
    }


@pytest.mark.parametrize(
    ("change", "replace"),
    [
        ({}, []),
        ({"cpu": "2"}, []),
        ({"node_labels": {"zone": "b"}}, []),
        ({"cluster_token": "cd" * 32}, []),
        ({"cluster_name": "rome"}, [["cluster_name"]]),
        ({"cluster_id": CONSUMER_ID}, [["cluster_id"]]),
        ({"cluster_authurl": "https://127.0.0.9:18443"}, [["cluster_authurl"]]),
    ],
    ids=["nothing", "cpu", "labels", "token", "name", "id", "authurl"],
)
def test_resources_labels_and_token_change_in_place_the_identity_replaces(
    change: dict[str, Any], replace: list[list[str]]
) -> None:
    prior = applied_state()

    outcome = harness.plan(resource(), config(**change), prior=prior)

    assert outcome.replace == replace
    assert outcome.state is not None
    if not change:
        assert outcome.state == prior, "a plan right after apply is empty"
    else:
        assert outcome.state["virtual_node"] == ("liqo-rome" if "cluster_name" in change else "liqo-milan")


# against a cluster


@pytest.fixture
async def consumer(with_crds: Client) -> Client:
    """A cluster where the runtime is installed (CRDs and identity), as liqo_peer needs it."""
    await with_crds.create(NAMESPACES, {"metadata": {"name": "liqo"}})
    identity = {
        "metadata": {"name": c.CLUSTER_IDENTITY_CONFIGMAP},
        "data": {c.IDENTITY_CLUSTER_ID: CONSUMER_ID, c.IDENTITY_CLUSTER_NAME: "rome"},
    }
    await with_crds.create(CONFIGMAPS, identity, namespace="liqo")
    return with_crds


@pytest.fixture
async def controller(consumer: Client) -> AsyncIterator[PeeringBehaviour]:
    async with peering_controller(consumer) as behaviour:
        yield behaviour


async def peer(provider: Provider, **values: Any) -> harness.Outcome:
    element = resource(provider)
    cfg = config(**values)
    planned = harness.plan(element, cfg).state
    assert planned is not None
    return await asyncio.to_thread(harness.create, element, planned, cfg)


async def test_create_waits_for_a_ready_virtual_node_with_the_capacity_asked_for(
    provider: Provider, consumer: Client, controller: PeeringBehaviour
) -> None:
    outcome = await peer(
        provider,
        cpu="2",
        memory="4Gi",
        extended_resources={"example.com/gpu": "1"},
        node_labels={"zone": "a"},
    )

    assert outcome.errors == []
    assert outcome.state is not None
    assert outcome.state["authentication_status"] == "Established"
    assert outcome.state["offloading_status"] == "Established"
    assert (outcome.state["virtual_node"], outcome.state["remote_version"]) == ("liqo-milan", "0.1.0")
    fc = await consumer.get(FOREIGNCLUSTERS, "milan")
    assert fc["spec"] == {
        "clusterID": PROVIDER_ID,
        "clusterName": "milan",
        "peeringType": "OutOfBand",
        "authURL": AUTH_URL,
        "tokenSecretRef": {"name": "liqo-token-milan", "namespace": "liqo"},
        "outgoingPeeringEnabled": True,
        "networkingEnabled": True,
        "podSecurity": "baseline",
        "resources": {"cpu": "2", "memory": "4Gi", "example.com/gpu": "1"},
        "nodeLabels": {"zone": "a"},
    }
    secret = await consumer.get(SECRETS, "liqo-token-milan", namespace="liqo")
    assert base64.b64decode(secret["data"][c.TOKEN_SECRET_KEY]).decode() == TOKEN
    node = await consumer.get(NODES, "liqo-milan")
    assert node["status"]["capacity"]["cpu"] == "2"


async def test_a_refused_token_fails_early_with_the_runtime_s_reason(
    provider: Provider, consumer: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(foreigncluster, "FAIL_AFTER", 0.2)
    async with peering_controller(consumer, PeeringBehaviour(refuse=True)):
        outcome = await peer(provider)

    [(summary, detail, _)] = outcome.errors
    assert summary == "Peering with milan failed"
    assert (
        f"authentication/AuthIdentityControlPlaneStatus=Error (AuthenticationFailed): the auth service at {AUTH_URL} refused the token"
        in detail
    )
    assert outcome.state is not None, "the ForeignCluster exists: it is recorded (tainted) for the next apply"
    assert outcome.state["authentication_status"] == "Error"


async def test_a_peering_that_does_not_come_up_in_time_says_why(provider: Provider, consumer: Client) -> None:
    async with peering_controller(consumer, PeeringBehaviour(unreachable=True)):
        outcome = await peer(provider, timeouts={"create": "2s", "update": None, "delete": None})

    [(summary, detail, _)] = outcome.errors
    assert summary == "Timed out waiting for the peering with milan (a Ready virtual node)"
    still, advice = detail.split("\n\n")
    assert re.fullmatch(
        r"Still not done after 2s \(the create of the peering with milan\): ForeignCluster milan: "
        rf"ProviderUnreachable for [0-2]s: the auth service at {re.escape(AUTH_URL)} is unreachable",
        still,
    ), still
    assert advice == (
        "Fix what holds it up and apply again, or raise the bound in the resource's `timeouts` block if the "
        "cluster is only slow. With TF_LOG=INFO, Terraform's log shows what the wait sees every few seconds."
    )
    assert outcome.state is not None


async def test_create_waits_for_the_tunnel_unless_networking_is_disabled(
    provider: Provider, consumer: Client
) -> None:
    async with peering_controller(consumer, PeeringBehaviour(tunnel=False)):
        outcome = await peer(provider, timeouts={"create": "2s", "update": None, "delete": None})
        assert outcome.errors[0][0] == ("Timed out waiting for the peering with milan (a Ready virtual node)")
        detail = " ".join(detail for _, detail, _ in outcome.errors)
        assert "the network fabric with milan is not up yet" in detail and "networking_disabled" in detail
        element = resource(provider)
        cfg = config(networking_disabled=True)
        planned = harness.plan(element, cfg, prior=outcome.state)
        assert planned.state is not None and outcome.state is not None
        updated = await asyncio.to_thread(harness.update, element, outcome.state, planned.state, cfg)
    assert updated.errors == []
    assert updated.state is not None and updated.state["networking_status"] == "None"


async def test_a_resized_grant_is_a_warning(provider: Provider, consumer: Client) -> None:
    async with peering_controller(consumer, PeeringBehaviour(resize={"cpu": "1"})):
        outcome = await peer(provider, cpu="8")

    assert outcome.errors == []
    [(summary, _)] = outcome.warnings
    assert summary == "The provider milan granted less than asked"


async def test_create_refuses_a_cluster_without_the_runtime(provider: Provider, with_crds: Client) -> None:
    outcome = await peer(provider)

    assert [summary for summary, _, _ in outcome.errors] == ["Liqo runtime not installed"]
    assert outcome.state is None


async def test_create_refuses_to_peer_a_cluster_with_itself(provider: Provider, consumer: Client) -> None:
    outcome = await peer(provider, cluster_id=CONSUMER_ID)

    [(summary, _, path)] = outcome.errors
    assert (summary, path) == ("A cluster cannot peer with itself", ["cluster_id"])


async def test_create_refuses_an_existing_peering_and_says_to_import_it(
    provider: Provider, consumer: Client, controller: PeeringBehaviour
) -> None:
    assert (await peer(provider)).errors == []

    outcome = await peer(provider)

    [(summary, detail, _)] = outcome.errors
    assert summary == "Peering already exists"
    assert "terraform import <address of this liqo_peer> milan" in detail


async def test_read_detects_drift_and_deletion(
    provider: Provider, consumer: Client, controller: PeeringBehaviour
) -> None:
    state = (await peer(provider, cpu="2")).state
    assert state is not None
    element = resource(provider)
    assert (await asyncio.to_thread(harness.read, element, state)).state == state, "nothing changed: no drift"

    await consumer.patch(FOREIGNCLUSTERS, "milan", {"spec": {"resources": {"cpu": "3"}}})
    other = base64.b64encode(("cd" * 32).encode()).decode()
    await consumer.patch(SECRETS, "liqo-token-milan", {"data": {c.TOKEN_SECRET_KEY: other}}, namespace="liqo")
    drifted = (await asyncio.to_thread(harness.read, element, state)).state
    assert drifted is not None
    assert (drifted["cpu"], drifted["cluster_token"]) == ("3", "cd" * 32)

    await consumer.delete(FOREIGNCLUSTERS, "milan")
    terminating = await asyncio.to_thread(harness.read, element, state)
    assert terminating.state is None, "a peering being deleted is gone already"


async def test_the_same_amount_written_differently_is_no_drift(
    provider: Provider, consumer: Client, controller: PeeringBehaviour
) -> None:
    state = (await peer(provider, cpu="1000m")).state
    assert state is not None
    await consumer.patch(FOREIGNCLUSTERS, "milan", {"spec": {"resources": {"cpu": "1"}}})

    reread = await asyncio.to_thread(harness.read, resource(provider), state)

    assert reread.state is not None
    assert reread.state["cpu"] == "1000m"


async def test_a_token_read_from_a_file_with_its_newline_is_no_drift(
    provider: Provider, consumer: Client, controller: PeeringBehaviour
) -> None:
    state = (await peer(provider, cluster_token=TOKEN + "\n")).state
    assert state is not None

    reread = await asyncio.to_thread(harness.read, resource(provider), state)

    assert reread.state == state
    secret = await consumer.get(SECRETS, "liqo-token-milan", namespace="liqo")
    assert base64.b64decode(secret["data"][c.TOKEN_SECRET_KEY]).decode() == TOKEN


async def test_networking_disabled_peers_without_the_fabric_and_is_read_back(
    provider: Provider, consumer: Client, controller: PeeringBehaviour
) -> None:
    outcome = await peer(provider, networking_disabled=True)

    assert outcome.errors == []
    assert outcome.state is not None and outcome.state["networking_disabled"] is True
    fc = await consumer.get(FOREIGNCLUSTERS, "milan")
    assert fc["spec"]["networkingEnabled"] is False
    imported = await asyncio.to_thread(harness.import_, resource(provider), "milan")
    assert imported.state is not None and imported.state["networking_disabled"] is True


async def test_the_auth_service_key_from_liqo_generate_is_pinned_and_read_back(
    provider: Provider, consumer: Client, controller: PeeringBehaviour
) -> None:
    key = "sha256:" + "5e" * 32
    outcome = await peer(provider, auth_key_fingerprint=key)

    assert outcome.errors == []
    assert outcome.state is not None and outcome.state["auth_key_fingerprint"] == key
    fc = await consumer.get(FOREIGNCLUSTERS, "milan")
    assert fc["metadata"]["annotations"][c.ANNOTATION_TRUST_AUTH_SERVICE_KEY] == key
    assert harness.plan(resource(provider), config(auth_key_fingerprint=key), prior=outcome.state).state == (
        outcome.state
    )
    rotated = "sha256:" + "6f" * 32
    await consumer.patch(
        FOREIGNCLUSTERS,
        "milan",
        {"metadata": {"annotations": {c.ANNOTATION_TRUST_AUTH_SERVICE_KEY: rotated}}},
    )
    refreshed = await asyncio.to_thread(harness.read, resource(provider), outcome.state)
    assert refreshed.state is not None and refreshed.state["auth_key_fingerprint"] == rotated
    imported = await asyncio.to_thread(harness.import_, resource(provider), "milan")
    assert imported.state is not None and imported.state["auth_key_fingerprint"] == rotated


async def test_an_update_renegotiates_resources_in_place(
    provider: Provider, consumer: Client, controller: PeeringBehaviour
) -> None:
    state = (await peer(provider, cpu="2")).state
    assert state is not None
    element = resource(provider)
    cfg = config(cpu="3", cluster_token="cd" * 32)
    planned = harness.plan(element, cfg, prior=state)
    assert planned.replace == []
    assert planned.state is not None

    outcome = await asyncio.to_thread(harness.update, element, state, planned.state, cfg)

    assert outcome.errors == []
    assert outcome.state is not None
    assert outcome.state["cpu"] == "3"
    node = await consumer.get(NODES, "liqo-milan")
    assert node["status"]["capacity"]["cpu"] == "3"
    secret = await consumer.get(SECRETS, "liqo-token-milan", namespace="liqo")
    assert base64.b64decode(secret["data"][c.TOKEN_SECRET_KEY]).decode() == "cd" * 32


async def test_import_by_name_reads_the_whole_peering(
    provider: Provider, consumer: Client, controller: PeeringBehaviour
) -> None:
    state = (await peer(provider, memory="1Gi")).state
    assert state is not None
    element = resource(provider)

    imported = await asyncio.to_thread(harness.import_, element, "milan")

    assert imported.errors == []
    assert imported.state == {**state, "timeouts": None}
    assert harness.plan(element, config(memory="1Gi"), prior=imported.state).state == imported.state


def test_import_of_an_unknown_peering_is_an_error(provider: Provider) -> None:
    outcome = harness.import_(resource(provider), "nowhere")

    [(summary, detail, _)] = outcome.errors
    assert summary == "Cannot import liqo_peer"
    assert "There is no ForeignCluster nowhere" in detail


async def test_destroy_waits_for_the_runtime_to_unpeer(
    provider: Provider, consumer: Client, controller: PeeringBehaviour
) -> None:
    state = (await peer(provider)).state
    assert state is not None

    outcome = await asyncio.to_thread(harness.delete, resource(provider), state)

    assert (outcome.errors, outcome.warnings) == ([], [])
    for get in (
        consumer.get(FOREIGNCLUSTERS, "milan"),
        consumer.get(SECRETS, "liqo-token-milan", namespace="liqo"),
    ):
        with pytest.raises(NotFoundError):
            await get
    with pytest.raises(NotFoundError):
        await consumer.get(NODES, "liqo-milan")


async def test_destroy_never_hangs_on_a_peering_that_does_not_unpeer(
    provider: Provider, consumer: Client, controller: PeeringBehaviour
) -> None:
    state = (await peer(provider)).state
    assert state is not None
    controller.stuck = True
    state = {**state, "timeouts": {"create": None, "update": None, "delete": "1s"}}

    outcome = await asyncio.to_thread(harness.delete, resource(provider), state)

    assert outcome.errors == []
    [(summary, detail)] = outcome.warnings
    assert summary == "The peering with milan was removed without its clean-up"
    assert "did not finish unpeering within 1s" in detail
    with pytest.raises(NotFoundError):
        await consumer.get(FOREIGNCLUSTERS, "milan")


def test_a_destroy_that_cannot_reach_the_cluster_fails_and_keeps_it(gone: Provider) -> None:
    outcome = harness.delete(resource(gone), applied_state())

    [(summary, _, path)] = outcome.errors
    assert (summary, path) == (
        "Cannot delete the peering with milan: the cluster cannot be reached",
        ["force"],
    )
    assert outcome.warnings == []


def test_a_forced_destroy_on_a_cluster_that_is_gone_drops_it_with_a_warning(gone: Provider) -> None:
    outcome = harness.delete(resource(gone), {**applied_state(), "force": True})

    assert outcome.errors == []
    [(summary, _)] = outcome.warnings
    assert summary == "Cluster unreachable: peering dropped from the state"


async def test_the_default_share_is_asked_when_no_amount_is(
    provider: Provider, consumer: Client, controller: PeeringBehaviour
) -> None:
    outcome = await peer(provider)

    assert outcome.errors == []
    fc = await consumer.get(FOREIGNCLUSTERS, "milan")
    assert fc["spec"]["resources"] == {}
    node = await consumer.get(NODES, "liqo-milan")
    assert node["status"]["capacity"]["pods"] == DEFAULT_SHARE["pods"]
