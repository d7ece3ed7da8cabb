"""Taints and tolerations, as `k8s.io/api/core/v1` helpers define them.

A toleration tolerates a taint when its effect is empty or the same, its key is empty or the
same, and its operator is Exists, or Equal (the default) with the same value; an empty key
with Exists tolerates every taint.

A node that is not Ready counts as tainted the way the node lifecycle controller would taint it
(`node.kubernetes.io/not-ready` when Ready is False or missing, `.../unreachable` when it is
Unknown, both NoSchedule): kube-scheduler itself only reads taints, so treating readiness as a
taint gives the same decisions and messages whether or not a lifecycle controller runs, and a
pod that tolerates those taints may still land there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runtime.api.objects import JSON

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
#: well-known taints (`k8s.io/api/core/v1` well_known_taints.go)
TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def tolerated(tolerations: Sequence[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    return any(tolerates(toleration, taint) for toleration in tolerations)


def pod_tolerations(pod: Mapping[str, Any]) -> list[JSON]:
    return list((pod.get("spec") or {}).get("tolerations") or [])


def node_taints(node: Mapping[str, Any]) -> list[JSON]:
    """The node's taints, plus the readiness taint its Ready condition implies when it does not carry it yet."""
    taints = list((node.get("spec") or {}).get("taints") or [])
    implied = _readiness_taint(node)
    if implied is not None and not any(t.get("key") == implied["key"] for t in taints):
        taints.append(implied)
    return taints


def _readiness_taint(node: Mapping[str, Any]) -> JSON | None:
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = next((c.get("status") for c in conditions if c.get("type") == "Ready"), None)
    if ready == "True":
        return None
    key = TAINT_UNREACHABLE if ready == "Unknown" else TAINT_NOT_READY
    return {"key": key, "effect": NO_SCHEDULE}


def untolerated_taint(
    taints: Sequence[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]], *, effects: Sequence[str]
) -> Mapping[str, Any] | None:
    """The first taint with one of `effects` that no toleration tolerates."""
    return next(
        (t for t in taints if t.get("effect") in effects and not tolerated(tolerations, t)),
        None,
    )


def intolerable_preferences(
    taints: Sequence[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]
) -> int:
    """How many PreferNoSchedule taints the tolerations (those with an empty or that effect) leave untolerated."""
    relevant = [t for t in tolerations if (t.get("effect") or PREFER_NO_SCHEDULE) == PREFER_NO_SCHEDULE]
    return sum(1 for t in taints if t.get("effect") == PREFER_NO_SCHEDULE and not tolerated(relevant, t))
