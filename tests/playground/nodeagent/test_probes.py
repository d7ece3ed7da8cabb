"""Probes against tiny servers on loopback, and the worker's thresholds and gates."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from playground.nodeagent.probes import ProbeTarget, ProbeWorker, port_number, probe_once
from tests.playground.conftest import eventually
from tests.ports import free_port


async def _no_exec(argv: list[str], seconds: float) -> tuple[int, bytes]:
    raise AssertionError("no exec expected")


@pytest.fixture
async def server() -> AsyncIterator[int]:
    """An HTTP server: /ok, /fail (500), /moved (302), /slow (0.5 s), /header (200 only with X-Probe: yes)."""
    seen: list[str] = []

    async def ok(request: web.Request) -> web.Response:
        seen.append(request.headers.get("User-Agent", ""))
        return web.Response(text="fine")

    async def fail(request: web.Request) -> web.Response:
        return web.Response(status=500, text="broken")

    async def moved(request: web.Request) -> web.Response:
        return web.Response(status=302, headers={"Location": "/ok"})

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(0.5)
        return web.Response(text="late")

    async def header(request: web.Request) -> web.Response:
        return web.Response(status=200 if request.headers.get("X-Probe") == "yes" else 403)

    app = web.Application()
    for path, handler in (
        ("/ok", ok),
        ("/fail", fail),
        ("/moved", moved),
        ("/slow", slow),
        ("/header", header),
    ):
        app.router.add_get(path, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield int(runner.addresses[0][1])
    finally:
        await runner.cleanup()


def target(ports: dict[str, int] | None = None, exec_: Any = _no_exec) -> ProbeTarget:
    return ProbeTarget(host="127.0.0.1", ports=ports or {}, exec=exec_)


async def test_http_success_is_2xx_or_3xx(server: int) -> None:
    ok = await probe_once({"httpGet": {"path": "/ok", "port": server}}, target())
    assert ok.success and ok.message == "fine"
    assert (await probe_once({"httpGet": {"path": "/moved", "port": server}}, target())).success


async def test_http_failure_names_the_status_code(server: int) -> None:
    result = await probe_once({"httpGet": {"path": "/fail", "port": server}}, target())
    assert not result.success
    assert result.message == "HTTP probe failed with statuscode: 500"


async def test_http_named_port_and_headers(server: int) -> None:
    probe = {
        "httpGet": {"path": "/header", "port": "web", "httpHeaders": [{"name": "X-Probe", "value": "yes"}]}
    }
    assert (await probe_once(probe, target({"web": server}))).success
    assert not (await probe_once({"httpGet": {"path": "/header", "port": server}}, target())).success


async def test_http_refused_and_timeout_read_like_kubelet(server: int) -> None:
    closed = free_port()
    refused = await probe_once({"httpGet": {"path": "/x", "port": closed}}, target())
    assert (
        refused.message
        == f'Get "http://127.0.0.1:{closed}/x": dial tcp 127.0.0.1:{closed}: connect: connection refused'
    )
    slow = await probe_once({"httpGet": {"path": "/slow", "port": server}, "timeoutSeconds": 0.1}, target())
    assert not slow.success
    assert "context deadline exceeded" in slow.message


async def test_tcp_probe() -> None:
    listener = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    async with listener:
        assert (await probe_once({"tcpSocket": {"port": port}}, target())).success
    closed = free_port()
    result = await probe_once({"tcpSocket": {"port": closed}}, target())
    assert not result.success
    assert result.message == f"dial tcp 127.0.0.1:{closed}: connect: connection refused"


async def test_exec_probe_uses_the_exit_code_and_output() -> None:
    calls: list[tuple[list[str], float]] = []

    async def run(argv: list[str], seconds: float) -> tuple[int, bytes]:
        calls.append((argv, seconds))
        return (0, b"") if argv[-1] == "good" else (1, b"not ready yet\n")

    assert (
        await probe_once({"exec": {"command": ["check", "good"]}, "timeoutSeconds": 3}, target(exec_=run))
    ).success
    bad = await probe_once({"exec": {"command": ["check", "bad"]}}, target(exec_=run))
    assert (bad.success, bad.message) == (False, "not ready yet\n")
    assert calls == [(["check", "good"], 3.0), (["check", "bad"], 1.0)]


async def test_exec_probe_timeout() -> None:
    async def hang(argv: list[str], seconds: float) -> tuple[int, bytes]:
        raise TimeoutError

    result = await probe_once({"exec": {"command": ["sleep", "9"]}}, target(exec_=hang))
    assert (result.success, result.message) == (False, "command 'sleep 9' timed out")


def test_named_ports_must_exist() -> None:
    assert port_number("8080", {}) == 8080
    assert port_number("http", {"http": 80}) == 80
    with pytest.raises(ValueError, match="unknown port name 'metrics'"):
        port_number("metrics", {"http": 80})


class Script:
    """An exec target whose answers follow a script (then repeat the last one), recording results."""

    def __init__(self, *answers: bool) -> None:
        self.answers = list(answers)
        self.calls = 0
        self.results: list[bool] = []
        self.failures: list[str] = []

    async def exec(self, argv: list[str], seconds: float) -> tuple[int, bytes]:
        answer = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        return (0, b"") if answer else (1, b"nope")

    async def on_result(self, success: bool, message: str) -> None:
        self.results.append(success)

    async def on_failure(self, message: str) -> None:
        self.failures.append(message)


def worker(kind: Any, script: Script, gate: asyncio.Event | None = None, **probe: Any) -> ProbeWorker:
    spec = {"exec": {"command": ["check"]}, "periodSeconds": 0.01, **probe}
    return ProbeWorker(
        kind,
        spec,
        target=target(exec_=script.exec),
        on_result=script.on_result,
        on_failure=script.on_failure,
        gate=gate,
    )


@contextlib.asynccontextmanager
async def running(probe_worker: ProbeWorker) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(probe_worker.run(started_at=asyncio.get_running_loop().time()))
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_liveness_fails_after_failure_threshold_consecutive_failures() -> None:
    script = Script(False, True, False, False, False)
    async with running(worker("Liveness", script, failureThreshold=3)):
        await eventually(lambda: script.results == [True, False])
    assert script.failures[:4] == ["nope"] * 4


async def test_readiness_needs_success_threshold_successes() -> None:
    script = Script(True, False, True, True)
    async with running(worker("Readiness", script, successThreshold=2)):
        await eventually(lambda: script.results == [True])
    assert script.calls >= 4


async def test_startup_probe_stops_after_its_first_success() -> None:
    script = Script(False, True)
    async with running(worker("Startup", script, failureThreshold=5)) as task:
        await eventually(lambda: task.done())
    assert script.results == [True]
    assert script.calls == 2


async def test_gate_holds_probing_back() -> None:
    script = Script(True)
    gate = asyncio.Event()
    async with running(worker("Liveness", script, gate)):
        await asyncio.sleep(0.1)
        assert script.calls == 0
        gate.set()
        await eventually(lambda: script.results == [True])


async def test_initial_delay_counts_from_the_container_start() -> None:
    script = Script(True)
    probe_worker = worker("Readiness", script, initialDelaySeconds=30)
    task = asyncio.create_task(probe_worker.run(started_at=asyncio.get_running_loop().time() - 29.9))
    try:
        await eventually(lambda: script.results == [True], within=5)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
