"""Fixtures every test folder may use, and the `cluster` marker.

`playground`: whole local clusters on demand.

    async def test_something(playground):
        (a, b) = await playground.up("a", "b", nodes=3)
        async with a.client() as api:
            ...

Clusters live in the test's temporary directory and are stopped and removed when the
test ends, passed or failed. With `KUBEBUILDER_ASSETS` set they run the real etcd and
kube-apiserver (and kube-controller-manager / kube-scheduler when present) instead of
the emulator, so the same tests hold the playground to real Kubernetes.

Every test that starts playground clusters is marked `cluster` at collection, so the
real leg of `make test` (`pytest -m cluster` with `KUBEBUILDER_ASSETS`) misses none:
see `tests/clustermarker.py` for how such a test is recognised.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from playground.testing import Playground
from tests.clustermarker import CLUSTER_MARKER, starts_clusters


@pytest.fixture
async def playground(tmp_path: Path) -> AsyncIterator[Playground]:
    """A `Playground` in this test's temporary directory; `await playground.up(*names, ...)` starts clusters."""
    async with Playground(tmp_path / "playground") as clusters:
        yield clusters


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.Function) and starts_clusters(item):
            item.add_marker(CLUSTER_MARKER)


@pytest.fixture
def pulumi_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A current event loop for Pulumi's runtime, which takes `asyncio.get_event_loop()` (async tests before
    may have left none), closed after the test."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    asyncio.set_event_loop(None)
    loop.close()
