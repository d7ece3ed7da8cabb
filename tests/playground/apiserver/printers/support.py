"""What the printer tests share: a fixed clock, resource types, and row/header helpers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from playground.apiserver.printers.table import table
from playground.apiserver.resources.base import ResourceType

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
Obj = dict[str, Any]


def ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


#: the metadata most rows are printed from: name `x`, created 3m20s before NOW
META: Obj = {"name": "x", "creationTimestamp": ago(minutes=3, seconds=20)}


def rt(group: str, plural: str, kind: str = "Thing", **extra: Any) -> ResourceType:
    return ResourceType(group=group, version="v1", kind=kind, plural=plural, namespaced=True, **extra)


def row(resource: ResourceType, obj: Obj, *, subresource: str = "") -> list[Any]:
    cells: list[Any] = table(resource, [obj], now=NOW, subresource=subresource)["rows"][0]["cells"]
    return cells


def headers(resource: ResourceType, *, subresource: str = "") -> str:
    """Column names as kubectl prints them; `*` marks a wide-only column, `:type` a non-string one."""
    columns = table(resource, [], now=NOW, subresource=subresource)["columnDefinitions"]
    return ",".join(
        c["name"].upper()
        + ("" if c["type"] == "string" else f":{c['type']}")
        + ("*" if c["priority"] else "")
        for c in columns
    )
