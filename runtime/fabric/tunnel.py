"""The gateway's one reconcile: the tunnel as its peering's objects describe it, and its Connection.

From this cluster's pod CIDR (its argument), the Configuration (the remote pod CIDR as mapped
here, this cluster's pod CIDR as the remote maps it), the remote gateway's PublicKey, and for a
client the GatewayClient's endpoint, it makes sure of, in the pod's network namespace:
the WireGuard interface (MTU from the gateway object) with this side's tunnel address, its
key and single peer (allowed IPs: the remote pod network as mapped here and the other
gateway's tunnel address; the client keeps the tunnel alive), a route to that network
through the interface, forwarding, and the remapping NAT (`runtime.forge.fabricrules`).
The networks come from a Configuration a peer can write into, so none is used before it is
checked again (`refusals()`): each parsed by `runtime.forge.cidrs` (`Cidrs.of`), the remote
network as mapped here in the IPAM's pool and given by it (a Network says so), and this cluster's network as the remote maps it
of the same size as the real one (the NAT moves addresses by prefix); anything else is an
Error in the Connection and touches nothing. Every step is idempotent, so a restart of
either side converges to the same state; the Connection reports Connected while handshakes are recent, with the round trip the latency
probe (`latency.py`) last measured through the tunnel.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from runtime.api.crds import CONNECTIONS
from runtime.api.objects import JSON, nested
from runtime.core import Client, Informer, NotFoundError, Request, Result, TemporaryError
from runtime.forge import cidrs, fabricrules, ipam
from runtime.forge import networking as forge
from runtime.forge.networking import Cidrs, GatewayMode

from .commands import CommandError, run
from .latency import LatencyProbe
from .routes import given_networks
from .wireguard import Device, Peer

logger = logging.getLogger(__name__)


FIELD_MANAGER = "liqo-gateway"
#: WireGuard rekeys every 2 minutes while traffic flows, and keepalives make traffic: older means the peer is gone
HANDSHAKE_FRESH = 180.0
RESYNC = 10.0
WAIT = 2.0
FORWARDING = Path("/proc/sys/net/ipv4/ip_forward")


@dataclass(frozen=True)
class GatewaySettings:
    mode: GatewayMode
    name: str
    namespace: str
    remote_cluster_id: str
    key_file: str
    listen_port: int
    #: this cluster's pod CIDR (an argument: the Configuration's `spec.local` can be written by the peer)
    pod_cidr: str


def _first(cidrs: Cidrs) -> str:
    return cidrs.pod[0] if cidrs.pod else ""


def refusals(*, local_pod: str, remote_here: str, local_there: str, given: set[str]) -> list[str]:
    """Why the tunnel may not be made from these networks (pure; each already parsed by `Cidrs.of`; `given`: the
    networks the IPAM gave the Configuration)."""
    found = []
    try:
        cidrs.peer_network(remote_here, within=ipam.pool_networks())
    except cidrs.CidrError as exc:
        found.append(f"the remote pod CIDR as mapped here: {exc}")
    else:
        if remote_here not in given:
            found.append(f"the remote pod CIDR as mapped here ({remote_here}) is not a network the IPAM gave")
    if cidrs.network(local_there).prefixlen != cidrs.network(local_pod).prefixlen:
        found.append(
            f"this cluster's pod CIDR as the remote maps it ({local_there}) is not the size of {local_pod}"
        )
    return found


def _enable_forwarding() -> None:
    if FORWARDING.read_text().strip() != "1":
        FORWARDING.write_text("1\n")


def _timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _without_timestamps(status: JSON | None) -> JSON | None:
    """A status as far as a change is worth a write: a new latency value is, only a newer measurement is not."""
    if status is None or "latency" not in status:
        return status
    return {**status, "latency": status["latency"]["value"]}


def format_latency(seconds: float) -> str:
    """A round trip as Liqo's Connection shows it: a Go duration (`417µs`, `1.2ms`)."""
    if seconds < 0.001:
        return f"{seconds * 1e6:.0f}µs"
    return f"{seconds * 1e3:.3g}ms"


class TunnelReconciler:
    def __init__(
        self,
        client: Client,
        device: Device,
        *,
        settings: GatewaySettings,
        informers: dict[str, Informer],
        probe: LatencyProbe,
    ) -> None:
        self._client = client
        self._device = device
        self._probe = probe
        self._settings = settings
        self._informers = informers
        #: the status last written (a Connection is written when what it says changes, not every resync)
        self._reported: JSON | None = None

    def _get(self, kind: str) -> JSON | None:
        return self._informers[kind].store.get(self._settings.name, namespace=self._settings.namespace)

    async def reconcile(self, request: Request) -> Result | None:
        s = self._settings
        configuration = self._get("configurations") or {}
        gateway = self._get("gatewayservers" if s.mode == "server" else "gatewayclients") or {}
        key = nested(self._get("publickeys"), "spec", "publicKey") or ""
        local_pod = s.pod_cidr
        remote_here = _first(Cidrs.of(nested(configuration, "status", "remote")))
        local_there = _first(Cidrs.of(nested(configuration, "status", "local")))
        endpoint = (nested(gateway, "spec", "endpoint") or {}) if s.mode == "client" else {}
        missing = [
            what
            for what, value in (
                ("the remote pod CIDR as mapped here", remote_here),
                ("this cluster's pod CIDR as the remote maps it", local_there),
                ("the remote gateway's PublicKey", key),
                (f"the Gateway{s.mode.capitalize()}", gateway),
                ("the server's endpoint", endpoint.get("addresses") if s.mode == "client" else "-"),
            )
            if not value
        ]
        if missing:
            await self._report("Connecting", f"waiting for {', '.join(missing)}")
            raise TemporaryError(f"{request}: waiting for {', '.join(missing)}", delay=WAIT)
        given = given_networks(list(self._informers["networks"].store.items())).get(
            str(nested(configuration, "metadata", "uid") or ""), set()
        )
        refused = refusals(local_pod=local_pod, remote_here=remote_here, local_there=local_there, given=given)
        if refused:
            await self._report("Error", f"refused: {'; '.join(refused)}")
            raise TemporaryError(f"{request}: refused: {'; '.join(refused)}", delay=WAIT)
        mtu = int(nested(gateway, "spec", "mtu") or forge.DEFAULT_MTU)
        here, there = forge.TUNNEL_ADDRESSES[s.mode], self._probe.remote
        peer = Peer(
            public_key=key,
            allowed_ips=[remote_here, f"{there}/32"],
            endpoint=f"{endpoint['addresses'][0]}:{endpoint.get('port') or forge.GATEWAY_PORT}"
            if endpoint
            else "",
            keepalive=forge.KEEPALIVE_SECONDS,
        )
        try:
            await self._device.ensure(mtu=mtu)
            await self._device.configure(
                key_file=s.key_file, listen_port=s.listen_port if s.mode == "server" else None, peer=peer
            )
            await run("ip", "address", "replace", here, "peer", f"{there}/32", "dev", self._device.name)
            await run("ip", "route", "replace", remote_here, "dev", self._device.name)
            await asyncio.to_thread(_enable_forwarding)
            await run(
                "nft",
                "-f",
                "-",
                stdin=fabricrules.gateway_rules(
                    interface=self._device.name, local_pod=local_pod, local_seen_remotely=local_there
                ),
            )
            handshake = await self._device.latest_handshake()
        except (CommandError, OSError) as exc:
            await self._report("Error", str(exc))
            raise TemporaryError(f"{request}: {exc}", delay=WAIT) from None
        fresh = handshake and time.time() - handshake < HANDSHAKE_FRESH
        await self._report(
            "Connected" if fresh else "Connecting",
            f"{self._device.kind} tunnel {self._device.name} to {remote_here}"
            + ("" if fresh else ": no handshake yet"),
            handshake=handshake,
            latency=self._probe.latency() if fresh else None,
        )
        return Result(requeue_after=RESYNC if fresh else WAIT)

    async def _report(
        self, value: str, message: str, *, handshake: float = 0.0, latency: float | None = None
    ) -> None:
        status: JSON = {"value": value, "message": message}
        if handshake:
            status["latestHandshake"] = _timestamp(handshake)
        if latency is not None:
            status["latency"] = {"value": format_latency(latency), "timestamp": _timestamp(time.time())}
        if _without_timestamps(status) == _without_timestamps(self._reported):
            return
        if self._reported is None:  # the object once; afterwards its status only
            await self._apply_connection()
        try:
            await self._apply_status(status)
        except NotFoundError:  # deleted under us: made again
            await self._apply_connection()
            await self._apply_status(status)
        self._reported = status

    async def _apply_connection(self) -> None:
        s = self._settings
        body = forge.connection(
            s.name, namespace=s.namespace, remote_cluster_id=s.remote_cluster_id, mode=s.mode
        )
        await self._client.apply(CONNECTIONS, body, field_manager=FIELD_MANAGER, force=True)

    async def _apply_status(self, status: JSON) -> None:
        s = self._settings
        await self._client.apply(
            CONNECTIONS,
            {"metadata": {"name": s.name, "namespace": s.namespace}, "status": status},
            field_manager=FIELD_MANAGER,
            subresource="status",
            force=True,
        )
