"""kube's orders: which pods a ReplicaSet deletes first, and the ReplicaSet orders of the Deployment controller."""

from __future__ import annotations

import pytest

from playground.controllers.workloads.ordering import (
    by_revision,
    by_scheduled_then_age,
    by_size_newer,
    by_size_older,
    pods_to_delete,
)
from runtime.api.objects import JSON


def pod(
    name: str,
    *,
    node: str = "n1",
    phase: str = "Running",
    ready: bool = True,
    ready_at: str = "2024-01-01T00:00:00Z",
    created: str = "2024-01-01T00:00:00Z",
    restarts: int = 0,
    cost: str | None = None,
) -> JSON:
    meta: JSON = {"name": name, "creationTimestamp": created}
    if cost is not None:
        meta["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": cost}
    return {
        "metadata": meta,
        "spec": {"nodeName": node} if node else {},
        "status": {
            "phase": phase,
            "conditions": [
                {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": ready_at}
            ],
            "containerStatuses": [{"restartCount": restarts}],
        },
    }


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (pod("unscheduled", node=""), pod("scheduled")),
        (pod("pending", phase="Pending"), pod("running")),
        (pod("unknown", phase="Unknown"), pod("running")),
        (pod("not-ready", ready=False), pod("ready")),
        (pod("cheap", cost="-10"), pod("dear", cost="10")),
        (pod("doubled", node="busy"), pod("alone", node="quiet")),
        (pod("recently-ready", ready_at="2024-01-02T00:00:00Z"), pod("long-ready")),
        (pod("restarting", restarts=5), pod("stable")),
        (pod("newer", created="2024-02-01T00:00:00Z"), pod("older")),
    ],
    ids=lambda p: p["metadata"]["name"],
)
def test_the_first_pod_goes_first(first: JSON, second: JSON) -> None:
    related = [first, second, pod("sibling", node="busy")]
    assert pods_to_delete([second, first], 1, related=related) == [first]
    assert pods_to_delete([first, second], 1, related=related) == [first]


def test_deleting_everything_keeps_the_order_given() -> None:
    pods = [pod("a"), pod("b")]
    assert pods_to_delete(pods, 5) == pods


def rs(name: str, replicas: int, created: str, revision: str | None = None) -> JSON:
    meta: JSON = {"name": name, "creationTimestamp": created}
    if revision is not None:
        meta["annotations"] = {"deployment.kubernetes.io/revision": revision}
    return {"metadata": meta, "spec": {"replicas": replicas}}


def names(objects: list[JSON]) -> list[str]:
    return [obj["metadata"]["name"] for obj in objects]


def test_replica_set_orders() -> None:
    old = rs("old", 2, "2024-01-01T00:00:00Z", "3")
    mid = rs("mid", 2, "2024-02-01T00:00:00Z", "1")
    big = rs("big", 5, "2024-03-01T00:00:00Z", "2")
    assert names(by_size_newer([old, mid, big])) == ["big", "mid", "old"]
    assert names(by_size_older([old, mid, big])) == ["big", "old", "mid"]
    assert names(by_revision([old, mid, big])) == ["mid", "big", "old"]


def test_daemon_pods_keep_the_oldest_scheduled_one_first() -> None:
    pods = [pod("young", created="2024-03-01T00:00:00Z"), pod("floating", node=""), pod("old")]
    assert names(by_scheduled_then_age(pods)) == ["old", "young", "floating"]
