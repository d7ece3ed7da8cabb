"""Fixtures: one emulator with the runtime installed for the Tenant controller's tests, admin and manager clients.

Tests share the emulator (each works on Tenants and namespaces of its own names); the
controllers run as the `liqo-controller-manager` ServiceAccount, so the installation's
RBAC is what they are held to.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from runtime.core import Client
from tests.apiserver.conftest import start_emulator, stop_emulator
from tests.runtime.auth.cluster import install, service_account_client


async def _install(kubeconfig: Path) -> None:
    async with await Client.from_kubeconfig(kubeconfig) as admin:
        await install(admin)


@pytest.fixture(scope="session")
def tenant_kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    process, kubeconfig = start_emulator(tmp_path_factory.mktemp("tenant-controller"))
    try:
        asyncio.run(_install(kubeconfig))
        yield kubeconfig
    finally:
        stop_emulator(process)


@pytest.fixture
async def admin(tenant_kubeconfig: Path) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(tenant_kubeconfig) as api:
        yield api


@pytest.fixture
async def manager_client(admin: Client, tenant_kubeconfig: Path) -> AsyncIterator[Client]:
    async with await service_account_client(admin, tenant_kubeconfig, "liqo-controller-manager") as api:
        yield api
