"""Round trips through the tunnel, as Liqo's connection checker measures them.

Each gateway has a tunnel address (`forge.networking.TUNNEL_ADDRESSES`: the server's and
the client's, reachable only through the tunnel) and a UDP socket on `PROBE_PORT`: it
answers the other gateway's pings and sends its own every `interval`. A ping carries its
sequence number; the round trip is timed on the event loop's clock when the pong with that
number comes back. `latency()` is the last round trip while it is recent (three intervals),
else None: the Connection then says Connected without a latency.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from dataclasses import dataclass
from typing import cast

logger = logging.getLogger(__name__)

PING, PONG = b"liqo-ping", b"liqo-pong"
_SEQUENCE = struct.Struct("!Q")


@dataclass(frozen=True)
class Measurement:
    #: the round trip, in seconds
    seconds: float
    #: when it was measured (event loop time)
    at: float


class _Endpoint(asyncio.DatagramProtocol):
    def __init__(self, probe: LatencyProbe) -> None:
        self._probe = probe
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | int, ...]) -> None:
        if addr[0] != self._probe.remote or len(data) != len(PING) + _SEQUENCE.size:
            return
        kind, payload = data[: len(PING)], data[len(PING) :]
        if kind == PING and self.transport is not None:
            self.transport.sendto(PONG + payload, addr)
        elif kind == PONG:
            self._probe.answered(_SEQUENCE.unpack(payload)[0])

    def error_received(self, exc: Exception) -> None:
        # ICMP errors while the tunnel is down: the missing pong says it
        logger.debug("latency probe to %s: %s", self._probe.remote, exc)


class LatencyProbe:
    def __init__(self, *, remote: str, port: int, interval: float = 5.0, local: str = "0.0.0.0") -> None:
        self.remote = remote
        self._local = local
        self._port = port
        self._interval = interval
        self._sequence = 0
        #: sequence number -> when its ping was sent (only the last few are kept)
        self._sent: dict[int, float] = {}
        self._latest: Measurement | None = None

    def latency(self) -> float | None:
        """The last round trip in seconds, if measured within three intervals."""
        latest = self._latest
        if latest is None or asyncio.get_running_loop().time() - latest.at > 3 * self._interval:
            return None
        return latest.seconds

    def answered(self, sequence: int) -> None:
        sent = self._sent.pop(sequence, None)
        if sent is not None:
            now = asyncio.get_running_loop().time()
            self._latest = Measurement(now - sent, now)

    async def run(self) -> None:
        """Answer pings and send one every interval, until cancelled."""
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(
            lambda: _Endpoint(self), local_addr=(self._local, self._port)
        )
        try:
            while True:
                self._ping(transport, loop.time())
                await asyncio.sleep(self._interval)
        finally:
            transport.close()

    def _ping(self, transport: asyncio.DatagramTransport, now: float) -> None:
        self._sequence += 1
        self._sent[self._sequence] = now
        for old in [s for s in self._sent if s <= self._sequence - 3]:
            del self._sent[old]
        with contextlib.suppress(OSError):  # no route yet: the tunnel is being set up
            transport.sendto(PING + _SEQUENCE.pack(self._sequence), (self.remote, self._port))
