"""The work queue and its rate limiters: client-go's semantics, timed on looptime's fake clock."""

from __future__ import annotations

import asyncio
import random

import pytest

from runtime.core.queue import (
    ExponentialBackoff,
    MaxOf,
    QueueShutDown,
    TokenBucket,
    WorkQueue,
    default_rate_limiter,
)
from runtime.core.settings import QueueingSettings

pytestmark = pytest.mark.looptime


def queue(**settings: float) -> WorkQueue[str]:
    return WorkQueue(rate_limiter=default_rate_limiter(QueueingSettings(**settings)))  # type: ignore[arg-type]


async def test_a_key_added_many_times_before_it_is_taken_is_handed_out_once() -> None:
    q = queue()
    for key in ["a", "b", "a", "a", "b", "c"]:
        q.add(key)
    assert len(q) == 3
    assert [await q.get() for _ in range(3)] == ["a", "b", "c"]
    assert len(q) == 0


async def test_a_key_added_while_it_is_processed_is_handed_out_again_only_after_done() -> None:
    q = queue()
    q.add("a")
    assert await q.get() == "a"
    q.add("a")
    q.add("a")
    second = asyncio.create_task(q.get(), name="second worker")
    await asyncio.sleep(1)
    assert not second.done()
    q.done("a")
    assert await second == "a"
    q.done("a")
    assert len(q) == 0


async def test_two_workers_never_hold_the_same_key(looptime: float) -> None:
    q = queue()
    rng = random.Random(7)
    held: set[str] = set()
    overlaps: list[str] = []
    processed: list[str] = []

    async def worker() -> None:
        while True:
            try:
                key = await q.get()
            except QueueShutDown:
                return
            if key in held:
                overlaps.append(key)
            held.add(key)
            await asyncio.sleep(rng.choice([0.1, 0.2, 0.3]))
            held.discard(key)
            processed.append(key)
            q.done(key)

    workers = [asyncio.create_task(worker(), name=f"worker {i}") for i in range(4)]
    for _ in range(200):
        q.add(rng.choice("abc"))
        await asyncio.sleep(rng.choice([0, 0.05, 0.1]))
    await asyncio.sleep(1)
    q.shutdown()
    await asyncio.gather(*workers)
    assert overlaps == []
    assert set(processed) == {"a", "b", "c"}
    assert len(processed) < 200  # adds that met a waiting key were merged


async def test_a_delayed_add_due_while_the_key_is_processed_waits_for_done(looptime: float) -> None:
    q = queue()
    q.add("a")
    assert await q.get() == "a"
    q.add_after("a", 1)  # a reconcile's requeue_after, or an event's add, due mid-reconcile
    q.add_rate_limited("a")
    second = asyncio.create_task(q.get(), name="second worker")
    await asyncio.sleep(5)
    assert not second.done()
    assert len(q) == 0
    q.done("a")
    assert await second == "a"
    assert len(q) == 0


async def test_add_after_hands_keys_out_in_order_of_their_due_time(looptime: float) -> None:
    q = queue()
    q.add_after("late", 3)
    q.add_after("early", 1)
    q.add_after("middle", 2)
    seen = []
    for _ in range(3):
        seen.append((await q.get(), float(looptime)))
    assert seen == [("early", 1), ("middle", 2), ("late", 3)]


async def test_add_after_for_a_scheduled_key_keeps_the_earlier_time(looptime: float) -> None:
    q = queue()
    q.add_after("a", 5)
    q.add_after("a", 2)
    q.add_after("a", 4)
    assert await q.get() == "a"
    assert looptime == 2
    q.done("a")
    await asyncio.sleep(10)
    assert len(q) == 0


async def test_add_after_with_no_delay_adds_at_once(looptime: float) -> None:
    q = queue()
    q.add_after("a", 0)
    assert len(q) == 1
    assert await q.get() == "a"
    assert looptime == 0


@pytest.mark.parametrize(
    ("base", "cap", "delays"),
    [
        (0.005, 1000.0, [0.005, 0.01, 0.02, 0.04, 0.08]),
        (1.0, 10.0, [1, 2, 4, 8, 10, 10]),
        (3.0, 3.0, [3, 3, 3]),
    ],
    ids=["client-go-defaults", "capped", "base-equals-cap"],
)
def test_exponential_backoff_doubles_per_failure_up_to_the_cap(
    base: float, cap: float, delays: list[float]
) -> None:
    backoff = ExponentialBackoff(base=base, cap=cap)
    assert [backoff.when("k") for _ in delays] == pytest.approx(delays)
    assert backoff.failures("k") == len(delays)
    assert backoff.when("other") == base


def test_forget_resets_the_backoff_of_one_key_only() -> None:
    backoff = ExponentialBackoff(base=1, cap=100)
    for _ in range(3):
        backoff.when("a")
        backoff.when("b")
    backoff.forget("a")
    assert backoff.failures("a") == 0
    assert backoff.when("a") == 1
    assert backoff.when("b") == 8


def test_a_long_failing_key_stays_at_the_cap() -> None:
    backoff = ExponentialBackoff(base=0.005, cap=1000)
    delays = [backoff.when("k") for _ in range(2000)]
    assert delays[-1] == 1000


async def test_token_bucket_lets_a_burst_through_then_spaces_requests_by_qps() -> None:
    bucket = TokenBucket(qps=2, burst=3)
    assert [bucket.when(i) for i in range(5)] == [0, 0, 0, 0.5, 1.0]
    await asyncio.sleep(1)  # two tokens come back, two were owed
    assert bucket.when("x") == 0.5
    await asyncio.sleep(10)  # refills to the burst, not beyond
    assert [bucket.when(i) for i in range(4)] == [0, 0, 0, 0.5]


async def test_rate_limited_adds_wait_for_the_larger_of_backoff_and_token_bucket(looptime: float) -> None:
    q = WorkQueue[str](rate_limiter=MaxOf(ExponentialBackoff(base=0.1, cap=100), TokenBucket(qps=1, burst=1)))
    q.add_rate_limited("a")  # backoff 0.1, bucket 0
    q.add_rate_limited("b")  # backoff 0.1, bucket 1 (the token is owed)
    assert (await q.get(), looptime) == ("a", 0.1)
    q.done("a")
    q.add_rate_limited("a")  # backoff 0.2, bucket: the next token is due at 2.0
    assert (await q.get(), looptime) == ("b", 1.0)
    q.done("b")
    assert (await q.get(), looptime) == ("a", 2.0)
    assert q.failures("a") == 2
    q.forget("a")
    assert q.failures("a") == 0


async def test_shutdown_wakes_idle_workers_and_drops_waiting_and_delayed_keys(looptime: float) -> None:
    q = queue()
    idle = asyncio.create_task(q.get(), name="idle worker")
    await asyncio.sleep(1)
    q.add_after("later", 5)
    q.add("in flight")
    q.add("waiting")
    assert await q.get() == "in flight"
    q.add("in flight")
    q.shutdown()
    with pytest.raises(QueueShutDown):
        await idle
    q.add("new")
    q.done("in flight")  # re-added while in flight, but the queue is shut: not handed out again
    await asyncio.sleep(10)
    assert len(q) == 0
    with pytest.raises(QueueShutDown):
        await q.get()


async def test_added_at_is_a_held_keys_first_add_since_it_was_last_handed_out(looptime: float) -> None:
    q = queue()
    q.add("a")
    await asyncio.sleep(2)
    q.add("a")
    assert await q.get() == "a"
    assert q.added_at("a") == 0
    await asyncio.sleep(1)
    q.add("a")  # a change while it is processed: handed out again, waiting since now
    q.done("a")
    assert await q.get() == "a"
    assert q.added_at("a") == 3
