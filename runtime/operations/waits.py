"""Bounded waits: poll a condition until it holds, the deadline passes or the caller asks to stop.

Every wait of an operation is bounded, so no `apply`, `up` or `destroy` can hang. How a
front end asks an operation to stop is its own business (Terraform's StopProvider sets a
`threading.Event` on a gRPC thread, see `provider.framework.servicer`); a wait only polls
the `Stop` it is given and ends with `StopRequested`, so the caller can still record what
exists, instead of being cancelled in the middle of a write. Asyncio cancellation ends a
wait too, at its next await, like any other coroutine.

Waiting goes on while waiting can help, but the person is never left in the dark: each
check says what it saw (a `Blocking`: subject, reason, message), a wait logs it at INFO
every few seconds with how long it has held, and a timeout quotes it
(`ForeignCluster milan: ProviderUnreachable for 4m58s: <message>`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, Protocol, TypeVar

#: how often the operations' waits look again (at most): a few reads a second, so an apply ends within a
#: second of readiness
POLL_INTERVAL: Final = 0.25
POLL_MAX_INTERVAL: Final = 1.0
#: how often a wait says at INFO what holds it up
LOG_EVERY: Final = 5.0

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Stop(Protocol):
    """A stop signal a wait polls (a `threading.Event` is one; so is `NEVER`)."""

    def is_set(self) -> bool: ...


class _Never:
    def is_set(self) -> bool:
        return False


#: the stop signal of a caller that has no way to ask for a stop: the wait ends at its bound
NEVER: Final[Stop] = _Never()


@dataclass(frozen=True)
class Blocking:
    """What holds a wait up: who (`ForeignCluster milan`), a short reason that stays the same while the
    cause does (`ProviderUnreachable`, a condition's reason), and the detail (the condition's message).

    A wait measures how long the same subject and reason have held, whatever the message says meanwhile.
    """

    subject: str
    reason: str
    message: str = ""

    def describe(self, held: float | None = None) -> str:
        """`ForeignCluster milan: ProviderUnreachable for 4m58s: <message>`."""
        since = f" for {duration(held)}" if held is not None else ""
        return f"{self.subject}: {self.reason}{since}" + (f": {self.message}" if self.message else "")


#: what a check says it saw: a `Blocking`, or a phrase (`0/1 pods ready`) that counts as held while unchanged
Seen = Blocking | str


class WaitTimeoutError(TimeoutError):
    """The condition did not hold within the bound; `last` says what held it up, and for how long."""

    def __init__(self, what: str, *, seconds: float, last: str) -> None:
        super().__init__(f"gave up waiting for {what} after {duration(seconds)}: {last}")
        self.what = what
        self.seconds = seconds
        self.last = last


class StopRequested(Exception):
    """The caller asked to stop while waiting."""

    def __init__(self, what: str) -> None:
        super().__init__(f"asked to stop while waiting for {what}")
        self.what = what


async def wait_until(
    check: Callable[[], Awaitable[tuple[T | None, Seen]]],
    *,
    what: str,
    seconds: float,
    stop: Stop = NEVER,
    interval: float = 0.5,
    max_interval: float = 5.0,
) -> T:
    """Await `check()` until it returns a value (not None) with what it saw.

    Polls with a growing interval (capped at `max_interval`); every `LOG_EVERY` seconds it
    logs at INFO what holds the wait up and for how long (the Terraform provider's INFO
    logs reach `TF_LOG=INFO`). Raises `WaitTimeoutError` after `seconds`, quoting that, or
    `StopRequested` once `stop` is set.
    """
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = started + seconds
    next_log = started + LOG_EVERY
    delay = interval
    held_key: object = None
    held_since = started
    while True:
        if stop.is_set():
            raise StopRequested(what)
        result, seen = await check()
        if result is not None:
            return result
        now = loop.time()
        key = (seen.subject, seen.reason) if isinstance(seen, Blocking) else seen
        if key != held_key:
            held_key, held_since = key, now
        if now >= deadline:
            raise WaitTimeoutError(what, seconds=seconds, last=_describe(seen, now - held_since))
        if now >= next_log:
            logger.info(
                "waiting for %s (%s left): %s",
                what,
                duration(deadline - now),
                _describe(seen, now - held_since),
            )
            next_log = now + LOG_EVERY
        await _sleep(min(delay, deadline - now), stop)
        delay = min(delay * 2, max_interval)


def duration(seconds: float) -> str:
    """Go's way of writing a duration, to the second: `45s`, `4m58s`, `1h0m5s` (`0s` under half a second)."""
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def _describe(seen: Seen, held: float) -> str:
    if isinstance(seen, Blocking):
        return seen.describe(held)
    return f"{seen} (for {duration(held)})"


async def _sleep(seconds: float, stop: Stop) -> None:
    """Sleep, waking early (every 0.1 s at most) once `stop` is set."""
    if stop is NEVER:
        await asyncio.sleep(seconds)
        return
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while not stop.is_set() and loop.time() < end:  # noqa: ASYNC110 - `stop` may be set by another thread
        await asyncio.sleep(min(0.1, end - loop.time()))
