"""Planning: computed values on create and update, keep-prior, write-only nulls, replacement paths."""

from __future__ import annotations

from typing import Any

import pytest
from tf.types import Number, String, Unknown
from tf.utils import Diagnostics

from provider.framework import plan
from provider.framework.schema import Attribute, NestedAttribute

SCHEMA = [
    Attribute("name", String(), required=True, requires_replace=True, description="d"),
    Attribute("size", Number(), optional=True, description="d"),
    Attribute("id", String(), computed=True, use_state_for_unknown=True, description="d"),
    Attribute("status", String(), computed=True, description="d"),
    Attribute("mode", String(), optional=True, computed=True, default="fast", description="d"),
    Attribute("token", String(), optional=True, write_only=True, description="d"),
    NestedAttribute(
        "peer",
        [
            Attribute("cluster_id", String(), required=True, requires_replace=True, description="d"),
            Attribute("cpu", String(), optional=True, description="d"),
            Attribute("node", String(), computed=True, description="d"),
        ],
        optional=True,
        description="d",
    ),
]

CONFIG: dict[str, Any] = {
    "name": "a",
    "size": 1,
    "id": None,
    "status": None,
    "mode": None,
    "token": "secret",
    "peer": {"cluster_id": "c1", "cpu": "1", "node": None},
}
PRIOR: dict[str, Any] = {
    "name": "a",
    "size": 1,
    "id": "id-1",
    "status": "Ready",
    "mode": "fast",
    "token": None,
    "peer": {"cluster_id": "c1", "cpu": "1", "node": "liqo-c1"},
}


def proposed(config: dict[str, Any], prior: dict[str, Any] | None) -> dict[str, Any]:
    """What Terraform proposes: config values, prior values where the config leaves a computed one null."""
    if prior is None:
        return dict(config)
    result = dict(config)
    for key, value in config.items():
        if value is None and key in ("id", "status", "mode"):
            result[key] = prior[key]
    result["peer"] = {**config["peer"], "node": prior["peer"]["node"]}
    return result


def test_create_makes_unset_computed_values_unknown_or_their_default() -> None:
    planned = plan.planned_state(SCHEMA, prior=None, proposed=proposed(CONFIG, None), config=CONFIG)

    assert planned["id"] is Unknown
    assert planned["status"] is Unknown
    assert planned["mode"] == "fast"
    assert planned["token"] is None, "write-only values are never planned"
    assert planned["peer"] == {"cluster_id": "c1", "cpu": "1", "node": Unknown}


def test_update_without_changes_keeps_every_prior_value() -> None:
    planned = plan.planned_state(SCHEMA, prior=PRIOR, proposed=proposed(CONFIG, PRIOR), config=CONFIG)
    assert planned == PRIOR


def test_update_with_a_change_leaves_only_kept_values_known() -> None:
    config = {**CONFIG, "size": 2}

    planned = plan.planned_state(SCHEMA, prior=PRIOR, proposed=proposed(config, PRIOR), config=config)

    assert planned["size"] == 2
    assert planned["id"] == "id-1", "use_state_for_unknown keeps the prior value"
    assert planned["status"] is Unknown
    assert planned["mode"] is Unknown
    assert planned["peer"]["node"] is Unknown


@pytest.mark.parametrize(
    ("change", "paths"),
    [
        ({"size": 2}, []),
        ({"name": "b"}, [["name"]]),
        ({"name": Unknown}, [["name"]]),
        ({"peer": {"cluster_id": "c2", "cpu": "1", "node": "liqo-c1"}}, [["peer", "cluster_id"]]),
        ({"peer": {"cluster_id": "c1", "cpu": "2", "node": "liqo-c1"}}, []),
    ],
    ids=["in-place", "replace", "unknown-replaces", "nested-replace", "nested-in-place"],
)
def test_replace_paths_name_the_attributes_that_force_a_replacement(
    change: dict[str, Any], paths: list[list[str]]
) -> None:
    assert plan.replace_paths(SCHEMA, prior=PRIOR, planned={**PRIOR, **change}) == paths


def test_changed_fields_are_the_top_level_attributes_that_differ() -> None:
    assert plan.changed_fields(SCHEMA, prior=PRIOR, planned={**PRIOR, "size": 3, "status": Unknown}) == {
        "size",
        "status",
    }
    assert plan.changed_fields(SCHEMA, prior=None, planned=PRIOR) == set(PRIOR) - {"token"}


def test_final_state_drops_write_only_values_and_reports_unknowns() -> None:
    diagnostics = Diagnostics()

    final = plan.final_state(
        SCHEMA, {**PRIOR, "token": "secret", "status": Unknown}, diagnostics, type_name="liqo_thing"
    )

    assert final is not None
    assert final["token"] is None
    assert final["status"] is None
    [error] = diagnostics.diagnostics
    assert error.summary == "liqo_thing: the provider left status unknown after apply"
    assert error.path == ["status"]


def test_known_values_and_unknown_paths() -> None:
    value = {"a": 1, "b": {"c": Unknown, "d": [1, 2]}}
    assert not plan.is_known(value)
    assert plan.unknown_paths(value, ("root",)) == ["root.b.c"]
    assert plan.is_known({"a": [1, {"b": None}]})
