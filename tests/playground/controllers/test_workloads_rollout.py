"""The Deployment controller's arithmetic: fenceposts, scaling shares, annotations, status and conditions."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from playground.controllers.workloads import rollout
from playground.controllers.workloads.conditions import get_condition, new_condition, set_condition
from playground.controllers.workloads.intstr import scaled_value
from runtime.api.objects import JSON

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def deployment(replicas: int, surge: int | str = "25%", unavailable: int | str = "25%", **extra: Any) -> JSON:
    spec = {
        "replicas": replicas,
        "strategy": {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable},
        },
        **extra,
    }
    return {"metadata": {"name": "web", "generation": 2, "annotations": {}}, "spec": spec, "status": {}}


def replica_set(
    name: str,
    replicas: int,
    *,
    available: int = 0,
    created: str = "2024-01-01T00:00:00Z",
    annotations: dict[str, str] | None = None,
) -> JSON:
    return {
        "metadata": {
            "name": name,
            "uid": name,
            "creationTimestamp": created,
            "annotations": dict(annotations or {}),
        },
        "spec": {"replicas": replicas},
        "status": {"replicas": replicas, "availableReplicas": available, "readyReplicas": available},
    }


@pytest.mark.parametrize(
    ("value", "total", "up", "expected"),
    [
        (3, 10, True, 3),
        ("25%", 3, True, 1),
        ("25%", 3, False, 0),
        ("50%", 5, True, 3),
        ("50%", 5, False, 2),
        (None, 4, True, 0),
    ],
)
def test_scaled_values_round_like_intstr(
    value: int | str | None, total: int, up: bool, expected: int
) -> None:
    assert scaled_value(value, total, round_up=up) == expected


def test_a_number_in_a_string_is_not_a_percentage() -> None:
    with pytest.raises(ValueError):
        scaled_value("3", 10, round_up=True)


@pytest.mark.parametrize(
    ("surge", "unavailable", "desired", "expected"),
    # kube's ResolveFenceposts examples
    [
        ("0%", "1%", 2, (0, 1)),
        ("1%", "25%", 2, (1, 0)),
        ("1%", "0%", 1, (1, 0)),
        ("0%", "0%", 10, (0, 1)),
        ("25%", "25%", 10, (3, 2)),
    ],
)
def test_fenceposts(surge: str, unavailable: str, desired: int, expected: tuple[int, int]) -> None:
    assert rollout.resolve_fenceposts(surge, unavailable, desired) == expected


def test_max_unavailable_is_capped_and_recreate_has_no_fenceposts() -> None:
    assert rollout.max_unavailable(deployment(2, unavailable=5)) == 2
    assert rollout.max_unavailable(deployment(0, unavailable=5)) == 0
    recreate = deployment(3)
    recreate["spec"]["strategy"] = {"type": "Recreate"}
    assert (rollout.max_surge(recreate), rollout.max_unavailable(recreate)) == (0, 0)
    assert rollout.new_rs_new_replicas(recreate, [], replica_set("new", 0)) == 3


def test_the_new_replica_set_grows_within_the_surge() -> None:
    d = deployment(4, surge=1, unavailable=0)
    old, new = replica_set("old", 4), replica_set("new", 0)
    assert rollout.new_rs_new_replicas(d, [old, new], new) == 1
    assert (
        rollout.new_rs_new_replicas(d, [replica_set("old", 3), replica_set("new", 1)], replica_set("new", 1))
        == 2
    )
    assert (
        rollout.new_rs_new_replicas(d, [replica_set("old", 4), replica_set("new", 1)], replica_set("new", 1))
        == 1
    )


def test_proportional_shares_follow_the_max_replicas_annotation() -> None:
    d = deployment(20, surge=3)
    rs = replica_set("a", 8, annotations={"deployment.kubernetes.io/max-replicas": "13"})
    # 8 * (20 + 3) / 13 = 14.15 -> 14: six more, but never more than what is left to add
    assert rollout.proportion(rs, d, 10, 0) == 6
    assert rollout.proportion(rs, d, 10, 7) == 3
    assert rollout.proportion(replica_set("b", 0), d, 10, 0) == 0


def test_find_active_or_latest() -> None:
    old = replica_set("old", 0, created="2024-01-01T00:00:00Z")
    older = replica_set("older", 0, created="2023-01-01T00:00:00Z")
    assert rollout.find_active_or_latest(None, [older, old]) is old
    new = replica_set("new", 2)
    assert rollout.find_active_or_latest(new, [old]) is new
    assert rollout.find_active_or_latest(new, [replica_set("busy", 1)]) is None


def test_new_replica_set_annotations_copy_bump_and_keep_history() -> None:
    d = deployment(3)
    d["metadata"]["annotations"] = {
        "team": "a",
        "deployment.kubernetes.io/revision": "7",
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
    }
    rs = replica_set("rs", 3, annotations={"deployment.kubernetes.io/revision": "2"})
    assert rollout.set_new_rs_annotations(d, rs, 5, exists=True)
    annotations = rs["metadata"]["annotations"]
    assert annotations == {
        "team": "a",
        "deployment.kubernetes.io/revision": "5",
        "deployment.kubernetes.io/revision-history": "2",
    }
    assert not rollout.set_new_rs_annotations(d, rs, 5, exists=True)
    fresh = replica_set("fresh", 0)
    rollout.set_new_rs_annotations(d, fresh, 1, exists=False)
    assert fresh["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "3"
    assert fresh["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "4"


def test_saturation_needs_size_annotation_and_availability() -> None:
    d = deployment(3)
    assert rollout.is_saturated(
        d, replica_set("rs", 3, available=3, annotations={"deployment.kubernetes.io/desired-replicas": "3"})
    )
    assert not rollout.is_saturated(
        d, replica_set("rs", 3, available=2, annotations={"deployment.kubernetes.io/desired-replicas": "3"})
    )
    assert not rollout.is_saturated(d, replica_set("rs", 3, available=3))


def test_status_counts_and_availability_condition() -> None:
    d = deployment(4, unavailable=1)
    new, old = replica_set("new", 2, available=1), replica_set("old", 2, available=2)
    status = rollout.calculate_status([old, new], new, d, now=NOW)
    assert {k: v for k, v in status.items() if k != "conditions"} == {
        "observedGeneration": 2,
        "replicas": 4,
        "updatedReplicas": 2,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "unavailableReplicas": 1,
    }
    assert get_condition(status, "Available") == {
        "type": "Available",
        "status": "True",
        "lastUpdateTime": "2024-05-01T12:00:00Z",
        "lastTransitionTime": "2024-05-01T12:00:00Z",
        "reason": "MinimumReplicasAvailable",
        "message": "Deployment has minimum availability.",
    }
    short = rollout.calculate_status([replica_set("new", 4, available=2)], None, d, now=NOW)
    condition = get_condition(short, "Available")
    assert condition is not None and (condition["status"], condition["reason"]) == (
        "False",
        "MinimumReplicasUnavailable",
    )


def test_progress_completion_and_deadline() -> None:
    d = deployment(2, progressDeadlineSeconds=60)
    d["status"] = {"replicas": 3, "updatedReplicas": 1, "availableReplicas": 2}
    assert rollout.is_progressing(d, {"replicas": 3, "updatedReplicas": 2, "availableReplicas": 2})
    assert not rollout.is_progressing(d, dict(d["status"]))
    assert rollout.is_complete(
        d, {"replicas": 2, "updatedReplicas": 2, "availableReplicas": 2, "observedGeneration": 2}
    )
    assert not rollout.is_complete(
        d, {"replicas": 2, "updatedReplicas": 2, "availableReplicas": 2, "observedGeneration": 1}
    )
    status: JSON = {}
    set_condition(
        status,
        new_condition(
            "Progressing",
            "True",
            "ReplicaSetUpdated",
            "",
            now=datetime(2024, 5, 1, 11, 58, tzinfo=UTC),
            update_time=True,
        ),
    )
    assert rollout.is_timed_out(d, status, now=NOW)
    assert not rollout.is_timed_out(d, status, now=datetime(2024, 5, 1, 11, 58, 30, tzinfo=UTC))
    assert rollout.progress_deadline(d, status) == datetime(2024, 5, 1, 11, 59, tzinfo=UTC)


def test_set_condition_keeps_the_transition_time_for_the_same_status() -> None:
    status: JSON = {}
    early = datetime(2024, 1, 1, tzinfo=UTC)
    set_condition(
        status, new_condition("Progressing", "True", "NewReplicaSetCreated", "a", now=early, update_time=True)
    )
    set_condition(
        status, new_condition("Progressing", "True", "ReplicaSetUpdated", "b", now=NOW, update_time=True)
    )
    condition = get_condition(status, "Progressing")
    assert condition is not None
    assert (condition["reason"], condition["lastTransitionTime"], condition["lastUpdateTime"]) == (
        "ReplicaSetUpdated",
        "2024-01-01T00:00:00Z",
        "2024-05-01T12:00:00Z",
    )


def test_equal_ignore_hash_and_new_replica_set_lookup() -> None:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "a", "image": "x"}]}}
    hashed = {"metadata": {"labels": {"app": "web", "pod-template-hash": "abc"}}, "spec": template["spec"]}
    assert rollout.equal_ignore_hash(template, hashed)
    d = deployment(1)
    d["spec"]["template"] = template
    rs = replica_set("current", 1)
    rs["spec"]["template"] = hashed
    other = replica_set("other", 1)
    other["spec"]["template"] = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "a", "image": "y"}]},
    }
    assert rollout.find_new(d, [other, rs]) is rs
    assert rollout.find_old(d, [other, rs]) == [other]
