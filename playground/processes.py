"""The playground's own processes: start them detached, record them, and stop exactly those.

`playground up` returns while the clusters keep running, and `playground down` may run
in another shell, days later, after pids were recycled. So every process is started in
a session of its own (its pid is its process group and session id) and recorded with
its start time (field 22 of `/proc/<pid>/stat`, clock ticks since boot) and command
line. Before any signal, the record is checked against `/proc`: a process with the same
pid but another start time or command line is someone else's and is never touched.

Stopping sends SIGTERM to the process group, waits a bound, then SIGKILLs the group and
every descendant found before the first signal (pods a node agent started in sessions
of their own, say), each verified the same way. Linux does not reuse a pid while it
still names a live process group or session, so the members of a recorded session
whose leader already died are ours too.

Linux-only (`/proc`); everything here is synchronous and quick, callers on an event loop
run it in a thread.
"""

from __future__ import annotations

import contextlib
import json
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
) -> ProcessRecord:
    """Start `argv` detached (own session, stdin closed, stdout and stderr appended to `log`) and record it.

    With `netns` (a namespace file, `/run/netns/<name>`) the process runs in that network
    namespace: `nsenter` enters it and execs `argv`, so the record is `argv`'s.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    command = list(argv) if netns is None else ["nsenter", f"--net={netns}", "--", *argv]
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
            process.wait()
            raise RuntimeError(f"{role}: exited at once with {process.returncode}; see {log}")
        if info.cmdline == expected or time.monotonic() > deadline:
            break
        time.sleep(0.001)
    return ProcessRecord(
        role=role, pid=process.pid, start_time=info.start_time, cmdline=info.cmdline, log=str(log)
    )


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
    """Stop the recorded processes and all they own: SIGTERM, then SIGKILL after `timeout` s.

    All records are signalled at once and share the bound. Returns the records whose
    pid turned out to belong to another process (left alone).
    """
    processes = all_processes()
    targets: dict[int, ProcInfo] = {}
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
    pending = list(targets.values())
    _signal_all(pending, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        time.sleep(_POLL)
        pending = _alive(pending)
    if pending:
        logger.warning(
            "processes %s did not stop within %.0f s of SIGTERM; killing them",
            ", ".join(f"{info.pid} ({' '.join(info.cmdline)[:120]})" for info in pending),
            timeout,
        )
        _signal_all(pending, signal.SIGKILL)
        deadline = time.monotonic() + 5.0
        while pending and time.monotonic() < deadline:
            time.sleep(_POLL)
            pending = _alive(pending)
    for record in records:
        _reap(record.pid)
    return foreign


def write_records(path: Path, records: Iterable[ProcessRecord]) -> None:
    """Replace the records file atomically (a reader never sees half of it)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps([record.as_json() for record in records], indent=2) + "\n")
    os.replace(tmp, path)


def read_records(path: Path) -> list[ProcessRecord]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    return [ProcessRecord.from_json(item) for item in data]
