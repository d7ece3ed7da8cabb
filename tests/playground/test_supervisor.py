"""A cluster's supervisor: kubeadm's start order, the kubelet's restart back-off, held roles, and a
stop in reverse start order, one process at a time.

The plans here run small Python children that write what happens to them (start, ready,
SIGTERM, exit) to a journal with the system-wide monotonic clock, so the order of events
across processes is read back exactly; waits are bounded polls of the supervisor's state.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import signal
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from playground import processes
from playground.network import netns
from playground.supervisor import (
    BACKOFF,
    HELD,
    RUNNING,
    STOPPED,
    Plan,
    ProcessPlan,
    RestartPolicy,
    SupervisorState,
    read_state,
    stop_order,
    write_held,
)
from tests.ports import free_port

CHILD = """
import http.server, pathlib, signal, sys, threading, time
name, journal, serve_after, port, exit_code = sys.argv[1], pathlib.Path(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def log(event):
    with journal.open("a") as out:
        out.write(f"{time.monotonic()} {name} {event}\\n")
def term(*_):
    log("term")
    time.sleep(0.2)  # a shutdown that takes a moment, as etcd's and kube-apiserver's do
    log("exit")
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
log("start")
if exit_code >= 0:
    sys.exit(exit_code)
if port:
    time.sleep(serve_after)
    server = http.server.HTTPServer(("127.0.0.1", port), http.server.BaseHTTPRequestHandler)
    server.RequestHandlerClass.do_GET = lambda self: (self.send_response(200), self.end_headers())
    server.RequestHandlerClass.log_message = lambda *args: None
    log("ready")
    threading.Thread(target=server.serve_forever, daemon=True).start()
while True:
    time.sleep(1)
"""


class Run:
    """One supervisor subprocess over a plan of CHILD processes, and what they journal."""

    def __init__(self, tmp_path: Path) -> None:
        self.dir = tmp_path
        self.journal = tmp_path / "journal"
        self.script = tmp_path / "child.py"
        self.script.write_text(CHILD)
        self.state = tmp_path / "processes.json"
        self.held = tmp_path / "held.json"
        self.record: processes.ProcessRecord | None = None

    def child(
        self,
        role: str,
        *,
        after: tuple[str, ...] = (),
        serve_after: float = 0.0,
        port: int = 0,
        exit_code: int = -1,
    ) -> ProcessPlan:
        return ProcessPlan(
            role=role,
            argv=(
                sys.executable,
                str(self.script),
                role,
                str(self.journal),
                str(serve_after),
                str(port),
                str(exit_code),
            ),
            log=str(self.dir / f"{role}.log"),
            after=after,
            ready=f"http://127.0.0.1:{port}/readyz" if port else None,
        )

    def start(self, *plans: ProcessPlan, restart: RestartPolicy | None = None) -> None:
        plan = Plan(processes=plans, restart=restart or RestartPolicy(), grace=5.0)
        (self.dir / "plan.json").write_text(json.dumps(plan.as_json()))
        write_held(self.held, [])
        command = [
            sys.executable, "-m", "playground.supervisor", "--plan", str(self.dir / "plan.json"),
            "--state", str(self.state), "--held", str(self.held),
        ]  # fmt: skip
        self.record = processes.spawn("supervisor", command, log=self.dir / "supervisor.log")

    def events(self) -> list[tuple[float, str, str]]:
        if not self.journal.exists():
            return []
        rows = [line.split() for line in self.journal.read_text().splitlines()]
        return [(float(at), name, event) for at, name, event in rows]

    def when(self, role: str, event: str) -> list[float]:
        return [at for at, name, what in self.events() if name == role and what == event]

    def status(self) -> SupervisorState:
        state = read_state(self.state)
        assert state is not None, "the supervisor wrote no state"
        return state

    def wait(self, condition: Callable[[], bool], within: float = 30.0) -> None:
        deadline = time.monotonic() + within
        while not condition():
            assert time.monotonic() < deadline, (
                self.events(),
                self.dir.joinpath("supervisor.log").read_text(),
            )
            time.sleep(0.02)

    def states(self) -> dict[str, str]:
        """Each role's state ({} until the supervisor wrote its first state)."""
        state = read_state(self.state)
        return {role.role: role.state for role in state.roles} if state else {}

    def role_state(self, role: str) -> str | None:
        state = read_state(self.state)
        current = state.role(role) if state else None
        return current.state if current else None

    def hangup(self, held: list[str]) -> None:
        write_held(self.held, held)
        assert self.record is not None
        os.kill(self.record.pid, signal.SIGHUP)

    def stop(self) -> None:
        if self.record is not None:
            processes.stop([self.record], timeout=30)


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Run]:
    supervised = Run(tmp_path)
    try:
        yield supervised
    finally:
        supervised.stop()


# the plan, pure


def test_a_plan_refuses_a_role_that_waits_for_one_started_later() -> None:
    first = ProcessPlan("apiserver", ("a",), "/l", after=("etcd",))
    with pytest.raises(ValueError, match="apiserver waits for etcd, which does not start before it"):
        Plan(processes=(first, ProcessPlan("etcd", ("e",), "/l")))


def test_a_plan_round_trips_and_stops_in_reverse_start_order() -> None:
    plan = Plan(
        processes=(
            ProcessPlan("etcd", ("etcd",), "/e", ready="http://127.0.0.1:1/readyz"),
            ProcessPlan("apiserver", ("kube-apiserver",), "/a", after=("etcd",), ready="https://x/readyz"),
            ProcessPlan("node/n", ("agent",), "/n"),
        ),
        restart=RestartPolicy(initial=0.5, maximum=8),
        grace=3,
    )
    assert Plan.from_json(json.loads(json.dumps(plan.as_json()))) == plan
    assert stop_order(plan, {"etcd", "node/n", "apiserver"}) == ["node/n", "apiserver", "etcd"]


def test_the_back_off_doubles_up_to_its_cap_like_the_kubelets() -> None:
    policy = RestartPolicy()
    assert [policy.delay(exits) for exits in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert policy.reset_after == 120


# the supervisor, with real processes


def test_a_role_starts_only_once_what_it_waits_for_is_ready(run: Run) -> None:
    port = free_port()
    run.start(
        run.child("apiserver", serve_after=1.0, port=port),
        run.child("kube-controller-manager", after=("apiserver",)),
        run.child("node/n"),
    )
    run.wait(lambda: bool(run.when("kube-controller-manager", "start")))
    (ready,) = run.when("apiserver", "ready")
    assert run.when("kube-controller-manager", "start")[0] > ready
    # what waits for nothing starts at once, as a kubelet does
    assert run.when("node/n", "start")[0] < ready
    run.wait(lambda: set(run.states().values()) == {RUNNING})


def test_a_process_that_exits_is_restarted_with_back_off(run: Run) -> None:
    run.start(run.child("crasher", exit_code=3), restart=RestartPolicy(initial=0.2, maximum=0.4))
    run.wait(lambda: len(run.when("crasher", "start")) >= 4)
    starts = run.when("crasher", "start")
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert gaps[0] >= 0.2 and all(gap >= 0.4 for gap in gaps[2:]), gaps
    crasher = run.status().role("crasher")
    assert crasher is not None and crasher.exits >= 3 and crasher.last_exit == 3
    assert crasher.state in (BACKOFF, RUNNING)


def test_a_held_role_stays_stopped_until_released(run: Run) -> None:
    run.start(run.child("apiserver"), run.child("node/n"))
    run.wait(lambda: bool(run.when("node/n", "start")) and run.role_state("apiserver") == RUNNING)
    run.hangup(["node/n"])
    run.wait(lambda: run.role_state("node/n") == HELD)
    assert len(run.when("node/n", "exit")) == 1
    time.sleep(0.5)
    assert len(run.when("node/n", "start")) == 1, "a held role is not restarted"
    run.hangup([])
    run.wait(lambda: run.role_state("node/n") == RUNNING)
    node = run.status().role("node/n")
    assert node is not None and node.exits == 0, "a stop that was asked for is no exit"


def test_sigterm_stops_every_process_one_at_a_time_last_started_first(run: Run) -> None:
    port = free_port()
    run.start(
        run.child("etcd", port=port),
        run.child("apiserver", after=("etcd",)),
        run.child("node/n"),
    )
    run.wait(lambda: all(run.when(role, "start") for role in ("etcd", "apiserver", "node/n")))
    assert run.record is not None
    processes.stop([run.record], timeout=30)
    order = [(name, event) for _, name, event in run.events() if event in ("term", "exit")]
    assert order == [
        ("node/n", "term"),
        ("node/n", "exit"),
        ("apiserver", "term"),
        ("apiserver", "exit"),
        ("etcd", "term"),
        ("etcd", "exit"),
    ]
    assert {role.state for role in run.status().roles} == {STOPPED}
    assert all(role.record is None for role in run.status().roles)


def test_a_command_that_cannot_run_is_an_exit_like_any_other(run: Run) -> None:
    missing = ProcessPlan("ghost", (str(run.dir / "no-such-binary"),), str(run.dir / "ghost.log"))
    run.start(missing, restart=RestartPolicy(initial=0.1, maximum=0.1))
    run.wait(lambda: (state := read_state(run.state)) is not None and state.roles[0].exits >= 2)
    ghost = run.status().role("ghost")
    assert ghost is not None and ghost.last_exit == 127


def test_the_supervisor_leaves_nothing_behind_when_killed_and_stopped_by_records(run: Run) -> None:
    run.start(run.child("apiserver"), run.child("node/n"))
    run.wait(lambda: set(run.states().values()) == {RUNNING})
    children = run.status().records()[1:]
    supervisor = run.record
    assert supervisor is not None
    os.kill(supervisor.pid, signal.SIGKILL)
    run.wait(lambda: not processes.is_running(supervisor))
    # its children run on, in sessions of their own, until stopped from their records
    assert all(processes.is_running(record) for record in children)
    processes.stop(children, timeout=5)
    assert not any(processes.is_running(record) for record in children)


def test_a_role_with_a_network_namespace_runs_inside_it(run: Run) -> None:
    """A node's processes run in the node's namespace, entered before they exec (kind's node container)."""
    name = f"pgtest_supervisor_{uuid.uuid4().hex[:8]}"
    path = netns.create(name)
    try:
        inside = dataclasses.replace(run.child("node/n"), netns=str(path))
        run.start(inside, run.child("hostport"))
        run.wait(lambda: set(run.states().values()) == {RUNNING})
        records = {record.role: record for record in run.status().records()}
        assert records["node/n"].cmdline == inside.argv  # the process itself, not nsenter
        namespace = os.stat(path).st_ino
        assert os.stat(f"/proc/{records['node/n'].pid}/ns/net").st_ino == namespace
        assert os.stat(f"/proc/{records['hostport'].pid}/ns/net").st_ino != namespace
    finally:
        run.stop()
        netns.delete(name)
