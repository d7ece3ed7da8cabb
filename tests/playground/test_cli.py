"""The `playground` command as a user runs it: a subprocess, its output and its exit code."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from playground import processes
from playground.cli import main
from playground.spec import AGENT_NODES_MODE, EMULATOR_MODE, REAL_NODES_MODE
from playground.supervisor import read_state

PLAYGROUND = [sys.executable, "-m", "playground"]


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PLAYGROUND, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


# the playground's default mode where the real control plane is not built is the emulator
@pytest.mark.emulator
def test_up_status_kubeconfig_down(tmp_path: Path) -> None:
    started = run("up", "cli", cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    # the kubeconfig path on stdout (relative to the working directory), progress on stderr
    assert started.stdout.splitlines() == [".playground/cli/kubeconfig"]
    assert "kubectl --kubeconfig .playground/cli/kubeconfig get nodes" in started.stderr
    supervised = read_state(tmp_path / ".playground" / "cli" / "processes.json")
    assert supervised is not None
    owned = [info.pid for record in supervised.records() for info in processes.owned_processes(record)]

    table = [re.split(r"\s{2,}", line) for line in run("status", cwd=tmp_path).stdout.splitlines()]
    assert table[0] == ["NAME", "STATE", "MODE", "API SERVER", "NODES", "KUBECONFIG"]
    name, state, mode, server, nodes, kubeconfig = table[1]
    assert (name, state, nodes, kubeconfig) == ("cli", "running", "1/1", ".playground/cli/kubeconfig")
    # the mode `up` chose from the environment, as it said when it started the cluster
    assert mode in (EMULATOR_MODE, AGENT_NODES_MODE, REAL_NODES_MODE)
    assert f"(1 node, {mode})" in started.stderr
    assert server.startswith("https://127.0.0.1:")

    # PLAYGROUND_STATE_DIR names the same place from anywhere
    listed = json.loads(
        run(
            "status", "-o", "json", cwd=Path("/"), env={"PLAYGROUND_STATE_DIR": str(tmp_path / ".playground")}
        ).stdout
    )
    assert [(c["name"], c["state"], c["apiServer"]) for c in listed] == [("cli", "running", server)]
    # every process the supervisor runs, by role (the emulator's or the real binaries'), and its state
    running = {p["role"]: (p["state"], p["exits"]) for p in listed[0]["processes"]}
    assert {"apiserver", "node/cli-control-plane"} <= set(running)
    assert set(running.values()) == {("running", 0)}, running

    assert run("kubeconfig", "cli", cwd=tmp_path).stdout == ".playground/cli/kubeconfig\n"
    raw = yaml.safe_load(run("kubeconfig", "cli", "--raw", cwd=tmp_path).stdout)
    assert raw["current-context"] == "playground-cli"
    assert raw["clusters"][0]["cluster"]["server"] == server

    stopped = run("down", cwd=tmp_path)
    assert stopped.returncode == 0, stopped.stderr
    assert "Stopped cluster 'cli'" in stopped.stderr
    assert not (tmp_path / ".playground" / "cli").exists()
    assert all((info := processes.read_proc(pid)) is None or info.is_zombie for pid in owned)
    assert "No clusters" in run("status", cwd=tmp_path).stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["up", "Rome"], "cluster name 'Rome': use lowercase letters"),
        (["up", "a", "a"], "cluster name 'a' is given more than once"),
        (["up", "a", "--pod-cidr", "10.244.0.0/33"], "--pod-cidr '10.244.0.0/33' is not a network"),
        (["up", "a", "--service-cidr", "10.96.0.1/16"], "did you mean 10.96.0.0/16"),
        (["up", "a", "b", "--api-server-port", "7443"], "one cluster name only"),
        (["kubeconfig", "nowhere"], "no cluster 'nowhere'"),
        (["down", "nowhere"], "no cluster 'nowhere'"),
        (["load-image", "nowhere", "image.tar"], "no cluster 'nowhere'"),
    ],
    ids=[
        "bad-name",
        "twice",
        "bad-pod-cidr",
        "host-bits",
        "port-for-two",
        "kubeconfig-unknown",
        "down-unknown",
        "load-image-unknown",
    ],
)
def test_bad_requests_fail_with_a_clear_error_and_start_nothing(
    tmp_path: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*args, "--state-dir", str(tmp_path)]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: ") and message in error, error
    assert not any(tmp_path.glob("*/processes.json"))


def test_up_of_an_existing_cluster_refuses_other_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "rome").mkdir()
    (tmp_path / "rome" / "cluster.json").write_text(
        json.dumps({"name": "rome", "nodes": 2, "api_server_port": 7443})
    )
    assert main(["up", "rome", "--nodes", "3", "--state-dir", str(tmp_path)]) == 1
    assert "cluster rome exists with nodes 2" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("stored", "message"),
    [
        (
            {"network": "netns"},
            "cluster rome has no container runtime (emulator): images load into real nodes only",
        ),
        (
            {"network": "netns", "assets": "/k8s", "real_nodes": True},
            "cluster rome: containerd is not running on rome-control-plane: start the cluster",
        ),
    ],
    ids=["agent-nodes", "stopped"],
)
def test_load_image_needs_running_real_nodes(
    tmp_path: Path, stored: dict[str, object], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "rome").mkdir()
    (tmp_path / "rome" / "cluster.json").write_text(json.dumps({"name": "rome", **stored}))
    archive = tmp_path / "image.tar"
    archive.write_bytes(b"")
    assert main(["load-image", "rome", str(archive), "--state-dir", str(tmp_path)]) == 1
    assert message in capsys.readouterr().err


def test_the_control_plane_names_unknown_components(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "playground.controlplane",
            "--kubeconfig",
            str(tmp_path / "k"),
            "--only",
            "scheduler,dns",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "unknown component(s) dns: choose from scheduler, namespace," in result.stderr
