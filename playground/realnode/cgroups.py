"""Real nodes' cgroups: kubelet's `cgroupRoot`, made in every hierarchy before kubelet starts, and
emptied and removed when the node goes.

With the cgroupfs driver, kubelet and runc put a pod's cgroups under the same path in
every mounted hierarchy (on this host's cgroup v1: cpu, cpuacct, cpuset, memory, pids,
blkio, devices, freezer, name=systemd, and the unified v2 one beside them), and kubelet
refuses a `cgroupRoot` missing from one of them. Each node gets
`/liqo-playground/<node's namespace name>`. A new cpuset cgroup has no CPUs and no
memory nodes, so each level made copies its parent's. `kill` stops every process left
in the node's cgroups (containers whose shim is gone); `remove` then deletes them,
deepest first, and the parent once no node is left under it.

Blocking (file I/O, waits): call from a worker thread.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from pathlib import Path

#: the parent of every real node's cgroup
PARENT = "liqo-playground"
_MOUNTINFO = Path("/proc/self/mountinfo")
_CPUSET_FILES = ("cpuset.cpus", "cpuset.mems")
_POLL = 0.05


def node_cgroup(name: str) -> str:
    """The cgroup (path in every hierarchy) of the node whose namespaces are named `name`."""
    return f"/{PARENT}/{name}"


def hierarchies(mountinfo: Path = _MOUNTINFO) -> list[Path]:
    """Where every cgroup hierarchy (v1 and v2) is mounted."""
    found = []
    for line in mountinfo.read_text().splitlines():
        before, _, after = line.partition(" - ")
        if after.split(" ", 1)[0] in ("cgroup", "cgroup2"):
            found.append(Path(before.split()[4]))
    return found


def _folders(cgroup: str) -> list[Path]:
    return [root / cgroup.lstrip("/") for root in hierarchies()]


def create(cgroup: str) -> None:
    """Make `cgroup` in every hierarchy (cpuset levels get their parent's CPUs and memory nodes)."""
    for root in hierarchies():
        folder = root
        for part in Path(cgroup.lstrip("/")).parts:
            parent, folder = folder, folder / part
            with contextlib.suppress(FileExistsError):
                folder.mkdir()
            for name in _CPUSET_FILES:
                own = folder / name
                if own.exists() and not own.read_text().strip():
                    own.write_text((parent / name).read_text())


def processes(cgroup: str) -> set[int]:
    """Every process in `cgroup` or below it, in any hierarchy."""
    pids: set[int] = set()
    for folder in _folders(cgroup):
        for procs in folder.rglob("cgroup.procs") if folder.is_dir() else ():
            with contextlib.suppress(OSError):
                pids.update(int(pid) for pid in procs.read_text().split())
    return pids


def container_processes(cgroup: str, pod_uid: str, container_id: str) -> set[int]:
    """The processes of one container of a node whose cgroup is `cgroup`: kubelet's cgroupfs layout puts them in
    `kubepods/[<qos class>/]pod<uid>/<container id>` under it (`container_id` without its `containerd://`)."""
    pids: set[int] = set()
    for folder in _folders(cgroup):
        if not folder.is_dir():
            continue
        for procs in folder.glob(f"kubepods/**/pod{pod_uid}/{container_id}/cgroup.procs"):
            with contextlib.suppress(OSError):
                pids.update(int(pid) for pid in procs.read_text().split())
        if pids:
            break
    return pids


def kill(cgroup: str, *, timeout: float = 10.0) -> set[int]:
    """SIGKILL every process in `cgroup` until none is left (or `timeout` passes); those still there."""
    deadline = time.monotonic() + timeout
    left = processes(cgroup)
    while left and time.monotonic() < deadline:
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(_POLL)
        left = processes(cgroup)
    return left


def remove(cgroup: str, *, timeout: float = 10.0) -> list[Path]:
    """Delete `cgroup` and everything below it in every hierarchy, and its parent when empty; what is
    left (a cgroup still busy after `timeout`)."""
    deadline = time.monotonic() + timeout
    left = []
    for folder in _folders(cgroup):
        if not folder.is_dir():
            continue
        for child in sorted(
            (path for path in folder.rglob("*") if path.is_dir()), key=lambda p: -len(p.parts)
        ):
            _rmdir(child, deadline)
        if not _rmdir(folder, deadline):
            left.append(folder)
        with contextlib.suppress(OSError):
            folder.parent.rmdir()
    return left


def _rmdir(folder: Path, deadline: float) -> bool:
    """rmdir, waiting while the cgroup is busy (its last tasks still exiting); whether it is gone."""
    while True:
        try:
            folder.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                return False
        time.sleep(_POLL)
