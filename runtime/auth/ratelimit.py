"""Rate limiting of failed requests per source address: a token bucket that only failures drain.

Guessing a 256-bit token is hopeless, but each guess costs the provider a request, a
hash and a log line, so an address that keeps failing is slowed down: every failure
(a refused token or signature, a malformed request) takes one token from its bucket,
buckets refill at a steady rate up to `burst`, and while an address's bucket is empty
its failing requests are answered 429 with the time until the next token (`app.py`).
Successful requests cost nothing and are never refused, so a consumer that peers and
renews normally never notices the limiter, even behind the NAT of one that fails.

Memory is bounded: beyond `max_sources` addresses, full buckets (nothing to remember)
are dropped first, then the least recently failed ones.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable


def _loop_time() -> float:
    return asyncio.get_running_loop().time()


class FailureLimiter:
    def __init__(
        self,
        *,
        burst: int,
        refill_per_second: float,
        max_sources: int = 10_000,
        clock: Callable[[], float] = _loop_time,
    ) -> None:
        if burst < 1 or refill_per_second <= 0:
            raise ValueError("a failure limiter needs burst >= 1 and refill_per_second > 0")
        self._burst = float(burst)
        self._rate = refill_per_second
        self._max_sources = max_sources
        self._clock = clock
        #: source -> (tokens left, when that was computed), least recently failed first
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def retry_after(self, source: str) -> float:
        """Seconds until `source` may try again (0: it may now)."""
        tokens = self._tokens(source, self._clock())
        return 0.0 if tokens >= 1 else (1 - tokens) / self._rate

    def failed(self, source: str) -> None:
        """Take one token from `source`'s bucket."""
        now = self._clock()
        self._buckets[source] = (max(self._tokens(source, now) - 1, 0.0), now)
        self._buckets.move_to_end(source)
        if len(self._buckets) > self._max_sources:
            self._evict(now)

    def _tokens(self, source: str, now: float) -> float:
        entry = self._buckets.get(source)
        if entry is None:
            return self._burst
        tokens, stamp = entry
        return min(self._burst, tokens + (now - stamp) * self._rate)

    def _evict(self, now: float) -> None:
        for source in [s for s in self._buckets if self._tokens(s, now) >= self._burst]:
            del self._buckets[source]
        while len(self._buckets) > self._max_sources:
            self._buckets.popitem(last=False)
