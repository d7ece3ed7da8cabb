"""`python -m playground.network.hostport --listen 127.0.0.1:PORT --connect ADDRESS:PORT`

kind maps a port of the host's 127.0.0.1 to its control-plane node's 6443 (Docker's
port mapping), so the user's kubeconfig says `https://127.0.0.1:<port>` while the API
server runs inside the node. This is that mapping for a playground cluster: a TCP
forwarder on the host (what docker-proxy is to Docker), run until SIGTERM. NAT cannot do
it without changing the host's sysctls (`route_localnet` to DNAT 127.0.0.1), which the
playground leaves alone. Each connection is copied both ways, half-closes passed on;
a connection the API server refuses is closed at once. Stdlib only, so it starts fast.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT = 5.0
_CHUNK = 64 * 1024


def _endpoint(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected ADDRESS:PORT, got {value!r}")
    return host, int(port)


async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Copy until the source ends, then half-close the sink (the other direction may go on)."""
    try:
        while chunk := await source.read(_CHUNK):
            sink.write(chunk)
            await sink.drain()
        if sink.can_write_eof():
            sink.write_eof()
    except OSError:
        sink.close()


async def forward(
    target: tuple[str, int], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        upstream_reader, upstream_writer = await asyncio.wait_for(
            asyncio.open_connection(*target), CONNECT_TIMEOUT
        )
    except (OSError, TimeoutError) as exc:
        logger.info("%s:%d unreachable (%s): connection closed", *target, exc or type(exc).__name__)
        writer.close()
        return
    try:
        await asyncio.gather(copy(reader, upstream_writer), copy(upstream_reader, writer))
    finally:
        upstream_writer.close()
        writer.close()


async def serve(listen: tuple[str, int], target: tuple[str, int]) -> None:
    connections: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        connections.add(task)
        try:
            await forward(target, reader, writer)
        finally:
            connections.discard(task)

    server = await asyncio.start_server(handle, *listen, reuse_address=True)
    logger.info("forwarding %s:%d to %s:%d", *listen, *target)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()
    for task in list(connections):
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.gather(*connections, return_exceptions=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m playground.network.hostport", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--listen", type=_endpoint, required=True, help="ADDRESS:PORT on the host")
    parser.add_argument("--connect", type=_endpoint, required=True, help="ADDRESS:PORT to forward to")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        asyncio.run(serve(args.listen, args.connect))
    except OSError as exc:
        print(f"error: cannot listen on {args.listen[0]}:{args.listen[1]}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
