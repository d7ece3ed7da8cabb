"""Pod predicates (active, ready, available, terminating) and pods stamped out of templates.

Mirrors `k8s.io/kubernetes/pkg/api/v1/pod` (IsPodReady, IsPodAvailable) and
`controller.GetPodFromTemplate`: a pod gets its template's labels, annotations,
finalizers and spec, plus a controller reference to the workload that made it.
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta

from runtime.api.objects import JSON

from .ownership import controller_ref
from .timestamps import parse_time

TERMINAL_PHASES = ("Succeeded", "Failed")


def phase(pod: JSON) -> str:
    return str((pod.get("status") or {}).get("phase", ""))


def is_terminal(pod: JSON) -> bool:
    return phase(pod) in TERMINAL_PHASES


def is_terminating(pod: JSON) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def is_active(pod: JSON) -> bool:
    """Not finished and not being deleted (`controller.IsPodActive`)."""
    return not is_terminal(pod) and not is_terminating(pod)


def node_name(pod: JSON) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def condition(pod: JSON, kind: str) -> JSON | None:
    for item in (pod.get("status") or {}).get("conditions") or []:
        if item.get("type") == kind:
            return dict(item)
    return None


def is_ready(pod: JSON) -> bool:
    ready = condition(pod, "Ready")
    return ready is not None and ready.get("status") == "True"


def ready_since(pod: JSON) -> datetime | None:
    """When the pod last turned Ready (None when it is not Ready or the time is unknown)."""
    ready = condition(pod, "Ready")
    if ready is None or ready.get("status") != "True":
        return None
    return parse_time(ready.get("lastTransitionTime"))


def is_available(pod: JSON, min_ready_seconds: int, now: datetime) -> bool:
    """Ready for at least `min_ready_seconds` (`podutil.IsPodAvailable`)."""
    if not is_ready(pod):
        return False
    if min_ready_seconds == 0:
        return True
    since = ready_since(pod)
    return since is not None and since + timedelta(seconds=min_ready_seconds) < now


def is_running_and_ready(pod: JSON) -> bool:
    return phase(pod) == "Running" and is_ready(pod)


def restart_count(pod: JSON) -> int:
    """The highest restart count of the pod's containers."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return max((int(status.get("restartCount") or 0) for status in statuses), default=0)


def pod_from_template(
    template: JSON, *, owner: JSON, generate_name: str | None = None, name: str | None = None
) -> JSON:
    """A pod made from `template` and controlled by `owner`, named `name` or from `generate_name`."""
    template_meta = template.get("metadata") or {}
    meta: JSON = {
        "namespace": (owner.get("metadata") or {}).get("namespace"),
        "ownerReferences": [controller_ref(owner)],
    }
    if name is not None:
        meta["name"] = name
    elif generate_name is not None:
        meta["generateName"] = generate_name
    for field in ("labels", "annotations"):
        if template_meta.get(field):
            meta[field] = dict(template_meta[field])
    if template_meta.get("finalizers"):
        meta["finalizers"] = list(template_meta["finalizers"])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }
