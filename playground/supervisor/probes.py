"""Readiness probes as the kubelet runs a static pod's `httpGet` probe: no credentials, TLS not
verified, ready when the answer is 200."""

from __future__ import annotations

import asyncio
import http.client
import ssl
from urllib.parse import urlsplit

PROBE_TIMEOUT = 2.0


def _get_status(url: str, timeout: float) -> int:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        connection = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
    else:
        connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        path = parts.path or "/"
        connection.request("GET", f"{path}?{parts.query}" if parts.query else path)
        return connection.getresponse().status
    finally:
        connection.close()


async def ready(url: str) -> bool:
    """Whether `url` answers 200 within `PROBE_TIMEOUT` seconds."""
    try:
        return await asyncio.to_thread(_get_status, url, PROBE_TIMEOUT) == 200
    except (OSError, http.client.HTTPException):
        return False
