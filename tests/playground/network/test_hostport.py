"""The host-port forwarder: a connection its target refuses is closed, and the log says why in words."""

from __future__ import annotations

import asyncio
import logging

import pytest

from playground.network import hostport
from tests import broken_servers


async def test_a_refused_target_closes_the_connection_and_the_log_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    target = broken_servers.refused_url().removeprefix("https://")
    host, _, port = target.rpartition(":")
    server = await asyncio.start_server(
        lambda reader, writer: hostport.forward((host, int(port)), reader, writer), "127.0.0.1", 0
    )
    try:
        with caplog.at_level(logging.INFO, logger=hostport.__name__):
            reader, writer = await asyncio.open_connection(*server.sockets[0].getsockname()[:2])
            assert await asyncio.wait_for(reader.read(), timeout=30) == b""
            writer.close()
    finally:
        server.close()
        await server.wait_closed()
    assert [r.getMessage() for r in caplog.records if r.name == hostport.__name__] == [
        f"{target} cannot be reached: the connection was refused (nothing listens there); the forwarded "
        "connection is closed"
    ]
