"""Fixtures: one emulator with the runtime installed for the auth tests, an admin client, the service's client.

Tests share the emulator (each uses consumers with their own names and ids, and tokens
of its own), so the installation is applied once per session.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from runtime.core import Client
from tests.apiserver.conftest import start_emulator, stop_emulator

from .cluster import install, service_account_client


async def _install(kubeconfig: Path) -> None:
    async with await Client.from_kubeconfig(kubeconfig) as admin:
        await install(admin)


@pytest.fixture(scope="session")
def provider_kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An emulator with the runtime installed (but its webhook configuration)."""
    process, kubeconfig = start_emulator(tmp_path_factory.mktemp("auth-provider"))
    try:
        asyncio.run(_install(kubeconfig))
        yield kubeconfig
    finally:
        stop_emulator(process)


@pytest.fixture
async def admin(provider_kubeconfig: Path) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(provider_kubeconfig) as api:
        yield api


@pytest.fixture
async def auth_client(admin: Client, provider_kubeconfig: Path) -> AsyncIterator[Client]:
    """The auth service's own credential: a token of the `liqo-auth` ServiceAccount."""
    async with await service_account_client(admin, provider_kubeconfig, "liqo-auth") as api:
        yield api


@pytest.fixture
async def manager_client(admin: Client, provider_kubeconfig: Path) -> AsyncIterator[Client]:
    """The controller manager's credential: a token of the `liqo-controller-manager` ServiceAccount."""
    async with await service_account_client(admin, provider_kubeconfig, "liqo-controller-manager") as api:
        yield api
