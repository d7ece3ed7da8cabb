"""Two emulators: a consumer (with the runtime's CRDs) and a provider the tests stop and restart.

The virtual kubelet runs in the test's event loop against the consumer; its credential
Secret holds a kubeconfig for the provider (the emulator's admin credentials, or a
broken copy of them), in a fresh tenant namespace per test.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from runtime.api import constants as c
from runtime.api.crds import VIRTUALNODES, crds
from runtime.api.kinds import CRDS, NAMESPACES, SECRETS
from runtime.api.objects import JSON
from runtime.core import Client, Request, ServerSettings
from runtime.forge.virtualnode import virtual_node
from runtime.virtualkubelet.health import HealthSettings
from runtime.virtualkubelet.kubelet import VirtualKubelet, VirtualKubeletSettings
from runtime.virtualkubelet.lease import LeaseSettings
from tests.apiserver.conftest import start_emulator, stop_emulator

#: fast enough for tests: NotReady after 3 failed pings 0.2 s apart
SETTINGS = VirtualKubeletSettings(
    health=HealthSettings(interval=0.2, failure_threshold=3, timeout=2.0),
    lease=LeaseSettings(duration=5, renew_interval=0.5),
    status_report_period=300.0,
    server=ServerSettings(host="127.0.0.1", port=0),
    kubelet_host="127.0.0.1",
    kubelet_port=0,
)
RESOURCES = {"cpu": "4", "memory": "8Gi", "pods": "110"}


@dataclass
class Provider:
    """A provider emulator that can be stopped and started again on the same port and state."""

    state_dir: Path
    port: int
    kubeconfig: Path
    process: subprocess.Popen[bytes] | None

    def stop(self) -> None:
        assert self.process is not None
        stop_emulator(self.process)
        self.process = None

    def start(self) -> None:
        self.process, self.kubeconfig = start_emulator(self.state_dir, port=self.port)

    def credential(self, *, token: str | None = None) -> JSON:
        """The provider's admin kubeconfig; with `token`, its user replaced by that bearer token."""
        config: JSON = yaml.safe_load(self.kubeconfig.read_text())
        if token is not None:
            for user in config["users"]:
                user["user"] = {"token": token}
        return config


@pytest.fixture(scope="module")
def consumer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    process, kubeconfig = start_emulator(tmp_path_factory.mktemp("consumer"))
    try:
        asyncio.run(_install_crds(kubeconfig))
        yield kubeconfig
    finally:
        stop_emulator(process)


async def _install_crds(kubeconfig: Path) -> None:
    async with await Client.from_kubeconfig(kubeconfig) as client:
        for crd in crds():
            await client.create(CRDS, crd)


def _provider(state_dir: Path) -> Provider:
    process, kubeconfig = start_emulator(state_dir)
    port = int(yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"].rsplit(":", 1)[1])
    return Provider(state_dir, port, kubeconfig, process)


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    """A provider the tests share (none stops it)."""
    running = _provider(tmp_path_factory.mktemp("provider"))
    try:
        yield running
    finally:
        if running.process is not None:
            stop_emulator(running.process)


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[Provider]:
    """A provider of this test's own, to stop and start again."""
    running = _provider(tmp_path)
    try:
        yield running
    finally:
        if running.process is not None:
            stop_emulator(running.process)


@pytest.fixture
async def client(consumer: Path) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(consumer) as api:
        yield api


@dataclass
class Peering:
    """One provider as the consumer sees it: its tenant namespace, VirtualNode and credential Secret."""

    name: str
    namespace: str
    cluster_id: str

    @property
    def node(self) -> str:
        return f"liqo-{self.name}"

    @property
    def secret(self) -> str:
        return f"{c.CREDENTIAL_SECRET_PREFIX}{self.name}"

    @property
    def ref(self) -> Request:
        return Request(self.namespace, self.name)


def secret_body(peering: Peering, kubeconfig: JSON) -> JSON:
    encoded = base64.b64encode(yaml.safe_dump(kubeconfig).encode()).decode()
    return {
        "metadata": {"name": peering.secret, "namespace": peering.namespace},
        "data": {c.CREDENTIAL_KUBECONFIG_KEY: encoded},
    }


@pytest.fixture
async def peering(client: Client, provider: Provider) -> AsyncIterator[Peering]:
    """A tenant namespace with the VirtualNode and a working credential for `provider`."""
    name = f"p{uuid.uuid4().hex[:8]}"
    created = Peering(name, f"{c.TENANT_NAMESPACE_PREFIX}{name}", str(uuid.uuid4()))
    await client.create(NAMESPACES, {"metadata": {"name": created.namespace}})
    await client.create(SECRETS, secret_body(created, provider.credential()))
    body = virtual_node(
        name,
        namespace=created.namespace,
        cluster_id=created.cluster_id,
        resource_slice_name=name,
        resources=RESOURCES,
        credential_secret=created.secret,
        cluster_labels={"topology.kubernetes.io/region": "eu-south"},
    )
    await client.create(VIRTUALNODES, body)
    yield created
    with contextlib.suppress(Exception):
        await client.delete(NAMESPACES, created.namespace)


@contextlib.asynccontextmanager
async def running(
    client: Client, peering: Peering, settings: VirtualKubeletSettings = SETTINGS
) -> AsyncIterator[VirtualKubelet]:
    kubelet = VirtualKubelet(
        client, virtual_node=peering.ref, settings=settings, home_cluster_id="home", address="127.0.0.42"
    )
    task = asyncio.create_task(kubelet.run(), name="virtual kubelet under test")
    try:
        yield kubelet
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
