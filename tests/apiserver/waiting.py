"""One bounded wait for the behaviour suite: what the real server does a moment later (informer-fed
authorizers, CRD establishment), polled until true."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def eventually(check: Callable[[], T | None], what: str, *, within: float = 30, every: float = 0.1) -> T:
    """The first truthy value `check` returns, polled every `every` s; the test fails naming `what` after `within` s."""
    deadline = time.monotonic() + within
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {within:g} s (last: {result!r})")
        time.sleep(every)
