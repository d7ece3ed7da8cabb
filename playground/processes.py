"""The playground's own processes: start them detached, record them, and stop exactly those.

`playground up` returns while the clusters keep running, and `playground down` may run
in another shell, days later, after pids were recycled. So every process is started in
a session of its own (its pid is its process group and session id) and recorded with
its start time (field 22 of `/proc/<pid>/stat`, clock ticks since boot) and command
line. Before any signal, the record is checked against `/proc`: a process with the same
pid but another start time or command line is someone else's and is never touched.

Stopping sends SIGTERM to the recorded process's group and waits a bound for it to exit
(it stops what it runs itself), then deals with what is left: every descendant found
before the first signal (pods a node agent started in sessions of their own, say), each
verified the same way, gets SIGTERM and then SIGKILL. Linux does not reuse a pid while it
still names a live process group or session, so the members of a recorded session
whose leader already died are ours too.

Linux-only (`/proc`); everything here is synchronous and quick, callers on an event loop
run it in a thread.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

PROC = Path("/proc")
#: how long SIGTERM has before SIGKILL, by default
STOP_TIMEOUT = 10.0
#: how long what a stopped process left behind has between SIGTERM and SIGKILL
LEFTOVER_GRACE = 2.0
_POLL = 0.02


@dataclass(frozen=True)
class ProcInfo:
    """What `/proc` says about one live process."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    start_time: int
    state: str
    cmdline: tuple[str, ...]

    @property
    def is_zombie(self) -> bool:
        return self.state in ("Z", "X")


@dataclass(frozen=True)
class ProcessRecord:
    """One process the playground started: enough to find it again, and to know it is still the same one."""

    #: what it is in its cluster: `apiserver`, `controlplane`, `node/<name>`, `etcd`, ...
    role: str
    pid: int
    start_time: int
    cmdline: tuple[str, ...]
    log: str

    def as_json(self) -> dict[str, object]:
        data = asdict(self)
        data["cmdline"] = list(self.cmdline)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> ProcessRecord:
        cmdline = data["cmdline"]
        if not isinstance(cmdline, list):
            raise ValueError(f"process record {data!r}: cmdline must be a list")
        return cls(
            role=str(data["role"]),
            pid=int(str(data["pid"])),
            start_time=int(str(data["start_time"])),
            cmdline=tuple(str(arg) for arg in cmdline),
            log=str(data.get("log", "")),
        )


def read_proc(pid: int, *, proc: Path = PROC) -> ProcInfo | None:
    """The process `pid` as `/proc` shows it now, or None when there is none."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
        raw_cmdline = (proc / str(pid) / "cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # `comm` (field 2) is in parentheses and may itself hold spaces or parentheses.
    fields = stat[stat.rindex(")") + 2 :].split()
    cmdline = tuple(part.decode(errors="replace") for part in raw_cmdline.split(b"\0")[:-1])
    return ProcInfo(
        pid=pid,
        state=fields[0],
        ppid=int(fields[1]),
        pgid=int(fields[2]),
        sid=int(fields[3]),
        start_time=int(fields[19]),
        cmdline=cmdline,
    )


def all_processes(*, proc: Path = PROC) -> list[ProcInfo]:
    infos = []
    for entry in proc.iterdir():
        if entry.name.isdigit():
            info = read_proc(int(entry.name), proc=proc)
            if info is not None:
                infos.append(info)
    return infos


def is_same(record: ProcessRecord, info: ProcInfo | None) -> bool:
    """Whether `info` is the recorded process itself, still running (not a recycled pid, not a zombie)."""
    return (
        info is not None
        and not info.is_zombie
        and info.pid == record.pid
        and info.start_time == record.start_time
        and info.cmdline == record.cmdline
    )


def is_running(record: ProcessRecord) -> bool:
    _reap(record.pid)
    return is_same(record, read_proc(record.pid))


def spawn(
    role: str,
    argv: Sequence[str],
    *,
    log: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    netns: Path | None = None,
    mntns: Path | None = None,
) -> ProcessRecord:
    """Start `argv` detached (own session, stdin closed, stdout and stderr appended to `log`) and record it.

    With `netns` (a namespace file, `/run/netns/<name>`) the process runs in that network
    namespace, with `mntns` in that mount namespace: `nsenter` enters them and execs
    `argv`, so the record is `argv`'s. RuntimeError when it exits at once (before it could
    be recorded).
    """
    process, record = launch(role, argv, log=log, env=env, cwd=cwd, netns=netns, mntns=mntns)
    if record is None:
        process.wait()
        raise RuntimeError(f"{role}: exited at once with {process.returncode}; see {log}")
    return record


def launch(
    role: str,
    argv: Sequence[str],
    *,
    log: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    netns: Path | None = None,
    mntns: Path | None = None,
) -> tuple[subprocess.Popen[bytes], ProcessRecord | None]:
    """`spawn`'s work, for a parent that keeps the child: the `Popen` (to wait for it) and its record
    (None when it already exited; the caller collects its status)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    entered = [f"--net={netns}"] if netns is not None else []
    entered += [f"--mount={mntns}"] if mntns is not None else []
    command = ["nsenter", *entered, "--", *argv] if entered else list(argv)
    with log.open("ab") as out:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            env=dict(env) if env is not None else None,
            cwd=cwd,
        )
    # Popen returns once exec began, but the kernel fills in /proc/<pid>/cmdline a moment later.
    expected = tuple(str(arg) for arg in argv)
    deadline = time.monotonic() + 5.0
    while True:
        info = read_proc(process.pid)
        if info is None or info.is_zombie:
            return process, None
        if info.cmdline == expected or time.monotonic() > deadline:
            break
        time.sleep(0.001)
    record = ProcessRecord(
        role=role, pid=process.pid, start_time=info.start_time, cmdline=info.cmdline, log=str(log)
    )
    return process, record


def _reap(pid: int) -> None:
    """Collect `pid`'s exit status if it is a child of this process (so it does not linger as a zombie)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _descendants(roots: Iterable[int], processes: Sequence[ProcInfo]) -> list[ProcInfo]:
    children: dict[int, list[ProcInfo]] = {}
    for info in processes:
        children.setdefault(info.ppid, []).append(info)
    found: list[ProcInfo] = []
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child.pid)
    return found


def owned_processes(record: ProcessRecord, *, processes: Sequence[ProcInfo] | None = None) -> list[ProcInfo]:
    """Every live process that is `record`'s: itself, its descendants, and the rest of its session.

    Empty when the recorded process is gone and nothing of its session is left, or when
    its pid now names another process (another start time or command line).
    """
    processes = list(processes) if processes is not None else all_processes()
    by_pid = {info.pid: info for info in processes}
    leader = by_pid.get(record.pid)
    if leader is not None and not leader.is_zombie and not is_same(record, leader):
        return []
    owned = {info.pid: info for info in processes if info.sid == record.pid and not info.is_zombie}
    if leader is not None and not leader.is_zombie:
        owned[leader.pid] = leader
        owned.update((info.pid, info) for info in _descendants([leader.pid], processes) if not info.is_zombie)
    else:
        # The leader died: its session id stays reserved while members live; they and theirs are ours.
        owned.update((info.pid, info) for info in _descendants(list(owned), processes) if not info.is_zombie)
    return sorted(owned.values(), key=lambda info: info.pid)


def _signal_all(targets: Sequence[ProcInfo], sig: signal.Signals) -> None:
    """Signal each target still running as recorded (its whole group when it leads one)."""
    for info in targets:
        current = read_proc(info.pid)
        if current is None or current.is_zombie or current.start_time != info.start_time:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if current.pgid == info.pid:
                os.killpg(info.pid, sig)
            else:
                os.kill(info.pid, sig)


def _alive(targets: Sequence[ProcInfo]) -> list[ProcInfo]:
    alive = []
    for info in targets:
        _reap(info.pid)
        current = read_proc(info.pid)
        if current is not None and not current.is_zombie and current.start_time == info.start_time:
            alive.append(info)
    return alive


def stop(records: Sequence[ProcessRecord], *, timeout: float = STOP_TIMEOUT) -> list[ProcessRecord]:
    """Stop the recorded processes and all they own; returns the records whose pid turned out to
    belong to another process (left alone).

    SIGTERM goes to each recorded process (its group) only: it has `timeout` seconds to exit
    and to stop what it runs itself, its own way (a supervisor its children, one at a time; a
    node agent its pods). A recorded process still running then is killed with everything it
    owns. What the recorded processes left behind when they exited (descendants, the rest of
    a session whose leader died) gets SIGTERM, and SIGKILL after `LEFTOVER_GRACE` seconds.
    All records are signalled at once and share the bound.
    """
    processes = all_processes()
    targets: dict[int, ProcInfo] = {}
    leaders: list[ProcInfo] = []
    foreign = []
    for record in records:
        owned = owned_processes(record, processes=processes)
        leader = read_proc(record.pid)
        if not owned and leader is not None and not leader.is_zombie:
            logger.warning(
                "%s: pid %d now belongs to another process (%s); leaving it alone",
                record.role,
                record.pid,
                " ".join(leader.cmdline)[:80],
            )
            foreign.append(record)
        targets.update((info.pid, info) for info in owned)
        leaders += [info for info in owned if info.pid == record.pid]
    _signal_all(leaders, signal.SIGTERM)
    pending = _wait_gone(leaders, timeout)
    left = _alive(list(targets.values()))
    if pending:
        logger.warning(
            "processes %s did not stop within %.0f s of SIGTERM; killing them and all they run",
            _describe(pending),
            timeout,
        )
        _kill(left)
    elif left:
        _signal_all(left, signal.SIGTERM)
        still = _wait_gone(left, LEFTOVER_GRACE)
        if still:
            logger.warning(
                "processes %s, left behind, did not stop on SIGTERM; killing them", _describe(still)
            )
            _kill(still)
    for record in records:
        _reap(record.pid)
    return foreign


def _wait_gone(targets: Sequence[ProcInfo], bound: float) -> list[ProcInfo]:
    """Wait up to `bound` seconds for `targets` to exit; those still running."""
    deadline = time.monotonic() + bound
    pending = _alive(targets)
    while pending and time.monotonic() < deadline:
        time.sleep(_POLL)
        pending = _alive(pending)
    return pending


def _kill(targets: Sequence[ProcInfo]) -> None:
    _signal_all(targets, signal.SIGKILL)
    _wait_gone(targets, 5.0)


def _describe(targets: Sequence[ProcInfo]) -> str:
    return ", ".join(f"{info.pid} ({' '.join(info.cmdline)[:120]})" for info in targets)
