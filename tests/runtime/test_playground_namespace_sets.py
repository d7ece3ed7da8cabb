"""Namespaces offloaded by label on real playground clusters (both legs): a NamespaceOffloadingSet at work.

rome (consumer) peers with milan (region north) and naples (region south), the runtime
running as process pods. The test writes what `liqo_offload` with `namespace_selector`
writes (a NamespaceOffloadingSet) and labels namespaces as a user would: the matching
ones are offloaded, one made later too; `kubectl get namespaceoffloadings` shows each
NamespaceOffloading's strategies, phase and twin namespace, `kubectl get
namespaceoffloadingsets` the set; a new cluster selector moves the twin namespaces to
the cluster it picks now; deleting the set unoffloads everything it offloaded. Before the
set, one namespace offloaded by hand with SelectedName gets its twin under the chosen
name on the selected cluster only, with each cluster's conditions in its status.
"""

from __future__ import annotations

import functools

import pytest

from playground import liqo
from playground.testing import Playground
from runtime.api import constants as c
from runtime.api.crds import NAMESPACEOFFLOADINGS, NAMESPACEOFFLOADINGSETS
from runtime.api.kinds import NAMESPACES
from runtime.api.objects import JSON
from runtime.core import Client
from runtime.forge.namespaceoffloading import ClusterStatus, cluster_statuses, namespace_offloading
from runtime.forge.namespaceoffloadingset import namespace_offloading_set
from tests.runtime.test_playground_offloading import (
    get,
    kubectl,
    region,
    three_regions,
    until,
    virtual_node_ready,
)

pytestmark = [pytest.mark.slow, pytest.mark.kubectl]

TEAM = ("shop", "cart")


NOT_SELECTED = "The remote cluster has not been selected through the ClusterSelector field"
CREATED = "Namespace correctly offloaded to the remote cluster"


async def ready(api: Client, namespace: str) -> JSON | None:
    found = await get(api, NAMESPACEOFFLOADINGS, c.NAMESPACE_OFFLOADING_NAME, namespace=namespace)
    status = (found or {}).get("status") or {}
    return found if status.get("offloadingPhase") == c.PHASE_READY else None


async def twins_on(provider: Client, names: tuple[str, ...], *, present: bool) -> bool:
    for name in names:
        if (await get(provider, NAMESPACES, name) is not None) != present:
            return False
    return True


async def test_a_set_offloads_labelled_namespaces_and_moves_them(playground: Playground) -> None:
    rome_cluster, milan_cluster, naples_cluster, milan_identity, naples_identity = await three_regions(
        playground
    )
    async with (
        rome_cluster.client() as rome,
        milan_cluster.client() as milan,
        naples_cluster.client() as naples,
    ):
        await liqo.peer(rome, milan_identity, await liqo.issue_token(milan))
        await liqo.peer(rome, naples_identity, await liqo.issue_token(naples))
        for node in ("liqo-milan", "liqo-naples"):
            await until(functools.partial(virtual_node_ready, rome, node), f"rome: node {node} Ready")
        # one namespace by hand, its twins named as chosen (SelectedName), on the south only
        await rome.create(NAMESPACES, {"metadata": {"name": "batch"}})
        await rome.create(
            NAMESPACEOFFLOADINGS,
            namespace_offloading(
                "batch",
                namespace_mapping_strategy="SelectedName",
                remote_namespace_name="rome-batch",
                cluster_selector_terms=region("south"),
            ),
        )
        await until(functools.partial(twins_on, naples, ("rome-batch",), present=True), "naples: rome-batch")
        batch = await until(functools.partial(ready, rome, "batch"), "rome: batch Ready")
        assert batch["status"]["remoteNamespaceName"] == "rome-batch"
        assert cluster_statuses(batch) == [
            ClusterStatus(
                "milan", selected=False, ready=False, reason="ClusterNotSelected", message=NOT_SELECTED
            ),
            ClusterStatus("naples", selected=True, ready=True, reason="NamespaceCreated", message=CREATED),
        ]
        assert await get(milan, NAMESPACES, "rome-batch") is None

        for name in TEAM:
            await rome.create(NAMESPACES, {"metadata": {"name": name, "labels": {"team": "blue"}}})
        await rome.create(
            NAMESPACEOFFLOADINGSETS,
            namespace_offloading_set(
                "blue",
                namespace_selector={"matchLabels": {"team": "blue"}},
                namespace_mapping_strategy="EnforceSameName",
                cluster_selector_terms=region("south"),
            ),
        )
        await until(functools.partial(twins_on, naples, TEAM, present=True), "naples: twins of shop and cart")
        await rome.create(NAMESPACES, {"metadata": {"name": "late", "labels": {"team": "blue"}}})
        await until(functools.partial(twins_on, naples, ("late",), present=True), "naples: twin of late")
        assert await twins_on(milan, (*TEAM, "late"), present=False)

        for name in (*TEAM, "late"):
            await until(functools.partial(ready, rome, name), f"rome: {name} Ready")
        listed = await kubectl(rome_cluster.kubeconfig, "get", "namespaceoffloadings", "-A", "-o", "wide")
        header, *rows = listed.splitlines()
        assert header.split() == [
            "NAMESPACE",
            "NAME",
            "NAMESPACEMAPPINGSTRATEGY",
            "PODOFFLOADINGSTRATEGY",
            "OFFLOADINGPHASE",
            "REMOTENAMESPACENAME",
            "AGE",
        ]
        shown = {row.split()[0]: row.split()[2:6] for row in rows}
        assert shown["shop"] == ["EnforceSameName", "LocalAndRemote", "Ready", "shop"]
        assert shown["batch"] == ["SelectedName", "LocalAndRemote", "Ready", "rome-batch"]
        sets = await kubectl(rome_cluster.kubeconfig, "get", "namespaceoffloadingsets")
        assert sets.splitlines()[0].split() == ["NAME", "NAMESPACES", "AGE"]
        assert sets.splitlines()[1].split()[:2] == ["blue", "3"]

        await rome.patch(
            NAMESPACEOFFLOADINGSETS,
            "blue",
            {"spec": {"template": {"clusterSelector": {"nodeSelectorTerms": region("north")}}}},
        )
        everything = (*TEAM, "late")
        await until(
            functools.partial(twins_on, milan, everything, present=True), "milan: the twins moved there"
        )
        await until(functools.partial(twins_on, naples, everything, present=False), "naples: the twins gone")

        await rome.delete(NAMESPACEOFFLOADINGSETS, "blue")

        async def set_gone() -> bool:
            return await get(rome, NAMESPACEOFFLOADINGSETS, "blue") is None

        await until(set_gone, "rome: the set gone")
        assert await twins_on(milan, everything, present=False)
