"""Fixtures: the playground API server on loopback (one per session), clients, namespaces, the scripted fake API.

Integration tests run against the emulator subprocess in real time (its answers take
real time, which looptime cannot compress); timing tests use `FakeAPI`, which runs in
the test's own loop so looptime covers it.
"""

from __future__ import annotations

import contextlib
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from runtime.core.client import Client
from runtime.core.errors import NotFoundError
from tests.apiserver.conftest import start_emulator, stop_emulator

from .fakeapi import FakeAPI
from .kinds import NAMESPACES


@dataclass
class Emulator:
    process: subprocess.Popen[bytes]
    kubeconfig: Path
    state_dir: Path


@pytest.fixture(scope="session")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    state_dir = tmp_path_factory.mktemp("runtime-core-apiserver")
    process, kubeconfig = start_emulator(state_dir)
    try:
        yield Emulator(process, kubeconfig, state_dir)
    finally:
        stop_emulator(process)


@pytest.fixture
async def client(emulator: Emulator) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(emulator.kubeconfig) as api:
        yield api


@pytest.fixture
async def namespace(client: Client) -> AsyncIterator[str]:
    name = f"t-{uuid.uuid4().hex[:10]}"
    await client.create(NAMESPACES, {"metadata": {"name": name}})
    yield name
    with contextlib.suppress(NotFoundError):
        await client.delete(NAMESPACES, name)


@pytest.fixture
async def fake_api() -> AsyncIterator[FakeAPI]:
    api = FakeAPI()
    await api.start()
    yield api
    await api.close()


@pytest.fixture
async def fake_client(fake_api: FakeAPI) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig_dict(fake_api.kubeconfig) as api:
        yield api
