"""What a NamespaceOffloadingSet decides from the namespaces and NamespaceOffloadings it sees."""

from __future__ import annotations

from typing import Any

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.forge.namespaceoffloadingset import (
    namespace_offloading_set,
    offloading_of,
    owner,
    select,
    set_status,
)

NORTH = [{"matchExpressions": [{"key": "topology.liqo.io/region", "operator": "In", "values": ["north"]}]}]


def namespace(name: str, **labels: str) -> JSON:
    return {"metadata": {"name": name, "labels": labels}}


def blue_set(name: str = "blue", **template: Any) -> JSON:
    body = namespace_offloading_set(name, namespace_selector={"matchLabels": {"team": "blue"}}, **template)
    body["metadata"]["generation"] = 3
    return body


def test_picked_namespaces_get_the_template_labelled_with_the_set() -> None:
    made = offloading_of(blue_set(pod_offloading_strategy="Remote", cluster_selector_terms=NORTH), "shop")
    assert made["metadata"] == {
        "name": c.NAMESPACE_OFFLOADING_NAME,
        "namespace": "shop",
        "labels": {c.LABEL_NAMESPACE_OFFLOADING_SET: "blue"},
    }
    assert made["spec"] == {
        "namespaceMappingStrategy": "DefaultName",
        "podOffloadingStrategy": "Remote",
        "clusterSelector": {"nodeSelectorTerms": NORTH},
    }
    assert owner(made) == "blue"


def test_it_creates_updates_deletes_and_leaves_others_alone() -> None:
    the_set = blue_set(cluster_selector_terms=NORTH)
    namespaces = [
        namespace("new", team="blue"),
        namespace("same", team="blue"),
        namespace("stale", team="blue"),
        namespace("relabelled", team="red"),
        namespace("by-hand", team="blue"),
        namespace("other-set", team="blue"),
        namespace("unrelated", team="red"),
        namespace("kube-system", team="blue"),
        namespace("liqo", team="blue"),
        namespace("liqo-tenant-milan", team="blue", **{c.LABEL_TENANT_NAMESPACE: "true"}),
        namespace("twin", team="blue", **{c.LABEL_ORIGIN_CLUSTER_ID: "x"}),
    ]
    stale = offloading_of(blue_set(), "stale")
    by_other = offloading_of(blue_set("green"), "other-set")
    by_hand = offloading_of(blue_set(), "by-hand")
    del by_hand["metadata"]["labels"]
    offloadings = [
        offloading_of(the_set, "same"),
        stale,
        offloading_of(the_set, "relabelled"),
        by_hand,
        by_other,
    ]
    selection = select(the_set, namespaces, offloadings, runtime_namespace="liqo")
    assert selection.create == ["new"]
    assert selection.update == ["stale"]
    assert selection.delete == ["relabelled"]
    assert selection.offloaded == ["same", "stale"]
    assert selection.conflicts["by-hand"].startswith("namespace by-hand has a NamespaceOffloading of its own")
    assert (
        "offloaded by NamespaceOffloadingSet green, which picked it first" in selection.conflicts["other-set"]
    )
    status = set_status(the_set, selection)
    assert status["namespaces"] == ["new", "same", "stale"]
    assert status["offloadedNamespaces"] == 3
    assert [conflict["namespace"] for conflict in status["conflicts"]] == ["by-hand", "other-set"]
    assert status["observedGeneration"] == 3


def test_a_set_being_deleted_unoffloads_everything_it_made() -> None:
    the_set = blue_set()
    the_set["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    going = offloading_of(the_set, "going")
    going["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    selection = select(
        the_set,
        [namespace("a", team="blue"), namespace("going", team="blue")],
        [offloading_of(the_set, "a"), going],
        runtime_namespace="liqo",
    )
    assert selection.delete == ["a"]
    assert selection.create == []
    assert selection.offloaded == []
