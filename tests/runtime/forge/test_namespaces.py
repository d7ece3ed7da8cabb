"""Twin namespace names, NamespaceMaps and the NamespaceOffloading's status, as pure functions."""

from __future__ import annotations

import pytest

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.forge import namespaceoffloading as nso
from runtime.forge import namespaces as ns
from runtime.forge import podsecurity


@pytest.mark.parametrize(
    ("strategy", "selected", "expected"),
    [
        ("DefaultName", "", "demo-rome"),
        ("EnforceSameName", "", "demo"),
        ("SelectedName", "elsewhere", "elsewhere"),
    ],
    ids=["default", "same", "selected"],
)
def test_mapping_strategies_name_the_twin(strategy: str, selected: str, expected: str) -> None:
    assert (
        ns.twin_namespace_name("demo", strategy=strategy, local_cluster_name="rome", selected_name=selected)
        == expected
    )


def test_a_default_name_too_long_is_shortened_stably_and_distinctly() -> None:
    first = ns.twin_namespace_name("n" * 60, strategy="DefaultName", local_cluster_name="rome")
    second = ns.twin_namespace_name("n" * 60, strategy="DefaultName", local_cluster_name="milan")
    assert len(first) == 63 and ns.is_namespace_name(first)
    assert first != second
    assert first == ns.twin_namespace_name("n" * 60, strategy="DefaultName", local_cluster_name="rome")


def test_selected_name_needs_a_name() -> None:
    with pytest.raises(ValueError, match="remoteNamespaceName"):
        ns.twin_namespace_name("demo", strategy="SelectedName", local_cluster_name="rome")


@pytest.mark.parametrize(
    ("name", "reserved"),
    [
        ("default", True),
        ("kube-system", True),
        ("kube-anything", True),
        ("liqo-tenant-x", True),
        ("liqo", True),
        ("demo", False),
    ],
)
def test_a_provider_never_hands_out_its_own_namespaces(name: str, reserved: bool) -> None:
    assert bool(ns.reserved_problem(name, runtime_namespace="liqo")) is reserved


def namespace_map(name: str, desired: dict[str, str], current: dict[str, JSON]) -> JSON:
    body = ns.namespace_map(name, namespace=f"liqo-tenant-{name}", cluster_id=f"{name}-id", desired=desired)
    body["status"] = {"currentMapping": current}
    return body


def offloading(*, deleting: bool = False) -> JSON:
    body = nso.namespace_offloading("demo")
    body["metadata"]["generation"] = 3
    if deleting:
        body["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return body


ACCEPTED = {"remoteNamespace": "demo-rome", "phase": c.MAPPING_ACCEPTED}
FAILED = {"remoteNamespace": "demo-rome", "phase": c.MAPPING_CREATION_LOOP_BACKOFF, "message": "it exists"}


@pytest.mark.parametrize(
    ("maps", "phase"),
    [
        ([], c.PHASE_NO_CLUSTER_SELECTED),
        ([("milan", True, None)], c.PHASE_IN_PROGRESS),
        ([("milan", True, ACCEPTED), ("naples", False, None)], c.PHASE_READY),
        ([("milan", True, ACCEPTED), ("naples", True, FAILED)], c.PHASE_SOME_FAILED),
        ([("milan", True, FAILED)], c.PHASE_ALL_FAILED),
    ],
    ids=["nothing", "creating", "ready", "some-failed", "all-failed"],
)
def test_the_phase_sums_up_the_clusters(maps: list[tuple[str, bool, JSON | None]], phase: str) -> None:
    built = [
        namespace_map(name, {"demo": "demo-rome"} if wanted else {}, {"demo": entry} if entry else {})
        for name, wanted, entry in maps
    ]
    status = nso.offloading_status(offloading(), built, remote_namespace_name="demo-rome", now="T")
    assert status["offloadingPhase"] == phase
    assert status["observedGeneration"] == 3


def test_per_cluster_conditions_keep_their_transition_times_and_say_why() -> None:
    maps = [
        namespace_map("milan", {"demo": "demo-rome"}, {"demo": FAILED}),
        namespace_map("naples", {}, {}),
    ]
    first = nso.offloading_status(offloading(), maps, remote_namespace_name="demo-rome", now="T1")
    milan = first["remoteNamespacesConditions"]["milan"]
    assert [(e["type"], e["status"], e["reason"]) for e in milan] == [
        ("OffloadingRequired", "True", "ClusterSelected"),
        ("Ready", "False", "CreationLoopBackOff"),
    ]
    assert "it exists" in milan[1]["message"]
    assert [e["reason"] for e in first["remoteNamespacesConditions"]["naples"]] == ["ClusterNotSelected"]
    again = nso.offloading_status(
        offloading(), maps, remote_namespace_name="demo-rome", current=first, now="T2"
    )
    assert {e["lastTransitionTime"] for e in again["remoteNamespacesConditions"]["milan"]} == {"T1"}
    assert not nso.status_differs(first, again)
    statuses = nso.cluster_statuses({"status": first})
    assert [str(s) for s in statuses] == [
        "milan: not ready (CreationLoopBackOff): The remote namespace cannot be created: it exists",
        "naples: not selected",
    ]


def test_deleting_drops_clusters_that_are_done() -> None:
    maps = [
        namespace_map("milan", {}, {}),
        namespace_map("naples", {}, {"demo": {"remoteNamespace": "x", "phase": "Terminating"}}),
    ]
    status = nso.offloading_status(offloading(deleting=True), maps, remote_namespace_name="x", now="T")
    assert status["offloadingPhase"] == c.PHASE_TERMINATING
    assert list(status["remoteNamespacesConditions"]) == ["naples"]


def test_the_selector_picks_virtual_nodes_by_label() -> None:
    body = nso.namespace_offloading(
        "demo",
        cluster_selector_terms=[
            {"matchExpressions": [{"key": "region", "operator": "In", "values": ["south"]}]}
        ],
    )
    south = {"metadata": {"name": "liqo-naples", "labels": {"region": "south"}}}
    north = {"metadata": {"name": "liqo-milan", "labels": {"region": "north"}}}
    assert nso.selects(body, south) and not nso.selects(body, north)
    assert nso.selects(nso.namespace_offloading("demo"), north)


@pytest.mark.parametrize(("asked", "enforced"), [("restricted", "restricted"), ("baseline", "baseline")])
def test_the_twin_namespace_enforces_the_level_the_consumers_map_asks_for(asked: str, enforced: str) -> None:
    local = ns.namespace_map(
        "milan",
        namespace="liqo-tenant-milan",
        cluster_id="milan-id",
        desired={"shop": "shop-rome"},
        pod_security=podsecurity.level(asked),
    )
    replica = ns.replica_namespace_map(local, remote_namespace="liqo-tenant-rome", origin_cluster_id="r")
    assert replica["spec"]["podSecurity"] == asked
    replica["metadata"]["namespace"] = "liqo-tenant-rome"
    twin = ns.twin_namespace(
        "shop-rome", namespace_map=replica, origin_namespace="shop", origin_cluster_id="r"
    )
    assert twin["metadata"]["labels"][c.LABEL_POD_SECURITY_ENFORCE] == enforced
    assert podsecurity.enforced_level(twin) == enforced


@pytest.mark.parametrize("asked", ["privileged", None, "", "anything"])
def test_a_map_asking_for_less_than_baseline_gets_baseline(asked: object) -> None:
    replica = {"metadata": {"name": "m", "namespace": "t"}, "spec": {"podSecurity": asked}}
    twin = ns.twin_namespace("x", namespace_map=replica, origin_namespace="x", origin_cluster_id="r")
    assert podsecurity.enforced_level(twin) == "baseline"
