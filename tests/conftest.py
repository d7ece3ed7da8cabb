"""Fixtures every test folder may use: `playground`, whole local clusters on demand.

    async def test_something(playground):
        (a, b) = await playground.up("a", "b", nodes=3)
        async with a.client() as api:
            ...

Clusters live in the test's temporary directory and are stopped and removed when the
test ends, passed or failed. With `KUBEBUILDER_ASSETS` set they run the real etcd and
kube-apiserver (and kube-controller-manager / kube-scheduler when present) instead of
the emulator, so the same tests hold the playground to real Kubernetes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from playground.testing import Playground


@pytest.fixture
async def playground(tmp_path: Path) -> AsyncIterator[Playground]:
    """A `Playground` in this test's temporary directory; `await playground.up(*names, ...)` starts clusters."""
    async with Playground(tmp_path / "playground") as clusters:
        yield clusters


@pytest.fixture
def pulumi_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A current event loop for Pulumi's runtime, which takes `asyncio.get_event_loop()` (async tests before
    may have left none), closed after the test."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    asyncio.set_event_loop(None)
    loop.close()
