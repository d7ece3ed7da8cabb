"""The runtime's CRDs: accepted by the API server, Established, and printing like Liqo's docs."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS, KINDS, crds
from runtime.api.kinds import CRDS
from runtime.core import Client, InvalidError
from tests.apiserver.conftest import start_emulator, stop_emulator
from tests.runtime.liqo_docs import FOREIGNCLUSTERS_HEADER, MILAN_ESTABLISHED


def test_every_kind_is_served_in_its_group_at_v1beta1() -> None:
    groups = {kind.resource.group for kind in KINDS}
    assert groups == {
        c.CORE_GROUP,
        c.AUTHENTICATION_GROUP,
        c.OFFLOADING_GROUP,
        c.NETWORKING_GROUP,
        c.IPAM_GROUP,
    }
    assert {kind.resource.version for kind in KINDS} == {c.VERSION}
    names = [crd["metadata"]["name"] for crd in crds()]
    assert len(names) == len(set(names))
    assert "foreignclusters.core.liqo.io" in names


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    process, path = start_emulator(tmp_path_factory.mktemp("crds"))
    try:
        yield path
    finally:
        stop_emulator(process)


@pytest.fixture
async def client(kubeconfig: Path) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(kubeconfig) as api:
        yield api


async def _established(client: Client) -> None:
    async with asyncio.timeout(10):
        while True:
            listed = await client.list(CRDS)
            ours = [crd for crd in listed.items if crd["spec"]["group"].endswith(".liqo.io")]
            if len(ours) == len(KINDS) and all(
                any(
                    cond["type"] == "Established" and cond["status"] == "True"
                    for cond in crd["status"]["conditions"]
                )
                for crd in ours
            ):
                return
            await asyncio.sleep(0.05)


async def test_the_api_server_accepts_every_crd_and_serves_the_kinds(
    client: Client, kubeconfig: Path
) -> None:
    for crd in crds():
        await client.apply(CRDS, crd, field_manager=c.FIELD_MANAGER_INSTALL, force=True)
    await _established(client)
    await client.create(
        FOREIGNCLUSTERS,
        {
            "apiVersion": FOREIGNCLUSTERS.api_version,
            "kind": "ForeignCluster",
            "metadata": {"name": "milan"},
            "spec": {"clusterID": "6f1c2a34-0000-4000-8000-000000000001", "clusterName": "milan"},
        },
    )
    await client.patch_status(
        FOREIGNCLUSTERS,
        "milan",
        {
            "status": {
                "outgoingPeering": "Established",
                "incomingPeering": "None",
                "networking": "None",
                "authentication": "Established",
            }
        },
    )
    out = (
        await asyncio.to_thread(
            subprocess.run,
            ["kubectl", "--kubeconfig", str(kubeconfig), "get", "foreignclusters"],
            check=True,
            capture_output=True,
            text=True,
        )
    ).stdout.splitlines()
    assert out[0].split() == FOREIGNCLUSTERS_HEADER
    assert out[1].split()[:6] == MILAN_ESTABLISHED


async def test_a_foreigncluster_without_cluster_id_is_rejected(client: Client) -> None:
    for crd in crds():
        await client.apply(CRDS, crd, field_manager=c.FIELD_MANAGER_INSTALL, force=True)
    await _established(client)
    with pytest.raises(InvalidError, match=r"spec\.clusterID: Required value"):
        await client.create(
            FOREIGNCLUSTERS,
            {
                "apiVersion": FOREIGNCLUSTERS.api_version,
                "kind": "ForeignCluster",
                "metadata": {"name": "x"},
                "spec": {},
            },
        )
