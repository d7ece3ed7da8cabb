"""Offloading many namespaces by label (a NamespaceOffloadingSet) on emulated clusters.

rome peers with milan (region north) and naples (region south); the test writes what
`liqo_offload` with `namespace_selector` writes (a NamespaceOffloadingSet) and labels
namespaces as a user would.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from runtime.api import constants as c
from runtime.api.crds import NAMESPACEOFFLOADINGS, NAMESPACEOFFLOADINGSETS
from runtime.api.kinds import NAMESPACES
from runtime.api.objects import JSON
from runtime.forge.namespaceoffloadingset import namespace_offloading_set
from tests.runtime.peering.harness import Clusters

from .support import get, offload, offloading, peered, phase


def region(name: str) -> list[JSON]:
    return [{"matchExpressions": [{"key": "topology.liqo.io/region", "operator": "In", "values": [name]}]}]


@pytest.mark.slow
async def test_a_set_offloads_matching_namespaces_as_they_appear_and_moves_them(clusters: Clusters) -> None:
    rome = await clusters.cluster("rome")
    milan = await clusters.cluster("milan", labels={"topology.liqo.io/region": "north"})
    naples = await clusters.cluster("naples", labels={"topology.liqo.io/region": "south"})
    await peered(clusters, rome, milan, naples)
    for name, team in (("shop", "blue"), ("cart", "blue"), ("ops", "red")):
        await rome.admin.create(NAMESPACES, {"metadata": {"name": name, "labels": {"team": team}}})
    await offload(rome, "mine", namespace_mapping_strategy="EnforceSameName")
    await rome.admin.patch(NAMESPACES, "mine", {"metadata": {"labels": {"team": "blue"}}})
    await rome.admin.create(
        NAMESPACEOFFLOADINGSETS,
        namespace_offloading_set(
            "blue",
            namespace_selector={"matchLabels": {"team": "blue"}},
            namespace_mapping_strategy="EnforceSameName",
            cluster_selector_terms=region("south"),
        ),
    )

    async def set_reports(namespaces: list[str], conflicts: list[str]) -> JSON | None:
        found = await get(rome.admin, NAMESPACEOFFLOADINGSETS, "blue")
        status = (found or {}).get("status") or {}
        seen = [entry["namespace"] for entry in status.get("conflicts") or []]
        return found if status.get("namespaces") == namespaces and seen == conflicts else None

    found = await clusters.eventually(lambda: set_reports(["cart", "shop"], ["mine"]), within=30)
    assert "has a NamespaceOffloading of its own" in found["status"]["conflicts"][0]["message"]
    for name in ("cart", "shop"):
        ready = await clusters.eventually(functools.partial(phase, rome, name, c.PHASE_READY), within=30)
        assert ready["metadata"]["labels"][c.LABEL_NAMESPACE_OFFLOADING_SET] == "blue"
        assert await get(naples.admin, NAMESPACES, name) is not None
        assert await get(milan.admin, NAMESPACES, name) is None
    assert await offloading(rome, "ops") is None
    mine = await offloading(rome, "mine")
    assert mine is not None and c.LABEL_NAMESPACE_OFFLOADING_SET not in (mine["metadata"].get("labels") or {})

    # a namespace that appears later is offloaded too
    await rome.admin.create(NAMESPACES, {"metadata": {"name": "late", "labels": {"team": "blue"}}})
    await clusters.eventually(lambda: phase(rome, "late", c.PHASE_READY), within=30)
    assert await get(naples.admin, NAMESPACES, "late") is not None

    # a new cluster selector moves every twin namespace to the clusters it picks now
    await rome.admin.patch(
        NAMESPACEOFFLOADINGSETS,
        "blue",
        {"spec": {"template": {"clusterSelector": {"nodeSelectorTerms": region("north")}}}},
    )

    async def moved() -> bool:
        for name in ("cart", "late", "shop"):
            if await get(milan.admin, NAMESPACES, name) is None or await get(naples.admin, NAMESPACES, name):
                return False
        return True

    await clusters.eventually(moved, within=60)

    # a namespace that stops matching is unoffloaded; one whose own offloading goes is taken up
    await rome.admin.patch(NAMESPACES, "cart", {"metadata": {"labels": {"team": "red"}}})
    await rome.admin.delete(NAMESPACEOFFLOADINGS, c.NAMESPACE_OFFLOADING_NAME, namespace="mine")
    await clusters.eventually(lambda: set_reports(["late", "mine", "shop"], []), within=60)
    await clusters.eventually(lambda: _gone(rome, "cart"), within=30)
    taken = await clusters.eventually(lambda: phase(rome, "mine", c.PHASE_READY), within=30)
    assert taken["metadata"]["labels"][c.LABEL_NAMESPACE_OFFLOADING_SET] == "blue"

    # a second set picking the same namespaces leaves them to the first
    await rome.admin.create(
        NAMESPACEOFFLOADINGSETS,
        namespace_offloading_set("also-blue", namespace_selector={"matchLabels": {"team": "blue"}}),
    )

    async def second_reports() -> JSON | None:
        found = await get(rome.admin, NAMESPACEOFFLOADINGSETS, "also-blue")
        conflicts = ((found or {}).get("status") or {}).get("conflicts") or []
        return found if [entry["namespace"] for entry in conflicts] == ["late", "mine", "shop"] else None

    second = await clusters.eventually(second_reports, within=30)
    assert second["status"]["namespaces"] == []
    assert (
        "offloaded by NamespaceOffloadingSet blue, which picked it first"
        in second["status"]["conflicts"][0]["message"]
    )

    # deleting the set unoffloads what it offloaded, and the set goes once they are gone
    await rome.admin.delete(NAMESPACEOFFLOADINGSETS, "also-blue")
    await rome.admin.delete(NAMESPACEOFFLOADINGSETS, "blue")
    await clusters.eventually(lambda: _set_gone(rome.admin), within=60)
    for name in ("late", "mine", "shop"):
        assert await offloading(rome, name) is None
        assert await get(milan.admin, NAMESPACES, name) is None


async def _gone(cluster: Any, namespace: str) -> bool:
    return await offloading(cluster, namespace) is None


async def _set_gone(client: Any) -> bool:
    return await get(client, NAMESPACEOFFLOADINGSETS, "blue") is None
