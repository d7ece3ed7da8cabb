"""Managers against the playground API server: a real controller, leader election between two, the HTTP endpoint."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
from prometheus_client import CollectorRegistry

from runtime.core.client import Client
from runtime.core.errors import NotFoundError
from runtime.core.events import EventRecorder
from runtime.core.informer import Informer
from runtime.core.leader import LEASES
from runtime.core.manager import Manager
from runtime.core.reconcile import Request, Result
from runtime.core.settings import LeaderElectionSettings, QueueingSettings, ServerSettings, Settings

from .kinds import CONFIGMAPS, SECRETS
from .waiting import until

FAST = QueueingSettings(base_delay=0.01, max_delay=1, drain_timeout=2)
SERVER = ServerSettings(host="127.0.0.1", port=0)


@contextlib.asynccontextmanager
async def running(manager: Manager) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(manager.run(), name="manager under test")
    try:
        await until(manager.informers.has_synced)
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def get(manager: Manager, path: str) -> tuple[int, str]:
    assert manager.server is not None
    await manager.server.started.wait()
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{manager.server.port}{path}") as response,
    ):
        return response.status, await response.text()


class ConfigMapMirror:
    """Keeps a Secret per ConfigMap with the same data, owned by it; deletes the Secret when the ConfigMap goes."""

    def __init__(
        self, client: Client, *, configmaps: Informer, secrets: Informer, events: EventRecorder | None = None
    ) -> None:
        self.client = client
        self.configmaps = configmaps
        self.secrets = secrets
        self.events = events
        #: called once with the cached Secret just before the next update: another writer gets in first
        self.interfere: Callable[[dict[str, Any]], Any] | None = None

    async def reconcile(self, request: Request) -> Result | None:
        configmap = self.configmaps.store.get(request.name, namespace=request.namespace)
        secret = self.secrets.store.get(request.name, namespace=request.namespace)
        if configmap is None:
            if secret is not None:
                with contextlib.suppress(NotFoundError):
                    await self.client.delete(
                        SECRETS,
                        request.name,
                        namespace=request.namespace,
                        preconditions={"uid": secret["metadata"]["uid"]},
                    )
            return None
        data = {k: base64.b64encode(v.encode()).decode() for k, v in (configmap.get("data") or {}).items()}
        if secret is None:
            owner = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": request.name,
                "uid": configmap["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
            body = {
                "metadata": {
                    "name": request.name,
                    "namespace": request.namespace,
                    "ownerReferences": [owner],
                },
                "data": data,
            }
            await self.client.create(SECRETS, body)
        elif (secret.get("data") or {}) != data:
            updated = copy.deepcopy(secret)
            updated["data"] = data
            if self.interfere is not None:
                interfere, self.interfere = self.interfere, None
                await interfere(secret)
            await self.client.replace(SECRETS, updated)  # stale cache: 409, and the controller retries
        else:
            return None
        if self.events is not None:
            await self.events.record(
                configmap, reason="Mirrored", message=f"Secret {request.name} is up to date"
            )
        return None


def decoded(secret: dict[str, Any]) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}


async def test_a_controller_mirrors_config_maps_into_owned_secrets_and_retries_a_conflict(
    client: Client, namespace: str
) -> None:
    registry = CollectorRegistry()
    manager = Manager(client, settings=Settings(queueing=FAST, server=SERVER), registry=registry)
    configmaps = manager.informer(CONFIGMAPS, namespace=namespace)
    secrets = manager.informer(SECRETS, namespace=namespace)
    mirror = ConfigMapMirror(client, configmaps=configmaps, secrets=secrets)
    manager.controller("configmap-mirror", mirror, primary=configmaps).owns(secrets)

    def cached() -> dict[str, Any]:
        return secrets.store.get("app", namespace=namespace) or {}

    def version() -> int:
        return int(cached().get("metadata", {}).get("resourceVersion", 0))

    async with running(manager):
        created = await client.create(
            CONFIGMAPS, {"metadata": {"name": "app", "namespace": namespace}, "data": {"k": "v"}}
        )
        await until(lambda: decoded(cached()) == {"k": "v"})
        secret = await client.get(SECRETS, "app", namespace=namespace)
        assert [
            (r["kind"], r["name"], r["uid"], r["controller"]) for r in secret["metadata"]["ownerReferences"]
        ] == [("ConfigMap", "app", created["metadata"]["uid"], True)]

        async def label_it(current: dict[str, Any]) -> None:
            await client.patch(
                SECRETS, "app", {"metadata": {"labels": {"touched": "yes"}}}, namespace=namespace
            )

        mirror.interfere = label_it
        await client.patch(CONFIGMAPS, "app", {"data": {"k": "w"}}, namespace=namespace)
        await until(lambda: decoded(cached()) == {"k": "w"})
        assert cached()["metadata"]["labels"] == {"touched": "yes"}  # the retry saw the other write
        errors = registry.get_sample_value(
            "controller_runtime_reconcile_errors_total", {"controller": "configmap-mirror"}
        )
        assert errors is not None and errors >= 1

        # an owned object changed by hand: its owner is reconciled and puts it back
        tampered = await client.patch(
            SECRETS, "app", {"data": {"k": base64.b64encode(b"tampered").decode()}}, namespace=namespace
        )
        tampered_rv = int(tampered["metadata"]["resourceVersion"])
        await until(lambda: version() > tampered_rv)
        assert decoded(cached()) == {"k": "w"}

        await client.delete(CONFIGMAPS, "app", namespace=namespace)
        await until(lambda: not cached())

        assert await get(manager, "/healthz") == (200, "ok")
        assert await get(manager, "/readyz") == (200, "ok")
        status, metrics = await get(manager, "/metrics")
    assert status == 200
    assert 'controller_runtime_reconcile_total{controller="configmap-mirror",result="success"}' in metrics
    assert 'controller_runtime_reconcile_total{controller="configmap-mirror",result="error"}' in metrics
    assert 'workqueue_depth{name="configmap-mirror"} 0.0' in metrics
    assert 'informer_lists_total{resource="secrets"} 1.0' in metrics


class Recorder:
    def __init__(self, name: str, log: list[tuple[str, str]]) -> None:
        self.name = name
        self.log = log

    async def reconcile(self, request: Request) -> Result | None:
        self.log.append((self.name, request.name))
        return None


def elected(namespace: str, identity: str) -> Settings:
    election = LeaderElectionSettings(
        lease_name="mirror",
        lease_namespace=namespace,
        identity=identity,
        lease_duration=1,
        renew_deadline=0.8,
        retry_period=0.05,
    )
    return Settings(queueing=FAST, leader_election=election, server=SERVER)


async def test_of_two_managers_only_the_leader_reconciles_and_the_other_takes_over_when_it_stops(
    client: Client, namespace: str
) -> None:
    log: list[tuple[str, str]] = []
    managers = {}
    for name in ("one", "two"):
        manager = Manager(client, settings=elected(namespace, name))
        manager.controller(
            name, Recorder(name, log), primary=manager.informer(CONFIGMAPS, namespace=namespace)
        )
        managers[name] = manager
    one, two = managers["one"], managers["two"]
    await client.create(CONFIGMAPS, {"metadata": {"name": "first", "namespace": namespace}})

    async with running(one) as first:
        await until(lambda: one.is_leader)
        async with running(two):
            await until(lambda: ("one", "first") in log)
            await client.create(CONFIGMAPS, {"metadata": {"name": "second", "namespace": namespace}})
            await until(lambda: ("one", "second") in log)
            await asyncio.sleep(0.3)  # several of two's tries
            assert not two.is_leader
            assert [who for who, _ in log] == ["one", "one"]
            assert await get(one, "/readyz") == (200, "ok")
            assert await get(two, "/readyz") == (503, "not ready")

            first.cancel()  # one shuts down and releases the Lease
            with contextlib.suppress(asyncio.CancelledError):
                await first
            await until(lambda: two.is_leader, within=1)
            await until(lambda: {("two", "first"), ("two", "second")} <= set(log))
            await client.create(CONFIGMAPS, {"metadata": {"name": "third", "namespace": namespace}})
            await until(lambda: ("two", "third") in log)
            lease = await client.get(LEASES, "mirror", namespace=namespace)
    assert [name for who, name in log if who == "one"] == ["first", "second"]
    assert (lease["spec"]["holderIdentity"], lease["spec"]["leaseTransitions"]) == ("two", 1)
