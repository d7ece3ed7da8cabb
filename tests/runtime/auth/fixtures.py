"""Fixtures over one emulator with the runtime installed, shared by the auth service's and the provider controllers' tests.

A conftest imports the ones it needs; each conftest that does gets its own session-wide
emulator (pytest keeps a fixture's value per defining conftest), so the two suites do not
see each other's Tenants. Tests in one suite share that emulator and use consumers, tokens
and namespaces of their own names.
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
def installed_kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An emulator with the runtime installed (but its webhook configuration); its admin kubeconfig."""
    process, kubeconfig = start_emulator(tmp_path_factory.mktemp("installed"))
    try:
        asyncio.run(_install(kubeconfig))
        yield kubeconfig
    finally:
        stop_emulator(process)


@pytest.fixture
async def admin(installed_kubeconfig: Path) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(installed_kubeconfig) as api:
        yield api


@pytest.fixture
async def auth_client(admin: Client, installed_kubeconfig: Path) -> AsyncIterator[Client]:
    """The auth service's own credential: a token of the `liqo-auth` ServiceAccount."""
    async with await service_account_client(admin, installed_kubeconfig, "liqo-auth") as api:
        yield api


@pytest.fixture
async def manager_client(admin: Client, installed_kubeconfig: Path) -> AsyncIterator[Client]:
    """The controller manager's credential: a token of the `liqo-controller-manager` ServiceAccount."""
    async with await service_account_client(admin, installed_kubeconfig, "liqo-controller-manager") as api:
        yield api
