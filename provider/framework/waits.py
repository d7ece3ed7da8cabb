"""Bounded waits for resources: poll a condition until it holds, the deadline passes or Terraform
asks the provider to stop.

A wait never outlives its operation's timeout, so `terraform apply`/`destroy` never
hang. When Terraform sends StopProvider (Ctrl-C), waits end early with `StopRequested`:
the resource then returns the state it has, so Terraform records what exists, instead
of the process being killed mid-write (see `provider.server`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

#: how often the resources' waits look again (at most): a few reads a second, so an apply ends within a second
#: of readiness
POLL_INTERVAL: Final = 0.25
POLL_MAX_INTERVAL: Final = 1.0

T = TypeVar("T")


class WaitTimeoutError(TimeoutError):
    """The condition did not hold within the bound; `last` says what was last seen."""

    def __init__(self, what: str, *, seconds: float, last: str) -> None:
        super().__init__(f"{what} did not happen within {seconds:g}s (last seen: {last})")
        self.what = what
        self.seconds = seconds
        self.last = last


class StopRequested(Exception):
    """Terraform asked the provider to stop while waiting."""

    def __init__(self, what: str) -> None:
        super().__init__(f"Terraform asked the provider to stop while waiting for {what}")
        self.what = what


async def wait_until(
    check: Callable[[], Awaitable[tuple[T | None, str]]],
    *,
    what: str,
    seconds: float,
    stop: threading.Event,
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


async def _sleep(seconds: float, stop: threading.Event) -> None:
    """Sleep, waking early (every 0.1 s at most) once `stop` is set."""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while not stop.is_set() and loop.time() < end:  # noqa: ASYNC110 - `stop` is a threading.Event set by gRPC
        await asyncio.sleep(min(0.1, end - loop.time()))
