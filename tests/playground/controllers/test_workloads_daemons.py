"""Where DaemonSet pods belong: taints, tolerations, node affinity, and the rolling update's choices."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from playground.controllers.daemonset import max_unavailable, rolling_update_deletions
from playground.controllers.workloads.daemons import (
    daemon_pod_template,
    pin_to_node,
    should_run,
    target_node,
    updated_and_old,
)
from playground.scheduler.taints import tolerates
from runtime.api.objects import JSON

NOW = datetime(2024, 5, 1, tzinfo=UTC)


def ds(**template_spec: Any) -> JSON:
    return {
        "metadata": {"name": "agent", "annotations": {"deprecated.daemonset.template.generation": "3"}},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "a", "image": "x"}], **template_spec},
            },
        },
    }


def node(name: str, *taints: JSON, **labels: str) -> JSON:
    return {"metadata": {"name": name, "labels": labels}, "spec": {"taints": list(taints)}}


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        ({"key": "k", "operator": "Exists"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
        ({"key": "k", "value": "v"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
        ({"key": "k", "value": "w"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, False),
        ({"operator": "Exists"}, {"key": "any", "effect": "NoExecute"}, True),
        (
            {"key": "k", "operator": "Exists", "effect": "NoExecute"},
            {"key": "k", "effect": "NoSchedule"},
            False,
        ),
    ],
)
def test_tolerations(toleration: JSON, taint: JSON, expected: bool) -> None:
    assert tolerates(toleration, taint) is expected


@pytest.mark.parametrize(
    ("daemon", "target", "expected"),
    [
        (ds(), node("plain"), (True, True)),
        (ds(nodeSelector={"disk": "ssd"}), node("hdd", disk="hdd"), (False, False)),
        (ds(), node("tainted", {"key": "dedicated", "effect": "NoSchedule"}), (False, True)),
        (ds(), node("evicting", {"key": "dedicated", "effect": "NoExecute"}), (False, False)),
        (ds(), node("soft", {"key": "dedicated", "effect": "PreferNoSchedule"}), (True, True)),
        (
            ds(),
            node("not-ready", {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}),
            (True, True),
        ),
        (
            ds(),
            node("cordoned", {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}),
            (True, True),
        ),
        (
            ds(),
            node("no-net", {"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}),
            (False, True),
        ),
        (
            ds(hostNetwork=True),
            node("no-net", {"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}),
            (True, True),
        ),
        (ds(nodeName="elsewhere"), node("here"), (False, False)),
    ],
    ids=[
        "plain",
        "selector",
        "noschedule",
        "noexecute",
        "prefer",
        "not-ready",
        "cordoned",
        "network",
        "host-network",
        "node-name",
    ],
)
def test_should_run(daemon: JSON, target: JSON, expected: tuple[bool, bool]) -> None:
    assert should_run(daemon, target) == expected


def test_pods_are_pinned_with_kube_tolerations_and_labels() -> None:
    template = daemon_pod_template(ds(), "abc")
    assert template["metadata"]["labels"] == {
        "app": "agent",
        "pod-template-generation": "3",
        "controller-revision-hash": "abc",
    }
    keys = [(t["key"], t["effect"]) for t in template["spec"]["tolerations"]]
    assert keys == [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ]
    assert all("tolerationSeconds" not in t for t in template["spec"]["tolerations"])
    spec: JSON = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": []}]
                }
            }
        }
    }
    pin_to_node(spec, "n1")
    pod = {"spec": spec}
    assert target_node(pod) == "n1"
    assert target_node({"spec": {"nodeName": "bound", **spec}}) == "bound"
    assert target_node({"spec": {}}) is None


def daemon_pod(name: str, node_name: str, revision: str, *, ready: bool = True) -> JSON:
    spec: JSON = {}
    pin_to_node(spec, node_name)
    return {
        "metadata": {"name": name, "labels": {"controller-revision-hash": revision}},
        "spec": spec,
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def test_a_node_with_two_pods_of_a_kind_is_left_to_the_manage_loop() -> None:
    assert updated_and_old([daemon_pod("a", "n", "new"), daemon_pod("b", "n", "new")], "new", None) == (
        None,
        None,
        False,
    )
    new, old, ok = updated_and_old([daemon_pod("a", "n", "new"), daemon_pod("b", "n", "old")], "new", None)
    assert ok and new is not None and old is not None


def test_a_rolling_update_replaces_unavailable_pods_and_then_up_to_max_unavailable() -> None:
    daemon = ds()
    daemon["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
    nodes = [node(f"n{i}") for i in range(4)]
    grouped = {
        "n0": [daemon_pod("p0", "n0", "old")],
        "n1": [daemon_pod("p1", "n1", "old", ready=False)],
        "n2": [daemon_pod("p2", "n2", "old")],
        "n3": [daemon_pod("p3", "n3", "new")],
    }
    victims = rolling_update_deletions(daemon, nodes, grouped, "new", now=NOW)
    assert [v["metadata"]["name"] for v in victims] == ["p1", "p0"]
    grouped["n3"] = [daemon_pod("p3", "n3", "new", ready=False)]
    assert [
        v["metadata"]["name"] for v in rolling_update_deletions(daemon, nodes, grouped, "new", now=NOW)
    ] == ["p1"]


def test_max_unavailable_rounds_up_and_never_stalls() -> None:
    daemon = ds()
    daemon["spec"]["updateStrategy"] = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "10%", "maxSurge": 1},
    }
    assert max_unavailable(daemon, 15) == 2
    daemon["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = 0
    assert max_unavailable(daemon, 15) == 1
