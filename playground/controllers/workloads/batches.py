"""Slow-start batches: create many objects in batches of 1, 2, 4, ... and stop at the first failure.

kube's controllers (`slowStartBatch`) start pods this way so that a workload which can
never create its pods (quota, admission, a missing ServiceAccount) costs one failed
request per sync, not hundreds, and the Events it records stay few.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

#: kube's SlowStartInitialBatchSize
INITIAL_BATCH = 1


async def slow_start(count: int, create: Callable[[], Awaitable[T]]) -> tuple[list[T], Exception | None]:
    """Call `create` `count` times, batch after batch; returns what succeeded and the first error."""
    done: list[T] = []
    remaining = count
    batch = min(remaining, INITIAL_BATCH)
    while batch > 0:
        results = await asyncio.gather(*(create() for _ in range(batch)), return_exceptions=True)
        failure: Exception | None = None
        for result in results:
            if isinstance(result, Exception):
                failure = failure or result
            elif isinstance(result, BaseException):
                raise result
            else:
                done.append(result)
        if failure is not None:
            return done, failure
        remaining -= batch
        batch = min(2 * batch, remaining)
    return done, None
