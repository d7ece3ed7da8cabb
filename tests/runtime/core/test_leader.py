"""Leader election timing on looptime's fake clock, against the scripted fake API's Leases."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import pytest

from runtime.core.client import Client
from runtime.core.leader import LEASES, LeaderElector
from runtime.core.manager import Manager
from runtime.core.reconcile import Request, Result
from runtime.core.settings import LeaderElectionSettings, QueueingSettings, Settings, WatchingSettings

from .fakeapi import FakeAPI
from .kinds import CONFIGMAPS

pytestmark = pytest.mark.looptime

LEASE_PATH = LEASES.path(namespace="ns", name="lock")


def election(identity: str) -> LeaderElectionSettings:
    # client-go's defaults: 15 s lease, 10 s renew deadline, 2 s retry period
    return LeaderElectionSettings(lease_name="lock", lease_namespace="ns", identity=identity)


@contextlib.asynccontextmanager
async def background(coro: Awaitable[Any], name: str) -> AsyncIterator[asyncio.Task[Any]]:
    task = asyncio.ensure_future(coro)
    task.set_name(name)
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def timed(coro: Awaitable[Any]) -> float:
    await coro
    return asyncio.get_running_loop().time()


def spec(fake_api: FakeAPI) -> dict[str, Any]:
    lease = fake_api.object(LEASE_PATH)
    assert lease is not None
    return dict(lease["spec"])


async def test_the_first_candidate_creates_the_lease_and_leads(
    fake_api: FakeAPI, fake_client: Client
) -> None:
    one = LeaderElector(fake_client, settings=election("one"))
    assert await timed(one.acquire()) == 0
    assert one.is_leader
    assert spec(fake_api)["holderIdentity"] == "one"
    assert spec(fake_api)["leaseDurationSeconds"] == 15
    assert spec(fake_api)["leaseTransitions"] == 0


async def test_a_standby_takes_over_a_lease_nobody_renews_after_the_lease_duration(
    fake_api: FakeAPI, fake_client: Client
) -> None:
    one = LeaderElector(fake_client, settings=election("one"))
    two = LeaderElector(fake_client, settings=election("two"))
    await one.acquire()
    async with background(one.hold(), "one holds") as holding:
        await asyncio.sleep(1)
        async with background(timed(two.acquire()), "two campaigns") as campaign:
            await asyncio.sleep(4)  # t=5: one renewed at 2 and 4; two last saw a change at its try at 5
            holding.cancel()  # one crashes: no release
            acquired_at = await campaign
    assert acquired_at == 21  # tries at 1, 3, ... 19 see a live lease; 5 + 15 = 20 has passed at 21
    assert two.is_leader
    assert (spec(fake_api)["holderIdentity"], spec(fake_api)["leaseTransitions"]) == ("two", 1)


async def test_a_released_lease_is_taken_at_the_next_try(fake_api: FakeAPI, fake_client: Client) -> None:
    one = LeaderElector(fake_client, settings=election("one"))
    two = LeaderElector(fake_client, settings=election("two"))
    await one.acquire()
    async with background(timed(two.acquire()), "two campaigns") as campaign:
        await asyncio.sleep(5.5)
        await one.release()
        assert not one.is_leader
        assert spec(fake_api)["holderIdentity"] == ""
        acquired_at = await campaign
    assert acquired_at == 6


@pytest.mark.parametrize(
    ("holder", "left"),
    [
        # the leader shut down while renewing: the server wrote the renewal, its answer never arrived
        pytest.param("one", "", id="renewed-by-the-leader-unbeknown"),
        pytest.param("two", "two", id="taken-by-another"),
    ],
)
async def test_a_release_after_the_lease_changed_clears_it_only_while_it_names_the_leader(
    fake_api: FakeAPI, fake_client: Client, holder: str, left: str
) -> None:
    one = LeaderElector(fake_client, settings=election("one"))
    await one.acquire()
    changed = copy.deepcopy(fake_api.object(LEASE_PATH))
    assert changed is not None
    changed["spec"].update(holderIdentity=holder, renewTime="2026-11-28T00:00:02.000000Z")
    fake_api.overwrite(LEASE_PATH, changed)
    await one.release()
    assert spec(fake_api)["holderIdentity"] == left


async def test_a_leader_that_cannot_renew_steps_down_at_the_renew_deadline(
    fake_api: FakeAPI, fake_client: Client
) -> None:
    one = LeaderElector(fake_client, settings=election("one"))
    await one.acquire()
    fake_api.failing.add(LEASE_PATH)
    # the last renewal sent was the acquisition at 0; retried every 2 s until 10 s after it
    assert await timed(one.hold()) == 10
    assert not one.is_leader


async def test_a_leader_that_finds_another_holder_steps_down_at_once(
    fake_api: FakeAPI, fake_client: Client
) -> None:
    one = LeaderElector(fake_client, settings=election("one"))
    await one.acquire()
    async with background(timed(one.hold()), "one holds") as holding:
        await asyncio.sleep(3)
        stolen = copy.deepcopy(fake_api.object(LEASE_PATH))
        assert stolen is not None
        stolen["spec"]["holderIdentity"] = "intruder"
        fake_api.overwrite(LEASE_PATH, stolen)
        assert await holding == 4
    assert not one.is_leader


class Recorder:
    def __init__(self) -> None:
        self.times: list[float] = []

    async def reconcile(self, request: Request) -> Result | None:
        self.times.append(asyncio.get_running_loop().time())
        return Result(requeue_after=1.5)


async def test_a_manager_stops_its_controllers_when_it_loses_the_lease_and_resumes_when_it_wins_it_back(
    fake_api: FakeAPI, fake_client: Client
) -> None:
    fake_api.on_list(
        CONFIGMAPS,
        [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "1"},
            }
        ],
        resource_version="1",
    )
    settings = Settings(
        watching=WatchingSettings(server_timeout=3600, client_timeout=7200),
        queueing=QueueingSettings(drain_timeout=1),
        leader_election=election("one"),
        server=None,
    )
    manager = Manager(fake_client, settings=settings)
    recorder = Recorder()
    manager.controller("recorder", recorder, primary=manager.informer(CONFIGMAPS))
    async with background(manager.run(), "manager"):
        await asyncio.sleep(3.5)
        assert manager.is_leader and manager.is_ready()
        stolen = copy.deepcopy(fake_api.object(LEASE_PATH))
        assert stolen is not None
        stolen["spec"]["holderIdentity"] = "intruder"
        fake_api.overwrite(LEASE_PATH, stolen)  # nobody renews it after this
        await asyncio.sleep(1)
        assert not manager.is_leader and not manager.is_ready()
        await asyncio.sleep(25)
    # reconciles every 1.5 s while leading; the renewal at 4 finds the intruder (first seen then), so
    # none until its lease runs out at 4 + 15; the campaign tries every 2 s and wins at 20
    assert recorder.times == [0, 1.5, 3, 20, 21.5, 23, 24.5, 26, 27.5, 29]
    assert spec(fake_api)["leaseTransitions"] == 1


class Writer:
    """A reconcile that writes a ConfigMap every second for 30 s (a long batch, as a busy controller has)."""

    def __init__(self, client: Client, namespace: str) -> None:
        self._client = client
        self._namespace = namespace
        self._written = 0

    async def reconcile(self, request: Request) -> Result | None:
        for _ in range(30):
            self._written += 1
            await self._client.create(
                CONFIGMAPS,
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"w{self._written}"}},
                namespace=self._namespace,
            )
            await asyncio.sleep(1)
        return None


def writes(fake_api: FakeAPI, namespace: str) -> list[float]:
    path = CONFIGMAPS.path(namespace=namespace)
    return [call.at for call in fake_api.calls if call.method == "POST" and call.path == path]


async def test_a_leader_cut_off_from_its_lease_writes_nothing_once_the_standby_took_over(
    fake_api: FakeAPI,
) -> None:
    """Default timings (15 s lease, 10 s renew deadline, 2 s retry, 10 s drain on shutdown)."""
    fake_api.on_list(CONFIGMAPS, [_config_map("a")], resource_version="1")
    watching = WatchingSettings(server_timeout=3600, client_timeout=7200)
    async with (
        await Client.from_kubeconfig_dict(fake_api.kubeconfig_with_token("one")) as one_client,
        await Client.from_kubeconfig_dict(fake_api.kubeconfig_with_token("two")) as two_client,
    ):
        one = Manager(
            one_client, settings=Settings(watching=watching, leader_election=election("one"), server=None)
        )
        one.controller("writer", Writer(one_client, "one"), primary=one.informer(CONFIGMAPS))
        two = Manager(
            two_client, settings=Settings(watching=watching, leader_election=election("two"), server=None)
        )
        two.controller("writer", Writer(two_client, "two"), primary=two.informer(CONFIGMAPS))
        async with background(one.run(), "one"):
            await asyncio.sleep(1)
            async with background(two.run(), "two"):
                # one renews at 2 and 4, which two sees at 3 and 5; then one's Lease requests fail
                await asyncio.sleep(3.5)
                fake_api.failing_for["one"] = {LEASE_PATH}
                await asyncio.sleep(40)
    taken_over = min(writes(fake_api, "two"))
    # two takes over at its first try 15 s after it saw the renewal sent at 4: at 21
    assert taken_over == 21
    # one stepped down 10 s after that renewal was sent, and stopped writing there and then
    assert max(writes(fake_api, "one")) <= 14 < taken_over


def _config_map(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": "1"},
    }


@pytest.mark.parametrize(
    ("timings", "message"),
    [
        ({"retry_period": 0}, "retry_period must be positive"),
        (
            {"renew_deadline": 2, "retry_period": 2},
            "renew_deadline (2 s) must exceed 1.2 x retry_period (2 s)",
        ),
        ({"lease_duration": 10}, "lease_duration (10 s) must exceed renew_deadline (10 s)"),
    ],
    ids=["no retry period", "deadline within one retry", "lease no longer than the deadline"],
)
def test_inconsistent_timings_are_refused(timings: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match="leader election on ns/lock: ") as caught:
        LeaderElectionSettings(lease_name="lock", lease_namespace="ns", **timings)  # type: ignore[arg-type]
    assert message in str(caught.value)
