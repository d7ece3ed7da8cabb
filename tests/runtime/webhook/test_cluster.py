"""The webhook against an API server: it patches its configuration, then the server calls it for ForeignClusters."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS, RESOURCESLICES
from runtime.api.kinds import NAMESPACES, SECRETS, VALIDATINGWEBHOOKS
from runtime.core import Client, InvalidError, NotFoundError
from runtime.forge.install import VALIDATING_WEBHOOK
from runtime.webhook.main import main
from tests.playground.conftest import eventually

from .conftest import NAMESPACE


@contextlib.asynccontextmanager
async def webhook(client: Client, kubeconfig: Path, *extra: str) -> AsyncIterator[asyncio.Task[int]]:
    """Run the webhook's main; with no `extra` flags, wait until it has patched the install's configuration."""
    before = (await client.get(VALIDATINGWEBHOOKS, VALIDATING_WEBHOOK))["metadata"]["resourceVersion"]
    args = [
        f"--namespace={NAMESPACE}",
        "--listen=127.0.0.1:0",
        "--mode=url",
        "--health-address=127.0.0.1:0",
        "--shutdown-delay=0",
        f"--kubeconfig={kubeconfig}",
        *(extra or [f"--configuration={VALIDATING_WEBHOOK}"]),
    ]
    task = asyncio.create_task(main(args), name="webhook under test")
    try:
        if not extra:
            await eventually(lambda: _patched(client, before), within=20)
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _patched(client: Client, before: str) -> bool:
    configuration = await client.get(VALIDATINGWEBHOOKS, VALIDATING_WEBHOOK)
    return configuration["metadata"]["resourceVersion"] != before and all(
        w["clientConfig"].get("url", "").startswith("https://127.0.0.1:")
        and w["clientConfig"].get("caBundle")
        for w in configuration["webhooks"]
    )


def foreign_cluster(name: str, cluster_id: str) -> dict[str, object]:
    return {
        "apiVersion": FOREIGNCLUSTERS.api_version,
        "kind": FOREIGNCLUSTERS.kind,
        "metadata": {"name": name},
        "spec": {
            "clusterID": cluster_id,
            "clusterName": name,
            "authURL": "https://127.0.0.2:8443",
            "tokenSecretRef": {"name": f"liqo-token-{name}", "namespace": NAMESPACE},
        },
    }


async def test_the_api_server_calls_the_webhook_once_it_patched_its_configuration(installed: Path) -> None:
    async with await Client.from_kubeconfig(installed) as client, webhook(client, installed):
        name = f"fc-{uuid.uuid4().hex[:8]}"

        with pytest.raises(InvalidError) as denied:
            await client.create(FOREIGNCLUSTERS, foreign_cluster(name, "not-a-uuid"))
        assert 'spec.clusterID: Invalid value: "not-a-uuid": must be a UUID' in denied.value.message
        assert "foreignclusters.validate.liqo.io" in denied.value.message

        cluster_id = str(uuid.uuid4())
        created = await client.create(FOREIGNCLUSTERS, foreign_cluster(name, cluster_id))
        assert created["spec"]["clusterID"] == cluster_id

        changed = {**created, "spec": {**created["spec"], "clusterID": str(uuid.uuid4())}}
        with pytest.raises(InvalidError) as immutable:
            await client.replace(FOREIGNCLUSTERS, changed)
        assert f"clusterID is immutable (it was {cluster_id})" in immutable.value.message

        relabelled = {**created, "metadata": {**created["metadata"], "labels": {"team": "a"}}}
        assert (await client.replace(FOREIGNCLUSTERS, relabelled))["metadata"]["labels"] == {"team": "a"}


async def test_resource_slices_the_schema_admits_are_checked_by_the_webhook(installed: Path) -> None:
    """The schema's quantity pattern admits negative amounts and cannot say "immutable" without CEL."""
    async with await Client.from_kubeconfig(installed) as client, webhook(client, installed):
        namespace = f"liqo-tenant-{uuid.uuid4().hex[:8]}"
        await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        consumer = str(uuid.uuid4())
        body: dict[str, Any] = {
            "apiVersion": RESOURCESLICES.api_version,
            "kind": RESOURCESLICES.kind,
            "metadata": {"name": "slice", "namespace": namespace},
            "spec": {"consumerClusterID": consumer, "resources": {"cpu": "-2", "memory": "1Gi"}},
        }
        with pytest.raises(InvalidError) as denied:
            await client.create(RESOURCESLICES, body)
        assert 'spec.resources[cpu]: Invalid value: "-2": must not be negative' in denied.value.message

        created = await client.create(
            RESOURCESLICES, {**body, "spec": {**body["spec"], "resources": {"cpu": "2"}}}
        )
        moved = {**created, "spec": {**created["spec"], "consumerClusterID": str(uuid.uuid4())}}
        with pytest.raises(InvalidError) as immutable:
            await client.replace(RESOURCESLICES, moved)
        assert f"consumerClusterID is immutable (it was {consumer})" in immutable.value.message


async def test_readiness_waits_for_the_configuration(installed: Path, unused_tcp_port: int) -> None:
    """/readyz answers 503 until the configuration is patched; the configuration here is missing at first."""
    missing = f"liqo-missing-{uuid.uuid4().hex[:6]}"
    async with (
        await Client.from_kubeconfig(installed) as client,
        webhook(
            client, installed, f"--configuration={missing}", f"--health-address=127.0.0.1:{unused_tcp_port}"
        ),
        aiohttp.ClientSession() as http,
    ):
        url = f"http://127.0.0.1:{unused_tcp_port}/readyz"

        async def answers(expected: int) -> bool:
            try:
                async with http.get(url) as response:
                    return response.status == expected
            except aiohttp.ClientConnectionError:
                return False

        await eventually(lambda: answers(503), within=20)
        original = await client.get(VALIDATINGWEBHOOKS, VALIDATING_WEBHOOK)
        copy = {
            "apiVersion": original["apiVersion"],
            "kind": original["kind"],
            "metadata": {"name": missing},
            "webhooks": [
                {**w, "name": w["name"].replace("validate", "check"), "rules": []}
                for w in original["webhooks"]
            ],
        }
        await client.create(VALIDATINGWEBHOOKS, copy)
        try:
            await eventually(lambda: answers(200), within=20)
        finally:
            await client.delete(VALIDATINGWEBHOOKS, missing)


async def test_a_restarted_webhook_keeps_the_ca_the_configuration_trusts(installed: Path) -> None:
    """The CA is made once and kept in its Secret: a restart (or another replica) is trusted by the same
    caBundle, so the API server never meets a webhook it does not trust while an old one still serves."""
    async with await Client.from_kubeconfig(installed) as client:
        async with webhook(client, installed):
            first = await client.get(VALIDATINGWEBHOOKS, VALIDATING_WEBHOOK)
        async with webhook(client, installed):
            second = await client.get(VALIDATINGWEBHOOKS, VALIDATING_WEBHOOK)
        secret = await client.get(SECRETS, c.WEBHOOK_CA_SECRET, namespace=NAMESPACE)
    bundles = {w["clientConfig"]["caBundle"] for w in [*first["webhooks"], *second["webhooks"]]}
    assert bundles == {secret["data"][c.WEBHOOK_CA_CERTIFICATE]}
    assert first["webhooks"][0]["clientConfig"]["url"] != second["webhooks"][0]["clientConfig"]["url"]


async def test_a_ca_secret_that_holds_no_usable_ca_is_replaced(installed: Path) -> None:
    async with await Client.from_kubeconfig(installed) as client:
        with contextlib.suppress(NotFoundError):
            await client.delete(SECRETS, c.WEBHOOK_CA_SECRET, namespace=NAMESPACE)
        await client.create(
            SECRETS,
            {"metadata": {"name": c.WEBHOOK_CA_SECRET}, "data": {c.WEBHOOK_CA_CERTIFICATE: "bm9wZQ=="}},
            namespace=NAMESPACE,
        )
        async with webhook(client, installed):
            configuration = await client.get(VALIDATINGWEBHOOKS, VALIDATING_WEBHOOK)
        secret = await client.get(SECRETS, c.WEBHOOK_CA_SECRET, namespace=NAMESPACE)
    assert set(secret["data"]) == {c.WEBHOOK_CA_CERTIFICATE, c.WEBHOOK_CA_KEY}
    assert (
        configuration["webhooks"][0]["clientConfig"]["caBundle"] == secret["data"][c.WEBHOOK_CA_CERTIFICATE]
    )
