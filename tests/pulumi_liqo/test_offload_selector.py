"""The `Offload` dynamic provider with `namespace_selector` against an API server emulator: the runtime's own
NamespaceOffloadingSet controller and a stand-in for the NamespaceOffloading controller answer."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from pulumi_liqo.providers.base import LiqoError
from pulumi_liqo.providers.offload import OffloadingProvider
from runtime.api import constants as c
from runtime.api.crds import NAMESPACEOFFLOADINGS, NAMESPACEOFFLOADINGSETS, crds
from runtime.api.kinds import CRDS, NAMESPACES
from runtime.api.objects import JSON
from runtime.controllers.offloading import namespaceoffloadingset
from runtime.controllers.options import ControllerOptions
from runtime.core import Client, Manager, Settings
from runtime.operations.offloadset import set_name
from tests.apiserver.conftest import start_emulator, stop_emulator
from tests.provider.runtime_double import offloading_controller


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Path]:
    process, kubeconfig = start_emulator(tmp_path)
    try:
        yield kubeconfig
    finally:
        stop_emulator(process)


@pytest.fixture
async def consumer(emulator: Path) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(emulator) as client:
        for crd in crds():
            await client.apply(CRDS, crd, field_manager="test")
        for name in ("shop", "cart"):
            await client.create(NAMESPACES, {"metadata": {"name": name, "labels": {"team": "blue"}}})
        yield client


@contextlib.asynccontextmanager
async def runtime(api: Client) -> AsyncIterator[None]:
    manager = Manager(api, settings=Settings(server=None))
    namespaceoffloadingset.setup(manager, ControllerOptions())
    task = asyncio.create_task(manager.run(), name="NamespaceOffloadingSet controller")
    try:
        async with offloading_controller(api):
            yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def props(emulator: Path, **given: Any) -> JSON:
    return {
        "kubeconfig": emulator.read_text(),
        "context": None,
        "timeouts": {"create": 60.0, "update": 60.0, "delete": 60.0},
        "force": False,
        "namespace": "",
        "namespace_selector": "team=blue",
        "pod_offloading_strategy": c.POD_OFFLOADING_LOCAL_AND_REMOTE,
        "namespace_mapping_strategy": c.MAPPING_DEFAULT_NAME,
        "remote_namespace_name": "",
        "cluster_selector_terms": [],
        **given,
    }


async def test_a_selector_offload_creates_reads_updates_refuses_and_deletes(
    emulator: Path, consumer: Client
) -> None:
    provider = OffloadingProvider()
    async with runtime(consumer):
        created = await asyncio.to_thread(provider.create, props(emulator))
        outs = created.outs
        assert created.id == set_name("team=blue") and outs is not None
        assert (outs["namespaces"], outs["conflicts"]) == (["cart", "shop"], {})
        assert outs["offloading_phase"] == c.PHASE_READY
        read = await asyncio.to_thread(provider.read, created.id, outs)
        assert read.outs is not None and read.outs["namespace_selector"] == "team=blue"
        assert read.outs["namespaces"] == ["cart", "shop"]
        terms = [{"matchExpressions": [{"key": "region", "operator": "In", "values": ["north"]}]}]
        changed = props(emulator, cluster_selector_terms=terms)
        assert provider.diff(created.id, outs, changed).replaces == []
        await asyncio.to_thread(provider.update, created.id, outs, changed)
        stored = await consumer.get(NAMESPACEOFFLOADINGS, "offloading", namespace="cart")
        assert stored["spec"]["clusterSelector"]["nodeSelectorTerms"] == terms
        with pytest.raises(
            LiqoError, match=r"already have a NamespaceOffloading: cart \(by NamespaceOffloadingSet"
        ):
            await asyncio.to_thread(provider.create, props(emulator, namespace_selector="team in (blue)"))
        await asyncio.to_thread(provider.delete, created.id, outs)
        assert (await consumer.list(NAMESPACEOFFLOADINGS)).items == []
        assert (await consumer.list(NAMESPACEOFFLOADINGSETS)).items == []
