"""Predicates one by one, their order, and kube-scheduler's FitError message."""

from __future__ import annotations

import pytest

from playground.scheduler.filters import (
    failures,
    fit_error,
    node_affinity,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    taint_toleration,
)
from playground.scheduler.interpod import InterPodAffinity
from playground.scheduler.nodeinfo import NodeInfo, PodInfo, Snapshot
from runtime.api.objects import JSON

from .builders import container, node, pod


def node_with(body: JSON, *pods: JSON) -> NodeInfo:
    info = NodeInfo.of(body)
    for placed in pods:
        info.add(PodInfo.of(placed))
    return info


def check(body: JSON, node_body: JSON, *placed: JSON) -> tuple[str, ...]:
    """All filters, in order, for `body` on a node holding `placed`."""
    target = node_with(node_body, *placed)
    info = PodInfo.of(body)
    return failures(info, target, inter_pod=InterPodAffinity(info, Snapshot({target.name: target}, {})))


def test_node_unschedulable_unless_tolerated() -> None:
    cordoned = NodeInfo.of(node("n", unschedulable=True))
    assert node_unschedulable(PodInfo.of(pod("p")), cordoned) == ("node(s) were unschedulable",)
    tolerant = pod(
        "t",
        tolerations=[
            {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
        ],
    )
    assert node_unschedulable(PodInfo.of(tolerant), cordoned) == ()
    assert node_unschedulable(PodInfo.of(pod("p")), NodeInfo.of(node("n"))) == ()


@pytest.mark.parametrize(
    ("taints", "tolerations", "reasons"),
    [
        ([], [], ()),
        ([{"key": "k", "value": "v", "effect": "NoSchedule"}], [], ("node(s) had untolerated taint {k: v}",)),
        ([{"key": "k", "effect": "NoExecute"}], [], ("node(s) had untolerated taint {k: }",)),
        ([{"key": "k", "effect": "PreferNoSchedule"}], [], ()),
        ([{"key": "k", "value": "v", "effect": "NoSchedule"}], [{"key": "k", "operator": "Exists"}], ()),
    ],
    ids=["none", "no-schedule", "no-execute-without-value", "prefer-only-scores", "tolerated"],
)
def test_taint_toleration(taints: list[JSON], tolerations: list[JSON], reasons: tuple[str, ...]) -> None:
    assert (
        taint_toleration(PodInfo.of(pod("p", tolerations=tolerations)), NodeInfo.of(node("n", taints=taints)))
        == reasons
    )


def test_not_ready_node_reads_as_its_taint() -> None:
    assert taint_toleration(PodInfo.of(pod("p")), NodeInfo.of(node("n", ready="Unknown"))) == (
        "node(s) had untolerated taint {node.kubernetes.io/unreachable: }",
    )


def test_node_affinity_reason() -> None:
    info = PodInfo.of(pod("p", nodeSelector={"disk": "ssd"}))
    assert node_affinity(info, NodeInfo.of(node("n"))) == (
        "node(s) didn't match Pod's node affinity/selector",
    )
    assert node_affinity(info, NodeInfo.of(node("n", labels={"disk": "ssd"}))) == ()


def ports(*specs: JSON) -> list[JSON]:
    return [container(ports=list(specs))]


@pytest.mark.parametrize(
    ("used", "wanted", "conflict"),
    [
        ({"containerPort": 80, "hostPort": 8080}, {"containerPort": 80, "hostPort": 8080}, True),
        ({"containerPort": 80, "hostPort": 8080}, {"containerPort": 80, "hostPort": 8081}, False),
        (
            {"containerPort": 80, "hostPort": 8080},
            {"containerPort": 80, "hostPort": 8080, "protocol": "UDP"},
            False,
        ),
        (
            {"containerPort": 80, "hostPort": 8080, "hostIP": "10.0.0.1"},
            {"containerPort": 80, "hostPort": 8080, "hostIP": "10.0.0.2"},
            False,
        ),
        (
            {"containerPort": 80, "hostPort": 8080, "hostIP": "10.0.0.1"},
            {"containerPort": 80, "hostPort": 8080},
            True,
        ),
        ({"containerPort": 80}, {"containerPort": 80}, False),
    ],
    ids=["same", "other-port", "other-protocol", "other-ips", "all-addresses-vs-one", "no-host-ports"],
)
def test_node_ports(used: JSON, wanted: JSON, conflict: bool) -> None:
    target = node_with(node("n"), pod("old", containers=ports(used)))
    reasons = node_ports(PodInfo.of(pod("new", containers=ports(wanted))), target)
    assert reasons == (("node(s) didn't have free ports for the requested pod ports",) if conflict else ())


def test_host_network_pods_claim_their_container_ports() -> None:
    target = node_with(node("n"), pod("old", containers=ports({"containerPort": 53}), hostNetwork=True))
    reasons = node_ports(
        PodInfo.of(pod("new", containers=ports({"containerPort": 53, "hostPort": 53}))), target
    )
    assert reasons == ("node(s) didn't have free ports for the requested pod ports",)


@pytest.mark.parametrize(
    ("placed", "wanted", "reasons"),
    [
        ([], pod("p", cpu="2", memory="4Gi"), ()),
        ([pod("a", cpu="1500m")], pod("p", cpu="600m"), ("Insufficient cpu",)),
        ([pod("a", cpu="1500m")], pod("p", cpu="500m"), ()),
        ([pod("a", cpu="3")], pod("p"), ()),
        ([], pod("p", cpu="3", memory="5Gi"), ("Insufficient cpu", "Insufficient memory")),
        ([pod("a"), pod("b")], pod("p"), ("Too many pods",)),
        ([pod("a"), pod("b")], pod("p", cpu="3"), ("Too many pods", "Insufficient cpu")),
        (
            [],
            pod(
                "p",
                containers=[{"name": "a", "image": "x", "resources": {"limits": {"example.com/gpu": "1"}}}],
            ),
            ("Insufficient example.com/gpu",),
        ),
        (
            [],
            pod(
                "p",
                containers=[
                    {"name": "a", "image": "x", "resources": {"requests": {"ephemeral-storage": "2Gi"}}}
                ],
            ),
            ("Insufficient ephemeral-storage",),
        ),
    ],
    ids=[
        "fits",
        "cpu-taken",
        "exactly-fits",
        "overcommitted-node-still-takes-a-pod-requesting-nothing",
        "cpu-and-memory",
        "pod-count",
        "pod-count-first",
        "extended-resource-absent",
        "ephemeral-storage",
    ],
)
def test_node_resources_fit(placed: list[JSON], wanted: JSON, reasons: tuple[str, ...]) -> None:
    target = node_with(
        node("n", cpu="2", memory="4Gi", pods="2", extra={"ephemeral-storage": "1Gi"}), *placed
    )
    assert node_resources_fit(PodInfo.of(wanted), target) == reasons


def test_first_failing_filter_wins() -> None:
    cordoned_and_tainted = node(
        "n", unschedulable=True, taints=[{"key": "k", "effect": "NoSchedule"}], cpu="1"
    )
    assert check(pod("p", cpu="2"), cordoned_and_tainted) == ("node(s) were unschedulable",)
    assert check(pod("p", cpu="2"), node("n", cpu="1")) == ("Insufficient cpu",)
    assert check(pod("p", cpu="500m"), node("n", cpu="1")) == ()


@pytest.mark.parametrize(
    ("nodes", "reasons", "message"),
    [
        (0, {}, "no nodes available to schedule pods"),
        (
            3,
            {
                "a": ("node(s) had untolerated taint {k: v}",),
                "b": ("Insufficient cpu",),
                "c": ("Insufficient cpu", "Insufficient memory"),
            },
            "0/3 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint {k: v}, 2 Insufficient cpu.",
        ),
        (
            2,
            {"a": ("node(s) were unschedulable",), "b": ("node(s) were unschedulable",)},
            "0/2 nodes are available: 2 node(s) were unschedulable.",
        ),
    ],
    ids=["no-nodes", "histogram-sorted-as-strings", "same-reason"],
)
def test_fit_error(nodes: int, reasons: dict[str, tuple[str, ...]], message: str) -> None:
    assert fit_error(nodes, reasons) == message
