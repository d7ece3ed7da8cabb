"""Pod status from runner reports and the kubelet's phase rules (pure)."""

from __future__ import annotations

import pytest

from playground.nodeagent.containers import ContainerReport, PodReport
from playground.nodeagent.phase import pod_phase
from playground.nodeagent.podstatus import pod_status, status_patch
from runtime.api.objects import JSON

NOW = "2025-01-01T00:00:10Z"
EARLIER = "2025-01-01T00:00:00Z"

RUNNING: JSON = {"running": {"startedAt": EARLIER}}
WAITING: JSON = {"waiting": {"reason": "ContainerCreating"}}
OK: JSON = {"terminated": {"exitCode": 0, "reason": "Completed"}}
FAILED: JSON = {"terminated": {"exitCode": 1, "reason": "Error"}}
BACKOFF: JSON = {"waiting": {"reason": "CrashLoopBackOff"}}


def status(name: str, state: JSON, *, last: JSON | None = None, started: bool = False) -> JSON:
    return {"name": name, "state": state, "lastState": last or {}, "started": started}


def spec(policy: str = "Always", *, containers: int = 1, init: int = 0, sidecar: bool = False) -> JSON:
    init_containers: list[JSON] = [{"name": f"i{n}"} for n in range(init)]
    if sidecar:
        init_containers.append({"name": "side", "restartPolicy": "Always"})
    return {
        "restartPolicy": policy,
        "containers": [{"name": f"c{n}"} for n in range(containers)],
        "initContainers": init_containers,
    }


@pytest.mark.parametrize(
    ("pod_spec", "init", "regular", "phase"),
    [
        (spec(), [], [status("c0", WAITING)], "Pending"),
        (spec(), [], [status("c0", RUNNING)], "Running"),
        (spec(), [], [], "Pending"),
        (spec(containers=2), [], [status("c0", RUNNING), status("c1", WAITING)], "Pending"),
        (spec(), [], [status("c0", BACKOFF, last=FAILED)], "Running"),
        (spec("OnFailure"), [], [status("c0", BACKOFF, last=FAILED)], "Running"),
        (spec("Never"), [], [status("c0", FAILED)], "Failed"),
        (spec("Never"), [], [status("c0", OK)], "Succeeded"),
        (spec("OnFailure"), [], [status("c0", OK)], "Succeeded"),
        (spec("Always"), [], [status("c0", OK)], "Running"),
        (spec("Never", containers=2), [], [status("c0", OK), status("c1", FAILED)], "Failed"),
        (spec("Never", containers=2), [], [status("c0", OK), status("c1", RUNNING)], "Running"),
        (spec(init=1), [status("i0", RUNNING)], [status("c0", WAITING)], "Pending"),
        (spec(init=1), [status("i0", OK)], [status("c0", RUNNING)], "Running"),
        (spec("Never", init=1), [status("i0", FAILED)], [status("c0", WAITING)], "Failed"),
        (spec("Always", init=1), [status("i0", BACKOFF, last=FAILED)], [status("c0", WAITING)], "Pending"),
        (spec(sidecar=True), [status("side", RUNNING, started=False)], [status("c0", WAITING)], "Pending"),
        (spec(sidecar=True), [status("side", RUNNING, started=True)], [status("c0", RUNNING)], "Running"),
    ],
    ids=[
        "waiting",
        "running",
        "no-statuses",
        "one-of-two-waiting",
        "crash-loop-always",
        "crash-loop-onfailure",
        "failed-never",
        "completed-never",
        "completed-onfailure",
        "completed-always-restarts",
        "one-failed-never",
        "one-still-running",
        "init-running",
        "init-done",
        "init-failed-never",
        "init-crash-looping",
        "sidecar-starting",
        "sidecar-running",
    ],
)
def test_pod_phase(pod_spec: JSON, init: list[JSON], regular: list[JSON], phase: str) -> None:
    assert pod_phase(pod_spec, init, regular) == phase


def pod(*, gates: tuple[str, ...] = (), conditions: list[JSON] | None = None, init: bool = False) -> JSON:
    body: JSON = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
        "spec": {
            "containers": [{"name": "b", "image": "img"}, {"name": "a", "image": "img"}],
            "readinessGates": [{"conditionType": g} for g in gates],
        },
        "status": {"phase": "Pending", "qosClass": "BestEffort", "conditions": conditions or []},
    }
    if init:
        body["spec"]["initContainers"] = [{"name": "setup", "image": "img"}]
    return body


def running_report(*, ready: bool = True) -> PodReport:
    return PodReport(
        phase="Running",
        containers=[
            ContainerReport(name=name, image="img", state=dict(RUNNING), ready=ready, started=True)
            for name in ("b", "a")
        ],
    )


def conditions(desired: JSON) -> dict[str, JSON]:
    return {c["type"]: c for c in desired["conditions"]}


def test_running_pod_status() -> None:
    desired = pod_status(pod(), running_report(), host_ip="10.0.0.1", pod_ip="10.244.1.5", now=NOW)
    assert desired["phase"] == "Running"
    assert desired["podIP"] == "10.244.1.5"
    assert desired["podIPs"] == [{"ip": "10.244.1.5"}]
    assert desired["hostIPs"] == [{"ip": "10.0.0.1"}]
    assert desired["startTime"] == NOW
    assert [s["name"] for s in desired["containerStatuses"]] == ["a", "b"]  # sorted, as the kubelet does
    assert "initContainerStatuses" not in desired
    assert [c["type"] for c in desired["conditions"]] == [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    assert all(c["status"] == "True" and c["lastTransitionTime"] == NOW for c in desired["conditions"])
    assert "qosClass" not in desired


def test_unready_containers_are_named() -> None:
    desired = pod_status(pod(), running_report(ready=False), host_ip="h", pod_ip="p", now=NOW)
    ready = conditions(desired)["Ready"]
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "ContainersNotReady",
        "containers with unready status: [b a]",
    )


@pytest.mark.parametrize(
    ("gate_status", "ready", "message"),
    [
        (None, "False", 'corresponding condition of pod readiness gate "x/lb" does not exist.'),
        ("False", "False", 'the status of pod readiness gate "x/lb" is not "True", but False'),
        ("True", "True", None),
    ],
    ids=["missing", "false", "true"],
)
def test_readiness_gates(gate_status: str | None, ready: str, message: str | None) -> None:
    current = [] if gate_status is None else [{"type": "x/lb", "status": gate_status}]
    desired = pod_status(
        pod(gates=("x/lb",), conditions=current), running_report(), host_ip="h", pod_ip="p", now=NOW
    )
    assert conditions(desired)["ContainersReady"]["status"] == "True"
    assert conditions(desired)["Ready"]["status"] == ready
    assert conditions(desired)["Ready"]["message"] == message
    assert "x/lb" not in conditions(desired)  # never written by the agent


def test_sandbox_not_set_up() -> None:
    desired = pod_status(pod(init=True), None, host_ip="h", pod_ip=None, now=NOW)
    assert desired["phase"] == "Pending"
    assert "podIP" not in desired
    assert conditions(desired)["PodReadyToStartContainers"]["status"] == "False"
    assert conditions(desired)["Initialized"]["message"] == "containers with incomplete status: [setup]"
    assert {s["state"]["waiting"]["reason"] for s in desired["containerStatuses"]} == {"PodInitializing"}
    assert desired["initContainerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}


def test_transition_times_move_only_with_the_status() -> None:
    first = pod_status(pod(), running_report(ready=False), host_ip="h", pod_ip="p", now=EARLIER)
    current = {**pod(), "status": first}
    later = pod_status(current, running_report(ready=True), host_ip="h", pod_ip="p", now=NOW)
    assert conditions(later)["PodScheduled"]["lastTransitionTime"] == EARLIER
    assert conditions(later)["Ready"]["lastTransitionTime"] == NOW
    assert later["startTime"] == EARLIER


def test_unchanged_status_needs_no_patch_and_a_change_does() -> None:
    desired = pod_status(pod(), running_report(), host_ip="h", pod_ip="p", now=EARLIER)
    stored = {
        **desired,
        "qosClass": "BestEffort",
        "conditions": [*desired["conditions"], {"type": "x", "status": "True"}],
    }
    stored = {k: v for k, v in stored.items() if v is not None}  # the API server drops the nulls
    again = pod_status({**pod(), "status": stored}, running_report(), host_ip="h", pod_ip="p", now=NOW)
    assert status_patch(stored, again) is None
    changed = pod_status(
        {**pod(), "status": stored}, running_report(ready=False), host_ip="h", pod_ip="p", now=NOW
    )
    patch = status_patch(stored, changed)
    assert patch is not None
    ready = next(c for c in patch["status"]["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == "ContainersNotReady"
    assert all(c["type"] != "x" for c in patch["status"]["conditions"])


def test_report_reason_and_message_are_written_and_cleared() -> None:
    failing = PodReport(phase="Failed", containers=[], reason="Evicted", message="gone")
    assert pod_status(pod(), failing, host_ip="h", pod_ip="p", now=NOW)["reason"] == "Evicted"
    cleared = pod_status(pod(), running_report(), host_ip="h", pod_ip="p", now=NOW)
    assert cleared["reason"] is None and cleared["message"] is None
