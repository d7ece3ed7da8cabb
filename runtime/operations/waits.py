"""Bounded waits: poll a condition until it holds, the deadline passes or the caller asks to stop.

Every wait of an operation is bounded, so no `apply`, `up` or `destroy` can hang. How a
front end asks an operation to stop is its own business (Terraform's StopProvider sets a
`threading.Event` on a gRPC thread, see `provider.framework.servicer`); a wait only polls
the `Stop` it is given and ends with `StopRequested`, so the caller can still record what
exists, instead of being cancelled in the middle of a write. Asyncio cancellation ends a
wait too, at its next await, like any other coroutine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Final, Protocol, TypeVar

#: how often the operations' waits look again (at most): a few reads a second, so an apply ends within a
#: second of readiness
POLL_INTERVAL: Final = 0.25
POLL_MAX_INTERVAL: Final = 1.0

T = TypeVar("T")


class Stop(Protocol):
    """A stop signal a wait polls (a `threading.Event` is one; so is `NEVER`)."""

    def is_set(self) -> bool: ...


class _Never:
    def is_set(self) -> bool:
        return False


#: the stop signal of a caller that has no way to ask for a stop: the wait ends at its bound
NEVER: Final[Stop] = _Never()


class WaitTimeoutError(TimeoutError):
    """The condition did not hold within the bound; `last` says what was last seen."""

    def __init__(self, what: str, *, seconds: float, last: str) -> None:
        super().__init__(f"{what} did not happen within {seconds:g}s (last seen: {last})")
        self.what = what
        self.seconds = seconds
        self.last = last


class StopRequested(Exception):
    """The caller asked to stop while waiting."""

    def __init__(self, what: str) -> None:
        super().__init__(f"asked to stop while waiting for {what}")
        self.what = what


async def wait_until(
    check: Callable[[], Awaitable[tuple[T | None, str]]],
    *,
    what: str,
    seconds: float,
    stop: Stop = NEVER,
    interval: float = 0.5,
    max_interval: float = 5.0,
) -> T:
    """Await `check()` until it returns a value (not None) with a note on what it saw.

    Polls with a growing interval (capped at `max_interval`), and raises
    `WaitTimeoutError` after `seconds` or `StopRequested` once `stop` is set.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    delay = interval
    while True:
        if stop.is_set():
            raise StopRequested(what)
        result, last = await check()
        if result is not None:
            return result
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise WaitTimeoutError(what, seconds=seconds, last=last)
        await _sleep(min(delay, remaining), stop)
        delay = min(delay * 2, max_interval)


async def _sleep(seconds: float, stop: Stop) -> None:
    """Sleep, waking early (every 0.1 s at most) once `stop` is set."""
    if stop is NEVER:
        await asyncio.sleep(seconds)
        return
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while not stop.is_set() and loop.time() < end:  # noqa: ASYNC110 - `stop` may be set by another thread
        await asyncio.sleep(min(0.1, end - loop.time()))
