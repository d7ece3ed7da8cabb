"""Playground clusters as a library: specs and their validation, process records, and whole
clusters started, stopped, restarted with their objects and torn down without a trace."""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

import pytest
import yaml

from playground import processes
from playground.cluster import Cluster, ClusterError, down, resolve, up
from playground.network import names, netns
from playground.processes import ProcessRecord
from playground.spec import (
    CONTROL_PLANE_TAINT,
    ClusterSpec,
    SpecError,
    check_specs,
    node_names,
    node_plans,
    spec_problems,
)
from playground.supervisor import (
    BACKOFF,
    RUNNING,
    SUPERVISOR,
    RoleState,
    SupervisorState,
    read_state,
    write_state,
)
from playground.testing import Playground, aclusters
from runtime.api.image import runtime_image
from runtime.api.kinds import CONFIGMAPS, NAMESPACES, NODES, PODS
from runtime.core import APIError, Client
from tests.playground.conftest import eventually

# specs


@pytest.mark.parametrize(
    ("count", "names"),
    [
        (1, ["rome-control-plane"]),
        (2, ["rome-control-plane", "rome-worker"]),
        (4, ["rome-control-plane", "rome-worker", "rome-worker2", "rome-worker3"]),
    ],
    ids=["one", "two", "four"],
)
def test_node_names_follow_kind(count: int, names: list[str]) -> None:
    assert node_names("rome", count) == names


def test_each_node_gets_its_own_slash_24_and_only_a_multi_node_control_plane_is_tainted() -> None:
    single = node_plans(ClusterSpec("solo"))
    assert [(n.name, n.role, n.pod_cidr, n.taints) for n in single] == [
        ("solo-control-plane", "control-plane", "10.244.0.0/24", ())
    ]
    three = node_plans(ClusterSpec("trio", nodes=3, pod_cidr="10.8.0.0/22"))
    assert [(n.role, n.pod_cidr, n.taints) for n in three] == [
        ("control-plane", "10.8.0.0/24", (CONTROL_PLANE_TAINT,)),
        ("worker", "10.8.1.0/24", ()),
        ("worker", "10.8.2.0/24", ()),
    ]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (ClusterSpec("Rome"), "DNS-1123 label"),
        (ClusterSpec("ro_me"), "DNS-1123 label"),
        (ClusterSpec("-rome"), "DNS-1123 label"),
        (ClusterSpec(""), "cannot be empty"),
        (ClusterSpec("r" * 50), "use at most 49"),
        (ClusterSpec("rome", nodes=0), "between 1 and 100"),
        (ClusterSpec("rome", pod_cidr="10.244.0.0"), "CIDR notation"),
        (ClusterSpec("rome", pod_cidr="10.244.0.1/16"), "did you mean 10.244.0.0/16"),
        (ClusterSpec("rome", pod_cidr="fd00::/48"), "only IPv4"),
        (ClusterSpec("rome", pod_cidr="10.244.0.0/25"), "too small"),
        (ClusterSpec("rome", nodes=3, pod_cidr="10.244.0.0/23"), "use a /22 or larger"),
        (ClusterSpec("rome", service_cidr="172.0.0.0/8"), "between /12"),
        (ClusterSpec("rome", pod_cidr="10.0.0.0/8", service_cidr="10.96.0.0/16"), "overlap"),
        (ClusterSpec("rome", api_server_port=70000), "between 1 and 65535"),
        (ClusterSpec("rome", network="bridge"), "use netns or loopback"),
        (ClusterSpec("rome", network="loopback", assets="/k8s"), "cannot run real binaries"),
        (
            ClusterSpec("rome", pod_cidr="172.30.0.0/16", node_network="172.30.4.0/24"),
            "overlaps the playground network",
        ),
    ],
    ids=[
        "uppercase",
        "underscore",
        "leading-dash",
        "empty",
        "too-long-for-node-names",
        "no-nodes",
        "not-a-cidr",
        "host-bits",
        "ipv6",
        "smaller-than-a-node",
        "too-few-node-subnets",
        "service-cidr-too-big",
        "overlapping-cidrs",
        "bad-port",
        "unknown-network",
        "loopback-with-real-binaries",
        "pods-on-the-playground-network",
    ],
)
def test_invalid_specs_are_explained(spec: ClusterSpec, message: str) -> None:
    problems = spec_problems(spec)
    assert len(problems) == 1 and message in problems[0], problems


def test_a_valid_spec_has_no_problem() -> None:
    assert spec_problems(ClusterSpec("r" * 49, nodes=3)) == []


def test_names_and_ports_given_twice_are_refused_together() -> None:
    with pytest.raises(SpecError) as caught:
        check_specs([ClusterSpec("a", api_server_port=7000), ClusterSpec("a", api_server_port=7000)])
    assert caught.value.problems == [
        "cluster name 'a' is given more than once",
        "port 7000 is asked for more than once",
    ]


def test_a_stored_cluster_keeps_its_spec_and_refuses_other_settings(tmp_path: Path) -> None:
    stored = ClusterSpec("rome", nodes=2, api_server_port=7443)
    (tmp_path / "rome").mkdir()
    (tmp_path / "rome" / "cluster.json").write_text(json.dumps(stored.as_json()))
    assert resolve(["rome"], state_dir=tmp_path, environ={}) == [stored]
    assert resolve(["rome", "milan"], state_dir=tmp_path, environ={}, nodes=2)[1] == ClusterSpec(
        "milan", nodes=2
    )
    with pytest.raises(
        SpecError, match="exists with nodes 2; to change it to 3, remove it with `playground down rome`"
    ):
        resolve(["rome"], state_dir=tmp_path, environ={}, nodes=3)


# process records


def _sleeper(tmp_path: Path, script: str = "import time; time.sleep(60)") -> ProcessRecord:
    return processes.spawn("test", [sys.executable, "-c", script], log=tmp_path / "test.log")


def test_read_proc_parses_a_command_name_with_spaces_and_parentheses(tmp_path: Path) -> None:
    (tmp_path / "42").mkdir()
    fields = ["S", "1", "42", "42", *["0"] * 15, "777", *["0"] * 30]
    (tmp_path / "42" / "stat").write_text(f"42 (odd) name) {' '.join(fields)}\n")
    (tmp_path / "42" / "cmdline").write_bytes(b"prog\0--flag\0\0")
    info = processes.read_proc(42, proc=tmp_path)
    assert info is not None
    assert (info.state, info.ppid, info.pgid, info.sid, info.start_time) == ("S", 1, 42, 42, 777)
    assert info.cmdline == ("prog", "--flag", "")


def test_a_recycled_pid_is_never_signalled(tmp_path: Path) -> None:
    record = _sleeper(tmp_path)
    try:
        other_start = dataclasses.replace(record, start_time=record.start_time - 1)
        other_program = dataclasses.replace(record, cmdline=(*record.cmdline, "--other"))
        for impostor in (other_start, other_program):
            assert not processes.is_running(impostor)
            assert processes.owned_processes(impostor) == []
            assert processes.stop([impostor], timeout=1) == [impostor]
        assert processes.is_running(record)
    finally:
        processes.stop([record], timeout=5)
    assert not processes.is_running(record)


def test_stop_takes_descendants_in_other_sessions_and_the_rest_of_a_dead_leaders_session(
    tmp_path: Path,
) -> None:
    # like a node agent whose pods run in sessions of their own
    parent = _sleeper(
        tmp_path,
        "import subprocess, time; subprocess.Popen(['sleep', '60'], start_new_session=True); time.sleep(60)",
    )
    # a leader that exited and left a member of its session behind
    orphaner = _sleeper(tmp_path, "import subprocess; subprocess.Popen(['sleep', '60'])")

    def owned() -> list[list[int]]:
        return [[info.pid for info in processes.owned_processes(record)] for record in (parent, orphaner)]

    deadline = time.monotonic() + 10
    while not (len(owned()[0]) == 2 and len(owned()[1]) == 1 and not processes.is_running(orphaner)):
        assert time.monotonic() < deadline, owned()
        time.sleep(0.05)
    pids = [pid for group in owned() for pid in group]
    processes.stop([parent, orphaner], timeout=5)
    for pid in pids:
        info = processes.read_proc(pid)
        assert info is None or info.is_zombie, info


def test_the_supervisor_state_round_trips(tmp_path: Path) -> None:
    record = ProcessRecord(role="node/a", pid=12, start_time=34, cmdline=("x", "y"), log="/l")
    me = ProcessRecord(role=SUPERVISOR, pid=10, start_time=30, cmdline=("s",), log="/s")
    state = SupervisorState(
        supervisor=me,
        roles=(
            RoleState("node/a", RUNNING, record),
            RoleState("apiserver", BACKOFF, None, exits=2, last_exit=-9),
        ),
    )
    write_state(tmp_path / "p.json", state)
    assert read_state(tmp_path / "p.json") == state
    assert state.records() == [me, record]
    assert read_state(tmp_path / "missing.json") is None
    # the launcher's first record of a supervisor never replaces the state the supervisor wrote
    write_state(tmp_path / "p.json", SupervisorState(supervisor=me), only_if_absent=True)
    assert read_state(tmp_path / "p.json") == state
    write_state(tmp_path / "new.json", SupervisorState(supervisor=me), only_if_absent=True)
    assert read_state(tmp_path / "new.json") == SupervisorState(supervisor=me)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["new.json", "p.json"]


# whole clusters


def _all_pids(cluster: Cluster) -> list[int]:
    return [info.pid for record in cluster.records().values() for info in processes.owned_processes(record)]


def _gone(pids: list[int]) -> bool:
    return all((info := processes.read_proc(pid)) is None or info.is_zombie for pid in pids)


# the emulator keeps the objects itself (etcd does in real-binary mode)
@pytest.mark.emulator
async def test_a_cluster_restarts_with_its_objects_and_stops_without_a_trace(tmp_path: Path) -> None:
    playground = Playground(tmp_path)
    try:
        (cluster,) = await playground.up("solo")
        config = yaml.safe_load(cluster.kubeconfig.read_text())
        assert config["current-context"] == "playground-solo"
        assert (
            [c["name"] for c in config["clusters"]]
            == [u["name"] for u in config["users"]]
            == ["playground-solo"]
        )
        assert cluster.status().state == "running"
        with pytest.raises(ClusterError, match=r"already running.*playground down solo"):
            await playground.up("solo")

        async with cluster.client() as api:
            await api.create(
                CONFIGMAPS, {"metadata": {"name": "kept"}, "data": {"k": "v"}}, namespace="default"
            )
            await cluster.stop_apiserver()
            with pytest.raises(APIError):
                await api.get(CONFIGMAPS, "kept", namespace="default")
            await cluster.start_apiserver()
            assert (await api.get(CONFIGMAPS, "kept", namespace="default"))["data"] == {"k": "v"}

        pids = _all_pids(cluster)
        assert len(pids) >= 3
        await cluster.stop()
        assert _gone(pids)
        assert cluster.status().state == "stopped"

        (again,) = await playground.up("solo")
        async with again.client() as api:
            assert (await api.get(CONFIGMAPS, "kept", namespace="default"))["data"] == {"k": "v"}
            node = await api.get(NODES, "solo-control-plane")
            assert not node["spec"].get("taints")
        pids = _all_pids(again)
    finally:
        await playground.close()
    assert _gone(pids)
    assert not (tmp_path / "solo").exists()


async def test_a_control_plane_process_that_dies_is_restarted(playground: Playground) -> None:
    (cluster,) = await playground.up("crashy")
    crashed = cluster.records()["apiserver"]
    os.kill(crashed.pid, signal.SIGKILL)
    async with cluster.client() as api:

        async def back() -> bool:
            try:
                await api.get(NAMESPACES, "default")
            except APIError:
                return False
            return True

        await eventually(back, within=60)
    state = cluster.supervisor_state()
    assert state is not None
    apiserver = state.role("apiserver")
    assert apiserver is not None and apiserver.exits == 1 and apiserver.last_exit == -signal.SIGKILL
    assert apiserver.record is not None and apiserver.record.pid != crashed.pid


async def test_down_stops_what_a_killed_supervisor_left_running(tmp_path: Path) -> None:
    playground = Playground(tmp_path)
    try:
        (cluster,) = await playground.up("orphans")
        pids = _all_pids(cluster)
        supervisor = cluster.records()[SUPERVISOR]
        os.kill(supervisor.pid, signal.SIGKILL)
        await eventually(lambda: not processes.is_running(supervisor), within=10)
        assert cluster.status().state == "degraded", "its processes run on without their supervisor"
    finally:
        await playground.close()
    assert _gone(pids)
    assert not (tmp_path / "orphans").exists()


@pytest.mark.emulator
@pytest.mark.skipif(
    bool(os.environ.get("KUBEBUILDER_ASSETS")), reason="the loopback fallback is emulator-only"
)
async def test_the_loopback_fallback_runs_without_namespaces(tmp_path: Path) -> None:
    """The old model, for hosts without CAP_NET_ADMIN: nodes on loopback addresses, nothing in /run/netns."""
    (spec,) = resolve(["flat"], state_dir=tmp_path, environ={}, network="loopback")
    (cluster,) = await up([spec], state_dir=tmp_path)
    try:
        assert "hostport" not in cluster.records() and not any(
            r.startswith("kube-proxy/") for r in cluster.records()
        )
        async with cluster.client() as api:
            node = await api.get(NODES, "flat-control-plane")
        address = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
        assert ipaddress.ip_address(address).is_loopback
        assert not [name for name in netns.names() if name.startswith(f"pg_{names.state_id(tmp_path)}_")]
    finally:
        await down(["flat"], state_dir=tmp_path)


async def test_a_busy_port_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ClusterError, match=f"API server port {port} on 127.0.0.1 is in use"):
            await up([ClusterSpec("busy", api_server_port=port)], state_dir=tmp_path)
    assert not (tmp_path / "busy" / "processes.json").exists()


async def test_a_process_that_dies_at_start_fails_the_start_with_its_log(tmp_path: Path) -> None:
    spec = ClusterSpec("broken", node_heartbeat=50)  # longer than the agent's default 40 s lease
    with pytest.raises(
        ClusterError,
        match=r"(?s)the node/broken-control-plane process exited 2 times \(last exit code 2\).*--heartbeat 50",
    ):
        await up([spec], state_dir=tmp_path, wait=30)
    cluster = Cluster.load("broken", state_dir=tmp_path)
    assert not any(cluster.running().values())


@pytest.mark.slow
async def test_two_clusters_with_overlapping_pod_cidrs(playground: Playground) -> None:
    a, b = await playground.up("east", "west", nodes=2)
    assert a.spec.api_server_port != b.spec.api_server_port
    ips: dict[str, str] = {}
    for cluster in (a, b):
        async with cluster.client() as api:
            nodes = (await api.list(NODES)).items
            assert sorted(n["metadata"]["name"] for n in nodes) == cluster.node_names
            assert sorted(n["spec"]["podCIDR"] for n in nodes) == ["10.244.0.0/24", "10.244.1.0/24"]
            await api.create(
                PODS,
                {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
                namespace="default",
            )

            async def pod_ip(api: Client = api) -> str | None:
                ip: str | None = (await api.get(PODS, "p", namespace="default"))["status"].get("podIP")
                return ip

            await eventually(pod_ip, within=20)
            ip = await pod_ip()
            assert ip is not None
            ips[cluster.name] = ip
    # the same worker subnet on both sides: overlapping pod CIDRs, as with two kind clusters
    assert ips["east"].rsplit(".", 1)[0] == ips["west"].rsplit(".", 1)[0] == "10.244.1"


async def test_a_failing_block_tears_down_every_process_including_a_subprocess_pods(tmp_path: Path) -> None:
    pids: list[int] = []
    with pytest.raises(RuntimeError, match="the test failed"):
        async with aclusters("procs", state_dir=tmp_path) as (cluster,):
            async with cluster.client() as api:
                await api.create(
                    PODS,
                    {
                        "metadata": {"name": "sleeper"},
                        "spec": {
                            "containers": [
                                {
                                    "name": "s",
                                    "image": runtime_image(),
                                    "command": ["python", "-c", "import time; time.sleep(600)"],
                                }
                            ]
                        },
                    },
                    namespace="default",
                )

                async def started() -> bool:
                    pod = await api.get(PODS, "sleeper", namespace="default")
                    return bool(pod["status"].get("phase") == "Running")

                await eventually(started, within=30)
            pids = _all_pids(cluster)
            sleepers = [
                info.pid
                for info in processes.all_processes()
                if "time.sleep(600)" in " ".join(info.cmdline) and info.pid in pids
            ]
            assert sleepers, "the pod's process is one of the cluster's"
            raise RuntimeError("the test failed")
    assert _gone(pids)
    assert not (tmp_path / "procs").exists()
