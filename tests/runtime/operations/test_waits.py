"""Bounded waits: done, timed out, or stopped by the caller (under looptime: no real sleeping)."""

from __future__ import annotations

import threading

import pytest

from runtime.operations.waits import StopRequested, WaitTimeoutError, wait_until

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
    assert str(raised.value) == "the runtime did not happen within 10s (last seen: 0/1 pods ready)"


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
