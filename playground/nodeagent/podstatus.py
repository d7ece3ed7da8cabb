"""A pod's `status` as the kubelet writes it, from what its runner reports: pure functions, no I/O.

`pod_status` turns a `PodReport` (or nothing yet, when the pod's sandbox could not be
set up) into the fields the kubelet owns: phase, the five conditions it manages,
host and pod IPs, startTime and the container statuses. Conditions follow the kubelet's
generators (pkg/kubelet/status/generate.go): Ready is ContainersReady and every
readiness gate's condition True, and a condition's lastTransitionTime moves only when
its status does. `status_patch` compares that with the pod's current status and gives
the strategic merge patch for `pods/status` (None when nothing changed), so an
unchanged report costs no write. qosClass is the API server's, and conditions of other
types (readiness gates set by controllers) are never touched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from runtime.api.objects import JSON

from .containers import ContainerReport, PodReport
from .phase import initial_waiting_reason, is_sidecar

READY_TO_START = "PodReadyToStartContainers"
INITIALIZED = "Initialized"
READY = "Ready"
CONTAINERS_READY = "ContainersReady"
SCHEDULED = "PodScheduled"
#: the condition types this agent owns, in the kubelet's order
OWNED_CONDITIONS = (READY_TO_START, INITIALIZED, READY, CONTAINERS_READY, SCHEDULED)
TERMINAL_PHASES = ("Succeeded", "Failed")


def pod_status(
    pod: Mapping[str, Any], report: PodReport | None, *, host_ip: str, pod_ip: str | None, now: str
) -> JSON:
    """The status fields the kubelet owns; `report` None means the pod's sandbox is not set up (yet)."""
    spec = pod.get("spec") or {}
    current = pod.get("status") or {}
    if report is None:
        phase = "Pending"
        init_statuses = [_not_started(c, "PodInitializing") for c in spec.get("initContainers") or []]
        statuses = [_not_started(c, initial_waiting_reason(spec)) for c in spec.get("containers") or []]
    else:
        phase = report.phase
        init_statuses = [c.as_status() for c in report.init_containers]
        statuses = [c.as_status() for c in report.containers]
        pod_ip = report.pod_ip or pod_ip
    statuses.sort(key=lambda s: str(s["name"]))
    conditions = pod_conditions(
        spec,
        current.get("conditions") or [],
        phase=phase,
        init_statuses=init_statuses,
        statuses=statuses,
        sandbox_ready=report is not None and phase not in TERMINAL_PHASES,
    )
    status: JSON = {
        "phase": phase,
        "conditions": _stamped(conditions, current.get("conditions") or [], now),
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "startTime": current.get("startTime") or now,
        "containerStatuses": statuses,
    }
    if spec.get("initContainers"):
        status["initContainerStatuses"] = init_statuses
    if pod_ip:
        status["podIP"] = pod_ip
        status["podIPs"] = [{"ip": pod_ip}]
    status["reason"] = report.reason if report is not None and report.reason else None
    status["message"] = report.message if report is not None and report.message else None
    return status


def status_patch(current: Mapping[str, Any], desired: JSON) -> JSON | None:
    """The strategic merge patch that makes `current` carry `desired`, or None if it already does."""
    changed = False
    for key, value in desired.items():
        if key == "conditions":
            mine = {str(c.get("type")): c for c in current.get("conditions") or []}
            changed = changed or any(_condition(mine.get(c["type"])) != _condition(c) for c in value)
        elif current.get(key) != value:
            changed = True
    return {"status": desired} if changed else None


def pod_conditions(
    spec: Mapping[str, Any],
    current: Iterable[Mapping[str, Any]],
    *,
    phase: str,
    init_statuses: list[JSON],
    statuses: list[JSON],
    sandbox_ready: bool,
) -> list[JSON]:
    """The kubelet's five conditions (without timestamps), in its order."""
    initialized = _initialized(spec, init_statuses, phase)
    containers_ready = _containers_ready(spec, init_statuses, statuses, phase)
    ready = dict(containers_ready, type=READY)
    if containers_ready["status"] == "True":
        gates = _unready_gates(spec, current)
        if gates:
            ready = {"type": READY, "status": "False", "reason": "ReadinessGatesNotReady", "message": gates}
    return [
        {"type": READY_TO_START, "status": "True" if sandbox_ready else "False"},
        initialized,
        ready,
        containers_ready,
        {"type": SCHEDULED, "status": "True"},
    ]


def _initialized(spec: Mapping[str, Any], init_statuses: list[JSON], phase: str) -> JSON:
    by_name = {s["name"]: s for s in init_statuses}
    incomplete = []
    for container in spec.get("initContainers") or []:
        status = by_name.get(container.get("name")) or {}
        if is_sidecar(container):
            done = bool(status.get("started")) or "terminated" in (status.get("state") or {})
        else:
            done = ((status.get("state") or {}).get("terminated") or {}).get("exitCode", 1) == 0
        if not done:
            incomplete.append(str(container.get("name")))
    if not incomplete:
        return {"type": INITIALIZED, "status": "True"}
    if phase == "Succeeded":
        return {"type": INITIALIZED, "status": "False", "reason": "PodCompleted"}
    return {
        "type": INITIALIZED,
        "status": "False",
        "reason": "ContainersNotInitialized",
        "message": f"containers with incomplete status: [{' '.join(incomplete)}]",
    }


def _containers_ready(
    spec: Mapping[str, Any], init_statuses: list[JSON], statuses: list[JSON], phase: str
) -> JSON:
    by_name = {s["name"]: s for s in [*init_statuses, *statuses]}
    sidecars = [c for c in spec.get("initContainers") or [] if is_sidecar(c)]
    unready = [
        str(c.get("name"))
        for c in [*sidecars, *(spec.get("containers") or [])]
        if not (by_name.get(c.get("name")) or {}).get("ready")
    ]
    if not unready:
        return {"type": CONTAINERS_READY, "status": "True"}
    if phase == "Succeeded":
        return {"type": CONTAINERS_READY, "status": "False", "reason": "PodCompleted"}
    return {
        "type": CONTAINERS_READY,
        "status": "False",
        "reason": "ContainersNotReady",
        "message": f"containers with unready status: [{' '.join(unready)}]",
    }


def _unready_gates(spec: Mapping[str, Any], current: Iterable[Mapping[str, Any]]) -> str:
    """The kubelet's message for readiness gates whose condition is not True ("" when all are)."""
    by_type = {str(c.get("type")): c for c in current}
    messages = []
    for gate in spec.get("readinessGates") or []:
        kind = str(gate.get("conditionType", ""))
        condition = by_type.get(kind)
        if condition is None:
            messages.append(f'corresponding condition of pod readiness gate "{kind}" does not exist.')
        elif condition.get("status") != "True":
            messages.append(
                f'the status of pod readiness gate "{kind}" is not "True", but {condition.get("status")}'
            )
    return ", ".join(messages)


def _stamped(conditions: list[JSON], current: Iterable[Mapping[str, Any]], now: str) -> list[JSON]:
    """Each condition with lastTransitionTime kept while its status holds; reason/message null when unset."""
    by_type = {str(c.get("type")): c for c in current}
    stamped = []
    for condition in conditions:
        previous = by_type.get(condition["type"])
        moved = previous is None or previous.get("status") != condition["status"]
        since = now if moved or previous is None else previous.get("lastTransitionTime") or now
        stamped.append(
            {
                "type": condition["type"],
                "status": condition["status"],
                "lastTransitionTime": since,
                "reason": condition.get("reason"),
                "message": condition.get("message"),
            }
        )
    return stamped


def _condition(condition: Mapping[str, Any] | None) -> tuple[Any, ...]:
    if condition is None:
        return ()
    return tuple(condition.get(key) or None for key in ("status", "reason", "message", "lastTransitionTime"))


def _not_started(container: Mapping[str, Any], reason: str) -> JSON:
    report = ContainerReport(
        name=str(container.get("name")),
        image=str(container.get("image", "")),
        state={"waiting": {"reason": reason}},
    )
    return report.as_status()
