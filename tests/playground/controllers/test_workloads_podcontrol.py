"""Refusals a workload controller treats specially."""

from __future__ import annotations

from playground.controllers.workloads.podcontrol import is_namespace_terminating
from runtime.core import ForbiddenError


def test_a_terminating_namespace_is_recognised_by_its_cause() -> None:
    terminating = ForbiddenError(
        {
            "code": 403,
            "reason": "Forbidden",
            "details": {"causes": [{"reason": "NamespaceTerminating", "field": "metadata.namespace"}]},
        }
    )
    assert is_namespace_terminating(terminating)
    assert not is_namespace_terminating(
        ForbiddenError({"code": 403, "reason": "Forbidden", "message": "quota"})
    )
