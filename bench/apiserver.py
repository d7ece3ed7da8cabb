"""Benchmark of the playground API server emulator (`make bench`).

Starts the emulator as a subprocess (its own temporary state dir, persistence on as a
user runs it) and measures, from one async client holding the kubeconfig's client
certificate (aiohttp over HTTPS):

- start-up: process start until the kubeconfig is written and `/readyz` answers;
- creates/s of ConfigMaps, one request at a time and with several in flight;
- gets/s, and the time of a full list of 10,000 objects and of one page of 500;
- watch: 100 watchers on one namespace, then a run of writes; the delay from each
  write's response to the event reaching every watcher, and the events delivered;
- memory: the server's VmRSS before and after 10,000 small ConfigMaps;
- authorization: gets/s of Secrets and creates/s of Events as a kubelet
  (`system:node:<node>`, decided by the Node authorizer: each Secret get walks the pods
  bound to the node that reference it, NODE_PODS of them in the namespace) against the
  same requests as the admin (`system:masters`, allowed before any authorizer runs).

Wall-clock figures on a shared two-core machine are noisy, so each phase also records
the server's CPU time per operation (from /proc/<pid>/stat), which other load hardly
moves, and every figure comes with ratios against baselines measured in the same run:
a trivial aiohttp HTTPS server (same TLS setup, client certificates requested) and
`GET /healthz` on the emulator itself. The create phase is repeated on a `--no-persist`
server, to show what snapshots cost.

Prints a table and a JSON document with every figure, each target and pass/fail
(`--json PATH` writes the document to PATH instead of stdout; `--strict` exits 1 when
a target is missed).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import gc
import http.client
import json
import math
import os
import random
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp import web

# `python bench/apiserver.py` puts bench/ first on sys.path: the repository root instead (see bench.harness).
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench import harness
from bench.harness import Target
from playground.apiserver.pki import CertificateAuthority

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
NAMESPACE = "bench"
OBJECTS = 10_000
SEQUENTIAL_CREATES = 1_000
CONCURRENCY = 16
WATCHERS = 100
WATCH_WRITES = 200
PAGE = 500
NODE = "bench-node"
NODE_NAMESPACE = "bench-node"
#: pods bound to the kubelet's node in its namespace, each referencing a Secret of its own
NODE_PODS = 100
FULL_LISTS = 5
STARTS = 3
RATE_SECONDS = 2.0
READY_TIMEOUT = 30.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
JSON_HEADERS = {"Content-Type": "application/json"}


#: figures are paths into the results (`figure`)
TARGETS = (
    Target("start-up time", "startup.cold_s.median", 1.0, "s"),
    Target("creates/s (one client)", "create.concurrent.per_s", 1000.0, "creates/s", at_least=True),
    Target("watch delivery p99", "watch.latency_ms.p99", 20.0, "ms"),
    Target("RSS per 10,000 ConfigMaps", "memory.mb_per_10k", 300.0, "MB"),
)


# processes


@dataclass(frozen=True)
class Credentials:
    url: str
    ssl: ssl.SSLContext


def load_credentials(kubeconfig: Path, workdir: Path) -> Credentials:
    """The kubeconfig's server, CA and client certificate as an SSL context for aiohttp."""
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    user = config["users"][0]["user"]
    return _credentials(
        cluster["server"],
        base64.b64decode(cluster["certificate-authority-data"]),
        base64.b64decode(user["client-certificate-data"]),
        base64.b64decode(user["client-key-data"]),
        workdir / "client",
    )


def _credentials(url: str, ca_pem: bytes, cert_pem: bytes, key_pem: bytes, stem: Path) -> Credentials:
    cert, key = stem.with_suffix(".crt"), stem.with_suffix(".key")
    cert.write_bytes(cert_pem)
    key.write_bytes(key_pem)
    os.chmod(key, 0o600)
    context = ssl.create_default_context(cadata=ca_pem.decode())
    context.load_cert_chain(cert, key)
    return Credentials(url=url, ssl=context)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class ServerProcess:
    """`python -m playground.apiserver` on a free port with its own state dir."""

    def __init__(self, state_dir: Path, *, persist: bool) -> None:
        self.state_dir = state_dir
        self.persist = persist
        self.process: subprocess.Popen[bytes] | None = None
        self._credentials: Credentials | None = None

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError("the API server is not running")
        return self.process.pid

    @property
    def credentials(self) -> Credentials:
        if self._credentials is None:
            raise RuntimeError("the API server has not started")
        return self._credentials

    def start(self) -> tuple[float, float]:
        """Start and wait until ready; returns (seconds to kubeconfig, seconds to /readyz 200)."""
        kubeconfig = self.state_dir / "kubeconfig"
        kubeconfig.unlink(missing_ok=True)
        command = [PYTHON, "-m", "playground.apiserver", "--listen", "127.0.0.1:0"]
        command += ["--state-dir", str(self.state_dir)]
        if not self.persist:
            command.append("--no-persist")
        started = time.perf_counter()
        self.process = subprocess.Popen(
            command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        while not kubeconfig.exists():
            self._check_alive(started)
            time.sleep(0.002)
        written = time.perf_counter() - started
        self._credentials = load_credentials(kubeconfig, self.state_dir)
        host, port = self._credentials.url.removeprefix("https://").rsplit(":", 1)
        while True:
            self._check_alive(started)
            connection = http.client.HTTPSConnection(
                host, int(port), context=self._credentials.ssl, timeout=5
            )
            try:
                connection.request("GET", "/readyz")
                if connection.getresponse().status == 200:
                    return written, time.perf_counter() - started
            except OSError:
                pass
            finally:
                connection.close()
            time.sleep(0.002)

    def _check_alive(self, started: float) -> None:
        if self.process is None or self.process.poll() is not None:
            raise RuntimeError("the API server exited before it was ready")
        if time.perf_counter() - started > READY_TIMEOUT:
            raise RuntimeError("the API server did not become ready")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS in /proc status")

    def user_credentials(self, user: str, *groups: str) -> Credentials:
        """A client certificate for `user` in `groups`, signed by the server's CA."""
        ca = CertificateAuthority.load(self.state_dir / "pki")
        cert, key = ca.issue_client(user, organizations=list(groups))
        stem = self.state_dir / user.replace(":", "-")
        return _credentials(self.credentials.url, ca.cert_pem, cert, key, stem)

    def cpu_s(self) -> float:
        return cpu_seconds(self.pid)

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


def serve_echo(state_dir: Path) -> None:
    """The baseline server: `GET /healthz` over the emulator's TLS setup and nothing else.

    Prints its port once it listens.
    """
    ca = CertificateAuthority.load(state_dir / "pki")
    cert, key = ca.issue_server(hosts=["127.0.0.1"])

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok", content_type="text/plain")

    async def run() -> None:
        app = web.Application()
        app.router.add_get("/healthz", healthz)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ca.ssl_server_context(cert, key))
        await site.start()
        print(runner.addresses[0][1], flush=True)
        await asyncio.Event().wait()

    asyncio.run(run())


class EchoProcess:
    def __init__(self, state_dir: Path) -> None:
        self.process = subprocess.Popen(
            [PYTHON, __file__, "--serve-echo", str(state_dir)], cwd=REPO, stdout=subprocess.PIPE
        )
        if self.process.stdout is None:
            raise RuntimeError("no pipe from the echo server")
        self.port = int(self.process.stdout.readline())

    def cpu_s(self) -> float:
        return cpu_seconds(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


# measuring helpers


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def summary_ms(seconds: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in seconds]
    return {
        "p50": round(percentile(ms, 50), 3),
        "p99": round(percentile(ms, 99), 3),
        "max": round(max(ms, default=0.0), 3),
        "mean": round(sum(ms) / len(ms), 3) if ms else 0.0,
    }


@dataclass
class Rate:
    """Requests done, the wall time they took and the server CPU time they used."""

    count: int
    seconds: float
    cpu_seconds: float

    def figures(self, what: str) -> dict[str, float]:
        return {
            "count": self.count,
            "per_s": round(self.count / self.seconds, 1),
            f"cpu_us_per_{what}": round(self.cpu_seconds * 1e6 / self.count, 1),
        }


async def run_count(
    count: int, concurrency: int, request: Callable[[int], Awaitable[None]], cpu: Callable[[], float]
) -> Rate:
    """Run `request(i)` for i in range(count), `concurrency` at a time."""
    counter = iter(range(count))

    async def worker() -> None:
        for i in counter:
            await request(i)

    cpu_before, started = cpu(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Rate(count, time.perf_counter() - started, cpu() - cpu_before)


async def run_for(
    seconds: float, concurrency: int, request: Callable[[], Awaitable[None]], cpu: Callable[[], float]
) -> Rate:
    """Run `request()` back to back on `concurrency` workers for `seconds`."""
    done = 0
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await request()
            done += 1

    cpu_before, started = cpu(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Rate(done, time.perf_counter() - started, cpu() - cpu_before)


def session(credentials: Credentials, *, limit: int = 100) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(ssl=credentials.ssl, limit=limit)
    return aiohttp.ClientSession(
        base_url=credentials.url,
        connector=connector,
        headers={"Accept": "application/json", "User-Agent": "bench/1.0"},
        timeout=aiohttp.ClientTimeout(total=None, sock_read=60),
    )


async def expect(response: aiohttp.ClientResponse, status: int) -> bytes:
    body = await response.read()
    if response.status != status:
        raise RuntimeError(f"{response.method} {response.url}: {response.status} {body[:300]!r}")
    return body


def configmap(name: str) -> bytes:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"app": "bench"}},
            "data": {"key": "value", "index": name},
        }
    ).encode()


async def create_namespace(client: aiohttp.ClientSession, name: str) -> None:
    body = json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    async with client.post("/api/v1/namespaces", data=body, headers=JSON_HEADERS) as response:
        await expect(response, 201)


async def create_configmaps(
    client: aiohttp.ClientSession,
    server: ServerProcess,
    namespace: str,
    count: int,
    concurrency: int,
) -> Rate:
    path = f"/api/v1/namespaces/{namespace}/configmaps"

    async def create(i: int) -> None:
        async with client.post(path, data=configmap(f"cm-{i:05d}"), headers=JSON_HEADERS) as response:
            await expect(response, 201)

    return await run_count(count, concurrency, create, server.cpu_s)


# phases


async def healthz_rates(credentials: Credentials, url: str, cpu: Callable[[], float]) -> dict[str, Any]:
    """GET `url` one at a time and CONCURRENCY at a time."""
    figures: dict[str, Any] = {}
    async with session(credentials) as client:

        async def get() -> None:
            async with client.get(url) as response:
                await expect(response, 200)

        await run_for(0.3, CONCURRENCY, get, cpu)
        for label, concurrency in (("sequential", 1), ("concurrent", CONCURRENCY)):
            figures[label] = (await run_for(RATE_SECONDS, concurrency, get, cpu)).figures("request")
    return figures


async def healthz_latency(credentials: Credentials) -> dict[str, float]:
    latencies: list[float] = []
    async with session(credentials) as client:
        for _ in range(300):
            started = time.perf_counter()
            async with client.get("/healthz") as response:
                await expect(response, 200)
            latencies.append(time.perf_counter() - started)
    return summary_ms(latencies[50:])


async def baselines(server: ServerProcess) -> dict[str, Any]:
    echo = EchoProcess(server.state_dir)
    try:
        echo_figures = await healthz_rates(
            server.credentials, f"https://127.0.0.1:{echo.port}/healthz", echo.cpu_s
        )
    finally:
        echo.stop()
    healthz = await healthz_rates(server.credentials, "/healthz", server.cpu_s)
    healthz["latency_ms"] = await healthz_latency(server.credentials)
    return {"echo_healthz": echo_figures, "healthz": healthz}


async def creates(server: ServerProcess) -> dict[str, Any]:
    """The create phases, and the memory the OBJECTS ConfigMaps of NAMESPACE take."""
    async with session(server.credentials) as client:
        await create_namespace(client, "bench-seq")
        await create_namespace(client, NAMESPACE)
        sequential = await create_configmaps(client, server, "bench-seq", SEQUENTIAL_CREATES, 1)
        await asyncio.sleep(1.5)  # let a pending snapshot land before the memory baseline
        rss_before = server.rss_mb()
        concurrent = await create_configmaps(client, server, NAMESPACE, OBJECTS, CONCURRENCY)
        await asyncio.sleep(1.5)
        rss_after = server.rss_mb()
    return {
        "sequential": sequential.figures("create"),
        "concurrent": {"concurrency": CONCURRENCY, **concurrent.figures("create")},
        "memory": {
            "rss_before_mb": round(rss_before, 1),
            "rss_after_mb": round(rss_after, 1),
            "mb_per_10k": round((rss_after - rss_before) * 10_000 / OBJECTS, 1),
        },
    }


async def gets(server: ServerProcess) -> dict[str, Any]:
    names = [f"cm-{i:05d}" for i in range(OBJECTS)]
    rng = random.Random(1)
    figures: dict[str, Any] = {}
    async with session(server.credentials) as client:

        async def get() -> None:
            path = f"/api/v1/namespaces/{NAMESPACE}/configmaps/{rng.choice(names)}"
            async with client.get(path) as response:
                await expect(response, 200)

        for label, concurrency in (("sequential", 1), ("concurrent", CONCURRENCY)):
            figures[label] = (await run_for(RATE_SECONDS, concurrency, get, server.cpu_s)).figures("get")
    return figures


async def node_requests(server: ServerProcess) -> dict[str, Any]:
    """Secret gets and Event creates as the kubelet of NODE, and the same as the admin."""
    namespace = f"/api/v1/namespaces/{NODE_NAMESPACE}"
    async with session(server.credentials) as admin:
        await create_namespace(admin, NODE_NAMESPACE)
        account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
        async with admin.post(
            f"{namespace}/serviceaccounts", data=json.dumps(account), headers=JSON_HEADERS
        ) as answer:
            await expect(answer, 201)
        for i in range(NODE_PODS):
            secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": f"s-{i:03d}"}}
            async with admin.post(
                f"{namespace}/secrets", data=json.dumps(secret), headers=JSON_HEADERS
            ) as answer:
                await expect(answer, 201)
            env = [{"name": "S", "valueFrom": {"secretKeyRef": {"name": f"s-{i:03d}", "key": "k"}}}]
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"p-{i:03d}"},
                "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "x:1", "env": env}]},
            }
            async with admin.post(f"{namespace}/pods", data=json.dumps(pod), headers=JSON_HEADERS) as answer:
                await expect(answer, 201)
    who = {
        "admin": server.credentials,
        "node": server.user_credentials(f"system:node:{NODE}", "system:nodes"),
    }
    return {
        label: await _secret_gets_and_event_creates(server, credentials, label)
        for label, credentials in who.items()
    }


async def _secret_gets_and_event_creates(
    server: ServerProcess, credentials: Credentials, label: str
) -> dict[str, Any]:
    namespace = f"/api/v1/namespaces/{NODE_NAMESPACE}"
    rng = random.Random(2)
    async with session(credentials) as client:

        async def get() -> None:
            async with client.get(f"{namespace}/secrets/s-{rng.randrange(NODE_PODS):03d}") as response:
                await expect(response, 200)

        async def create(i: int) -> None:
            event = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": f"{label}-{i:05d}"},
                "involvedObject": {"kind": "Pod", "name": "p-000", "namespace": NODE_NAMESPACE},
                "reason": "Bench",
                "message": "bench",
                "type": "Normal",
            }
            async with client.post(
                f"{namespace}/events", data=json.dumps(event), headers=JSON_HEADERS
            ) as response:
                await expect(response, 201)

        return {
            "get": (await run_for(RATE_SECONDS, CONCURRENCY, get, server.cpu_s)).figures("get"),
            "create": (await run_count(SEQUENTIAL_CREATES, CONCURRENCY, create, server.cpu_s)).figures(
                "create"
            ),
        }


async def lists(server: ServerProcess) -> dict[str, Any]:
    path = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
    full: list[float] = []
    pages: list[float] = []
    size = 0
    async with session(server.credentials) as client:
        cpu_before = server.cpu_s()
        for _ in range(FULL_LISTS):
            started = time.perf_counter()
            async with client.get(path) as response:
                body = await expect(response, 200)
            full.append(time.perf_counter() - started)
            size = len(body)
            if len(json.loads(body)["items"]) != OBJECTS:
                raise RuntimeError("the full list does not hold every object")
        full_cpu = server.cpu_s() - cpu_before
        cpu_before = server.cpu_s()
        for _ in range(2):
            token = ""
            while True:
                params = {"limit": str(PAGE), **({"continue": token} if token else {})}
                started = time.perf_counter()
                async with client.get(path, params=params) as response:
                    body = await expect(response, 200)
                pages.append(time.perf_counter() - started)
                token = json.loads(body)["metadata"].get("continue", "")
                if not token:
                    break
        page_cpu = server.cpu_s() - cpu_before
    if len(pages) != 2 * math.ceil(OBJECTS / PAGE):
        raise RuntimeError(f"paging took {len(pages)} pages")
    return {
        "objects": OBJECTS,
        "full_list_bytes": size,
        "full_list_ms": summary_ms(full),
        "cpu_ms_per_full_list": round(full_cpu * 1000 / len(full), 2),
        "page_size": PAGE,
        "pages": len(pages),
        "page_ms": summary_ms(pages),
        "cpu_ms_per_page": round(page_cpu * 1000 / len(pages), 2),
    }


async def watches(server: ServerProcess) -> dict[str, Any]:
    """WATCHERS watches on one namespace (as informers open them), then WATCH_WRITES creates."""
    namespace = "bench-watch"
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    arrivals: dict[str, list[float]] = {f"cm-{i:05d}": [] for i in range(WATCH_WRITES)}
    responded: dict[str, float] = {}
    connected = 0
    all_connected = asyncio.Event()
    async with session(server.credentials) as client, session(server.credentials, limit=0) as watch_client:
        await create_namespace(client, namespace)
        async with client.get(path) as response:
            rv = json.loads(await expect(response, 200))["metadata"]["resourceVersion"]

        async def watcher() -> None:
            nonlocal connected
            params = {"watch": "true", "resourceVersion": rv, "allowWatchBookmarks": "true"}
            async with watch_client.get(path, params=params) as response:
                if response.status != 200:
                    raise RuntimeError(f"watch: {response.status}")
                connected += 1
                if connected == WATCHERS:
                    all_connected.set()
                seen = 0
                async for line in response.content:
                    arrived = time.perf_counter()
                    event = json.loads(line)
                    if event["type"] == "ADDED":
                        arrivals[event["object"]["metadata"]["name"]].append(arrived)
                        seen += 1
                        if seen == WATCH_WRITES:
                            return

        tasks = [asyncio.create_task(watcher()) for _ in range(WATCHERS)]
        await asyncio.wait_for(all_connected.wait(), 30)
        await asyncio.sleep(0.2)
        cpu_before, started = server.cpu_s(), time.perf_counter()
        for name in arrivals:
            async with client.post(path, data=configmap(name), headers=JSON_HEADERS) as response:
                await expect(response, 201)
            responded[name] = time.perf_counter()
        writes_s = time.perf_counter() - started
        _, pending = await asyncio.wait(tasks, timeout=30)
        delivery_s = time.perf_counter() - started
        cpu = server.cpu_s() - cpu_before
        for task in pending:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
    # an event can reach a watcher before the writer has read its response: count that as 0
    latencies = [max(0.0, t - responded[name]) for name, times in arrivals.items() for t in times]
    delivered = sum(len(times) for times in arrivals.values())
    return {
        "watchers": WATCHERS,
        "writes": WATCH_WRITES,
        "writes_per_s": round(WATCH_WRITES / writes_s, 1),
        "events_expected": WATCHERS * WATCH_WRITES,
        "events_delivered": delivered,
        "events_per_s": round(delivered / delivery_s, 1),
        "latency_ms": summary_ms(latencies),
        "cpu_ms_per_write": round(cpu * 1000 / WATCH_WRITES, 3),
    }


def startups(workdir: Path) -> dict[str, Any]:
    cold: list[float] = []
    kubeconfig: list[float] = []
    for i in range(STARTS):
        server = ServerProcess(workdir / f"start-{i}", persist=True)
        try:
            written, ready = server.start()
        finally:
            server.stop()
        kubeconfig.append(written)
        cold.append(ready)
    warm = ServerProcess(workdir / "start-0", persist=True)
    try:
        _, warm_ready = warm.start()
    finally:
        warm.stop()
    python = []
    for _ in range(STARTS):
        started = time.perf_counter()
        subprocess.run([PYTHON, "-c", "import aiohttp, cryptography.x509, yaml"], check=True)
        python.append(time.perf_counter() - started)
    return {
        "cold_s": {"median": round(sorted(cold)[len(cold) // 2], 3), "all": [round(t, 3) for t in cold]},
        "kubeconfig_written_s": round(sorted(kubeconfig)[len(kubeconfig) // 2], 3),
        "restart_s": round(warm_ready, 3),
        "python_imports_s": round(sorted(python)[len(python) // 2], 3),
    }


async def phase(name: str, log: Callable[[str], None], run: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """One phase, with the client's own garbage collected before and none collected during it."""
    log(f"{name} ...")
    gc.collect()
    gc.disable()
    try:
        return await run
    finally:
        gc.enable()


async def measure(workdir: Path, log: Callable[[str], None]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    log("start-up ...")
    results["startup"] = startups(workdir)

    server = ServerProcess(workdir / "main", persist=True)
    server.start()
    try:
        results["baseline"] = await phase("baselines", log, baselines(server))
        label = f"creates ({SEQUENTIAL_CREATES} one at a time, {OBJECTS} with {CONCURRENCY} in flight)"
        created = await phase(label, log, creates(server))
        results["memory"] = created.pop("memory")
        results["create"] = created
        results["get"] = await phase("gets", log, gets(server))
        results["node"] = await phase(
            f"a kubelet's Secret gets and Event creates ({NODE_PODS} pods on its node)",
            log,
            node_requests(server),
        )
        results["list"] = await phase("lists", log, lists(server))
        results["watch"] = await phase(
            f"watch ({WATCHERS} watchers, {WATCH_WRITES} writes)", log, watches(server)
        )
    finally:
        server.stop()
    log("restart with the stored objects ...")
    restart = ServerProcess(workdir / "main", persist=True)
    try:
        _, ready = restart.start()
    finally:
        restart.stop()
    results["startup"]["restart_with_objects_s"] = round(ready, 3)

    bare = ServerProcess(workdir / "no-persist", persist=False)
    bare.start()
    try:
        created = await phase("creates without persistence", log, creates(bare))
    finally:
        bare.stop()
    results["no_persist"] = {"memory": created.pop("memory"), "create": created}
    return results


# report


def figure(results: dict[str, Any], path: str) -> float:
    value: Any = results
    for part in path.split("."):
        value = value[part]
    return float(value)


def ratios(results: dict[str, Any]) -> dict[str, float]:
    """Each figure against a baseline of the same run: throughput and server CPU per operation."""

    def ratio(a: str, b: str) -> float:
        denominator = figure(results, b)
        return round(figure(results, a) / denominator, 3) if denominator else 0.0

    healthz, echo = "baseline.healthz", "baseline.echo_healthz"
    return {
        "startup_vs_python_imports": ratio("startup.cold_s.median", "startup.python_imports_s"),
        "healthz_vs_echo_per_s": ratio(f"{healthz}.concurrent.per_s", f"{echo}.concurrent.per_s"),
        "healthz_vs_echo_cpu": ratio(
            f"{healthz}.concurrent.cpu_us_per_request", f"{echo}.concurrent.cpu_us_per_request"
        ),
        "create_sequential_vs_healthz_per_s": ratio("create.sequential.per_s", f"{healthz}.sequential.per_s"),
        "create_concurrent_vs_healthz_per_s": ratio("create.concurrent.per_s", f"{healthz}.concurrent.per_s"),
        "create_concurrent_vs_echo_per_s": ratio("create.concurrent.per_s", f"{echo}.concurrent.per_s"),
        "create_vs_healthz_cpu": ratio(
            "create.concurrent.cpu_us_per_create", f"{healthz}.concurrent.cpu_us_per_request"
        ),
        "create_persist_vs_no_persist_per_s": ratio(
            "create.concurrent.per_s", "no_persist.create.concurrent.per_s"
        ),
        "create_persist_vs_no_persist_cpu": ratio(
            "create.concurrent.cpu_us_per_create", "no_persist.create.concurrent.cpu_us_per_create"
        ),
        "get_sequential_vs_healthz_per_s": ratio("get.sequential.per_s", f"{healthz}.sequential.per_s"),
        "get_concurrent_vs_healthz_per_s": ratio("get.concurrent.per_s", f"{healthz}.concurrent.per_s"),
        "get_vs_healthz_cpu": ratio(
            "get.concurrent.cpu_us_per_get", f"{healthz}.concurrent.cpu_us_per_request"
        ),
        "node_get_vs_admin_per_s": ratio("node.node.get.per_s", "node.admin.get.per_s"),
        "node_get_vs_admin_cpu": ratio("node.node.get.cpu_us_per_get", "node.admin.get.cpu_us_per_get"),
        "node_create_vs_admin_per_s": ratio("node.node.create.per_s", "node.admin.create.per_s"),
        "node_create_vs_admin_cpu": ratio(
            "node.node.create.cpu_us_per_create", "node.admin.create.cpu_us_per_create"
        ),
        "full_list_vs_healthz_latency": ratio("list.full_list_ms.p50", f"{healthz}.latency_ms.p50"),
        "page_vs_healthz_latency": ratio("list.page_ms.p50", f"{healthz}.latency_ms.p50"),
        "watch_p99_vs_healthz_latency": ratio("watch.latency_ms.p99", f"{healthz}.latency_ms.p50"),
    }


def verdicts(results: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for target in TARGETS:
        value = figure(results, target.figure)
        out.append(
            {
                "name": target.name,
                "figure": target.figure,
                "value": value,
                "target": f"{'>=' if target.at_least else '<'} {target.limit:g} {target.unit}",
                "pass": target.met(value),
            }
        )
    return out


def table(results: dict[str, Any], report: dict[str, Any]) -> str:
    base, r, s, w = results["baseline"], report["ratios"], results["startup"], results["watch"]
    echo, healthz = base["echo_healthz"], base["healthz"]
    create, get, lst, mem = results["create"], results["get"], results["list"], results["memory"]
    node = results["node"]
    bare = results["no_persist"]
    stored = OBJECTS + SEQUENTIAL_CREATES + WATCH_WRITES
    rows = [
        ("", "throughput / time", "server CPU per op", "notes"),
        (
            "baseline: echo server GET /healthz",
            f"{echo['sequential']['per_s']:.0f}/s seq, {echo['concurrent']['per_s']:.0f}/s x{CONCURRENCY}",
            f"{echo['concurrent']['cpu_us_per_request']:.0f} us",
            "aiohttp + TLS only",
        ),
        (
            "baseline: emulator GET /healthz",
            f"{healthz['sequential']['per_s']:.0f}/s seq, {healthz['concurrent']['per_s']:.0f}/s x{CONCURRENCY}",
            f"{healthz['concurrent']['cpu_us_per_request']:.0f} us",
            f"p50 {healthz['latency_ms']['p50']:.2f} ms; {r['healthz_vs_echo_cpu']:.2f}x echo CPU",
        ),
        (
            "start-up, cold (median)",
            f"{s['cold_s']['median']:.3f} s",
            "",
            f"kubeconfig at {s['kubeconfig_written_s']:.3f} s; Python imports alone {s['python_imports_s']:.3f} s",
        ),
        (
            "start-up, restart",
            f"{s['restart_s']:.3f} s",
            "",
            f"{s['restart_with_objects_s']:.3f} s with {stored} stored objects",
        ),
        (
            "create ConfigMap, one at a time",
            f"{create['sequential']['per_s']:.0f}/s",
            f"{create['sequential']['cpu_us_per_create']:.0f} us",
            f"{r['create_sequential_vs_healthz_per_s']:.2f}x healthz/s",
        ),
        (
            f"create ConfigMap, {CONCURRENCY} in flight",
            f"{create['concurrent']['per_s']:.0f}/s",
            f"{create['concurrent']['cpu_us_per_create']:.0f} us",
            f"{r['create_concurrent_vs_healthz_per_s']:.2f}x healthz/s, {r['create_vs_healthz_cpu']:.1f}x its CPU",
        ),
        (
            "  same, --no-persist",
            f"{bare['create']['concurrent']['per_s']:.0f}/s",
            f"{bare['create']['concurrent']['cpu_us_per_create']:.0f} us",
            f"persistence costs {100 * (r['create_persist_vs_no_persist_cpu'] - 1):+.0f}% CPU",
        ),
        (
            "get ConfigMap, one at a time",
            f"{get['sequential']['per_s']:.0f}/s",
            f"{get['sequential']['cpu_us_per_get']:.0f} us",
            f"{r['get_sequential_vs_healthz_per_s']:.2f}x healthz/s",
        ),
        (
            f"get ConfigMap, {CONCURRENCY} in flight",
            f"{get['concurrent']['per_s']:.0f}/s",
            f"{get['concurrent']['cpu_us_per_get']:.0f} us",
            f"{r['get_concurrent_vs_healthz_per_s']:.2f}x healthz/s, {r['get_vs_healthz_cpu']:.1f}x its CPU",
        ),
        (
            f"get Secret as the kubelet, {CONCURRENCY} in flight",
            f"{node['node']['get']['per_s']:.0f}/s",
            f"{node['node']['get']['cpu_us_per_get']:.0f} us",
            f"Node authorizer over {NODE_PODS} pods: {r['node_get_vs_admin_per_s']:.2f}x admin/s "
            f"({node['admin']['get']['per_s']:.0f}/s), {r['node_get_vs_admin_cpu']:.2f}x its CPU",
        ),
        (
            f"create Event as the kubelet, {CONCURRENCY} in flight",
            f"{node['node']['create']['per_s']:.0f}/s",
            f"{node['node']['create']['cpu_us_per_create']:.0f} us",
            f"{r['node_create_vs_admin_per_s']:.2f}x admin/s ({node['admin']['create']['per_s']:.0f}/s), "
            f"{r['node_create_vs_admin_cpu']:.2f}x its CPU",
        ),
        (
            f"full list of {OBJECTS}",
            f"p50 {lst['full_list_ms']['p50']:.1f} ms",
            f"{lst['cpu_ms_per_full_list']:.1f} ms",
            f"{lst['full_list_bytes'] / 1e6:.1f} MB",
        ),
        (
            f"list page of {PAGE}",
            f"p50 {lst['page_ms']['p50']:.1f} ms, p99 {lst['page_ms']['p99']:.1f} ms",
            f"{lst['cpu_ms_per_page']:.1f} ms",
            f"{lst['pages']} pages",
        ),
        (
            f"watch delivery, {WATCHERS} watchers",
            f"p50 {w['latency_ms']['p50']:.2f} ms, p99 {w['latency_ms']['p99']:.2f} ms",
            f"{w['cpu_ms_per_write']:.2f} ms/write",
            f"max {w['latency_ms']['max']:.1f} ms; {w['events_delivered']}/{w['events_expected']} events, "
            f"{w['writes_per_s']:.0f} writes/s",
        ),
        (
            f"RSS before / after {OBJECTS} ConfigMaps",
            f"{mem['rss_before_mb']:.0f} / {mem['rss_after_mb']:.0f} MB",
            "",
            f"{mem['mb_per_10k']:.1f} MB per 10,000 (--no-persist {bare['memory']['mb_per_10k']:.1f})",
        ),
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:<{widths[2]}}  {d}".rstrip() for a, b, c, d in rows]
    lines.append("")
    for verdict in report["targets"]:
        mark = "PASS" if verdict["pass"] else "FAIL"
        lines.append(f"{mark}  {verdict['name']}: {verdict['value']:g} (target {verdict['target']})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--serve-echo", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_echo is not None:
        serve_echo(args.serve_echo)
        return 0

    started = time.perf_counter()
    with harness.scratch(None, prefix="apiserver-bench-") as workdir:
        results = asyncio.run(measure(workdir, harness.log))
    report = harness.document(
        {"figures": results, "ratios": ratios(results), "targets": verdicts(results)},
        started=started,
        environment=harness.environment(versions={"aiohttp": aiohttp.__version__}),
    )
    harness.publish(table(results, report), report, args.json)
    return harness.exit_code(args.strict, (verdict["pass"] for verdict in report["targets"]))


if __name__ == "__main__":
    sys.exit(main())
