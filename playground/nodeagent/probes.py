"""Readiness, liveness and startup probes, run the way kubelet's prober workers run them.

`probe_once` makes one attempt: `httpGet` (2xx/3xx is success; HTTPS is not
verified; `User-Agent: kube-probe/<version>`), `tcpSocket` (a connection opens) or
`exec` (the command exits 0; it runs through the caller's `Exec`, in the container's
environment and mounts). Results carry the text kubelet puts in its `Unhealthy`
events. `ProbeWorker` repeats attempts every `periodSeconds` after
`initialDelaySeconds` (counted from the container's start) and reports a new result
after `successThreshold` consecutive successes or `failureThreshold` consecutive
failures; the caller decides what a result means (ready, started, or kill and restart).
A `grpc` probe is not supported: `is_supported` tells, and the runner skips it with a
warning event.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp

from runtime.api.objects import JSON

ProbeKind = Literal["Startup", "Liveness", "Readiness"]

USER_AGENT = "kube-probe/1.32"
MAX_OUTPUT = 10 * 1024

#: (argv, timeout seconds) -> (exit code, combined output); TimeoutError when it did not end in time
Exec = Callable[[list[str], float], Awaitable[tuple[int, bytes]]]


@dataclass(frozen=True)
class ProbeResult:
    success: bool
    message: str = ""


@dataclass(frozen=True)
class ProbeTarget:
    """Where a container's probes go: the pod IP, its named ports, and how to exec in it."""

    host: str
    ports: Mapping[str, int]
    exec: Exec


def is_supported(probe: JSON) -> bool:
    return any(key in probe for key in ("httpGet", "tcpSocket", "exec"))


def settings(probe: JSON) -> tuple[float, float, float, int, int]:
    """(initialDelaySeconds, periodSeconds, timeoutSeconds, successThreshold, failureThreshold) with kube's defaults."""
    return (
        float(probe.get("initialDelaySeconds") or 0),
        float(probe.get("periodSeconds") or 10),
        float(probe.get("timeoutSeconds") or 1),
        int(probe.get("successThreshold") or 1),
        int(probe.get("failureThreshold") or 3),
    )


async def probe_once(probe: JSON, target: ProbeTarget) -> ProbeResult:
    timeout = settings(probe)[2]
    if "exec" in probe:
        return await _exec(list(probe["exec"].get("command") or []), timeout, target)
    if "httpGet" in probe:
        return await http_get(probe["httpGet"], timeout, target)
    if "tcpSocket" in probe:
        return await _tcp(probe["tcpSocket"], timeout, target)
    return ProbeResult(False, "probe has no handler this runner supports")


def port_number(port: Any, ports: Mapping[str, int]) -> int:
    """A probe's `port`: a number, or the name of one of the container's ports."""
    if isinstance(port, int):
        return port
    if str(port).isdigit():
        return int(port)
    if str(port) in ports:
        return ports[str(port)]
    raise ValueError(f"unknown port name {port!r}: not among the container's ports")


async def _exec(command: list[str], seconds: float, target: ProbeTarget) -> ProbeResult:
    if not command:
        return ProbeResult(False, "exec probe has no command")
    try:
        code, output = await target.exec(command, seconds)
    except TimeoutError:
        return ProbeResult(False, f"command {' '.join(command)!r} timed out")
    except OSError as exc:
        return ProbeResult(False, str(exc))
    text = output[:MAX_OUTPUT].decode(errors="replace")
    return ProbeResult(code == 0, text)


async def http_get(action: JSON, seconds: float, target: ProbeTarget) -> ProbeResult:
    """One HTTP(S) GET as kubelet's HTTP prober (and preStop httpGet hooks) makes it."""
    try:
        port = port_number(action.get("port"), target.ports)
    except ValueError as exc:
        return ProbeResult(False, str(exc))
    scheme = str(action.get("scheme") or "HTTP").lower()
    host = str(action.get("host") or target.host)
    path = str(action.get("path") or "/")
    if not path.startswith("/"):
        path = "/" + path
    url = f"{scheme}://{_join(host, port)}{path}"
    headers = {"User-Agent": USER_AGENT, "Accept": "*/*"}
    for header in action.get("httpHeaders") or []:
        headers[str(header.get("name"))] = str(header.get("value") or "")
    limits = aiohttp.ClientTimeout(total=seconds)
    try:
        async with (
            aiohttp.ClientSession(
                timeout=limits, connector=aiohttp.TCPConnector(ssl=False, force_close=True)
            ) as session,
            session.get(url, headers=headers) as response,
        ):
            body = await response.content.read(MAX_OUTPUT)
    except TimeoutError:
        return ProbeResult(
            False, f'Get "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
        )
    except aiohttp.ClientConnectorError as exc:
        return ProbeResult(False, f'Get "{url}": {_dial_error(host, port, exc.os_error)}')
    except aiohttp.ClientError as exc:
        return ProbeResult(False, f'Get "{url}": {exc}')
    if 200 <= response.status < 400:
        return ProbeResult(True, body.decode(errors="replace"))
    return ProbeResult(False, f"HTTP probe failed with statuscode: {response.status}")


async def _tcp(action: JSON, seconds: float, target: ProbeTarget) -> ProbeResult:
    try:
        port = port_number(action.get("port"), target.ports)
    except ValueError as exc:
        return ProbeResult(False, str(exc))
    host = str(action.get("host") or target.host)
    try:
        async with asyncio.timeout(seconds):
            _, writer = await asyncio.open_connection(host, port)
    except TimeoutError:
        return ProbeResult(False, f"dial tcp {_join(host, port)}: i/o timeout")
    except OSError as exc:
        return ProbeResult(False, _dial_error(host, port, exc))
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return ProbeResult(True)


def _join(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _dial_error(host: str, port: int, exc: OSError) -> str:
    if exc.errno == errno.ECONNREFUSED:
        reason = "connect: connection refused"
    elif exc.strerror:
        reason = f"connect: {exc.strerror.lower()}"
    else:
        reason = str(exc)
    return f"dial tcp {_join(host, port)}: {reason}"


class ProbeWorker:
    """Repeats one probe of one container instance and reports each change of its result.

    `on_result(success, message)` is called when the result flips (after the
    thresholds); `on_failure(message)` after every failed attempt (kubelet's Unhealthy
    event). The first result of a readiness probe is a failure until it succeeds; a
    startup probe stops after its first success. `gate` (an Event) holds probing back
    until the container has started (liveness and readiness wait for the startup probe).
    """

    def __init__(
        self,
        kind: ProbeKind,
        probe: JSON,
        *,
        target: ProbeTarget,
        on_result: Callable[[bool, str], Awaitable[None]],
        on_failure: Callable[[str], Awaitable[None]],
        gate: asyncio.Event | None = None,
    ) -> None:
        self.kind = kind
        self._probe = probe
        self._target = target
        self._on_result = on_result
        self._on_failure = on_failure
        self._gate = gate

    async def run(self, *, started_at: float) -> None:
        """Probe until cancelled (a startup probe: until it succeeds); `started_at` is the loop time of the start."""
        delay, period, _, success_threshold, failure_threshold = settings(self._probe)
        if self.kind != "Readiness":
            success_threshold = 1
        loop = asyncio.get_running_loop()
        await asyncio.sleep(max(0.0, started_at + delay - loop.time()))
        if self._gate is not None:
            await self._gate.wait()
        current: bool | None = None
        successes = failures = 0
        while True:
            result = await probe_once(self._probe, self._target)
            if result.success:
                successes, failures = successes + 1, 0
            else:
                successes, failures = 0, failures + 1
                await self._on_failure(result.message)
            if result.success and successes >= success_threshold and current is not True:
                current = True
                await self._on_result(True, result.message)
                if self.kind == "Startup":
                    return
            elif not result.success and failures >= failure_threshold and current is not False:
                current = False
                await self._on_result(False, result.message)
            await asyncio.sleep(period)
