"""core/v1 Event <-> events.k8s.io/v1 Event: one stored collection, two shapes.

kube-apiserver stores events once and serves both groups by conversion; so do we.
The field pairs follow k8s.io/kubernetes/pkg/apis/events/v1 conversion.
"""

from __future__ import annotations

from typing import Any

from .base import Obj

#: (events.k8s.io field, core/v1 field)
_RENAMES = (
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
)
_SAME = ("metadata", "eventTime", "series", "reason", "type", "action", "related", "reportingInstance")


def events_to_core(obj: Obj) -> Obj:
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "Event"}
    for key in _SAME:
        if key in obj:
            out[key] = obj[key]
    for new, old in _RENAMES:
        if new in obj:
            out[old] = obj[new]
    if "reportingController" in obj:
        out["reportingComponent"] = obj["reportingController"]
    source = obj.get("deprecatedSource")
    if isinstance(source, dict):
        out["source"] = source
    out.setdefault("involvedObject", {})
    return out


def core_to_events(obj: Obj) -> Obj:
    out: dict[str, Any] = {"apiVersion": "events.k8s.io/v1", "kind": "Event"}
    for key in _SAME:
        if key in obj:
            out[key] = obj[key]
    for new, old in _RENAMES:
        if old in obj:
            out[new] = obj[old]
    if "reportingComponent" in obj:
        out["reportingController"] = obj["reportingComponent"]
    if "source" in obj:
        out["deprecatedSource"] = obj["source"]
    return out
