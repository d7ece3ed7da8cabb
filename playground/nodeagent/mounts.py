"""Start one container process the way a runtime would: its own mount namespace, its volumes at their paths.

kubelet hands mounts to the container runtime; here this module is that runtime. The
agent runs this very file as a small helper (`python -I mounts.py <spec>`, stdlib only,
so it starts fast and no variable of the container's environment changes it) in a new
session. The helper

1. asks the kernel to SIGKILL it when the agent dies (PR_SET_PDEATHSIG),
2. records `<pid> <start time>` in a pid file, so a later agent on the same state
   dir can kill what a SIGKILLed agent left behind (`kill_recorded`),
3. enters the pod's network namespace when it has one (`setns`, Python 3.11 has no
   `os.setns`: about 0.1 ms, in the helper that runs anyway),
4. enters a private mount namespace (`unshare(CLONE_NEWNS)`, `/` made rprivate, the
   named network namespaces of `/run/netns` detached so this copy does not keep other
   pods' namespaces alive) and bind-mounts each volume at its mountPath (read-only
   when asked), creating the mount point on the node if it is missing,
5. changes to the working directory and execs the command.

Failures before the exec are written to a status pipe that the exec closes, so the
agent tells "could not start" (RunContainerError) from "started and exited".
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import shutil
import signal
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MNT_DETACH = 2
NETNS_DIR = "/run/netns"
MS_RDONLY = 0x1
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
PR_SET_PDEATHSIG = 1
UNAVAILABLE = "playground: mount namespaces unavailable (need root on Linux)"


class StartError(Exception):
    """The process could not be started (mounts, working directory, executable); kubelet's RunContainerError."""


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    read_only: bool = False


@dataclass(frozen=True)
class ProcessSpec:
    """What the helper does: mounts, then exec `argv` in the first existing of `workdirs`."""

    argv: list[str]
    pid_file: str
    mounts: list[Mount] = field(default_factory=list)
    workdirs: list[str] = field(default_factory=list)
    #: the network namespace file to enter ("": stay in the agent's)
    netns: str = ""


@dataclass
class Spawned:
    """A started process and the read ends of its output pipes (`stderr` None when merged into stdout).

    The pipes are ours, not asyncio's, so `process.wait()` returns when the process
    exits even if something it forked still holds its output open; `close()` them
    once done reading.
    """

    process: asyncio.subprocess.Process
    pid_file: Path
    stdout: asyncio.StreamReader
    stderr: asyncio.StreamReader | None
    transports: list[asyncio.BaseTransport]

    def close(self) -> None:
        for transport in self.transports:
            transport.close()


async def spawn(spec: ProcessSpec, *, env: Mapping[str, str], merge_stderr: bool = False) -> Spawned:
    """Start the helper for `spec`; StartError when the exec did not happen (mounts, directory, program)."""
    status_read, status_write = os.pipe()
    out_read, out_write = os.pipe()
    err_read, err_write = (out_read, out_write) if merge_stderr else os.pipe()
    document = {"spec": asdict(spec), "parent": os.getpid(), "status_fd": status_write}
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            __file__,
            json.dumps(document),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out_write,
            stderr=err_write,
            env=dict(env),
            start_new_session=True,
            pass_fds=(status_write,),
        )
    except BaseException:
        for fd in {status_read, out_read, err_read}:
            os.close(fd)
        raise
    finally:
        for fd in {status_write, out_write, err_write}:
            os.close(fd)
    status, status_transport = await _reader(status_read)
    stdout, out_transport = await _reader(out_read)
    stderr, err_transport = (None, None) if merge_stderr else await _reader(err_read)
    transports = [t for t in (out_transport, err_transport) if t is not None]
    spawned = Spawned(process, Path(spec.pid_file), stdout, stderr, transports)
    try:
        failure = await status.read()
    except BaseException:
        kill_group(process.pid)
        spawned.close()
        raise
    finally:
        status_transport.close()
    if failure:
        await process.wait()
        spawned.close()
        await asyncio.to_thread(Path(spec.pid_file).unlink, True)
        raise StartError(failure.decode(errors="replace"))
    return spawned


async def _reader(fd: int) -> tuple[asyncio.StreamReader, asyncio.BaseTransport]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", buffering=0)
    )
    return reader, transport


async def check_namespaces(scratch: Path) -> str | None:
    """None when private mount namespaces with bind mounts work here, else why not."""
    if sys.platform != "linux" or os.geteuid() != 0:
        return UNAVAILABLE
    source, target = scratch / "check-source", scratch / "check-target"
    await asyncio.to_thread(source.mkdir, parents=True, exist_ok=True)
    spec = ProcessSpec(
        argv=["/bin/true"],
        pid_file=str(scratch / "check.pid"),
        mounts=[Mount(str(source), str(target), read_only=True)],
    )
    try:
        spawned = await spawn(spec, env={"PATH": os.defpath})
        await spawned.process.wait()
        spawned.close()
    except StartError as exc:
        return f"{UNAVAILABLE}: {exc}"
    finally:
        await asyncio.to_thread(shutil.rmtree, scratch, True)
    return None


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def kill_recorded(directory: Path) -> int:
    """SIGKILL the process group of every pid file under `directory` that is still the same process."""
    killed = 0
    for pid_file in directory.rglob("*.pid"):
        try:
            pid_text, started = pid_file.read_text().split()
            pid = int(pid_text)
        except (OSError, ValueError):
            continue
        current = start_time(pid)
        # a live process with another start time reused the pid: not ours; a dead leader may leave its group
        if current is None or current == started:
            kill_group(pid)
            killed += current is not None
        pid_file.unlink(missing_ok=True)
    return killed


def start_time(pid: int) -> str | None:
    """The start time of `pid` in clock ticks since boot (field 22 of /proc/<pid>/stat), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split()[19]


# the helper: runs in the child, between fork and the container's exec


def _libc_call(name: str, *args: object) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{name}: {os.strerror(errno)}")


def _mount(source: str | None, target: str, flags: int) -> None:
    _libc_call("mount", _c(source), _c(target), None, ctypes.c_ulong(flags), None)


def _c(text: str | None) -> bytes | None:
    return os.fsencode(text) if text is not None else None


def _bind(mount: Mount) -> None:
    target = Path(mount.target)
    if Path(mount.source).is_dir():
        target.mkdir(parents=True, exist_ok=True)
    elif not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
    _mount(mount.source, mount.target, MS_BIND | MS_REC)
    if mount.read_only:
        _mount(None, mount.target, MS_REMOUNT | MS_BIND | MS_RDONLY)


def _resolve(program: str) -> str:
    if "/" in program:
        return program
    found = shutil.which(program, path=os.environ.get("PATH", os.defpath))
    if found is None:
        raise OSError(f'exec: "{program}": executable file not found in $PATH')
    return found


def _describe(exc: OSError) -> str:
    if exc.filename:
        return f"{exc.filename}: {exc.strerror}"
    return exc.strerror or str(exc)


def _run(spec: ProcessSpec, *, parent: int, status_fd: int) -> None:
    _libc_call("prctl", PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        raise OSError("the node agent is gone")
    pid_file = Path(spec.pid_file)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    pid_file.write_text(f"{os.getpid()} {start_time(os.getpid())}\n")
    if spec.netns:
        try:
            fd = os.open(spec.netns, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise OSError(f"the pod's network namespace: {_describe(exc)}") from None
        try:
            _libc_call("setns", fd, CLONE_NEWNET)
        finally:
            os.close(fd)
    if spec.mounts:
        _libc_call("unshare", CLONE_NEWNS)
        _mount("none", "/", MS_REC | MS_PRIVATE)
        if os.path.ismount(NETNS_DIR):
            _libc_call("umount2", _c(NETNS_DIR), MNT_DETACH)
    for mount in spec.mounts:
        try:
            _bind(mount)
        except OSError as exc:
            raise OSError(f"mount {mount.source} at {mount.target}: {_describe(exc)}") from None
    for workdir in spec.workdirs:
        if os.path.isdir(workdir):
            os.chdir(workdir)
            break
    program = _resolve(spec.argv[0])
    # Python ignores these at start-up; a container's process starts with the default dispositions
    for number in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(number, signal.SIG_DFL)
    os.set_inheritable(status_fd, False)
    os.execve(program, spec.argv, os.environ)


def main(args: list[str]) -> int:
    document = json.loads(args[0])
    status_fd = int(document["status_fd"])
    raw = document["spec"]
    spec = ProcessSpec(
        argv=list(raw["argv"]),
        pid_file=str(raw["pid_file"]),
        mounts=[Mount(**mount) for mount in raw["mounts"]],
        workdirs=list(raw["workdirs"]),
        netns=str(raw.get("netns") or ""),
    )
    try:
        _run(spec, parent=int(document["parent"]), status_fd=status_fd)
    except OSError as exc:
        os.write(status_fd, _describe(exc).encode())
        return 127
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
