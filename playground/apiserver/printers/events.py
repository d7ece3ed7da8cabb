"""The event printer, shared by core/v1 Events and events.k8s.io/v1 Events.

kube-apiserver prints both through the internal core Event, so an events.k8s.io Event
is first mapped onto the core field names (`regarding` -> `involvedObject`, `note` ->
`message`, the `deprecated*` fields back to their old names).
"""

from __future__ import annotations

from datetime import datetime

from .columns import NAME_DOC, Cell, Column, Obj, Printer
from .fields import get_int, get_map, get_str, name_of
from .format import age


def _core_event(event: Obj) -> Obj:
    """An `events.k8s.io/v1` Event in the core shape the event printer reads."""
    return {
        "metadata": get_map(event, "metadata"),
        "involvedObject": get_map(event, "regarding"),
        "type": get_str(event, "type"),
        "reason": get_str(event, "reason"),
        "message": get_str(event, "note"),
        "source": get_map(event, "deprecatedSource"),
        "firstTimestamp": event.get("deprecatedFirstTimestamp"),
        "lastTimestamp": event.get("deprecatedLastTimestamp"),
        "count": get_int(event, "deprecatedCount"),
        "eventTime": event.get("eventTime"),
        "series": event.get("series"),
        "reportingComponent": get_str(event, "reportingController"),
        "reportingInstance": get_str(event, "reportingInstance"),
    }


def _event_source(event: Obj) -> str:
    component = get_str(event, "source", "component") or get_str(event, "reportingComponent")
    host = get_str(event, "source", "host") or get_str(event, "reportingInstance")
    return f"{component}, {host}" if host else component


def _event_cells(event: Obj, now: datetime) -> list[Cell]:
    first = age(event.get("firstTimestamp") or event.get("eventTime"), now=now)
    last = age(event["lastTimestamp"], now=now) if event.get("lastTimestamp") else first
    count = get_int(event, "count")
    if isinstance(event.get("series"), dict):
        last = age(get_map(event, "series").get("lastObservedTime"), now=now)
        count = get_int(event, "series", "count")
    elif count == 0:
        count = 1
    involved = get_map(event, "involvedObject")
    target = get_str(involved, "kind").lower()
    if name := get_str(involved, "name"):
        target = f"{target}/{name}"
    return [
        last,
        get_str(event, "type"),
        get_str(event, "reason"),
        target,
        get_str(involved, "fieldPath"),
        _event_source(event),
        get_str(event, "message").strip(),
        first,
        count,
        name_of(event),
    ]


def _new_event_cells(event: Obj, now: datetime) -> list[Cell]:
    return _event_cells(_core_event(event), now)


_COLUMNS = (
    Column("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
    Column("Type", "Type of this event (Normal, Warning)."),
    Column("Reason", "A short, machine understandable reason for the transition."),
    Column("Object", "The object that this event is about."),
    Column("Subobject", "The piece of the object this event is about, if not all of it.", priority=1),
    Column("Source", "The component reporting this event.", priority=1),
    Column("Message", "A human-readable description of the status of this operation."),
    Column("First Seen", "The time at which the event was first recorded.", priority=1),
    Column("Count", "The number of times this event has occurred.", priority=1),
    Column("Name", NAME_DOC, priority=1, format="name"),
)
EVENT = Printer(columns=_COLUMNS, cells=_event_cells)
NEW_EVENT = Printer(columns=_COLUMNS, cells=_new_event_cells)

PRINTERS: dict[tuple[str, str], Printer] = {("", "events"): EVENT, ("events.k8s.io", "events"): NEW_EVENT}
