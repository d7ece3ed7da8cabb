"""A pod's phase from its containers' statuses: the kubelet's `getPhase` (pkg/kubelet/kubelet_pods.go).

Runners decide a pod's phase (restart policies and exits are theirs), and every runner
must decide it the same way users know from Kubernetes: Pending while an init container
has not completed or a container has never started, Running while any container runs or
is restarting, Succeeded when every container exited 0 and none will restart, Failed
when one exited non-zero and none will restart. Pure functions over JSON-shaped
`v1.ContainerStatus` dicts, so every runner shares them (and the waiting reason a
container shows before it first starts).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from runtime.api.objects import JSON


def is_sidecar(container: Mapping[str, Any]) -> bool:
    """An init container with `restartPolicy: Always` (a restartable init container) keeps running."""
    return container.get("restartPolicy") == "Always"


def initial_waiting_reason(spec: Mapping[str, Any]) -> str:
    """The reason a regular container waits with before it first starts (the kubelet's)."""
    return "PodInitializing" if spec.get("initContainers") else "ContainerCreating"


def pod_phase(spec: Mapping[str, Any], init_statuses: Iterable[JSON], statuses: Iterable[JSON]) -> str:
    """Pending | Running | Succeeded | Failed, for a pod that is not being terminated."""
    by_name = {str(s.get("name")): s for s in [*init_statuses, *statuses]}
    restart_policy = spec.get("restartPolicy", "Always")
    pending_init = failed_init = pending_sidecars = 0
    unknown = running = waiting = stopped = succeeded = 0
    for container in spec.get("initContainers") or []:
        status = by_name.get(str(container.get("name")))
        if is_sidecar(container):
            if status is None:
                unknown += 1
                continue
            state = status.get("state") or {}
            if "running" in state:
                running += 1
                if not status.get("started"):
                    pending_sidecars += 1
            elif "terminated" not in state and not _last_terminated(status):
                # not started yet; a sidecar that ran and stopped does not hold the pod back
                pending_sidecars += 1
            continue
        state = (status or {}).get("state") or {}
        if "terminated" in state:
            failed_init += 1 if state["terminated"].get("exitCode", 0) != 0 else 0
        elif "waiting" in state and _last_terminated(status or {}):
            failed_init += 1 if _last_terminated(status or {}).get("exitCode", 0) != 0 else 0
        else:
            pending_init += 1
    for container in spec.get("containers") or []:
        status = by_name.get(str(container.get("name")))
        state = (status or {}).get("state") or {}
        if status is None or not state:
            unknown += 1
        elif "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            succeeded += 1 if state["terminated"].get("exitCode", 0) == 0 else 0
        elif _last_terminated(status):
            stopped += 1
        else:
            waiting += 1
    if failed_init and restart_policy == "Never":
        return "Failed"
    if pending_init or (pending_sidecars and not _any_regular_started(spec, by_name)) or waiting:
        return "Pending"
    if running and not unknown:
        return "Running"
    if not running and stopped and not unknown:
        if restart_policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        return "Failed" if restart_policy == "Never" else "Running"
    return "Pending"


def _last_terminated(status: Mapping[str, Any]) -> JSON:
    terminated: JSON = (status.get("lastState") or {}).get("terminated") or {}
    return terminated


def _any_regular_started(spec: Mapping[str, Any], by_name: Mapping[str, JSON]) -> bool:
    for container in spec.get("containers") or []:
        status = by_name.get(str(container.get("name"))) or {}
        state = status.get("state") or {}
        if "running" in state or "terminated" in state or _last_terminated(status):
            return True
    return False
