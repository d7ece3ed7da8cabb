"""The pod printer: READY, STATUS and RESTARTS derived from container statuses like `printPod`.

The STATUS cell is the subtle one: init containers, sidecars (restartable init
containers), waiting/terminated reasons, readiness and deletion all feed it in a fixed
order, and kubectl users read it as the pod's state.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .columns import AGE, NAME, Cell, Column, Obj, Printer
from .fields import get_int, get_list, get_map, get_str, name_of
from .format import aware, created, human_duration, parse_timestamp


@dataclass
class _PodState:
    reason: str
    ready: int = 0
    restarts: int = 0
    last_restart: datetime | None = None


def _latest(current: datetime | None, candidate: datetime | None) -> datetime | None:
    if candidate is None or (current is not None and candidate <= current):
        return current
    return candidate


def _finished_at(status: Obj) -> datetime | None:
    return parse_timestamp(get_map(status, "lastState", "terminated").get("finishedAt"))


def _exit_reason(terminated: Obj, prefix: str) -> str:
    if reason := get_str(terminated, "reason"):
        return prefix + reason
    if signal := get_int(terminated, "signal"):
        return f"{prefix}Signal:{signal}"
    return f"{prefix}ExitCode:{get_int(terminated, 'exitCode')}"


def _has_condition(conditions: list[Any], kind: str) -> bool:
    return any(get_str(c, "type") == kind and get_str(c, "status") == "True" for c in conditions)


def _scan_init_containers(pod: Obj, state: _PodState) -> tuple[bool, _PodState]:
    """Walk init container statuses like printPod; returns (initializing, sidecar-only counts)."""
    specs = get_list(pod, "spec", "initContainers")
    sidecars = {get_str(c, "name") for c in specs if get_str(c, "restartPolicy") == "Always"}
    sidecar = _PodState(reason="")
    for index, status in enumerate(get_list(pod, "status", "initContainerStatuses")):
        restarts, finished = get_int(status, "restartCount"), _finished_at(status)
        state.restarts += restarts
        state.last_restart = _latest(state.last_restart, finished)
        is_sidecar = get_str(status, "name") in sidecars
        if is_sidecar:
            sidecar.restarts += restarts
            sidecar.last_restart = _latest(sidecar.last_restart, finished)
        terminated = get_map(status, "state").get("terminated")
        waiting = get_map(status, "state", "waiting")
        if isinstance(terminated, dict) and get_int(terminated, "exitCode") == 0:
            continue
        if is_sidecar and status.get("started") is True:
            state.ready += 1 if status.get("ready") is True else 0
            continue
        if isinstance(terminated, dict):
            state.reason = _exit_reason(terminated, "Init:")
        elif get_str(waiting, "reason") not in ("", "PodInitializing"):
            state.reason = "Init:" + get_str(waiting, "reason")
        else:
            state.reason = f"Init:{index}/{len(specs)}"
        return True, sidecar
    return False, sidecar


def _scan_containers(pod: Obj, state: _PodState) -> None:
    """The app containers, last to first so the first container's state wins, as in printPod."""
    has_running = False
    for status in reversed(get_list(pod, "status", "containerStatuses")):
        state.restarts += get_int(status, "restartCount")
        state.last_restart = _latest(state.last_restart, _finished_at(status))
        current = get_map(status, "state")
        terminated = current.get("terminated")
        if reason := get_str(current, "waiting", "reason"):
            state.reason = reason
        elif isinstance(terminated, dict):
            state.reason = _exit_reason(terminated, "")
        elif status.get("ready") is True and isinstance(current.get("running"), dict):
            has_running = True
            state.ready += 1
    if state.reason == "Completed" and has_running:
        ready = _has_condition(get_list(pod, "status", "conditions"), "Ready")
        state.reason = "Running" if ready else "NotReady"


def _pod_state(pod: Obj) -> _PodState:
    status = get_map(pod, "status")
    phase = get_str(status, "phase")
    state = _PodState(reason=get_str(status, "reason") or phase)
    conditions = get_list(status, "conditions")
    if any(
        get_str(c, "type") == "PodScheduled" and get_str(c, "reason") == "SchedulingGated" for c in conditions
    ):
        state.reason = "SchedulingGated"
    initializing, sidecar = _scan_init_containers(pod, state)
    initialized = next(
        (get_str(c, "status") == "True" for c in conditions if get_str(c, "type") == "Initialized"), False
    )
    if not initializing or initialized:
        state.restarts, state.last_restart = sidecar.restarts, sidecar.last_restart
        _scan_containers(pod, state)
    if get_map(pod, "metadata").get("deletionTimestamp"):
        if get_str(status, "reason") == "NodeLost":
            state.reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            state.reason = "Terminating"
    return state


def _total_containers(pod: Obj) -> int:
    sidecars = [c for c in get_list(pod, "spec", "initContainers") if get_str(c, "restartPolicy") == "Always"]
    return len(get_list(pod, "spec", "containers")) + len(sidecars)


def _readiness_gates(pod: Obj) -> str:
    gates = get_list(pod, "spec", "readinessGates")
    if not gates:
        return "<none>"
    statuses: dict[str, str] = {}
    for condition in get_list(pod, "status", "conditions"):
        statuses.setdefault(get_str(condition, "type"), get_str(condition, "status"))
    passed = sum(1 for gate in gates if statuses.get(get_str(gate, "conditionType")) == "True")
    return f"{passed}/{len(gates)}"


def _pod_ip(status: Obj) -> str:
    ips = get_list(status, "podIPs")
    return (get_str(ips[0], "ip") if ips else get_str(status, "podIP")) or "<none>"


def _pod_cells(pod: Obj, now: datetime) -> list[Cell]:
    state = _pod_state(pod)
    restarts = str(state.restarts)
    if state.restarts and state.last_restart is not None:
        restarts = f"{state.restarts} ({human_duration(aware(now) - state.last_restart)} ago)"
    status = get_map(pod, "status")
    return [
        name_of(pod),
        f"{state.ready}/{_total_containers(pod)}",
        state.reason,
        restarts,
        created(pod, now),
        _pod_ip(status),
        get_str(pod, "spec", "nodeName") or "<none>",
        get_str(status, "nominatedNodeName") or "<none>",
        _readiness_gates(pod),
    ]


def _pod_conditions(pod: Obj) -> list[Obj]:
    phase = get_str(pod, "status", "phase")
    message = {"Succeeded": "The pod has completed successfully.", "Failed": "The pod failed."}.get(phase)
    if message is None:
        return []
    return [{"type": "Completed", "status": "True", "reason": phase, "message": message}]


POD = Printer(
    columns=(
        NAME,
        Column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
        Column("Status", "The aggregate status of the containers in this pod."),
        Column("Restarts", "The number of times the containers in this pod have been restarted."),
        AGE,
        Column("IP", "podIP address allocated to the pod.", priority=1),
        Column("Node", "NodeName indicates in which node this pod is scheduled.", priority=1),
        Column("Nominated Node", "Set only when this pod preempts other pods on the node.", priority=1),
        Column("Readiness Gates", "Readiness gates evaluated for pod readiness.", priority=1),
    ),
    cells=_pod_cells,
    conditions=_pod_conditions,
)

PRINTERS: dict[tuple[str, str], Printer] = {("", "pods"): POD}
