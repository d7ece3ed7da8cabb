"""Fixtures for resource tests against a real API server: an emulator of the test's own (resources touch
cluster-scoped objects: CRDs, ClusterRoles, webhooks), the provider's `Kube` on it, and a client for the
test to look and act with."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from provider.kube import Kube
from runtime.api.crds import crds
from runtime.api.kinds import CRDS
from runtime.core import Client, load_kubeconfig
from runtime.core.kubeconfig import load_kubeconfig_dict
from tests.apiserver.conftest import start_emulator, stop_emulator
from tests.ports import free_port

from .harness import Provider


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Path]:
    """A fresh API server emulator; its kubeconfig."""
    process, kubeconfig = start_emulator(tmp_path)
    try:
        yield kubeconfig
    finally:
        stop_emulator(process)


@pytest.fixture
def provider(emulator: Path) -> Iterator[Provider]:
    """What resources get from the provider: its cluster, configured for the emulator."""
    kube = Kube(load_kubeconfig(emulator))
    try:
        yield Provider(kube)
    finally:
        kube.close()


@pytest.fixture
def gone() -> Iterator[Provider]:
    """A provider configured for an API server that does not answer (nothing listens on its port)."""
    port = free_port()
    kubeconfig = {
        "clusters": [
            {
                "name": "gone",
                "cluster": {"server": f"https://127.0.0.1:{port}", "insecure-skip-tls-verify": True},
            }
        ],
        "users": [{"name": "gone", "user": {"token": "t"}}],
        "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "gone"}}],
        "current-context": "gone",
    }
    kube = Kube(load_kubeconfig_dict(kubeconfig))
    try:
        yield Provider(kube)
    finally:
        kube.close()


@pytest.fixture
async def api(emulator: Path) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(emulator) as client:
        yield client


@pytest.fixture
async def with_crds(api: Client) -> Client:
    """The runtime's CRDs in the emulator (a cluster where the runtime is installed, as far as kinds go)."""
    for crd in crds():
        await api.apply(CRDS, crd, field_manager="test")
    return api
