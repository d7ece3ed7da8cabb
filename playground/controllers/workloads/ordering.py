"""The orders kube's controllers sort pods and ReplicaSets in.

- `pods_to_delete`: which pods a ReplicaSet removes first when it scales down
  (`controller.ActivePodsWithRanks`): unscheduled before scheduled, Pending before
  Unknown before Running, not-ready before ready, lower `pod-deletion-cost` first, pods
  doubled up on a node with more related pods first, more recently ready first, more
  restarts first, newer before older.
- ReplicaSet orders the Deployment controller relies on: by creation time, by size
  (ties broken newer-first or older-first), by revision.
- `by_scheduled_then_age`: a DaemonSet keeps the oldest scheduled pod of a node.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime

from runtime.api.objects import JSON

from . import names, pods
from .timestamps import parse_time

#: podPhaseToOrdinal; phases missing from kube's map count as 0
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


def created(obj: JSON) -> datetime | None:
    return parse_time((obj.get("metadata") or {}).get("creationTimestamp"))


def _after_or_zero(first: datetime | None, second: datetime | None) -> bool:
    """`afterOrZero`: a missing time sorts first, then the later one."""
    if first is None or second is None:
        return first is None
    return first > second


def _time_order(first: datetime | None, second: datetime | None) -> int:
    """-1 when `first` goes before `second` under `_after_or_zero`, 1 when after, 0 when equal."""
    if first == second:
        return 0
    return -1 if _after_or_zero(first, second) else 1


def deletion_cost(pod: JSON) -> int:
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(names.POD_DELETION_COST)
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0


def _compare(first: tuple[JSON, int], second: tuple[JSON, int]) -> int:
    a, rank_a = first
    b, rank_b = second
    node_a, node_b = pods.node_name(a), pods.node_name(b)
    if node_a != node_b and (not node_a or not node_b):
        return -1 if not node_a else 1
    phase_a, phase_b = _PHASE_ORDINAL.get(pods.phase(a), 0), _PHASE_ORDINAL.get(pods.phase(b), 0)
    if phase_a != phase_b:
        return -1 if phase_a < phase_b else 1
    ready_a, ready_b = pods.is_ready(a), pods.is_ready(b)
    if ready_a != ready_b:
        return -1 if not ready_a else 1
    cost_a, cost_b = deletion_cost(a), deletion_cost(b)
    if cost_a != cost_b:
        return -1 if cost_a < cost_b else 1
    if rank_a != rank_b:
        return -1 if rank_a > rank_b else 1
    if ready_a and ready_b:
        order = _time_order(pods.ready_since(a), pods.ready_since(b))
        if order:
            return order
    restarts_a, restarts_b = pods.restart_count(a), pods.restart_count(b)
    if restarts_a != restarts_b:
        return -1 if restarts_a > restarts_b else 1
    return _time_order(created(a), created(b))


def pods_to_delete(candidates: Sequence[JSON], count: int, *, related: Iterable[JSON] = ()) -> list[JSON]:
    """The `count` pods of `candidates` to delete first; `related` are the pods that make a node
    "doubled up" (the candidates and their siblings under the same owner)."""
    if count >= len(candidates):
        return list(candidates)
    on_node = Counter(pods.node_name(pod) for pod in related if pods.is_active(pod))
    ranked = [(pod, on_node[pods.node_name(pod)]) for pod in candidates]
    ranked.sort(key=functools.cmp_to_key(_compare))
    return [pod for pod, _ in ranked[:count]]


def _creation_key(obj: JSON) -> tuple[float, str]:
    moment = created(obj)
    return (moment.timestamp() if moment is not None else 0.0, str((obj.get("metadata") or {}).get("name")))


def by_creation(objects: Iterable[JSON]) -> list[JSON]:
    """Oldest first, ties by name (`ReplicaSetsByCreationTimestamp`)."""
    return sorted(objects, key=_creation_key)


def replicas(obj: JSON) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return int(value) if value is not None else 1


def by_size_newer(objects: Iterable[JSON]) -> list[JSON]:
    """Largest first; among equal sizes the newest first (`ReplicaSetsBySizeNewer`)."""
    return sorted(by_creation(objects)[::-1], key=lambda obj: -replicas(obj))


def by_size_older(objects: Iterable[JSON]) -> list[JSON]:
    """Largest first; among equal sizes the oldest first (`ReplicaSetsBySizeOlder`)."""
    return sorted(by_creation(objects), key=lambda obj: -replicas(obj))


def revision(obj: JSON) -> int | None:
    """The Deployment revision a ReplicaSet records; None when absent or not a number."""
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(names.REVISION)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def by_revision(objects: Iterable[JSON]) -> list[JSON]:
    """Lowest revision first, ties oldest first (`ReplicaSetsByRevision`)."""
    return sorted(by_creation(objects), key=lambda obj: revision(obj) or 0)


def by_scheduled_then_age(candidates: Iterable[JSON]) -> list[JSON]:
    """Scheduled pods first, then oldest first, ties by name (`podByCreationTimestampAndPhase`)."""
    return sorted(by_creation(candidates), key=lambda pod: not pods.node_name(pod))
