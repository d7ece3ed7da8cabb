"""Named network namespaces, as `ip netns` keeps them, and work done inside them from a thread.

A named namespace is a bind mount of a namespace file at `/run/netns/<name>`, so `ip
netns list` shows it and `ip netns exec <name> ...` enters it (the playground's `docker
exec` into a node). It lives until it is unmounted and no process is left in it.
`create` makes one the way iproute2 does (`/run/netns` a shared mount point, so a
mount namespace copied later sees it go away), without a fork: the calling thread
unshares a new namespace, bind-mounts its own namespace file, and goes back.

Python 3.11 has no `os.setns`; it is called through ctypes. Changing namespace affects
only the calling thread, so `entered` is for threads that do nothing else meanwhile:
`Namespaces` runs such work on its own threads (never the event loop's), which always
come back to the namespace the process started in. Sockets keep the namespace they
were made in, so a socket made there serves or connects from inside it on any thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

NETNS_DIR = Path("/run/netns")
CLONE_NEWNET = 0x40000000
MS_BIND = 0x1000
MS_REC = 0x4000
MS_SHARED = 1 << 20
MNT_DETACH = 2
#: the namespace the process started in (its main thread never changes namespace)
_HOME = "/proc/self/ns/net"

T = TypeVar("T")


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _call(name: str, *args: object) -> None:
    if getattr(_libc(), name)(*args) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{name}: {os.strerror(code)}")


def _mount(source: str, target: str, flags: int) -> None:
    _call("mount", os.fsencode(source), os.fsencode(target), None, ctypes.c_ulong(flags), None)


def path(name: str) -> Path:
    return NETNS_DIR / name


def names() -> list[str]:
    """Every named namespace on the host (`ip netns list`)."""
    try:
        return sorted(entry.name for entry in NETNS_DIR.iterdir())
    except FileNotFoundError:
        return []


def setns(fd: int) -> None:
    _call("setns", fd, CLONE_NEWNET)


@contextlib.contextmanager
def entered(target: str | Path) -> Iterator[None]:
    """The calling thread in the namespace at `target` (a path) for the block, then back home."""
    fd = os.open(target, os.O_RDONLY | os.O_CLOEXEC)
    home = os.open(_HOME, os.O_RDONLY | os.O_CLOEXEC)
    try:
        setns(fd)
        try:
            yield
        finally:
            setns(home)
    finally:
        os.close(fd)
        os.close(home)


def _shared_netns_dir() -> None:
    """Make /run/netns a shared mount point, as `ip netns add` does (idempotent)."""
    NETNS_DIR.mkdir(parents=True, exist_ok=True)
    try:
        _mount("none", str(NETNS_DIR), MS_SHARED | MS_REC)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
        _mount(str(NETNS_DIR), str(NETNS_DIR), MS_BIND | MS_REC)
        _mount("none", str(NETNS_DIR), MS_SHARED | MS_REC)


def create(name: str) -> Path:
    """A new, empty namespace named `name` (FileExistsError when the name is taken); its path."""
    _shared_netns_dir()
    target = path(name)
    os.close(os.open(target, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0o444))
    home = os.open(_HOME, os.O_RDONLY | os.O_CLOEXEC)
    try:
        _call("unshare", CLONE_NEWNET)
        try:
            _mount(f"/proc/self/task/{threading.get_native_id()}/ns/net", str(target), MS_BIND)
        finally:
            setns(home)
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    finally:
        os.close(home)
    return target


def delete(name: str) -> bool:
    """Unmount and remove the namespace `name` (freed once no process is left in it); False if there was none."""
    target = path(name)
    if not target.exists():
        return False
    with contextlib.suppress(OSError):
        _call("umount2", os.fsencode(str(target)), MNT_DETACH)
    target.unlink(missing_ok=True)
    return True


class Namespaces:
    """Runs blocking namespace work on threads of its own (`await namespaces.run(fn, ...)`)."""

    def __init__(self, *, threads: int = 2) -> None:
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="netns")

    async def run(self, function: Callable[..., T], *args: object) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: function(*args))

    async def inside(self, target: str | Path, function: Callable[..., T], *args: object) -> T:
        """`function(*args)` on a worker thread that is inside the namespace at `target` meanwhile."""

        def call() -> T:
            with entered(target):
                return function(*args)

        return await self.run(call)

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
