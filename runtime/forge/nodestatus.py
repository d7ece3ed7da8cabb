"""A Node's status as a kubelet reports it: conditions that heartbeat, and when a write is due.

Both node agents (the virtual kubelet and the playground's node agent) write the Node's status
the way the kubelet's node status manager does: every condition carries `lastHeartbeatTime`
(refreshed on each write) and a `lastTransitionTime` that moves only when its status does; the
status is written at once when anything but heartbeat times differs, and otherwise once the Ready
condition's heartbeat is `period` seconds old (the node Lease is the liveness signal).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from runtime.api.objects import JSON

from .conditions import differs, find, merged

#: a condition: (type, reason, message), or (status, reason, message) for Ready
Condition = tuple[str, str, str]


def timestamp(at: datetime) -> str:
    """A Node condition's time: RFC 3339 in UTC, whole seconds."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def node_conditions(
    steady: Iterable[Condition], *, ready: Condition, current: Iterable[JSON] | None, now: str
) -> list[JSON]:
    """The `steady` conditions (all False: no pressure), then Ready, each heartbeating at `now`.

    A condition keeps the `lastTransitionTime` it has in `current` while its status stays the same.
    """
    wanted = [(kind, "False", reason, message) for kind, reason, message in steady]
    wanted.append(("Ready", *ready))
    desired = [
        {"type": kind, "status": status, "lastHeartbeatTime": now, "reason": reason, "message": message}
        for kind, status, reason, message in wanted
    ]
    return merged(list(current or ()), desired, at=now)


def heartbeat_age(status: Mapping[str, Any], now: datetime) -> float | None:
    """Seconds since the Ready condition's lastHeartbeatTime (None: never, or unreadable)."""
    ready = find(status.get("conditions"), "Ready")
    if ready is None or not ready.get("lastHeartbeatTime"):
        return None
    try:
        beat = datetime.fromisoformat(str(ready["lastHeartbeatTime"]).replace("Z", "+00:00"))
    except ValueError:
        return None
    return (now - beat).total_seconds()


def status_differs(current: Mapping[str, Any], desired: Mapping[str, Any], *, fields: Sequence[str]) -> bool:
    """Whether anything but heartbeat times differs: one of `fields` (compared whole), or a condition."""
    if any(current.get(key) != desired.get(key) for key in fields):
        return True
    return differs(current.get("conditions"), desired.get("conditions") or [])


def report_delay(
    current: Mapping[str, Any],
    desired: Mapping[str, Any],
    *,
    fields: Sequence[str],
    now: datetime,
    period: float,
) -> float:
    """Seconds until the status is due: 0 when it differs, or its heartbeat is `period` old, unreadable or ahead."""
    age = heartbeat_age(current, now)
    if status_differs(current, desired, fields=fields) or age is None or not 0 <= age < period:
        return 0.0
    return period - age
