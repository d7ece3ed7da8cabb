"""A node's own taints, and the tolerations the DaemonSet controller adds to its pods.

Whether a toleration tolerates a taint is the scheduler's `playground.scheduler.taints`, and
node affinity is `runtime.api.selectors`: the DaemonSet controller decides with them where its
pods belong, before any scheduler sees them.
"""

from __future__ import annotations

from runtime.api.objects import JSON


def node_taints(node: JSON) -> list[JSON]:
    return list((node.get("spec") or {}).get("taints") or [])


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
