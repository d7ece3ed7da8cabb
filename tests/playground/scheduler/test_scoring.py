"""Scores: least allocated, PreferNoSchedule taints, preferred node affinity, and the tie-break."""

from __future__ import annotations

import pytest

from playground.scheduler.nodeinfo import NodeInfo, PodInfo
from playground.scheduler.scoring import best_node, least_allocated, normalized, scores
from runtime.api.objects import JSON

from .builders import node, pod


def node_with(body: JSON, *pods: JSON) -> NodeInfo:
    info = NodeInfo.of(body)
    for placed in pods:
        info.add(PodInfo.of(placed))
    return info


@pytest.mark.parametrize(
    ("placed", "wanted", "score"),
    [
        ([], pod("p", cpu="1", memory="2Gi"), 75),
        ([pod("a", cpu="2", memory="4Gi")], pod("p", cpu="1", memory="2Gi"), 25),
        ([], pod("p", cpu="8", memory="2Gi"), 37),
        ([], pod("p"), 97),
    ],
    ids=["quarter-used", "three-quarters-used", "over-capacity-scores-zero", "defaults-count"],
)
def test_least_allocated(placed: list[JSON], wanted: JSON, score: int) -> None:
    # 4 cpu, 8Gi: an empty pod counts as 100m and 200Mi
    assert least_allocated(PodInfo.of(wanted), node_with(node("n"), *placed)) == score


@pytest.mark.parametrize(
    ("raw", "reverse", "expected"),
    [
        ([0, 0], True, [100, 100]),
        ([0, 0], False, [0, 0]),
        ([0, 1, 2], True, [100, 50, 0]),
        ([10, 5, 0], False, [100, 50, 0]),
    ],
)
def test_normalized(raw: list[int], reverse: bool, expected: list[int]) -> None:
    assert normalized(raw, reverse=reverse) == expected


def test_prefer_no_schedule_taints_and_preferred_affinity_weigh_in() -> None:
    spot = node_with(node("spot", taints=[{"key": "spot", "effect": "PreferNoSchedule"}]))
    ssd = node_with(node("ssd", labels={"disk": "ssd"}))
    plain = node_with(node("plain"))
    preferred = [
        {
            "weight": 1,
            "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
        }
    ]
    wanted = PodInfo.of(
        pod("p", affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}})
    )
    spot_score, ssd_score, plain_score = scores(wanted, [spot, ssd, plain])
    assert ssd_score - plain_score == 200
    assert plain_score - spot_score == 300
    assert best_node(wanted, [spot, ssd, plain]) is ssd


def test_least_allocated_node_wins() -> None:
    busy = node_with(node("a"), pod("x", cpu="3"))
    idle = node_with(node("b"))
    assert best_node(PodInfo.of(pod("p", cpu="100m")), [busy, idle]) is idle


def test_ties_go_to_fewest_pods_then_name() -> None:
    # one pod requesting nothing scores like one using the defaults; a node with two zero-request pods
    # scores the same as one with one default pod only if the totals match, so build equal totals
    crowded = node_with(node("a"), pod("x", cpu="50m", memory="100Mi"), pod("y", cpu="50m", memory="100Mi"))
    roomy = node_with(node("b"), pod("z"))
    wanted = PodInfo.of(pod("p"))
    assert scores(wanted, [crowded, roomy])[0] == scores(wanted, [crowded, roomy])[1]
    assert best_node(wanted, [crowded, roomy]) is roomy
    assert best_node(wanted, [node_with(node("c")), node_with(node("b"))]).name == "b"
