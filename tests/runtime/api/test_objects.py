"""`nested` reads a path through an object as `(x.get(a) or {}).get(b)` chains did, with a clear error on a malformed one."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.api.objects import JSON, nested

POD: JSON = {
    "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": None},
    "spec": {"nodeSelector": {}, "priority": 0, "hostNetwork": None},
    "status": "Running",
}


@pytest.mark.parametrize(
    ("path", "default", "expected"),
    [
        (("metadata", "labels", "app"), None, "web"),
        (("metadata", "labels", "tier"), None, None),
        (("metadata", "labels", "tier"), "db", "db"),
        (("metadata", "annotations", "note"), "-", "-"),
        (("spec", "nodeSelector", "zone"), None, None),
        (("spec", "missing", "deeper"), 7, 7),
        (("spec", "priority"), 5, 0),
        (("spec", "hostNetwork"), True, None),
        (("metadata",), None, POD["metadata"]),
    ],
    ids=[
        "present",
        "absent-key",
        "absent-key-default",
        "null-object-on-the-way",
        "empty-object-on-the-way",
        "absent-object-on-the-way",
        "falsy-value-kept",
        "null-value-kept",
        "one-key",
    ],
)
def test_nested_reads_a_path(path: tuple[str, ...], default: Any, expected: Any) -> None:
    assert nested(POD, *path, default=default) == expected


@pytest.mark.parametrize("obj", [None, {}], ids=["none", "empty"])
def test_nested_of_nothing_is_the_default(obj: JSON | None) -> None:
    assert nested(obj, "spec", "clusterID", default="") == ""


def test_nested_through_a_value_that_is_not_an_object_names_the_path() -> None:
    with pytest.raises(TypeError, match=r"^status is a str, not an object$"):
        nested(POD, "status", "phase")
