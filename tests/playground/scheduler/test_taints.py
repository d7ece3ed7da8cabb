"""Tolerations against taints, readiness as a taint, and PreferNoSchedule counting."""

from __future__ import annotations

import pytest

from playground.scheduler.taints import intolerable_preferences, node_taints, tolerates, untolerated_taint
from runtime.api.objects import JSON

from .builders import node

TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        ({"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}, True),
        ({"key": "dedicated", "value": "gpu"}, True),
        ({"key": "dedicated", "value": "cpu"}, False),
        ({"key": "dedicated", "operator": "Exists"}, True),
        ({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"operator": "Exists"}, True),
        ({"key": "other", "operator": "Exists"}, False),
        ({"key": "dedicated", "operator": "Lt", "value": "gpu"}, False),
    ],
    ids=[
        "equal",
        "operator-defaults-to-equal",
        "other-value",
        "exists",
        "other-effect",
        "empty-key-exists-tolerates-all",
        "other-key",
        "unknown-operator",
    ],
)
def test_tolerates(toleration: JSON, expected: bool) -> None:
    assert tolerates(toleration, TAINT) is expected


@pytest.mark.parametrize(
    ("ready", "implied"),
    [
        ("True", None),
        ("False", "node.kubernetes.io/not-ready"),
        ("Unknown", "node.kubernetes.io/unreachable"),
        (None, "node.kubernetes.io/not-ready"),
    ],
    ids=["ready", "not-ready", "unknown", "no-condition-yet"],
)
def test_readiness_implies_a_no_schedule_taint(ready: str | None, implied: str | None) -> None:
    taints = node_taints(node("n", ready=ready, taints=[TAINT]))
    assert taints[0] == TAINT
    assert [t["key"] for t in taints[1:]] == ([implied] if implied else [])
    assert all(t["effect"] == "NoSchedule" for t in taints)


def test_a_readiness_taint_already_set_is_not_doubled() -> None:
    set_by_lifecycle = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}
    assert node_taints(node("n", ready="False", taints=[set_by_lifecycle])) == [set_by_lifecycle]


def test_untolerated_taint_only_considers_the_given_effects() -> None:
    prefer = {"key": "spot", "effect": "PreferNoSchedule"}
    execute = {"key": "evict", "effect": "NoExecute"}
    effects = ("NoSchedule", "NoExecute")
    assert untolerated_taint([prefer], [], effects=effects) is None
    assert untolerated_taint([prefer, execute, TAINT], [], effects=effects) == execute
    assert (
        untolerated_taint([execute, TAINT], [{"key": "evict", "operator": "Exists"}], effects=effects)
        == TAINT
    )


def test_intolerable_preferences_counts_prefer_no_schedule_taints_left_untolerated() -> None:
    taints = [
        {"key": "a", "effect": "PreferNoSchedule"},
        {"key": "b", "effect": "PreferNoSchedule"},
        {"key": "c", "effect": "NoSchedule"},
    ]
    assert intolerable_preferences(taints, []) == 2
    assert intolerable_preferences(taints, [{"key": "a", "operator": "Exists"}]) == 1
    # a toleration for another effect does not count
    assert intolerable_preferences(taints, [{"key": "b", "operator": "Exists", "effect": "NoSchedule"}]) == 2
    assert intolerable_preferences(taints, [{"operator": "Exists", "effect": "PreferNoSchedule"}]) == 0
