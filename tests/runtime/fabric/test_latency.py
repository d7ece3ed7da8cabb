"""The tunnel's latency probe: two gateways' probes answering each other (here on loopback addresses)."""

from __future__ import annotations

import asyncio
import contextlib
import socket

from runtime.fabric.latency import PING, LatencyProbe
from runtime.fabric.tunnel import format_latency
from tests.runtime.core.waiting import until


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_two_probes_measure_the_round_trip_and_forget_it_when_the_other_stops() -> None:
    port = free_udp_port()
    one = LatencyProbe(remote="127.0.0.3", port=port, interval=0.05, local="127.0.0.2")
    two = LatencyProbe(remote="127.0.0.2", port=port, interval=0.05, local="127.0.0.3")
    first = asyncio.create_task(one.run())
    second = asyncio.create_task(two.run())
    try:
        await until(lambda: one.latency() is not None and two.latency() is not None, within=5)
        latency = one.latency()
        assert latency is not None and 0 < latency < 1
        second.cancel()
        await until(lambda: one.latency() is None, within=5)  # three intervals without a pong
    finally:
        for task in (first, second):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_a_probe_answers_only_its_peer() -> None:
    port = free_udp_port()
    probe = LatencyProbe(remote="127.0.0.3", port=port, interval=10, local="127.0.0.2")
    task = asyncio.create_task(probe.run())
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as stranger:
            stranger.bind(("127.0.0.4", 0))
            stranger.settimeout(0.3)
            await asyncio.sleep(0.05)
            stranger.sendto(PING + bytes(8), ("127.0.0.2", port))
            answered = await asyncio.to_thread(_received, stranger)
        assert not answered
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _received(sock: socket.socket) -> bool:
    try:
        sock.recv(64)
    except TimeoutError:
        return False
    return True


def test_a_latency_is_shown_as_a_go_duration() -> None:
    assert format_latency(0.000417) == "417µs"
    assert format_latency(0.0012) == "1.2ms"
    assert format_latency(0.0375) == "37.5ms"
