"""Decisions over a snapshot: placed pods count for the next decision, priority orders the pending ones."""

from __future__ import annotations

from collections import Counter

from playground.scheduler.nodeinfo import PodInfo, Snapshot
from playground.scheduler.placement import Decision, decide, priority_order
from playground.scheduler.scheduler import is_pending, unschedulable_condition
from runtime.api.objects import JSON

from .builders import node, pod


def snapshot(*nodes: JSON, placed: list[tuple[JSON, str]] | None = None) -> Snapshot:
    return Snapshot.of(nodes, [(PodInfo.of(body), where) for body, where in placed or []], [])


def test_pods_decided_one_after_the_other_spread_evenly() -> None:
    cluster = snapshot(node("n1"), node("n2"), node("n3"))
    chosen = []
    for i in range(100):
        info = PodInfo.of(pod(f"p{i}"))
        decision = decide(info, cluster)
        assert decision.node is not None
        cluster.place(info, decision.node)
        chosen.append(decision.node)
    assert sorted(Counter(chosen).values()) == [33, 33, 34]
    assert chosen[:3] == ["n1", "n2", "n3"]


def test_placed_and_assumed_pods_take_room() -> None:
    cluster = snapshot(node("n1", cpu="1"), node("n2", cpu="1"), placed=[(pod("a", cpu="700m"), "n1")])
    assert decide(PodInfo.of(pod("b", cpu="600m")), cluster) == Decision("n2")
    cluster.place(PodInfo.of(pod("b", cpu="600m")), "n2")
    assert decide(PodInfo.of(pod("c", cpu="600m")), cluster) == Decision(
        None, "0/2 nodes are available: 2 Insufficient cpu."
    )


def test_pods_on_unknown_nodes_are_left_out() -> None:
    cluster = snapshot(node("n1", pods="1"), placed=[(pod("ghost"), "gone")])
    assert decide(PodInfo.of(pod("p")), cluster) == Decision("n1")


def test_no_nodes() -> None:
    assert decide(PodInfo.of(pod("p")), snapshot()) == Decision(None, "no nodes available to schedule pods")


def test_a_malformed_pod_fits_nowhere_and_says_why() -> None:
    decision = decide(PodInfo.of(pod("p", cpu="plenty")), snapshot(node("n1")))
    assert decision.node is None
    assert decision.message.startswith("invalid pod: quantity 'plenty'")


def test_priority_order() -> None:
    def info(name: str, priority: int, created: str) -> PodInfo:
        body = pod(name, priority=priority)
        body["metadata"]["creationTimestamp"] = created
        return PodInfo.of(body)

    pending = [
        info("late-high", 10, "2024-01-01T00:00:05Z"),
        info("b-low", 0, "2024-01-01T00:00:01Z"),
        info("early-high", 10, "2024-01-01T00:00:02Z"),
        info("a-low", 0, "2024-01-01T00:00:01Z"),
    ]
    assert [p.name for p in sorted(pending, key=priority_order)] == [
        "early-high",
        "late-high",
        "a-low",
        "b-low",
    ]


def test_is_pending() -> None:
    mine = "default-scheduler"
    assert is_pending(pod("p", schedulerName=mine), scheduler_name=mine)
    assert is_pending(pod("defaulted"), scheduler_name=mine)
    assert not is_pending(pod("p", node_name="n1"), scheduler_name=mine)
    assert not is_pending(pod("p", schedulerName="other"), scheduler_name=mine)
    assert not is_pending(pod("p", phase="Failed"), scheduler_name=mine)
    assert not is_pending(pod("p", schedulingGates=[{"name": "wait"}]), scheduler_name=mine)
    deleting = pod("p")
    deleting["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    assert not is_pending(deleting, scheduler_name=mine)


def test_unschedulable_condition_is_written_only_when_it_changes() -> None:
    fresh = unschedulable_condition(pod("p"), "0/1 nodes are available: 1 Too many pods.")
    assert fresh is not None
    assert (fresh["type"], fresh["status"], fresh["reason"]) == ("PodScheduled", "False", "Unschedulable")
    assert fresh["lastTransitionTime"]
    carrying = pod("p")
    carrying["status"] = {"conditions": [{**fresh, "lastTransitionTime": "2024-01-01T00:00:00Z"}]}
    assert unschedulable_condition(carrying, fresh["message"]) is None
    changed = unschedulable_condition(carrying, "no nodes available to schedule pods")
    assert changed is not None
    # still False: the transition time stays
    assert changed["lastTransitionTime"] == "2024-01-01T00:00:00Z"
