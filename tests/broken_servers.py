"""Real sockets that fail the way clusters do, for tests of what a person reads about them.

Each helper yields an https:// URL on loopback (or a name that cannot resolve): a port
nothing listens on, a server that accepts and never answers, one that accepts and hangs up,
one whose certificate an unrelated CA signed, one whose certificate names other hosts, and
one that speaks plain HTTP. No client code is patched: the failures are the operating system's and OpenSSL's.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import socket
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass

from runtime.core.kubeconfig.tls import load_cert_chain
from runtime.forge.certificates import Issuer, certificate_pem, key_pem, new_key, tls_certificate

#: a name under the reserved `.invalid` top-level domain: it never resolves (RFC 6761)
UNRESOLVABLE_URL = "https://no-such-cluster.invalid:6443"


@dataclass(frozen=True)
class Authority:
    """A CA: its PEM certificate (what a kubeconfig's certificate-authority-data holds) and its issuer."""

    name: str
    pem: bytes
    issuer: Issuer


def authority(name: str) -> Authority:
    key = new_key()
    certificate = tls_certificate(key, common_name=name, validity=dt.timedelta(days=1), authority=True)
    return Authority(name, certificate_pem(certificate), Issuer(certificate, key))


def refused_url() -> str:
    """An https:// URL on a loopback port nothing listens on (bound and released: connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"https://127.0.0.1:{port}"


@contextlib.asynccontextmanager
async def silent_server() -> AsyncIterator[str]:
    """A server that accepts connections and never says a word (not even the TLS handshake)."""
    held: list[asyncio.StreamWriter] = []

    async def hold(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    try:
        yield f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


@contextlib.asynccontextmanager
async def hanging_up_server() -> AsyncIterator[str]:
    """A server that accepts connections and closes them at once, before the TLS handshake: what a port
    forwarder (kind's docker-proxy, the playground's host port) does when the API server behind it is down."""

    async def hang_up(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.transport.abort()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    try:
        yield f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        await server.wait_closed()


@contextlib.asynccontextmanager
async def tls_server(
    signed_by: Authority, *, common_name: str, hosts: tuple[str, ...], expired: bool = False
) -> AsyncIterator[str]:
    """A TLS server whose certificate (`common_name`, valid for `hosts`, or `expired` a day ago) `signed_by`
    issued; it answers 404."""
    key = new_key()
    now = dt.datetime.now(dt.UTC) - dt.timedelta(days=2 if expired else 0)
    certificate = tls_certificate(
        key,
        common_name=common_name,
        validity=dt.timedelta(days=1),
        hosts=hosts,
        issuer=signed_by.issuer,
        now=now,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    load_cert_chain(context, certificate_pem(certificate), key_pem(key), label="test server")

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, EOFError):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=context)
    try:
        yield f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        await server.wait_closed()


@contextlib.asynccontextmanager
async def plain_http_server() -> AsyncIterator[str]:
    """A plain-HTTP server, named by an https:// URL (what a wrong port in a kubeconfig looks like)."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            await reader.read(1024)
            writer.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        await server.wait_closed()
