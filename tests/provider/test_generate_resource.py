"""`liqo_generate`: a token per resource, only its hash in the cluster, revoked on destroy, re-issued when it
stops working; no import."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from provider.kube import Kube
from provider.resources.generate import GenerateResource
from runtime.api import constants as c
from runtime.api.kinds import CONFIGMAPS, NAMESPACES, SECRETS
from runtime.api.timestamps import parse_rfc3339
from runtime.core import Client, NotFoundError

from . import harness
from .harness import Provider

CLUSTER_ID = "0b4d2a6e-7f0e-4c55-9a43-46b4e1b9d6a1"
AUTH_URL = "https://127.0.0.1:18443"
AUTH_KEY = "sha256:" + "ab" * 32


def resource(provider: Provider | None = None) -> GenerateResource:
    return GenerateResource(provider or Provider(Kube.unavailable("not configured in this test")))


def config(**values: Any) -> dict[str, Any]:
    return harness.config(GenerateResource, **values)


async def install_identity(api: Client, *, auth_url: str = AUTH_URL, namespace: str = "liqo") -> None:
    """What liqo_install leaves for liqo_generate to read: the identity, with the auth service's URL and key."""
    await api.create(NAMESPACES, {"metadata": {"name": namespace}})
    data = {c.IDENTITY_CLUSTER_ID: CLUSTER_ID, c.IDENTITY_CLUSTER_NAME: "milan"}
    if auth_url:
        data[c.IDENTITY_AUTH_URL] = auth_url
        data[c.IDENTITY_AUTH_KEY] = AUTH_KEY
    await api.create(
        CONFIGMAPS, {"metadata": {"name": c.CLUSTER_IDENTITY_CONFIGMAP}, "data": data}, namespace=namespace
    )


async def generate(provider: Provider, **values: Any) -> dict[str, Any]:
    element = resource(provider)
    cfg = config(**values)
    planned = harness.plan(element, cfg).state
    assert planned is not None
    outcome = await asyncio.to_thread(harness.create, element, planned, cfg)
    assert outcome.errors == []
    assert outcome.state is not None
    return outcome.state


@pytest.mark.parametrize(
    ("values", "path", "says"),
    [
        ({"expires_in": "one day"}, ["expires_in"], 'is not a duration: use a number and a unit, e.g. "90s"'),
        ({"expires_in": "0s"}, ["expires_in"], "is not a positive duration"),
        ({"namespace": "Liqo"}, ["namespace"], "is not a valid namespace name"),
    ],
    ids=["words", "zero", "namespace"],
)
def test_invalid_inputs_are_errors_on_their_attribute(
    values: dict[str, Any], path: list[str], says: str
) -> None:
    [(_, detail, got_path)] = harness.validate(resource(), config(**values)).errors

    assert got_path == path
    assert says in detail


def test_no_input_is_needed_as_in_the_liqo_guide() -> None:
    assert harness.validate(resource(), config()).errors == []
    planned = harness.plan(resource(), config()).state
    assert planned is not None
    assert planned["namespace"] == "liqo"


async def test_create_issues_a_token_whose_hash_only_is_in_the_cluster(
    provider: Provider, api: Client
) -> None:
    await install_identity(api)

    state = await generate(provider)

    assert (state["cluster_id"], state["cluster_name"], state["auth_ep"]) == (CLUSTER_ID, "milan", AUTH_URL)
    assert state["auth_key_fingerprint"] == AUTH_KEY
    token = state["local_token"]
    assert len(token) == 64
    secret = await api.get(SECRETS, state["id"], namespace="liqo")
    assert secret["metadata"]["labels"][c.LABEL_PEERING_TOKEN] == "true"
    stored = {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}
    assert stored == {"sha256": hashlib.sha256(token.encode()).hexdigest()}
    assert c.ANNOTATION_TOKEN_SINGLE_USE not in secret["metadata"]["annotations"]


async def test_a_token_expires_in_a_day_unless_told_otherwise(provider: Provider, api: Client) -> None:
    await install_identity(api)

    state = await generate(provider)

    expires_at = parse_rfc3339(state["expires_at"])
    assert timedelta(hours=23, minutes=59) < expires_at - datetime.now(UTC) <= timedelta(hours=24)
    secret = await api.get(SECRETS, state["id"], namespace="liqo")
    assert secret["metadata"]["annotations"][c.ANNOTATION_TOKEN_EXPIRES_AT] == state["expires_at"]


async def test_a_single_use_token_is_marked_so(provider: Provider, api: Client) -> None:
    await install_identity(api)

    state = await generate(provider, single_use=True)

    secret = await api.get(SECRETS, state["id"], namespace="liqo")
    assert secret["metadata"]["annotations"][c.ANNOTATION_TOKEN_SINGLE_USE] == "true"
    assert state["single_use"] is True


async def test_each_resource_gets_its_own_token(provider: Provider, api: Client) -> None:
    await install_identity(api)

    first, second = await generate(provider), await generate(provider)

    assert first["local_token"] != second["local_token"]
    assert first["id"] != second["id"]


async def test_a_token_with_a_lifetime_records_its_expiry(provider: Provider, api: Client) -> None:
    await install_identity(api)

    state = await generate(provider, expires_in="2h")

    expires_at = parse_rfc3339(state["expires_at"])
    assert timedelta(minutes=119) < expires_at - datetime.now(UTC) <= timedelta(hours=2)
    secret = await api.get(SECRETS, state["id"], namespace="liqo")
    assert secret["metadata"]["annotations"][c.ANNOTATION_TOKEN_EXPIRES_AT] == state["expires_at"]


async def test_without_the_runtime_create_says_to_install_it(provider: Provider) -> None:
    element = resource(provider)
    planned = harness.plan(element, config()).state
    assert planned is not None

    outcome = await asyncio.to_thread(harness.create, element, planned, config())

    assert outcome.state is None
    [(summary, detail, _)] = outcome.errors
    assert summary == "Liqo runtime not installed"
    assert "apply a liqo_install resource on this (provider) cluster first" in detail


async def test_create_waits_for_the_auth_service_to_publish_its_url(provider: Provider, api: Client) -> None:
    await install_identity(api, auth_url="")
    element = resource(provider)
    cfg = config(timeouts={"create": "1s", "delete": None})
    planned = harness.plan(element, cfg).state
    assert planned is not None

    outcome = await asyncio.to_thread(harness.create, element, planned, cfg)

    assert outcome.state is None
    [(summary, detail, _)] = outcome.errors
    assert summary == "Timed out waiting for the Liqo identity in namespace liqo"
    assert "the auth service has not published its URL and key" in detail
    assert (await api.list(SECRETS, namespace="liqo", label_selector=c.LABEL_PEERING_TOKEN)).items == []


async def test_a_plan_right_after_create_is_empty_and_read_refreshes_the_identity(
    provider: Provider, api: Client
) -> None:
    await install_identity(api)
    state = await generate(provider)
    element = resource(provider)

    assert harness.plan(element, config(), prior=state).state == state
    new_url, new_key = "https://127.0.0.2:18443", "sha256:" + "cd" * 32
    await api.patch(
        CONFIGMAPS,
        c.CLUSTER_IDENTITY_CONFIGMAP,
        {"data": {c.IDENTITY_AUTH_URL: new_url, c.IDENTITY_AUTH_KEY: new_key}},
        namespace="liqo",
    )
    refreshed = await asyncio.to_thread(harness.read, element, state)
    assert refreshed.state == {**state, "auth_ep": new_url, "auth_key_fingerprint": new_key}


@pytest.mark.parametrize("change", ["deleted", "replaced", "expired"])
async def test_a_token_that_no_longer_works_is_gone_from_the_state(
    provider: Provider, api: Client, change: str
) -> None:
    await install_identity(api)
    state = await generate(provider)
    if change == "deleted":
        await api.delete(SECRETS, state["id"], namespace="liqo")
    elif change == "replaced":
        other = base64.b64encode(hashlib.sha256(b"another").hexdigest().encode()).decode()
        await api.patch(SECRETS, state["id"], {"data": {"sha256": other}}, namespace="liqo")
    else:
        past = (datetime.now(UTC) - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        annotations = {c.ANNOTATION_TOKEN_EXPIRES_AT: past}
        await api.patch(SECRETS, state["id"], {"metadata": {"annotations": annotations}}, namespace="liqo")

    outcome = await asyncio.to_thread(harness.read, resource(provider), state)

    assert (outcome.state, outcome.errors) == (None, [])


async def test_destroy_revokes_the_token(provider: Provider, api: Client) -> None:
    await install_identity(api)
    state = await generate(provider)

    outcome = await asyncio.to_thread(harness.delete, resource(provider), state)

    assert outcome.errors == []
    with pytest.raises(NotFoundError):
        await api.get(SECRETS, state["id"], namespace="liqo")


def test_a_destroy_that_cannot_reach_the_cluster_fails_and_keeps_the_token(gone: Provider) -> None:
    state = {**config(), "id": "liqo-peering-token-0123456789", "namespace": "liqo"}

    outcome = harness.delete(resource(gone), state)

    [(summary, detail, path)] = outcome.errors
    assert (summary, path) == (
        "Cannot revoke the peering token (delete Secret liqo/liqo-peering-token-0123456789): the cluster cannot "
        "be reached",
        ["force"],
    )
    assert "Nothing was deleted, so the resource stays in the state" in detail
    assert outcome.warnings == []


def test_a_forced_destroy_on_a_cluster_that_is_gone_drops_the_token_with_a_warning(gone: Provider) -> None:
    state = {**config(), "id": "liqo-peering-token-0123456789", "namespace": "liqo", "force": True}

    outcome = harness.delete(resource(gone), state)

    assert outcome.errors == []
    [(summary, detail)] = outcome.warnings
    assert summary == "Cluster unreachable: token dropped from the state"
    assert "delete that Secret to revoke the token" in detail


def test_import_explains_why_a_token_cannot_be_imported() -> None:
    outcome = harness.import_(resource(), "liqo-peering-token-0123456789")

    assert outcome.state is None
    [(summary, detail, _)] = outcome.errors
    assert summary == "liqo_generate cannot be imported"
    assert "keeps only a hash of each peering token" in detail
