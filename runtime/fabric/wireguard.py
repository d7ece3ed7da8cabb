"""The tunnel interface: a `wireguard-go` device in the gateway pod's network namespace, set with `wg`.

The kernel's WireGuard is used when the kernel has it (`ip link add type wireguard`),
`wireguard-go` otherwise; `wg` configures either the same way. The private key goes to
`wg` as a file path, never on a command line or in a log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from runtime.forge.networking import WIREGUARD_SOCKET_DIR

from .commands import CommandError, run

logger = logging.getLogger(__name__)

#: where wireguard-go keeps its control sockets (the gateway pod's emptyDir; host-wide where the
#: gateway runs as a host process, hence unique interface names)
SOCKET_DIR = Path(WIREGUARD_SOCKET_DIR)


@dataclass(frozen=True)
class Peer:
    public_key: str
    allowed_ips: Sequence[str]
    endpoint: str = ""
    keepalive: int = 0


class Device:
    """One WireGuard interface, created on first `ensure` and removed by `close`."""

    def __init__(self, name: str, *, implementation: str = "auto") -> None:
        self.name = name
        self._implementation = implementation
        self._userspace: asyncio.subprocess.Process | None = None
        self.kind = ""

    async def _exists(self) -> bool:
        try:
            await run("ip", "link", "show", "dev", self.name)
        except CommandError:
            return False
        return True

    async def ensure(self, *, mtu: int) -> None:
        """The interface exists (again, when wireguard-go died), with this MTU, and is up."""
        if self._userspace is not None and self._userspace.returncode is not None:
            logger.warning(
                "%s: wireguard-go exited (%s); starting it again", self.name, self._userspace.returncode
            )
            self._userspace = None
        if not await self._exists():
            await self._create()
        await run("ip", "link", "set", "dev", self.name, "mtu", str(mtu), "up")

    async def _create(self) -> None:
        if self._implementation in ("auto", "kernel"):
            try:
                await run("ip", "link", "add", "dev", self.name, "type", "wireguard")
                self.kind = "kernel"
                return
            except CommandError:
                if self._implementation == "kernel":
                    raise
        self._userspace = await asyncio.create_subprocess_exec(
            "wireguard-go",
            "--foreground",
            self.name,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        self.kind = "wireguard-go"
        deadline = time.monotonic() + 10
        # the interface appears before wireguard-go's control socket, which `wg` needs
        while not (await self._exists() and await asyncio.to_thread(self._socket().exists)):
            if self._userspace.returncode is not None or time.monotonic() > deadline:
                raise CommandError(
                    f"wireguard-go {self.name}: the interface or its control socket did not appear"
                )
            await asyncio.sleep(0.05)

    def _socket(self) -> Path:
        return SOCKET_DIR / f"{self.name}.sock"

    async def configure(self, *, key_file: str, listen_port: int | None, peer: Peer) -> None:
        """This side's key and port, and exactly one peer (any other is removed)."""
        args = ["wg", "set", self.name, "private-key", key_file]
        if listen_port is not None:
            args += ["listen-port", str(listen_port)]
        args += ["peer", peer.public_key, "allowed-ips", ",".join(peer.allowed_ips)]
        if peer.endpoint:
            args += ["endpoint", peer.endpoint]
        if peer.keepalive:
            args += ["persistent-keepalive", str(peer.keepalive)]
        await run(*args)
        for other in (await run("wg", "show", self.name, "peers")).split():
            if other != peer.public_key:
                await run("wg", "set", self.name, "peer", other, "remove")

    async def latest_handshake(self) -> float:
        """Seconds since the epoch of the peer's last handshake (0: none yet)."""
        lines = (await run("wg", "show", self.name, "latest-handshakes")).split("\n")
        stamps = [int(line.split()[1]) for line in lines if len(line.split()) == 2]
        return float(max(stamps, default=0))

    async def close(self) -> None:
        """Remove the interface (and stop wireguard-go, which removes it with its socket)."""
        if self._userspace is not None and self._userspace.returncode is None:
            self._userspace.terminate()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._userspace.wait(), 5)
        with contextlib.suppress(CommandError):
            await run("ip", "link", "del", "dev", self.name)
