"""The controller's reconcile contract, on looptime's fake clock, fed by the scripted fake API."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from runtime.core.client import Client, Resource
from runtime.core.errors import ConflictError, PermanentError, TemporaryError
from runtime.core.informer import Informer, Selection
from runtime.core.reconcile import (
    Controller,
    ControllerMetrics,
    EventFilter,
    MapFunc,
    Request,
    Result,
    owner_mapper,
)
from runtime.core.settings import QueueingSettings, ResyncSettings, Settings, WatchingSettings

from .fakeapi import FakeAPI
from .kinds import CONFIGMAPS, SECRETS

pytestmark = pytest.mark.looptime

WATCHING = WatchingSettings(server_timeout=3600, client_timeout=7200)
QUEUEING = QueueingSettings(base_delay=1, max_delay=8, qps=1000, burst=1000, workers=2, drain_timeout=10)


def cm(name: str, rv: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
    }


def owned_secret(name: str, rv: str, *, owner: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "resourceVersion": rv}
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": owner,
                "uid": f"uid-{owner}",
                "controller": True,
            }
        ]
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta}


class Scripted:
    """Answers reconciles from a script (an outcome to return, or an exception to raise), timing each one."""

    def __init__(self, *outcomes: Result | BaseException | None, duration: float = 0) -> None:
        self.outcomes = list(outcomes)
        self.duration = duration
        self.started: list[tuple[float, str]] = []
        self.finished: list[tuple[float, str]] = []
        self.active: set[Request] = set()
        self.overlaps = 0

    async def reconcile(self, request: Request) -> Result | None:
        loop = asyncio.get_running_loop()
        self.started.append((loop.time(), str(request)))
        self.overlaps += request in self.active
        self.active.add(request)
        try:
            outcome = self.outcomes.pop(0) if self.outcomes else None
            await asyncio.sleep(self.duration)
            if isinstance(outcome, BaseException):
                raise outcome
            return outcome
        finally:
            self.active.discard(request)
            self.finished.append((loop.time(), str(request)))

    def times(self, key: str = "ns/a") -> list[float]:
        return [at for at, name in self.started if name == key]


@contextlib.asynccontextmanager
async def running(
    client: Client,
    reconciler: Scripted,
    *,
    settings: Settings,
    related: Sequence[tuple[Resource, bool]] = (),
    watched: Sequence[tuple[Resource, MapFunc, EventFilter]] = (),
    registry: CollectorRegistry | None = None,
) -> AsyncIterator[Controller]:
    primary = Informer(client, Selection(CONFIGMAPS), settings=settings.watching)
    informers = [primary]
    controller = Controller(
        "test",
        reconciler,
        primary=primary,
        settings=settings,
        metrics=ControllerMetrics(registry or CollectorRegistry()),
    )
    for resource, owned in related:
        informer = Informer(client, Selection(resource), settings=settings.watching)
        informers.append(informer)
        if owned:
            controller.owns(informer)
    for resource, mapper, when in watched:
        informer = Informer(client, Selection(resource), settings=settings.watching)
        informers.append(informer)
        controller.watches(informer, mapper, when=when)
    tasks = [asyncio.create_task(i.run(), name=f"informer {i.selection}") for i in informers]
    await asyncio.gather(*(i.synced.wait() for i in informers))
    tasks.append(asyncio.create_task(controller.run(), name="controller under test"))
    try:
        yield controller
    finally:
        for task in reversed(tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def settings(**overrides: Any) -> Settings:
    return Settings(watching=WATCHING, queueing=QUEUEING, server=None, **overrides)


@pytest.fixture
def one_config_map(fake_api: FakeAPI) -> None:
    fake_api.on_list(CONFIGMAPS, [cm("a", "1")], resource_version="1")


@pytest.mark.usefixtures("one_config_map")
async def test_unexpected_errors_are_retried_with_exponential_backoff_until_success(
    fake_client: Client,
) -> None:
    registry = CollectorRegistry()
    reconciler = Scripted(
        RuntimeError("boom"), ConflictError({"code": 409, "reason": "Conflict"}), RuntimeError(), None
    )
    async with running(fake_client, reconciler, settings=settings(), registry=registry) as controller:
        await asyncio.sleep(20)
        assert reconciler.times() == [0, 1, 3, 7]
        reconciler.outcomes = [RuntimeError("again"), None]
        controller.enqueue(Request("ns", "a"))
        await asyncio.sleep(20)
    # success forgot the failures: the next failure starts from the base delay again
    assert reconciler.times() == [0, 1, 3, 7, 20, 21]
    sample = registry.get_sample_value
    assert sample("controller_runtime_reconcile_total", {"controller": "test", "result": "error"}) == 4
    assert sample("controller_runtime_reconcile_total", {"controller": "test", "result": "success"}) == 2
    assert sample("controller_runtime_reconcile_errors_total", {"controller": "test"}) == 4


@pytest.mark.usefixtures("one_config_map")
async def test_a_temporary_error_retries_after_its_delay_or_the_backoff_without_one(
    fake_client: Client,
) -> None:
    reconciler = Scripted(TemporaryError("not ready", delay=7), TemporaryError("still not"), None)
    async with running(fake_client, reconciler, settings=settings()):
        await asyncio.sleep(30)
    assert reconciler.times() == [0, 7, 8]


@pytest.mark.usefixtures("one_config_map")
async def test_a_permanent_error_is_not_retried(fake_client: Client) -> None:
    registry = CollectorRegistry()
    reconciler = Scripted(PermanentError("invalid spec"))
    async with running(fake_client, reconciler, settings=settings(), registry=registry):
        await asyncio.sleep(100)
    assert reconciler.times() == [0]
    assert (
        registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": "test", "result": "permanent"}
        )
        == 1
    )


@pytest.mark.usefixtures("one_config_map")
async def test_requeue_after_reconciles_again_after_that_delay(fake_client: Client) -> None:
    reconciler = Scripted(*[Result(requeue_after=5)] * 10)
    async with running(fake_client, reconciler, settings=settings()):
        await asyncio.sleep(16)
    assert reconciler.times() == [0, 5, 10, 15]


async def test_resync_reconciles_every_cached_object_each_period(
    fake_api: FakeAPI, fake_client: Client
) -> None:
    fake_api.on_list(CONFIGMAPS, [cm("a", "1"), cm("b", "2")], resource_version="2")
    reconciler = Scripted()
    async with running(fake_client, reconciler, settings=settings(resync=ResyncSettings(period=30))):
        await asyncio.sleep(65)
    assert reconciler.times("ns/a") == [0, 30, 60]
    assert reconciler.times("ns/b") == [0, 30, 60]


async def test_events_during_a_reconcile_give_one_more_reconcile_never_a_concurrent_one(
    fake_api: FakeAPI, fake_client: Client
) -> None:
    fake_api.on_list(CONFIGMAPS, [cm("a", "1")], resource_version="1")
    fake_api.on_watch(
        CONFIGMAPS,
        [
            1.0,
            {"type": "MODIFIED", "object": cm("a", "2")},
            {"type": "MODIFIED", "object": cm("a", "3")},
            1.0,
            {"type": "MODIFIED", "object": cm("a", "4")},
        ],
    )
    reconciler = Scripted(duration=5)
    async with running(fake_client, reconciler, settings=settings()):
        await asyncio.sleep(20)
    assert reconciler.times() == [0, 5]
    assert reconciler.overlaps == 0


async def test_changes_of_owned_objects_reconcile_their_owner(fake_api: FakeAPI, fake_client: Client) -> None:
    fake_api.on_list(CONFIGMAPS, [cm("a", "1"), cm("b", "2")], resource_version="2")
    fake_api.on_list(SECRETS, [], resource_version="2")
    fake_api.on_watch(
        SECRETS,
        [
            10.0,
            {"type": "ADDED", "object": owned_secret("a-copy", "3", owner="a")},
            {"type": "ADDED", "object": owned_secret("stray", "4", owner=None)},
            10.0,
            {"type": "DELETED", "object": owned_secret("a-copy", "5", owner="a")},
        ],
    )
    reconciler = Scripted()
    async with running(fake_client, reconciler, settings=settings(), related=[(SECRETS, True)]):
        await asyncio.sleep(30)
    assert reconciler.times("ns/a") == [0, 10, 20]
    assert reconciler.times("ns/b") == [0]
    assert not any(name.endswith("stray") for _, name in reconciler.started)


@pytest.mark.usefixtures("one_config_map")
async def test_a_filter_keeps_the_changes_a_controller_ignores_from_its_queue(
    fake_api: FakeAPI, fake_client: Client
) -> None:
    """Only changes the filter accepts map to keys: here, a Secret's labels (its data changing is ignored)."""
    fake_api.on_list(SECRETS, [], resource_version="1")

    def labelled(rv: str, team: str, data: str) -> dict[str, Any]:
        secret = owned_secret("s", rv, owner=None)
        secret["metadata"]["labels"] = {"team": team}
        return {**secret, "data": {"k": data}}

    fake_api.on_watch(
        SECRETS,
        [
            10.0,
            {"type": "ADDED", "object": labelled("2", "a", "1")},
            10.0,
            {"type": "MODIFIED", "object": labelled("3", "a", "2")},
            10.0,
            {"type": "MODIFIED", "object": labelled("4", "b", "2")},
        ],
    )

    def labels_changed(kind: str, obj: dict[str, Any], old: dict[str, Any] | None) -> bool:
        return old is None or obj["metadata"].get("labels") != old["metadata"].get("labels")

    reconciler = Scripted()
    watched = [(SECRETS, lambda obj: [Request("ns", "a")], labels_changed)]
    async with running(fake_client, reconciler, settings=settings(), watched=watched):
        await asyncio.sleep(35)
    assert reconciler.times("ns/a") == [0, 10, 30]


@pytest.mark.parametrize(
    ("refs", "owner", "controller_only", "expected"),
    [
        (
            [{"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "controller": True}],
            CONFIGMAPS,
            True,
            ["ns/a"],
        ),
        ([{"apiVersion": "v1", "kind": "ConfigMap", "name": "a"}], CONFIGMAPS, True, []),
        ([{"apiVersion": "v1", "kind": "ConfigMap", "name": "a"}], CONFIGMAPS, False, ["ns/a"]),
        ([{"apiVersion": "v1", "kind": "Secret", "name": "a", "controller": True}], CONFIGMAPS, True, []),
        (
            [{"apiVersion": "apps/v1beta2", "kind": "Deployment", "name": "d", "controller": True}],
            Resource("apps", "v1", "deployments", kind="Deployment"),
            True,
            ["ns/d"],
        ),
        (
            [
                {
                    "apiVersion": "core.liqo.io/v1beta1",
                    "kind": "ForeignCluster",
                    "name": "fc",
                    "controller": True,
                }
            ],
            Resource("core.liqo.io", "v1beta1", "foreignclusters", namespaced=False, kind="ForeignCluster"),
            True,
            ["fc"],
        ),
        ([], CONFIGMAPS, False, []),
    ],
    ids=[
        "controller-ref",
        "non-controller-ref-skipped",
        "any-ref",
        "other-kind",
        "other-version-same-group",
        "cluster-scoped-owner",
        "no-refs",
    ],
)
def test_owner_mapper_maps_an_object_to_its_owners_of_one_kind(
    refs: list[dict[str, Any]], owner: Resource, controller_only: bool, expected: list[str]
) -> None:
    obj = {"metadata": {"name": "x", "namespace": "ns", "ownerReferences": refs}}
    assert [str(r) for r in owner_mapper(owner, controller_only=controller_only)(obj)] == expected


@pytest.mark.usefixtures("one_config_map")
async def test_stopping_lets_a_reconcile_in_flight_finish(fake_client: Client, looptime: float) -> None:
    reconciler = Scripted(duration=3)
    async with running(fake_client, reconciler, settings=settings()):
        await asyncio.sleep(1)
    assert looptime == 3
    assert reconciler.finished == [(3, "ns/a")]


@pytest.mark.usefixtures("one_config_map")
async def test_stopping_cancels_a_reconcile_that_outlasts_the_drain_timeout(
    fake_client: Client, looptime: float
) -> None:
    reconciler = Scripted(duration=60)
    async with running(fake_client, reconciler, settings=settings()):
        await asyncio.sleep(1)
    assert looptime == 11
    assert reconciler.finished == [(11, "ns/a")]


@pytest.mark.usefixtures("one_config_map")
async def test_a_controller_without_a_primary_reconciles_what_it_is_given_and_reports_latency(
    fake_client: Client, looptime: float
) -> None:
    reconciler = Scripted(duration=2)
    latencies: list[float] = []
    registry = CollectorRegistry()
    controller = Controller(
        "fed",
        reconciler,
        primary=None,
        settings=settings(),
        metrics=ControllerMetrics(registry),
        latency=latencies.append,
    )
    with pytest.raises(ValueError, match="primary informer"):
        controller.owns(Informer(fake_client, Selection(SECRETS), settings=WATCHING))
    task = asyncio.create_task(controller.run(), name="fed controller")
    try:
        await controller.running.wait()
        controller.enqueue(Request("ns", "x"))
        controller.enqueue(Request("ns", "y"))
        await asyncio.sleep(10)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    # nothing from the cached ConfigMap: no primary; two workers, each reconcile 2 s from its add
    assert sorted(name for _, name in reconciler.started) == ["ns/x", "ns/y"]
    assert latencies == [2, 2]
    assert registry.get_sample_value("workqueue_queue_duration_seconds_count", {"name": "fed"}) == 2
