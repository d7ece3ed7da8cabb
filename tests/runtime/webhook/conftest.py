"""An emulator with the runtime's install manifests applied (URL-mode webhook configuration), per module."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.core import Client
from runtime.forge.install import InstallOptions, install_manifests
from tests.apiserver.conftest import start_emulator, stop_emulator

NAMESPACE = "liqo"


def install_options() -> InstallOptions:
    return InstallOptions(
        cluster_id=str(uuid.uuid4()),
        cluster_name="rome",
        api_server_url="https://127.0.0.1:6443",
        pod_cidr="10.200.0.0/16",
        service_cidr="10.96.0.0/12",
        namespace=NAMESPACE,
        webhook_mode="url",
    )


async def apply_manifests(kubeconfig: Path, options: InstallOptions) -> None:
    async with await Client.from_kubeconfig(kubeconfig) as client:
        for obj in install_manifests(options):
            resource = await client.resource_for(obj["apiVersion"], obj["kind"])
            await client.create(resource, obj)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The kubeconfig of an emulator where the runtime's manifests are applied (no component runs)."""
    process, kubeconfig = start_emulator(tmp_path_factory.mktemp("webhook-apiserver"))
    try:
        asyncio.run(apply_manifests(kubeconfig, install_options()))
        yield kubeconfig
    finally:
        stop_emulator(process)
