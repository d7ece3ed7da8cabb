"""Status conditions of workloads (Deployment, ReplicaSet): find, set and drop by type.

`set_condition` follows `deploymentutil.SetDeploymentCondition`: a condition with the
same status and reason as the current one changes nothing, and a change of reason with
the same status keeps the original `lastTransitionTime`.
"""

from __future__ import annotations

from datetime import datetime

from runtime.api.objects import JSON

from .timestamps import format_time


def new_condition(
    kind: str, status: str, reason: str, message: str, *, now: datetime, update_time: bool
) -> JSON:
    stamp = format_time(now)
    condition: JSON = {"type": kind, "status": status}
    if update_time:
        condition["lastUpdateTime"] = stamp
    condition.update({"lastTransitionTime": stamp, "reason": reason, "message": message})
    return condition


def get_condition(status: JSON, kind: str) -> JSON | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == kind:
            return dict(condition)
    return None


def set_condition(status: JSON, condition: JSON) -> None:
    current = get_condition(status, condition["type"])
    if current is not None and current.get("status") == condition["status"]:
        if current.get("reason") == condition.get("reason"):
            return
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != condition["type"]]
    status["conditions"].append(condition)


def remove_condition(status: JSON, kind: str) -> None:
    remaining = [c for c in status.get("conditions") or [] if c.get("type") != kind]
    if remaining:
        status["conditions"] = remaining
    else:
        status.pop("conditions", None)
