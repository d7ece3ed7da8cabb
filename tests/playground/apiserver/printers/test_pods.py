"""Pods: READY, STATUS and RESTARTS derived like kube-apiserver's printPod, wide columns, row conditions."""

from __future__ import annotations

import pytest

from playground.apiserver.printers.table import table

from .support import NOW, Obj, ago, row, rt


def pod(
    *,
    phase: str = "Running",
    containers: int = 1,
    statuses: list[Obj] | None = None,
    init: list[Obj] | None = None,
    init_statuses: list[Obj] | None = None,
    conditions: list[Obj] | None = None,
    deleting: bool = False,
    reason: str = "",
) -> Obj:
    metadata: Obj = {"name": "web", "creationTimestamp": ago(hours=1)}
    if deleting:
        metadata["deletionTimestamp"] = ago(seconds=10)
    status: Obj = {"phase": phase, "conditions": conditions or []}
    if statuses is not None:
        status["containerStatuses"] = statuses
    if init_statuses is not None:
        status["initContainerStatuses"] = init_statuses
    if reason:
        status["reason"] = reason
    spec: Obj = {"containers": [{"name": f"c{i}"} for i in range(containers)], "initContainers": init or []}
    return {"metadata": metadata, "spec": spec, "status": status}


RUNNING: Obj = {
    "name": "c0",
    "ready": True,
    "restartCount": 0,
    "state": {"running": {"startedAt": ago(hours=1)}},
}
READY_CONDITION = {"type": "Ready", "status": "True"}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (pod(statuses=[RUNNING], conditions=[READY_CONDITION]), ["1/1", "Running", "0"]),
        (pod(phase="Pending"), ["0/1", "Pending", "0"]),
        (
            pod(
                phase="Pending",
                statuses=[{"name": "c0", "state": {"waiting": {"reason": "ContainerCreating"}}}],
            ),
            ["0/1", "ContainerCreating", "0"],
        ),
        (
            pod(
                statuses=[
                    {
                        "name": "c0",
                        "restartCount": 5,
                        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                        "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(minutes=5)}},
                    }
                ]
            ),
            ["0/1", "CrashLoopBackOff", "5 (5m ago)"],
        ),
        (
            pod(
                statuses=[{**RUNNING, "restartCount": 2}, {**RUNNING, "name": "c1", "ready": False}],
                containers=2,
            ),
            ["1/2", "Running", "2"],
        ),
        (
            pod(
                containers=2,
                statuses=[
                    {"name": "c0", "state": {"waiting": {"reason": "ErrImagePull"}}},
                    {"name": "c1", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}},
                ],
            ),
            ["0/2", "ErrImagePull", "0"],
        ),
        (
            pod(
                phase="Pending",
                init=[{"name": "i0"}, {"name": "i1"}],
                init_statuses=[
                    {"name": "i0", "state": {"running": {}}},
                    {"name": "i1", "state": {"waiting": {}}},
                ],
            ),
            ["0/1", "Init:0/2", "0"],
        ),
        (
            pod(
                phase="Pending",
                init=[{"name": "i0"}, {"name": "i1"}],
                init_statuses=[
                    {"name": "i0", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                    {"name": "i1", "state": {"waiting": {"reason": "PodInitializing"}}},
                ],
            ),
            ["0/1", "Init:1/2", "0"],
        ),
        (
            pod(
                phase="Pending",
                init=[{"name": "i0"}],
                init_statuses=[
                    {"name": "i0", "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
                ],
            ),
            ["0/1", "Init:CrashLoopBackOff", "3"],
        ),
        (
            pod(
                phase="Pending",
                init=[{"name": "i0"}],
                init_statuses=[{"name": "i0", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}],
            ),
            ["0/1", "Init:Error", "0"],
        ),
        (
            pod(
                phase="Pending",
                init=[{"name": "i0"}],
                init_statuses=[{"name": "i0", "state": {"terminated": {"exitCode": 3}}}],
            ),
            ["0/1", "Init:ExitCode:3", "0"],
        ),
        (
            pod(
                init=[{"name": "proxy", "restartPolicy": "Always"}],
                init_statuses=[{"name": "proxy", "started": True, "ready": True, "state": {"running": {}}}],
                statuses=[RUNNING],
                conditions=[{"type": "Initialized", "status": "True"}, READY_CONDITION],
            ),
            ["2/2", "Running", "0"],
        ),
        (
            pod(
                phase="Succeeded",
                statuses=[{"name": "c0", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}],
            ),
            ["0/1", "Completed", "0"],
        ),
        (
            pod(
                containers=2,
                statuses=[
                    {"name": "c0", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                    {**RUNNING, "name": "c1"},
                ],
            ),
            ["1/2", "NotReady", "0"],
        ),
        (
            pod(
                phase="Failed",
                statuses=[{"name": "c0", "state": {"terminated": {"exitCode": 137, "signal": 9}}}],
            ),
            ["0/1", "Signal:9", "0"],
        ),
        (pod(phase="Failed", reason="Evicted"), ["0/1", "Evicted", "0"]),
        (pod(statuses=[RUNNING], conditions=[READY_CONDITION], deleting=True), ["1/1", "Terminating", "0"]),
        (pod(phase="Succeeded", deleting=True), ["0/1", "Succeeded", "0"]),
        (pod(statuses=[RUNNING], deleting=True, reason="NodeLost"), ["1/1", "Unknown", "0"]),
        (
            pod(
                phase="Pending",
                conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}],
            ),
            ["0/1", "SchedulingGated", "0"],
        ),
    ],
    ids=[
        "running",
        "pending",
        "container-creating",
        "crash-loop-with-last-restart",
        "partly-ready",
        "first-container-state-wins",
        "first-init-container-running",
        "second-init-container-starting",
        "init-crash-loop",
        "init-error",
        "init-exit-code",
        "sidecar-counts-as-ready",
        "completed",
        "completed-with-one-still-running",
        "killed-by-signal",
        "evicted",
        "terminating",
        "deleting-finished-pod-keeps-phase",
        "node-lost",
        "scheduling-gated",
    ],
)
def test_pod_ready_status_and_restarts_are_derived_like_kubectl(obj: Obj, expected: list[str]) -> None:
    cells = row(rt("", "pods"), obj)
    assert cells[0] == "web"
    assert cells[1:4] == expected
    assert cells[4] == "60m"


@pytest.mark.parametrize(
    ("status", "spec", "expected"),
    [
        ({}, {}, ["<none>", "<none>", "<none>", "<none>"]),
        (
            {
                "podIPs": [{"ip": "10.0.0.5"}, {"ip": "fd00::5"}],
                "podIP": "10.0.0.5",
                "nominatedNodeName": "n2",
            },
            {"nodeName": "n1"},
            ["10.0.0.5", "n1", "n2", "<none>"],
        ),
        ({"podIP": "10.0.0.6"}, {}, ["10.0.0.6", "<none>", "<none>", "<none>"]),
        (
            {
                "conditions": [
                    {"type": "example.com/gate", "status": "True"},
                    {"type": "other", "status": "False"},
                ]
            },
            {"readinessGates": [{"conditionType": "example.com/gate"}, {"conditionType": "other"}]},
            ["<none>", "<none>", "<none>", "1/2"],
        ),
    ],
    ids=["unscheduled", "scheduled-dual-stack", "legacy-pod-ip", "readiness-gates"],
)
def test_pod_wide_columns(status: Obj, spec: Obj, expected: list[str]) -> None:
    obj = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}], **spec}, "status": status}
    assert row(rt("", "pods"), obj)[5:] == expected


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        ("Running", None),
        (
            "Succeeded",
            [
                {
                    "type": "Completed",
                    "status": "True",
                    "reason": "Succeeded",
                    "message": "The pod has completed successfully.",
                }
            ],
        ),
        (
            "Failed",
            [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}],
        ),
    ],
    ids=["running", "succeeded", "failed"],
)
def test_finished_pods_carry_a_completed_row_condition(phase: str, expected: list[Obj] | None) -> None:
    result = table(rt("", "pods"), [pod(phase=phase)], now=NOW)
    assert result["rows"][0].get("conditions") == expected
