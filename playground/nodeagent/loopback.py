"""Loopback addresses for process pods: each node agent claims a /24 of 127.0.0.0/8 of its own.

Pods that run as local processes share the host's network stack, so two of them
listening on the same port would collide (the runtime's auth service and webhook use
fixed ports, like any Deployment). Linux routes all of 127.0.0.0/8 to the loopback
interface, so each process pod gets an address of its own there and binds its ports on
`$POD_IP`, exactly as it would in a pod network. Blocks are unique across every
playground on the host, whatever its state dir: a claim is a file named after the block
in a host-wide registry directory, created with O_EXCL and holding the claimer's pid,
start time and state dir; a claim whose process is gone is taken over. A node agent takes back
the block it had before a restart (remembered in its state dir), so adopted pods keep
their addresses. The block's first address (`.1`) is the node's own InternalIP, where its
kubelet API and NodePorts listen; pods get `.2` and up.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import logging
import os
from pathlib import Path

logger = logging.getLogger(__name__)

#: where claims live (one file per claimed block); shared by every playground on the host
DEFAULT_REGISTRY = Path(os.environ.get("PLAYGROUND_LOOPBACK_REGISTRY", "/tmp/liqo-playground-loopback"))
#: 127.0.0.0/16 stays for ordinary loopback use (the API servers and node addresses live there)
_FIRST_BLOCK = 1 << 8
_LAST_BLOCK = (254 << 8) | 255
_REMEMBERED = "loopback-block"


class LoopbackExhaustedError(RuntimeError):
    """Every /24 of 127.1.0.0-127.254.255.255 is claimed by a live process."""


def _identity(pid: int) -> str:
    """`pid starttime`: a pid alone may be recycled by the time anyone checks it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return f"{pid} ?"
    return f"{pid} {stat.rsplit(')', 1)[1].split()[19]}"


def _alive(claim: str) -> bool:
    """Whether the process that wrote the claim (`pid starttime state-dir`) still runs."""
    fields = claim.split(" ", 2)
    try:
        pid = int(fields[0])
    except ValueError:
        return False
    return _identity(pid) == " ".join(fields[:2])


def _cidr(block: int) -> str:
    return f"127.{block >> 8}.{block & 255}.0/24"


def _block(cidr: str) -> int | None:
    parts = cidr.removesuffix(".0/24").split(".")
    if len(parts) != 3 or parts[0] != "127" or not all(p.isdigit() for p in parts[1:]):
        return None
    block = (int(parts[1]) << 8) | int(parts[2])
    return block if _FIRST_BLOCK <= block <= _LAST_BLOCK else None


class LoopbackBlock:
    """A claimed block; `release()` gives it back (claims of dead processes are taken over anyway)."""

    def __init__(self, cidr: str, path: Path, claim: str) -> None:
        self.cidr = cidr
        self._path = path
        self._claim = claim

    @property
    def node_address(self) -> str:
        """The block's first host address (`.1`), the node's own; pods get `.2` and up (see ipam.py)."""
        return str(ipaddress.ip_network(self.cidr).network_address + 1)

    def release(self) -> None:
        with contextlib.suppress(OSError):
            if self._path.read_text() == self._claim:
                self._path.unlink()


def _try_claim(registry: Path, block: int, claim: str) -> LoopbackBlock | None:
    path = registry / _cidr(block).removesuffix("/24")
    for _ in range(2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            try:
                holder = path.read_text()
            except OSError:
                continue
            if holder == claim:
                return LoopbackBlock(_cidr(block), path, claim)
            if _alive(holder):
                return None
            logger.info(
                "taking over loopback block %s from a process that is gone (%s)", _cidr(block), holder
            )
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            continue
        with os.fdopen(fd, "w") as file:
            file.write(claim)
        return LoopbackBlock(_cidr(block), path, claim)
    return None


def claim_block(state_dir: Path, *, registry: Path = DEFAULT_REGISTRY) -> LoopbackBlock:
    """Claim a free /24 for this process (blocking file I/O: call it off the event loop)."""
    registry.mkdir(parents=True, exist_ok=True)
    # The state dir is part of the claim: one process may run several node agents (tests do).
    claim = f"{_identity(os.getpid())} {state_dir.resolve()}"
    remembered_file = state_dir / _REMEMBERED
    candidates: list[int] = []
    with contextlib.suppress(OSError):
        remembered = _block(remembered_file.read_text().strip())
        if remembered is not None:
            candidates.append(remembered)
    span = _LAST_BLOCK - _FIRST_BLOCK + 1
    start = int.from_bytes(hashlib.sha256(str(state_dir.resolve()).encode()).digest()[:4], "big") % span
    for block in (*candidates, *(_FIRST_BLOCK + (start + i) % span for i in range(span))):
        claimed = _try_claim(registry, block, claim)
        if claimed is not None:
            remembered_file.write_text(claimed.cidr)
            return claimed
    raise LoopbackExhaustedError(f"every loopback /24 in {registry} is claimed by a running process")
