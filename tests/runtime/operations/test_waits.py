"""Bounded waits: done, timed out, or stopped by the caller; what holds them up, logged and quoted (under
looptime: no real sleeping)."""

from __future__ import annotations

import logging
import threading

import pytest

from runtime.operations.waits import Blocking, Seen, StopRequested, WaitTimeoutError, duration, wait_until

pytestmark = pytest.mark.looptime


async def test_wait_returns_the_first_value_the_check_gives(looptime: float) -> None:
    seen: list[int] = []

    async def check() -> tuple[str | None, str]:
        seen.append(1)
        return ("ready" if len(seen) == 3 else None), f"attempt {len(seen)}"

    result = await wait_until(check, what="readiness", seconds=60, stop=threading.Event(), interval=1)

    assert result == "ready"
    assert looptime == 3  # waited 1 s, then 2 s


async def test_wait_times_out_with_what_it_last_saw(looptime: float) -> None:
    async def check() -> tuple[None, str]:
        return None, "0/1 pods ready"

    with pytest.raises(WaitTimeoutError) as raised:
        await wait_until(check, what="the runtime", seconds=10, stop=threading.Event(), interval=1)

    assert looptime == 10
    assert str(raised.value) == "gave up waiting for the runtime after 10s: 0/1 pods ready (for 10s)"


async def test_a_timeout_quotes_the_blocking_condition_and_how_long_it_has_held(looptime: float) -> None:
    """The reason counts, not the message: the condition held while its message changed."""
    calls = 0

    async def check() -> tuple[None, Seen]:
        nonlocal calls
        calls += 1
        if looptime < 2:
            return None, Blocking("ForeignCluster milan", "AuthenticationPending", "authenticating")
        return None, Blocking("ForeignCluster milan", "ProviderUnreachable", f"refused (attempt {calls})")

    with pytest.raises(WaitTimeoutError) as raised:
        await wait_until(check, what="the peering with milan", seconds=300, interval=1, max_interval=1)

    assert looptime == 300
    assert (
        raised.value.last == f"ForeignCluster milan: ProviderUnreachable for 4m58s: refused (attempt {calls})"
    )
    assert str(raised.value) == f"gave up waiting for the peering with milan after 5m0s: {raised.value.last}"


async def test_a_wait_logs_what_holds_it_up_every_few_seconds(
    looptime: float, caplog: pytest.LogCaptureFixture
) -> None:
    async def check() -> tuple[str | None, Seen]:
        if looptime >= 12:
            return "ready", "ready"
        return None, Blocking("ForeignCluster milan", "ProviderUnreachable", "refused")

    with caplog.at_level(logging.INFO, logger="runtime.operations.waits"):
        assert await wait_until(
            check, what="the peering with milan", seconds=60, interval=1, max_interval=1
        ) == ("ready")

    assert [record.getMessage() for record in caplog.records] == [
        "waiting for the peering with milan (55s left): ForeignCluster milan: ProviderUnreachable for 5s: refused",
        "waiting for the peering with milan (50s left): ForeignCluster milan: ProviderUnreachable for 10s: refused",
    ]
    assert all(record.levelno == logging.INFO for record in caplog.records)


@pytest.mark.parametrize(
    ("seconds", "written"),
    [(0.2, "0s"), (45, "45s"), (298, "4m58s"), (300, "5m0s"), (3605, "1h0m5s")],
    ids=["under-a-second", "seconds", "minutes", "whole-minutes", "hours"],
)
def test_durations_are_written_as_go_writes_them(seconds: float, written: str) -> None:
    assert duration(seconds) == written


async def test_wait_ends_early_when_the_caller_asks_to_stop(looptime: float) -> None:
    stop = threading.Event()
    calls = 0

    async def check() -> tuple[None, str]:
        nonlocal calls
        calls += 1
        if calls == 2:
            stop.set()
        return None, "waiting"

    with pytest.raises(StopRequested):
        await wait_until(check, what="the virtual node", seconds=600, stop=stop, interval=30)

    assert looptime < 60
