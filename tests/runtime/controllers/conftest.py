"""Each controller test's own emulator, with the runtime installed (`installed.install`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from runtime.core import Client
from tests.apiserver.conftest import start_emulator, stop_emulator

from .installed import install


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Iterator[Path]:
    process, path = start_emulator(tmp_path)
    try:
        yield path
    finally:
        stop_emulator(process)


@pytest.fixture
async def admin(kubeconfig: Path) -> AsyncIterator[Client]:
    """The cluster's administrator, once the runtime is installed."""
    async with await Client.from_kubeconfig(kubeconfig) as api:
        await install(api)
        yield api
