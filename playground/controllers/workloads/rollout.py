"""The Deployment controller's arithmetic, as pure functions (`pkg/controller/deployment/util`).

Everything here reads JSON-shaped Deployments and ReplicaSets and returns numbers,
choices or new status dicts; the controller does the writes. The names follow kube's
functions so the two can be compared line by line.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from runtime.api.objects import JSON

from . import names
from .conditions import get_condition, new_condition, set_condition
from .intstr import scaled_value
from .ordering import by_creation, replicas, revision
from .ownership import uid
from .timestamps import parse_time

ROLLING_UPDATE = "RollingUpdate"
RECREATE = "Recreate"

# condition types and reasons (deploymentutil)
AVAILABLE = "Available"
PROGRESSING = "Progressing"
REPLICA_FAILURE = "ReplicaFailure"
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
RS_UPDATED = "ReplicaSetUpdated"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
FAILED_RS_CREATE = "ReplicaSetCreateError"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
MINIMUM_AVAILABLE = "MinimumReplicasAvailable"
MINIMUM_UNAVAILABLE = "MinimumReplicasUnavailable"

#: annotations a Deployment never copies onto its ReplicaSets
_NOT_COPIED = frozenset(
    (
        names.LAST_APPLIED,
        names.REVISION,
        names.REVISION_HISTORY,
        names.DESIRED_REPLICAS,
        names.MAX_REPLICAS,
        names.DEPRECATED_ROLLBACK_TO,
    )
)
#: the longest revision-history annotation kube keeps
MAX_REVISION_HISTORY_CHARS = 2000
#: progressDeadlineSeconds of MaxInt32 means "no deadline"
_NO_DEADLINE = 2**31 - 1


def spec(obj: JSON) -> JSON:
    return obj.get("spec") or {}


def status_of(obj: JSON) -> JSON:
    return obj.get("status") or {}


def desired(deployment: JSON) -> int:
    return replicas(deployment)


def strategy_type(deployment: JSON) -> str:
    return str((spec(deployment).get("strategy") or {}).get("type") or ROLLING_UPDATE)


def is_rolling_update(deployment: JSON) -> bool:
    return strategy_type(deployment) == ROLLING_UPDATE


def resolve_fenceposts(
    max_surge: int | str | None, max_unavailable: int | str | None, wanted: int
) -> tuple[int, int]:
    """(surge, unavailable): surge rounds up, unavailable down; both 0 becomes unavailable 1."""
    surge = scaled_value(max_surge, wanted, round_up=True)
    unavailable = scaled_value(max_unavailable, wanted, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def _fenceposts(deployment: JSON) -> tuple[int, int]:
    rolling = (spec(deployment).get("strategy") or {}).get("rollingUpdate") or {}
    return resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), desired(deployment))


def max_surge(deployment: JSON) -> int:
    return _fenceposts(deployment)[0] if is_rolling_update(deployment) else 0


def max_unavailable(deployment: JSON) -> int:
    if not is_rolling_update(deployment) or desired(deployment) == 0:
        return 0
    return min(_fenceposts(deployment)[1], desired(deployment))


def has_progress_deadline(deployment: JSON) -> bool:
    deadline = spec(deployment).get("progressDeadlineSeconds")
    return deadline is not None and deadline != _NO_DEADLINE


def annotation_int(obj: JSON, key: str) -> int | None:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(key)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def active(replica_sets: Iterable[JSON | None]) -> list[JSON]:
    """ReplicaSets that want pods (`FilterActiveReplicaSets`)."""
    return [rs for rs in replica_sets if rs is not None and replicas(rs) > 0]


def total_replicas(replica_sets: Iterable[JSON | None]) -> int:
    return sum(replicas(rs) for rs in replica_sets if rs is not None)


def _status_sum(replica_sets: Iterable[JSON | None], field: str) -> int:
    return sum(int(status_of(rs).get(field) or 0) for rs in replica_sets if rs is not None)


def actual_replicas(replica_sets: Iterable[JSON | None]) -> int:
    return _status_sum(replica_sets, "replicas")


def ready_replicas(replica_sets: Iterable[JSON | None]) -> int:
    return _status_sum(replica_sets, "readyReplicas")


def available_replicas(replica_sets: Iterable[JSON | None]) -> int:
    return _status_sum(replica_sets, "availableReplicas")


def template_without_hash(template: JSON) -> JSON:
    """The template as it compares semantically: no pod-template-hash, no empty label map."""
    result = copy.deepcopy(template)
    meta = result.setdefault("metadata", {})
    labels = dict(meta.get("labels") or {})
    labels.pop(names.POD_TEMPLATE_HASH, None)
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    if not meta:
        result.pop("metadata")
    return result


def equal_ignore_hash(first: JSON, second: JSON) -> bool:
    return template_without_hash(first) == template_without_hash(second)


def find_new(deployment: JSON, replica_sets: Sequence[JSON]) -> JSON | None:
    """The oldest ReplicaSet whose template is the Deployment's (`FindNewReplicaSet`)."""
    template = spec(deployment).get("template") or {}
    for rs in by_creation(replica_sets):
        if equal_ignore_hash(spec(rs).get("template") or {}, template):
            return rs
    return None


def find_old(deployment: JSON, replica_sets: Sequence[JSON]) -> list[JSON]:
    """Every ReplicaSet but the new one (`FindOldReplicaSets`' second result)."""
    new = find_new(deployment, replica_sets)
    return [rs for rs in replica_sets if new is None or uid(rs) != uid(new)]


def max_revision(replica_sets: Iterable[JSON]) -> int:
    return max((revision(rs) or 0 for rs in replica_sets), default=0)


def set_replicas_annotations(rs: JSON, wanted: int, maximum: int) -> bool:
    """Record the Deployment's size and size plus surge on a ReplicaSet; True if that changed it."""
    annotations = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for key, value in ((names.DESIRED_REPLICAS, str(wanted)), (names.MAX_REPLICAS, str(maximum))):
        if annotations.get(key) != value:
            annotations[key] = value
            changed = True
    return changed


def replicas_annotations_need_update(rs: JSON, wanted: int, maximum: int) -> bool:
    annotations = (rs.get("metadata") or {}).get("annotations") or {}
    return annotations.get(names.DESIRED_REPLICAS) != str(wanted) or annotations.get(
        names.MAX_REPLICAS
    ) != str(maximum)


def set_new_rs_annotations(deployment: JSON, rs: JSON, new_revision: int, *, exists: bool) -> bool:
    """Copy the Deployment's annotations, raise the revision (keeping history), and for a
    ReplicaSet about to be created its replica annotations; True if `rs` changed
    (`SetNewReplicaSetAnnotations`)."""
    annotations = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for key, value in ((deployment.get("metadata") or {}).get("annotations") or {}).items():
        if key in _NOT_COPIED or annotations.get(key) == value:
            continue
        annotations[key] = value
        changed = True
    old_text = annotations.get(names.REVISION)
    try:
        old_revision = int(old_text) if old_text is not None else 0
    except ValueError:
        return changed
    if old_revision < new_revision:
        annotations[names.REVISION] = str(new_revision)
        changed = True
        if old_text is not None:
            _append_revision_history(annotations, old_text)
    if not exists and set_replicas_annotations(
        rs, desired(deployment), desired(deployment) + max_surge(deployment)
    ):
        changed = True
    return changed


def _append_revision_history(annotations: dict[str, str], old_revision: str) -> None:
    history = annotations.get(names.REVISION_HISTORY, "")
    if not history:
        annotations[names.REVISION_HISTORY] = old_revision
        return
    revisions = history.split(",")
    length = len(history) + len(old_revision) + 1
    start = 0
    while length > MAX_REVISION_HISTORY_CHARS and start < len(revisions):
        length -= len(revisions[start]) + 1
        start += 1
    if length <= MAX_REVISION_HISTORY_CHARS:
        annotations[names.REVISION_HISTORY] = ",".join([*revisions[start:], old_revision])


def find_active_or_latest(new: JSON | None, old: Sequence[JSON]) -> JSON | None:
    """The only active ReplicaSet, or the newest if none is active; None when several are."""
    if new is None and not old:
        return None
    newest_first = by_creation(old)[::-1]
    candidates = active([*newest_first, new])
    if not candidates:
        return new if new is not None else newest_first[0]
    return candidates[0] if len(candidates) == 1 else None


def is_saturated(deployment: JSON, rs: JSON | None) -> bool:
    if rs is None:
        return False
    wanted = annotation_int(rs, names.DESIRED_REPLICAS)
    return (
        wanted is not None
        and replicas(rs) == desired(deployment)
        and wanted == desired(deployment)
        and int(status_of(rs).get("availableReplicas") or 0) == desired(deployment)
    )


def new_rs_new_replicas(deployment: JSON, all_rss: Sequence[JSON | None], new: JSON) -> int:
    """How big the new ReplicaSet may be now (`NewRSNewReplicas`)."""
    if not is_rolling_update(deployment):
        return desired(deployment)
    surge = max_surge(deployment)
    current = total_replicas(all_rss)
    ceiling = desired(deployment) + surge
    if current >= ceiling:
        return replicas(new)
    return replicas(new) + min(ceiling - current, desired(deployment) - replicas(new))


def _round(value: float) -> int:
    """`integer.RoundToInt32`: halves away from zero."""
    return int(value - 0.5) if value < 0 else int(value + 0.5)


def _fraction(rs: JSON, deployment: JSON) -> int:
    if desired(deployment) == 0:
        return -replicas(rs)
    maximum = desired(deployment) + max_surge(deployment)
    before = annotation_int(rs, names.MAX_REPLICAS)
    if not before:
        before = int(status_of(deployment).get("replicas") or 0)
        if before == 0:
            return 0
    return _round(replicas(rs) * maximum / before) - replicas(rs)


def proportion(rs: JSON, deployment: JSON, to_add: int, added: int) -> int:
    """This ReplicaSet's share of a scaling event in the middle of a rollout (`GetReplicaSetProportion`)."""
    if replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = _fraction(rs, deployment)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def calculate_status(
    all_rss: Sequence[JSON | None], new: JSON | None, deployment: JSON, *, now: datetime
) -> JSON:
    """The Deployment's counts and Available condition from its ReplicaSets (`calculateStatus`).

    Zero counts are left out, as the API (omitempty) leaves them out.
    """
    available = available_replicas(all_rss)
    unavailable = max(total_replicas(all_rss) - available, 0)
    previous = status_of(deployment)
    status: JSON = {
        "observedGeneration": (deployment.get("metadata") or {}).get("generation", 0),
        "replicas": actual_replicas(all_rss),
        "updatedReplicas": actual_replicas([new]),
        "readyReplicas": ready_replicas(all_rss),
        "availableReplicas": available,
        "unavailableReplicas": unavailable,
    }
    if previous.get("collisionCount") is not None:
        status["collisionCount"] = previous["collisionCount"]
    if previous.get("conditions"):
        status["conditions"] = [dict(c) for c in previous["conditions"]]
    for field in ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas"):
        if not status[field]:
            del status[field]
    if not unavailable:
        del status["unavailableReplicas"]
    if available >= desired(deployment) - max_unavailable(deployment):
        condition = new_condition(
            AVAILABLE,
            "True",
            MINIMUM_AVAILABLE,
            "Deployment has minimum availability.",
            now=now,
            update_time=True,
        )
    else:
        condition = new_condition(
            AVAILABLE,
            "False",
            MINIMUM_UNAVAILABLE,
            "Deployment does not have minimum availability.",
            now=now,
            update_time=True,
        )
    set_condition(status, condition)
    return status


def is_complete(deployment: JSON, status: JSON) -> bool:
    """All desired replicas updated and available, no old ones left (`DeploymentComplete`)."""
    wanted = desired(deployment)
    generation = int((deployment.get("metadata") or {}).get("generation") or 0)
    return (
        int(status.get("updatedReplicas") or 0) == wanted
        and int(status.get("replicas") or 0) == wanted
        and int(status.get("availableReplicas") or 0) == wanted
        and int(status.get("observedGeneration") or 0) >= generation
    )


def is_progressing(deployment: JSON, status: JSON) -> bool:
    """New pods came up or got ready, or old ones went away, since the last status (`DeploymentProgressing`)."""
    old = status_of(deployment)
    old_old = int(old.get("replicas") or 0) - int(old.get("updatedReplicas") or 0)
    new_old = int(status.get("replicas") or 0) - int(status.get("updatedReplicas") or 0)
    return (
        int(status.get("updatedReplicas") or 0) > int(old.get("updatedReplicas") or 0)
        or new_old < old_old
        or int(status.get("readyReplicas") or 0) > int(old.get("readyReplicas") or 0)
        or int(status.get("availableReplicas") or 0) > int(old.get("availableReplicas") or 0)
    )


def progress_deadline(deployment: JSON, status: JSON) -> datetime | None:
    """When the current Progressing condition runs out of time, if it can."""
    if not has_progress_deadline(deployment):
        return None
    condition = get_condition(status, PROGRESSING)
    if condition is None or condition.get("reason") in (NEW_RS_AVAILABLE, TIMED_OUT):
        return None
    since = parse_time(condition.get("lastUpdateTime"))
    if since is None:
        return None
    return since + timedelta(seconds=int(spec(deployment)["progressDeadlineSeconds"]))


def is_timed_out(deployment: JSON, status: JSON, *, now: datetime) -> bool:
    """No progress within progressDeadlineSeconds of the last Progressing update (`DeploymentTimedOut`)."""
    if not has_progress_deadline(deployment):
        return False
    condition = get_condition(status, PROGRESSING)
    if condition is None or condition.get("reason") == NEW_RS_AVAILABLE:
        return False
    if condition.get("reason") == TIMED_OUT:
        return True
    deadline = progress_deadline(deployment, status)
    return deadline is not None and deadline < now
