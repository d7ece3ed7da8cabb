"""The pure helpers of `bench/peering.py`: finding a process pod's process, aggregating figures, verdicts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import harness, peering
from playground import processes
from playground.cluster import Cluster
from playground.nodeagent import podrun
from playground.spec import ClusterSpec


def pod(
    uid: str, *, component: str = "controller-manager", node: str = "rome-control-plane"
) -> dict[str, object]:
    return {
        "metadata": {
            "name": f"liqo-{component}-abc",
            "namespace": "liqo",
            "uid": uid,
            "labels": {"app.kubernetes.io/component": component},
        },
        "spec": {"nodeName": node, "containers": [{"name": component}]},
    }


def record_pid(cluster: Cluster, uid: str, text: str) -> None:
    """What the node agent of rome-control-plane writes for the controller-manager container of pod `uid`."""
    path = podrun.pid_file(
        podrun.pod_dir(cluster.paths.node("rome-control-plane"), uid), "controller-manager"
    )
    path.parent.mkdir(parents=True)
    path.write_text(text)


def test_component_of_finds_the_process_the_node_agent_recorded(tmp_path: Path) -> None:
    cluster = Cluster(ClusterSpec(name="rome"), state_dir=tmp_path)
    obj = pod("uid-1")
    me = processes.read_proc(os.getpid())
    assert me is not None
    record_pid(cluster, "uid-1", f"{me.pid} {me.start_time}\n")

    found = peering.component_of(cluster, obj)

    assert found.name == "controller-manager"
    assert found.pod == "liqo/liqo-controller-manager-abc"
    assert found.record.pid == me.pid
    assert found.record.start_time == me.start_time
    assert os.getpid() in found.pids()


def test_component_of_refuses_a_recycled_pid(tmp_path: Path) -> None:
    cluster = Cluster(ClusterSpec(name="rome"), state_dir=tmp_path)
    obj = pod("uid-2")
    me = processes.read_proc(os.getpid())
    assert me is not None
    record_pid(cluster, "uid-2", f"{me.pid} {me.start_time + 1}\n")

    with pytest.raises(RuntimeError, match="container controller-manager has no running process"):
        peering.component_of(cluster, obj)


def test_component_of_says_when_there_is_no_record(tmp_path: Path) -> None:
    cluster = Cluster(ClusterSpec(name="rome"), state_dir=tmp_path)

    with pytest.raises(
        RuntimeError,
        match="rome: pod liqo/liqo-controller-manager-abc: container controller-manager has no running process on node rome-control-plane",
    ):
        peering.component_of(cluster, pod("uid-3"))


def test_put_usage_keeps_the_largest_rss_and_sums_cpu_of_several_pods() -> None:
    run = harness.Run()
    record = processes.ProcessRecord(role="", pid=1, start_time=0, cmdline=(), log="")
    parts = [
        peering.Component("virtual-kubelet", "liqo-tenant-a/vk", record),
        peering.Component("virtual-kubelet", "liqo-tenant-b/vk", record),
        peering.Component("auth", "liqo/auth", record),
    ]
    measured = {"liqo-tenant-a/vk": (40.0, 0.5), "liqo-tenant-b/vk": (45.0, 0.25), "liqo/auth": (50.0, 0.0)}

    peering.put_usage(run, "idle", measured, parts)

    assert run.figures == {
        "idle_virtual_kubelet_rss_mb": 45.0,
        "idle_virtual_kubelet_cpu_percent": 0.75,
        "idle_virtual_kubelet_count": 2,
        "idle_virtual_kubelet_rss_mb_total": 85.0,
        "idle_auth_rss_mb": 50.0,
        "idle_auth_cpu_percent": 0.0,
    }


def test_a_missing_figure_misses_its_target_and_has_no_ratio() -> None:
    figures = {"peer_ready_p50_s": 1.5, "peer_ready_max_s": 3.5, "baseline_trivial_pod_running_s": 0.5}

    verdicts = {verdict["figure"]: verdict for verdict in harness.verdicts(peering.TARGETS, figures)}
    ratios = peering.ratios(figures)

    assert verdicts["peer_ready_p50_s"]["pass"] is True
    assert verdicts["peer_ready_max_s"]["pass"] is False
    assert verdicts["idle_controller_manager_rss_mb"]["pass"] is False
    assert verdicts["idle_controller_manager_rss_mb"]["value"] is None
    assert ratios == {
        "peer_ready_p50 / trivial_pod_running": 3.0,
        "peer_ready_max / trivial_pod_running": 7.0,
    }
