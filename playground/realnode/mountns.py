"""Named mount namespaces, one per real node, as `ip netns` keeps network namespaces.

A node's mount namespace is a copy of the host's made by `unshare --mount=<file>
--propagation slave`: mounts the host makes later show up in it, none of its own shows
up on the host. So containerd's and kubelet's mounts (container root filesystems,
volumes, the pods' network namespaces) stay inside, and go when the namespace goes: it
lives while its file (`/run/liqo-playground/mntns/<name>`, a bind mount of the
namespace) is mounted or a process is in it. That folder is a private mount (a
namespace file may not be bind-mounted where its own namespace would see it
propagate). `create` mounts the node's tmpfs and folders in it (`nsenter --mount`);
their mount points must exist on the host, so it makes the missing ones there (empty
folders, left in place: another node's namespace may be using one as a mount point,
and removing a mount point on the host would unmount it there).

Blocking (subprocesses and mount calls): call from a worker thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

#: machine-wide: every real node's mount namespace, whatever its state dir
MOUNTNS_DIR = Path("/run/liqo-playground/mntns")
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MNT_DETACH = 2


def _mount(source: str, target: str, flags: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(os.fsencode(source), os.fsencode(target), None, ctypes.c_ulong(flags), None) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"mount {target}: {os.strerror(code)}")


def _private_dir() -> None:
    """Make MOUNTNS_DIR a private mount point (idempotent)."""
    MOUNTNS_DIR.mkdir(parents=True, exist_ok=True)
    try:
        _mount("none", str(MOUNTNS_DIR), MS_PRIVATE)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
        _mount(str(MOUNTNS_DIR), str(MOUNTNS_DIR), MS_BIND | MS_REC)
        _mount("none", str(MOUNTNS_DIR), MS_PRIVATE)


def path(name: str) -> Path:
    return MOUNTNS_DIR / name


def names() -> list[str]:
    """Every real node's mount namespace on the machine."""
    try:
        return sorted(entry.name for entry in MOUNTNS_DIR.iterdir())
    except FileNotFoundError:
        return []


def _run(command: Sequence[str]) -> None:
    result = subprocess.run(list(command), capture_output=True, text=True, check=False)
    if result.returncode:
        raise OSError(f"`{' '.join(command)}` failed: {result.stderr.strip() or result.returncode}")


def create(name: str, *, tmpfs: Sequence[str], binds: Sequence[tuple[Path, str]]) -> Path:
    """A new mount namespace named `name` with a tmpfs at each of `tmpfs` and each (folder, path) of
    `binds` mounted at path; its file. FileExistsError when the name is taken."""
    _private_dir()
    target = path(name)
    os.close(os.open(target, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0o444))
    try:
        _run(["unshare", f"--mount={target}", "--propagation", "slave", "true"])
        for mount_point in [*tmpfs, *(where for _, where in binds)]:
            Path(mount_point).mkdir(parents=True, exist_ok=True)
        enter = ["nsenter", f"--mount={target}", "--"]
        for mount_point in tmpfs:
            _run([*enter, "mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", mount_point])
        for folder, mount_point in binds:
            _run([*enter, "mount", "--bind", str(folder), mount_point])
    except BaseException:
        delete(name)
        raise
    return target


def delete(name: str) -> bool:
    """Unmount and remove the namespace's file (the namespace goes once no process is left in it);
    False when there was none."""
    target = path(name)
    if not target.exists():
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    with contextlib.suppress(OSError):
        libc.umount2(os.fsencode(str(target)), MNT_DETACH)
    target.unlink(missing_ok=True)
    return True


def inode(name: str) -> int | None:
    """The namespace's inode (what `/proc/<pid>/ns/mnt` links to for its processes), None without one."""
    try:
        return os.stat(path(name)).st_ino
    except FileNotFoundError:
        return None


def processes(name: str, *, proc: Path = Path("/proc")) -> list[int]:
    """The pids of the processes in the namespace."""
    wanted = inode(name)
    if wanted is None:
        return []
    found = []
    for entry in proc.iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(entry / "ns" / "mnt").st_ino == wanted:
                    found.append(int(entry.name))
    return found
