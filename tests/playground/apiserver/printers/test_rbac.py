"""RBAC: bindings print their role and, wide, their subjects."""

from __future__ import annotations

from typing import Any

import pytest

from .support import META, Obj, row, rt


@pytest.mark.parametrize(
    ("group", "plural", "obj", "expected"),
    [
        (
            "rbac.authorization.k8s.io",
            "rolebindings",
            {
                "roleRef": {"kind": "ClusterRole", "name": "edit"},
                "subjects": [
                    {"kind": "User", "name": "alice"},
                    {"kind": "Group", "name": "devs"},
                    {"kind": "ServiceAccount", "namespace": "ci", "name": "bot"},
                    {"kind": "User", "name": "bob"},
                ],
            },
            ["x", "ClusterRole/edit", "3m20s", "alice, bob", "devs", "ci/bot"],
        ),
    ],
    ids=[
        "rolebinding",
    ],
)
def test_rbac_cells(group: str, plural: str, obj: Obj, expected: list[Any]) -> None:
    """The role reference and, joined, the users, groups and service accounts."""
    assert row(rt(group, plural), {"metadata": META, **obj}) == expected
