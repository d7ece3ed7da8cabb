"""Fixtures for the playground's components: emulators on loopback, clients, namespaces, and a
way to run some control-plane components (`setup` functions) against a cluster for one test.

Components run in the test's own event loop, as ordinary API clients of an emulator
subprocess; they stop (and the test fails if one crashed) when the `async with` ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from playground.controlplane import ControlPlaneOptions, Setup
from runtime.api.kinds import NAMESPACES
from runtime.core import Client, Manager, NotFoundError, Settings
from tests.apiserver.conftest import start_emulator, stop_emulator


@pytest.fixture(scope="session")
def emulator_kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One emulator for the whole session (shared: tests use their own namespaces and node names)."""
    process, kubeconfig = start_emulator(tmp_path_factory.mktemp("playground-apiserver"))
    try:
        yield kubeconfig
    finally:
        stop_emulator(process)


@pytest.fixture
def fresh_emulator(tmp_path: Path) -> Iterator[Path]:
    """An emulator of this test's own, for tests that need a cluster-wide view (nodes, scheduling)."""
    process, kubeconfig = start_emulator(tmp_path)
    try:
        yield kubeconfig
    finally:
        stop_emulator(process)


@pytest.fixture
async def client(emulator_kubeconfig: Path) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(emulator_kubeconfig) as api:
        yield api


@pytest.fixture
async def namespace(client: Client) -> AsyncIterator[str]:
    name = f"t-{uuid.uuid4().hex[:10]}"
    await client.create(NAMESPACES, {"metadata": {"name": name}})
    yield name
    with contextlib.suppress(NotFoundError):
        await client.delete(NAMESPACES, name)


@contextlib.asynccontextmanager
async def running(
    kubeconfig: Path, *setups: Setup, options: ControlPlaneOptions | None = None
) -> AsyncIterator[Client]:
    """Run the given components under one manager (no leader election, no HTTP endpoint) until the block ends."""
    async with await Client.from_kubeconfig(kubeconfig) as api:
        manager = Manager(api, settings=Settings(server=None))
        for setup in setups:
            setup(manager, options or ControlPlaneOptions())
        task = asyncio.create_task(manager.run(), name="components under test")
        try:
            await asyncio.wait_for(manager.informers.wait_synced(), 10)
            yield api
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def eventually(condition: Callable[[], object], *, within: float = 10.0, every: float = 0.05) -> None:
    """Await until `condition()` (sync or async) is truthy; AssertionError with the last value otherwise."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        value = condition()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition still false after {within} s (last value {value!r})")
        await asyncio.sleep(every)
