"""The sync loop: Service and EndpointSlice changes in, this node's nftables ruleset out.

kube-proxy's `syncProxyRules` is one full sync of everything, not a patch per object; so
is this. Every change of a Service or an EndpointSlice enqueues one key (the queue holds
it once, so a burst costs one sync), and the sync renders the whole ruleset
(`rules.ruleset`) from the informers' caches and, when it differs from the one last
applied, replaces the table in one `nft -f` transaction. A failed apply is retried with
the queue's back-off, and applied again in full.

UDP has no connection to end: a flow NATed to an endpoint keeps going there while packets
flow (a WireGuard keepalive every 25 s, say), even after that endpoint is gone. So, as
kube-proxy does, once the new rules are in, the conntrack entries of UDP endpoints that
left are deleted (`conntrack -D -p udp --reply-src <address>`), and the next packet of
such a flow is NATed afresh to a live endpoint.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from runtime.core import Request, Result, Store, TemporaryError

from .rules import ruleset, service_ports, udp_endpoints

logger = logging.getLogger(__name__)

#: the one key every change maps to
SYNC = Request("", "sync")
RETRY = 1.0


class NFTablesProxier:
    """The reconciler; `synced` is set after the first successful apply."""

    def __init__(self, *, node: str, cluster_cidr: str, services: Store, slices: Store) -> None:
        self._node = node
        self._cluster_cidr = cluster_cidr
        self._services = services
        self._slices = slices
        self._applied: str | None = None
        self._udp_endpoints: set[str] = set()
        self.synced = asyncio.Event()

    @staticmethod
    def sync_key(_: object) -> Iterable[Request]:
        return [SYNC]

    async def reconcile(self, request: Request) -> Result | None:
        script = ruleset(
            list(self._services), list(self._slices), node=self._node, cluster_cidr=self._cluster_cidr
        )
        if script == self._applied:
            return None
        await apply(script)
        self._applied = script
        udp = udp_endpoints(service_ports(list(self._services), list(self._slices)))
        for address in sorted(self._udp_endpoints - udp):
            await forget_udp_flows(address)
        self._udp_endpoints = udp
        if not self.synced.is_set():
            logger.info("%s: rules for %d Services programmed", self._node, len(self._services))
        self.synced.set()
        return None


async def apply(script: str) -> None:
    """`nft -f -` in this process's network namespace; TemporaryError with nft's message when it refuses."""
    process = await asyncio.create_subprocess_exec(
        "nft",
        "-f",
        "-",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await process.communicate(script.encode())
    if process.returncode:
        raise TemporaryError(
            f"nft -f refused the ruleset: {stderr.decode(errors='replace').strip()}", delay=RETRY
        )


async def forget_udp_flows(address: str) -> None:
    """Delete the conntrack entries of UDP flows answered by `address` (none is fine; a failure is logged)."""
    try:
        process = await asyncio.create_subprocess_exec(
            "conntrack",
            "-D",
            "-p",
            "udp",
            "--reply-src",
            address,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
    except FileNotFoundError:
        logger.warning("conntrack is not installed: UDP flows to %s stay on it until they idle out", address)
        return
    _, stderr = await process.communicate()
    message = stderr.decode(errors="replace").strip()
    # conntrack exits 1 when no entry matched ("0 flow entries have been deleted")
    if process.returncode and "0 flow entries" not in message:
        logger.warning("conntrack -D --reply-src %s: %s", address, message)
