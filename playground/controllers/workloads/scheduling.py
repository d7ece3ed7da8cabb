"""Taints, tolerations and required node affinity: which nodes a pod may be placed on.

Mirrors `v1helper.FindMatchingUntoleratedTaint`, `Toleration.ToleratesTaint` and
`nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)`; the DaemonSet controller uses
them to decide where its pods belong, before any scheduler sees them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from runtime.api.selectors import node_selector_matches, set_selector

JSON = dict[str, Any]

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"


def tolerates(toleration: JSON, taint: JSON) -> bool:
    """`Toleration.ToleratesTaint`: empty effect and key match all; operator Exists ignores the value."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("key") and toleration.get("key") != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def untolerated_taint(
    taints: Iterable[JSON], tolerations: Iterable[JSON], *, effects: Iterable[str]
) -> JSON | None:
    """The first taint with one of `effects` that no toleration tolerates."""
    wanted = set(effects)
    tolerations = list(tolerations)
    for taint in taints:
        if taint.get("effect") in wanted and not any(tolerates(t, taint) for t in tolerations):
            return dict(taint)
    return None


def node_taints(node: JSON) -> list[JSON]:
    return list((node.get("spec") or {}).get("taints") or [])


def required_affinity_matches(pod_spec: JSON, node: JSON) -> bool:
    """The pod's nodeSelector and required node affinity both select `node`."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    if not set_selector(pod_spec.get("nodeSelector")).matches(labels):
        return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    return node_selector_matches(required, node)


def add_toleration(spec: JSON, toleration: JSON) -> None:
    """`AddOrUpdateTolerationInPodSpec`: replace a toleration with the same key, operator, value and effect."""
    tolerations = list(spec.get("tolerations") or [])
    for index, existing in enumerate(tolerations):
        if all(
            existing.get(field) == toleration.get(field) for field in ("key", "operator", "value", "effect")
        ):
            tolerations[index] = dict(toleration)
            break
    else:
        tolerations.append(dict(toleration))
    spec["tolerations"] = tolerations
