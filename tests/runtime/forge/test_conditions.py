"""Status conditions: transition times move only with the status, and unchanged conditions need no write."""

from __future__ import annotations

from runtime.forge import conditions

CURRENT = [
    {
        "type": "Ready",
        "status": "True",
        "reason": "Ready",
        "message": "ok",
        "lastTransitionTime": "2024-01-01T00:00:00Z",
    },
    {
        "type": "Node",
        "status": "False",
        "reason": "NotReady",
        "message": "no",
        "lastTransitionTime": "2024-01-01T00:00:00Z",
    },
]


def test_the_transition_time_is_kept_while_the_status_holds() -> None:
    wanted = [
        conditions.condition("Ready", True, reason="Ready", message="still ok"),
        conditions.condition("Node", True, reason="Ready", message="yes"),
        conditions.condition("New", False, reason="Waiting", message="soon"),
    ]
    merged = conditions.merged(CURRENT, wanted, at="2024-02-02T00:00:00Z")
    assert [entry["lastTransitionTime"] for entry in merged] == [
        "2024-01-01T00:00:00Z",
        "2024-02-02T00:00:00Z",
        "2024-02-02T00:00:00Z",
    ]


def test_a_write_is_due_only_when_a_condition_says_something_else() -> None:
    same = [conditions.condition("Ready", True, reason="Ready", message="ok")]
    assert not conditions.differs(CURRENT, same)
    assert conditions.differs(CURRENT, [conditions.condition("Ready", True, reason="Ready", message="other")])
    assert conditions.differs(CURRENT, [conditions.condition("Missing", True, reason="R", message="m")])
    assert conditions.differs(
        CURRENT, [conditions.condition("Ready", True, reason="Ready", message="ok", observed_generation=2)]
    )
    assert conditions.is_true(CURRENT, "Ready") and not conditions.is_true(CURRENT, "Node")
