"""Finding the local process of a process pod's container: `podrun.container_pid` and `Cluster.container_pid`."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from playground import processes
from playground.cluster import Cluster
from playground.nodeagent import podrun
from playground.spec import ClusterSpec
from tests.playground.conftest import eventually
from tests.playground.nodeagent.test_processes import container, pod, process_runner, python, report, uid

NODE = "rome-control-plane"


def me() -> processes.ProcInfo:
    info = processes.read_proc(os.getpid())
    assert info is not None
    return info


def record(node_state_dir: Path, pod_uid: str, container_name: str, text: str) -> None:
    path = podrun.pid_file(podrun.pod_dir(node_state_dir, pod_uid), container_name)
    path.parent.mkdir(parents=True)
    path.write_text(text)


def test_the_pid_of_a_recorded_running_process(tmp_path: Path) -> None:
    record(tmp_path, "uid-1", "manager", f"{me().pid} {me().start_time}\n")

    assert podrun.container_pid(tmp_path, "uid-1", "manager") == os.getpid()
    assert podrun.container_pid(tmp_path, "uid-1", "other") is None
    assert podrun.container_pid(tmp_path, "uid-2", "manager") is None


def test_no_pid_for_a_reused_pid_a_missing_file_or_garbage(tmp_path: Path) -> None:
    record(tmp_path, "reused", "c", f"{me().pid} {me().start_time + 1}\n")
    record(tmp_path, "garbage", "c", "not a pid file\n")
    record(tmp_path, "empty", "c", "")

    assert podrun.container_pid(tmp_path, "reused", "c") is None
    assert podrun.container_pid(tmp_path, "garbage", "c") is None
    assert podrun.container_pid(tmp_path, "empty", "c") is None
    assert podrun.container_pid(tmp_path / "nowhere", "missing", "c") is None


def test_a_cluster_looks_under_the_state_dir_of_the_pods_node(tmp_path: Path) -> None:
    cluster = Cluster(ClusterSpec(name="rome"), state_dir=tmp_path)
    record(cluster.paths.node(NODE), "uid-1", "auth", f"{me().pid} {me().start_time}\n")
    bound = {"metadata": {"uid": "uid-1"}, "spec": {"nodeName": NODE}}

    assert cluster.container_pid(bound, "auth") == os.getpid()
    assert cluster.container_pid({**bound, "spec": {"nodeName": "rome-worker"}}, "auth") is None
    assert cluster.container_pid({"metadata": {"uid": "uid-1"}, "spec": {}}, "auth") is None
    assert cluster.container_pid({"spec": {"nodeName": NODE}}, "auth") is None


@pytest.mark.skipif(
    sys.platform != "linux" or os.geteuid() != 0,
    reason="the process runner needs root on Linux (mount namespaces)",
)
async def test_the_process_runner_records_where_container_pid_looks(tmp_path: Path) -> None:
    p = pod(container(python("import time; time.sleep(60)"), name="sleeper"))
    async with process_runner(tmp_path) as runner:
        await runner.start(p, pod_ip="127.0.0.1")
        await eventually(lambda: "running" in report(runner, p).containers[0].state, within=20)

        pid = podrun.container_pid(tmp_path, uid(p), "sleeper")

        assert pid is not None
        info = processes.read_proc(pid)
        assert info is not None and "time.sleep(60)" in " ".join(info.cmdline)
        os.kill(pid, signal.SIGKILL)
        await eventually(lambda: podrun.container_pid(tmp_path, uid(p), "sleeper") != pid, within=20)
