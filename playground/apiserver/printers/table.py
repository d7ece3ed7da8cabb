"""The entry point: pick a kind's printer and wrap its rows in a `meta.k8s.io/v1` Table.

Built-in kinds are printed by (group, plural) with every wide column included (kubectl
drops priority > 0 columns unless `-o wide`); custom resources by their printer columns;
any other kind by the generic convertor's NAME and CREATED AT. The `scale` subresource of
a built-in kind is printed as the Scale it returns.

`table()` is pure: the caller passes the objects, the list metadata and the current time.
For watches, pass `no_headers=True` after the first event, as kube-apiserver does.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ..errors import bad_request
from ..resources.base import ResourceType
from . import apps, batch, cluster, core, events, networking, pods, rbac, storage
from .columns import CREATED_DOC, NAME, Cell, Column, Obj, Printer
from .custom import custom_printer
from .fields import get_map, name_of
from .format import parse_timestamp

TABLE_API_VERSION = "meta.k8s.io/v1"
INCLUDE_OBJECT_VALUES = ("None", "Metadata", "Object")
_ZERO_TIME = "0001-01-01T00:00:00Z"

BUILTIN_PRINTERS: dict[tuple[str, str], Printer] = {
    **pods.PRINTERS,
    **core.PRINTERS,
    **events.PRINTERS,
    **networking.PRINTERS,
    **apps.PRINTERS,
    **batch.PRINTERS,
    **storage.PRINTERS,
    **rbac.PRINTERS,
    **cluster.PRINTERS,
}


def _created_at(obj: Obj, now: datetime) -> list[Cell]:
    when = parse_timestamp(get_map(obj, "metadata").get("creationTimestamp"))
    stamp = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if when is not None else _ZERO_TIME
    return [name_of(obj), stamp]


#: the generic convertor (`rest.NewDefaultTableConvertor`) for kinds without a printer
DEFAULT_PRINTER = Printer(
    columns=(NAME, Column("Created At", type="date", description=CREATED_DOC)),
    cells=_created_at,
)


def printer_for(rt: ResourceType, subresource: str = "") -> Printer:
    """Custom resources by their columns, built-in kinds by (group, plural), anything else generically.

    A built-in kind's `scale` subresource prints its Scale; a custom resource's Scale goes
    through the CRD's columns, as the apiextensions scale storage does.
    """
    if rt.crd:
        return custom_printer(rt.printer_columns)
    if subresource == "scale":
        return apps.SCALE
    builtin = BUILTIN_PRINTERS.get((rt.group, rt.plural))
    if builtin is not None:
        return builtin
    if rt.printer_columns:
        return custom_printer(rt.printer_columns)
    return DEFAULT_PRINTER


def _row_object(rt: ResourceType, obj: Obj, include_object: str) -> Obj | None:
    if include_object == "None":
        return None
    if include_object == "Object":
        if "apiVersion" in obj and "kind" in obj:
            return obj
        return {"apiVersion": rt.api_version, "kind": rt.kind, **obj}
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": TABLE_API_VERSION,
        "metadata": get_map(obj, "metadata"),
    }


def _table_metadata(list_meta: Mapping[str, Any] | None) -> Obj:
    keep = ("resourceVersion", "continue", "remainingItemCount")
    return {key: list_meta[key] for key in keep if list_meta and list_meta.get(key) not in (None, "")}


def table(
    rt: ResourceType,
    objects: list[Obj],
    *,
    include_object: str = "Metadata",
    now: datetime,
    list_meta: Mapping[str, Any] | None = None,
    no_headers: bool = False,
    subresource: str = "",
) -> Obj:
    """The `meta.k8s.io/v1` Table for `objects` of kind `rt` (or of its `subresource`).

    `include_object` is the request's `includeObject` (`None`, `Metadata` (default, also for ""),
    `Object`); anything else is a 400 like kube-apiserver's. `list_meta` supplies
    resourceVersion/continue/remainingItemCount (for a single GET pass the object's
    resourceVersion). `no_headers` drops the column definitions (watch events after the first).
    """
    include = include_object or "Metadata"
    if include not in INCLUDE_OBJECT_VALUES:
        raise bad_request(f'unrecognized includeObject value: "{include_object}"')
    printer = printer_for(rt, subresource)
    rows = []
    for obj in objects:
        row: Obj = {"cells": printer.cells(obj, now)}
        if conditions := printer.conditions(obj):
            row["conditions"] = conditions
        row["object"] = _row_object(rt, obj, include)
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": TABLE_API_VERSION,
        "metadata": _table_metadata(list_meta),
        "columnDefinitions": [] if no_headers else [column.definition() for column in printer.columns],
        "rows": rows,
    }
