"""`python -m playground.nodeagent`: flag validation, and a real process that registers and stops on SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from playground.nodeagent import NodeAgentOptions, Taint
from playground.nodeagent.__main__ import argument_parser, options_from
from playground.nodeagent.options import parse_label, parse_taint
from runtime.api.kinds import NODES
from runtime.core import Client, NotFoundError
from tests.playground.conftest import eventually, identity_kubeconfig


def test_flags_become_options(tmp_path: Path) -> None:
    args = argument_parser().parse_args(
        [
            "--kubeconfig",
            "kc",
            "--node",
            "n1",
            "--pod-cidr",
            "10.244.3.0/24",
            "--label",
            "a=b",
            "--label",
            "empty=",
            "--taint",
            "k=v:NoSchedule",
            "--taint",
            "bare:NoExecute",
            "--state-dir",
            str(tmp_path),
        ]
    )
    options = options_from(args)
    assert options.labels == {"a": "b", "empty": ""}
    assert options.taints == (Taint("k", "NoSchedule", "v"), Taint("bare", "NoExecute"))
    assert options.state_dir == tmp_path
    assert (options.lease_duration, options.heartbeat) == (40, 10.0)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"node_name": "Bad_Name"}, "--node 'Bad_Name': a node name must be a DNS subdomain"),
        ({"pod_cidr": "10.244.1.1/24"}, "--pod-cidr '10.244.1.1/24': not a network in CIDR notation"),
        ({"pod_cidr": "10.244.1.0/31"}, "too small to hold any pod IP"),
        ({"address": "localhost"}, "--address 'localhost': not an IP address"),
        ({"memory": "16 GB"}, "--memory '16 GB': not a resource quantity"),
        ({"pods": 0}, "--pods 0: must be at least 1"),
        ({"labels": {"bad key": "v"}}, "--label bad key=v: the key's name"),
        ({"taints": (Taint("k", "Sometimes"),)}, "--taint k=:Sometimes: the effect must be one of"),
        ({"heartbeat": 50.0}, "--heartbeat 50.0: must be positive and shorter than --lease-duration (40)"),
        ({"kubelet_port": 70000}, "--kubelet-port 70000: must be between 0 and 65535"),
    ],
    ids=[
        "node",
        "cidr-host-bits",
        "cidr-too-small",
        "address",
        "memory",
        "pods",
        "label",
        "taint",
        "heartbeat",
        "port",
    ],
)
def test_bad_options_are_refused_with_the_flag_named(overrides: dict[str, object], message: str) -> None:
    values: dict[str, object] = {"node_name": "n1", "pod_cidr": "10.244.1.0/24", **overrides}
    with pytest.raises(ValueError) as failure:
        NodeAgentOptions(**values)  # type: ignore[arg-type]
    assert message in str(failure.value)


@pytest.mark.parametrize("text", ["novalue", "k=v", "=:NoSchedule"], ids=["no-effect", "no-colon", "no-key"])
def test_malformed_taints_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        NodeAgentOptions(node_name="n1", pod_cidr="10.244.1.0/24", taints=(parse_taint(text),))


def test_label_needs_an_equals_sign() -> None:
    with pytest.raises(ValueError, match="expected key=value"):
        parse_label("novalue")


def test_bad_flag_exits_with_usage_error(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("{}")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "playground.nodeagent",
            "--kubeconfig",
            str(kubeconfig),
            "--node",
            "n1",
            "--pod-cidr",
            "not-a-cidr",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "--pod-cidr 'not-a-cidr': not a network in CIDR notation" in result.stderr


async def test_agent_process_registers_its_node_and_stops_on_sigterm(
    fresh_emulator: Path, tmp_path: Path
) -> None:
    log = (tmp_path / "agent.log").open("wb")
    kubelet = identity_kubeconfig(fresh_emulator, "system:node:proc-node", "system:nodes")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "playground.nodeagent",
        "--kubeconfig",
        str(kubelet),
        "--node",
        "proc-node",
        "--pod-cidr",
        "10.244.7.0/24",
        "--label",
        "team=a",
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        async with await Client.from_kubeconfig(fresh_emulator) as api:

            async def registered() -> bool:
                try:
                    node = await api.get(NODES, "proc-node")
                except NotFoundError:
                    return False
                return bool(node["metadata"]["labels"].get("team") == "a")

            await eventually(registered, within=30)
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 30) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        log.close()
    assert "registered the Node" in (tmp_path / "agent.log").read_text()
