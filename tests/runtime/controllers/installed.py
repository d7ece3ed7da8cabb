"""A cluster with the runtime installed, and the controller manager's own credential, for controller tests.

Each test gets its own emulator (grants depend on every node and slice of the cluster),
with `install_manifests()` applied (but the webhook); `running()` runs controllers in-process under a
`Manager` whose client authenticates as the `liqo-controller-manager` ServiceAccount, so
what they do is held to the installation's least-privilege RBAC.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from runtime.api import constants as c
from runtime.controllers.options import ControllerOptions
from runtime.core import Client, Manager, Settings
from runtime.forge.install import InstallOptions, install_manifests
from tests.runtime.serviceaccounts import service_account_client

OPTIONS = InstallOptions(
    cluster_id="0b7c3b5e-2f0a-4c1e-9a51-3c0d6f0f5a10",
    cluster_name="milan",
    api_server_url="https://127.0.0.1:6443",
    pod_cidr="10.244.0.0/16",
    service_cidr="10.96.0.0/16",
)

Setup = Callable[[Manager, ControllerOptions], None]


async def install(admin: Client) -> None:
    """Everything but the webhook configuration (no webhook runs here, and it fails closed)."""
    for obj in install_manifests(OPTIONS):
        if obj["kind"] == "ValidatingWebhookConfiguration":
            continue
        resource = await admin.resource_for(obj["apiVersion"], obj["kind"])
        await admin.apply(
            resource,
            obj,
            namespace=obj["metadata"].get("namespace"),
            field_manager=c.FIELD_MANAGER_INSTALL,
            force=True,
        )


async def controller_manager_client(admin: Client, kubeconfig: Path) -> Client:
    """A client with a token of the controller manager's ServiceAccount."""
    return await service_account_client(
        admin, kubeconfig, "liqo-controller-manager", namespace=OPTIONS.namespace, ttl=600
    )


@contextlib.asynccontextmanager
async def running(
    admin: Client, kubeconfig: Path, *setups: Setup, options: ControllerOptions
) -> AsyncIterator[Manager]:
    """Run the controllers as the controller manager until the block ends (a crash fails the test there);
    the block gets their manager (its metrics say how often each reconciled)."""
    async with await controller_manager_client(admin, kubeconfig) as api:
        manager = Manager(api, settings=Settings(server=None))
        for setup in setups:
            setup(manager, options)
        task = asyncio.create_task(manager.run(), name="controllers under test")
        try:
            await asyncio.wait_for(manager.informers.wait_synced(), 10)
            yield manager
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
