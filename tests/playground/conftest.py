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
import yaml

from playground.apiserver.kubeconfig import kubeconfig, write_kubeconfig
from playground.apiserver.pki import CertificateAuthority
from playground.controlplane import ControlPlaneOptions, Setup
from playground.controlplane.credentials import ServiceAccountCredentials
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


def identity_kubeconfig(admin_kubeconfig: Path, user: str, *groups: str) -> Path:
    """A kubeconfig beside an emulator's admin one, for `user` in `groups`, signed by the emulator's CA."""
    state_dir = admin_kubeconfig.parent
    ca = CertificateAuthority.load(state_dir / "pki")
    cert, key = ca.issue_client(user, organizations=list(groups))
    server = yaml.safe_load(admin_kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    path = state_dir / f"{user.replace(':', '-')}.kubeconfig"
    config = kubeconfig(
        server=server,
        ca_pem=ca.cert_pem,
        cluster="emulator",
        user=user,
        client_cert_pem=cert,
        client_key_pem=key,
    )
    write_kubeconfig(path, config)
    return path


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
    """Run the given components under one manager (no leader election, no HTTP endpoint) until the block ends.

    They run with the identities of the real components, as `python -m playground.controlplane`
    does: reads as `system:kube-controller-manager`, writes as each controller's ServiceAccount
    (or `system:kube-scheduler`). The block gets an admin client (`kubeconfig`'s).
    """
    controller_manager = identity_kubeconfig(kubeconfig, "system:kube-controller-manager")
    async with (
        await Client.from_kubeconfig(kubeconfig) as api,
        await Client.from_kubeconfig(controller_manager) as reader,
        await Client.from_kubeconfig(identity_kubeconfig(kubeconfig, "system:kube-scheduler")) as scheduler,
    ):
        credentials = ServiceAccountCredentials(
            reader, scheduler=scheduler, directory=kubeconfig.parent / f"tokens-{uuid.uuid4().hex[:8]}"
        )
        manager = Manager(reader, settings=Settings(server=None))
        for setup in setups:
            setup(manager, options or ControlPlaneOptions(), credentials)
        await asyncio.wait_for(credentials.prepare(), 10)
        task = asyncio.create_task(manager.run(), name="components under test")
        try:
            await asyncio.wait_for(manager.informers.wait_synced(), 10)
            yield api
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await credentials.close()


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
