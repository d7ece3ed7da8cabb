"""A work queue with client-go's semantics (`k8s.io/client-go/util/workqueue`), for asyncio.

- A key added many times before a worker takes it is processed once ("stingy").
- Two workers never hold the same key: a key added while it is being processed is
  handed out again only after `done(key)`.
- `add_after(key, delay)` schedules an add (the earliest pending time for a key wins);
  `add_rate_limited(key)` is `add_after` with the rate limiter's delay.
- The default rate limiter is the larger of a per-item exponential backoff and a
  global token bucket; `forget(key)` resets the key's backoff (call it on success),
  and `done(key)` must be called after every `get()`.
- `added_at(key)`, while a worker holds the key, is when it was first added since it was
  last handed out (a key added again while waiting keeps its first time): how long a
  change waited is the controller's to measure.
- `shutdown()` stops accepting keys and wakes idle workers; `get()` then raises
  `QueueShutDown`. Keys still waiting are dropped (unlike client-go, which hands them
  out): a stopping controller, one that lost its leadership above all, should not
  start new work, and level-triggered reconciles lose nothing since the next run
  enqueues every object again. Keys in flight finish: the controller waits for its
  workers (up to its drain timeout) before cancelling them.

Timing reads the event loop's clock, so tests drive it with looptime.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

from .settings import QueueingSettings

K = TypeVar("K", bound=Hashable)


class QueueShutDown(Exception):
    """The queue was shut down: the worker should exit."""


class RateLimiter(Protocol):
    def when(self, key: Hashable) -> float:
        """Seconds to wait before `key` is processed again; records one more failure."""
        ...

    def forget(self, key: Hashable) -> None:
        """Stop tracking `key` (it succeeded, or was given up on)."""
        ...

    def failures(self, key: Hashable) -> int:
        """How many times `when` was asked about `key` since it was last forgotten."""
        ...


class ExponentialBackoff:
    """Per-item: `base * 2**failures`, capped at `cap` (client-go's ItemExponentialFailureRateLimiter)."""

    def __init__(self, *, base: float, cap: float) -> None:
        self._base = base
        self._cap = cap
        self._failures: dict[Hashable, int] = {}

    def when(self, key: Hashable) -> float:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        # 2**failures overflows a float long after it passes any sane cap
        return self._cap if failures > 1000 else min(self._base * 2**failures, self._cap)

    def forget(self, key: Hashable) -> None:
        self._failures.pop(key, None)

    def failures(self, key: Hashable) -> int:
        return self._failures.get(key, 0)


class TokenBucket:
    """Global: `qps` tokens a second, at most `burst` saved; a key waits for its token.

    Each `when` reserves the next token even if it is not there yet, like Go's
    `rate.Limiter.Reserve()` behind client-go's BucketRateLimiter: the bucket starts
    full, and once empty the n-th extra request waits n/qps seconds.
    """

    def __init__(self, *, qps: float, burst: int) -> None:
        self._qps = qps
        self._burst = burst
        self._tokens = float(burst)
        self._last: float | None = None

    def when(self, key: Hashable) -> float:
        now = asyncio.get_running_loop().time()
        if self._last is not None:
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
        self._last = now
        self._tokens -= 1
        return max(0.0, -self._tokens / self._qps)

    def forget(self, key: Hashable) -> None:
        return None

    def failures(self, key: Hashable) -> int:
        return 0


class MaxOf:
    """The longest delay of several limiters (client-go's MaxOfRateLimiter)."""

    def __init__(self, *limiters: RateLimiter) -> None:
        self._limiters = limiters

    def when(self, key: Hashable) -> float:
        return max(limiter.when(key) for limiter in self._limiters)

    def forget(self, key: Hashable) -> None:
        for limiter in self._limiters:
            limiter.forget(key)

    def failures(self, key: Hashable) -> int:
        return max(limiter.failures(key) for limiter in self._limiters)


def default_rate_limiter(settings: QueueingSettings) -> RateLimiter:
    """client-go's DefaultControllerRateLimiter, with the numbers from the settings."""
    return MaxOf(
        ExponentialBackoff(base=settings.base_delay, cap=settings.max_delay),
        TokenBucket(qps=settings.qps, burst=settings.burst),
    )


class WorkQueue(Generic[K]):
    def __init__(self, *, rate_limiter: RateLimiter) -> None:
        self._rate_limiter = rate_limiter
        self._queue: deque[K] = deque()
        #: keys waiting to be processed (queued, or re-added while processing)
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        #: loop time of each waiting key's first add, and of each key in flight (see `added_at`)
        self._added: dict[K, float] = {}
        self._handed: dict[K, float] = {}
        #: delayed adds: the timer of each key's earliest pending time
        self._delayed: dict[K, asyncio.TimerHandle] = {}
        #: workers parked in get(), woken (all of them) when a key arrives or the queue shuts down
        self._waiters: list[asyncio.Future[None]] = []
        self._shutting_down = False

    def __len__(self) -> int:
        """Keys waiting to be handed out (not those in flight or delayed)."""
        return len(self._queue)

    def add(self, key: K) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        self._added[key] = asyncio.get_running_loop().time()
        if key in self._processing:
            return  # handed out again on done()
        self._queue.append(key)
        self._wake()

    def add_after(self, key: K, delay: float) -> None:
        """Add `key` in `delay` seconds; a key already scheduled keeps the earlier of the two times."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        at = loop.time() + delay
        pending = self._delayed.get(key)
        if pending is not None:
            if pending.when() <= at:
                return
            pending.cancel()
        self._delayed[key] = loop.call_at(at, self._fire, key)

    def add_rate_limited(self, key: K) -> None:
        self.add_after(key, self._rate_limiter.when(key))

    def forget(self, key: K) -> None:
        self._rate_limiter.forget(key)

    def failures(self, key: K) -> int:
        return self._rate_limiter.failures(key)

    async def get(self) -> K:
        """The next key, once there is one; it is the caller's until `done(key)`."""
        while not self._queue and not self._shutting_down:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        if self._shutting_down:
            raise QueueShutDown()
        key = self._queue.popleft()
        self._dirty.discard(key)
        self._processing.add(key)
        self._handed[key] = self._added.pop(key)
        return key

    def added_at(self, key: K) -> float:
        """When the key a worker holds was first added (loop time) before it was handed out."""
        return self._handed[key]

    def done(self, key: K) -> None:
        self._processing.discard(key)
        self._handed.pop(key, None)
        if key in self._dirty and not self._shutting_down:
            self._queue.append(key)
            self._wake()

    def shutdown(self) -> None:
        """Accept no more keys, drop the waiting ones, and make every `get()` raise `QueueShutDown`."""
        self._shutting_down = True
        for handle in self._delayed.values():
            handle.cancel()
        self._delayed.clear()
        self._queue.clear()
        self._dirty.clear()
        self._added.clear()
        self._wake()

    def _fire(self, key: K) -> None:
        self._delayed.pop(key, None)
        self.add(key)

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
