"""Custom resources: NAME plus the CRD's printer columns, typed like the apiextensions convertor."""

from __future__ import annotations

from typing import Any

import pytest

from playground.apiserver.printers.custom import jsonpath_text
from playground.apiserver.printers.table import table
from playground.apiserver.resources.base import PrinterColumn, ResourceType

from .support import META, NOW, Obj, ago, headers, row, rt

CRD_COLUMNS = (
    PrinterColumn(name="Phase", type="string", json_path=".status.phase"),
    PrinterColumn(
        name="Replicas", type="integer", json_path=".spec.replicas", description="Desired replicas"
    ),
    PrinterColumn(name="Ready", type="string", json_path='.status.conditions[?(@.type=="Ready")].status'),
    PrinterColumn(name="Ratio", type="number", json_path=".status.ratio", priority=1),
    PrinterColumn(name="Paused", type="boolean", json_path=".spec.paused", priority=1),
    PrinterColumn(name="Started", type="date", json_path=".status.startTime"),
    PrinterColumn(name="Age", type="date", json_path=".metadata.creationTimestamp"),
)


def crd(columns: tuple[PrinterColumn, ...] = CRD_COLUMNS) -> ResourceType:
    return rt("example.com", "widgets", "Widget", crd="widgets.example.com", printer_columns=columns)


def test_crd_column_definitions_come_from_the_printer_columns_without_an_extra_age() -> None:
    assert table(crd(), [], now=NOW)["columnDefinitions"][1:3] == [
        {
            "name": "Phase",
            "type": "string",
            "format": "",
            "description": "Custom resource definition column (in JSONPath format): .status.phase",
            "priority": 0,
        },
        {
            "name": "Replicas",
            "type": "integer",
            "format": "",
            "description": "Desired replicas",
            "priority": 0,
        },
    ]
    assert headers(crd()) == (
        "NAME,PHASE,REPLICAS:integer,READY,RATIO:number*,PAUSED:boolean*,STARTED:date,AGE:date"
    )


def test_crd_without_printer_columns_gets_an_age_column() -> None:
    obj = {"metadata": {"name": "w", "creationTimestamp": ago(minutes=10)}}
    assert headers(crd(())) == "NAME,AGE:date"
    assert row(crd(()), obj) == ["w", "10m"]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            {
                "spec": {"replicas": 3, "paused": False},
                "status": {
                    "phase": "Running",
                    "ratio": 1,
                    "startTime": ago(hours=2),
                    "conditions": [
                        {"type": "Synced", "status": "True"},
                        {"type": "Ready", "status": "False"},
                    ],
                },
            },
            ["Running", 3, "False", 1.0, False, "120m", "3m20s"],
        ),
        ({}, [None, None, None, None, None, None, "3m20s"]),
        (
            {
                "spec": {"replicas": 2.9, "paused": "yes"},
                "status": {"phase": 7, "ratio": "high", "startTime": "soon"},
            },
            ["7", 2, None, None, None, "<invalid>", "3m20s"],
        ),
        (
            {"spec": {"replicas": "3"}, "status": {"phase": {"b": 1, "a": "<x>"}, "startTime": ""}},
            ['{"a":"\\u003cx\\u003e","b":1}', None, None, None, None, "<unknown>", "3m20s"],
        ),
        (
            {"status": {"phase": None, "startTime": None}},
            ["<no value>", None, None, None, None, None, "3m20s"],
        ),
    ],
    ids=["typed-values", "missing-values", "mistyped-values", "map-in-string-column", "null-values"],
)
def test_crd_cells_follow_the_column_types(obj: Obj, expected: list[Any]) -> None:
    cells = row(crd(), {"metadata": META, **obj})
    assert cells == ["x", *expected]


def test_crd_string_column_shows_only_the_first_of_several_results() -> None:
    resource = crd((PrinterColumn(name="Images", type="string", json_path=".spec.containers[*].image"),))
    obj = {"metadata": META, "spec": {"containers": [{"image": "a"}, {"image": "b"}]}}
    assert row(resource, obj) == ["x", "a"]


def test_crd_column_with_an_unparsable_path_is_empty() -> None:
    resource = crd((PrinterColumn(name="Bad", type="string", json_path=".spec..x"),))
    assert row(resource, {"metadata": META, "spec": {"x": 1}}) == ["x", None]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("text", "text"),
        (3, "3"),
        (True, "true"),
        (1.5, "1.5"),
        (3.0, "3"),
        (100000.0, "100000"),
        (1000000.0, "1e+06"),
        (1234567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-2.5e-07, "-2.5e-07"),
        (0.0, "0"),
        ([1, "a"], '[1,"a"]'),
        (None, "<no value>"),
    ],
    ids=lambda value: repr(value),
)
def test_jsonpath_text_prints_scalars_like_go(value: Any, expected: str) -> None:
    assert jsonpath_text(value) == expected


def test_custom_resource_scale_is_printed_with_the_crd_columns() -> None:
    resource = crd((PrinterColumn(name="Replicas", type="integer", json_path=".spec.replicas"),))
    scale = {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": META, "spec": {"replicas": 4}}
    assert headers(resource, subresource="scale") == "NAME,REPLICAS:integer"
    assert row(resource, scale, subresource="scale") == ["x", 4]
