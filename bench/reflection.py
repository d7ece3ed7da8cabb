"""Benchmark of resource reflection on playground clusters (`python bench/reflection.py`).

Two playground clusters (rome consumes, milan provides) with the runtime as process pods,
installed and peered as the Terraform resources do it (`playground.liqo`), namespaces
offloaded as `liqo_offload` does. Measures, in the same run:

- latency from a local edit of a ConfigMap to its copy on milan showing it (a watch on
  milan's twin namespace), p50 and p99, for `--singles` edits one after the other and for
  a burst of `--burst` ConfigMaps edited at once. The baseline is the same edits made
  directly on milan's API server and seen by the same watch (one write and its watch
  event: the floor any reflection stands on); the ratios reflection/baseline say what
  reflection adds (a watch on rome, the virtual kubelet's queue, the write to milan);
- API requests per reflected change, from the virtual kubelet's own counts on its
  /metrics (`rest_client_requests_total`, by cluster and verb) around the burst: what it
  asked milan and rome per edited ConfigMap (a list per change, or a read, would show
  here; its health checks of milan, a `get` of `/version` every 10 s, are counted too),
  and the writes it made after a restart with nothing changed (there should be none);
- the virtual kubelet's memory per `--hold` (10,000) reflected ConfigMaps: RSS before and
  after they are reflected, in one offloaded namespace;
- where the burst's time goes: the virtual kubelet's CPU per change, and its mean queue
  wait and handle time (`workqueue_queue_duration_seconds`,
  `controller_runtime_reconcile_time_seconds` of `configmap-reflection`).

Each figure is printed with the load average when it was taken (the machine is shared).
Prints a table and a JSON document with every figure, target and pass/fail (`--json PATH`
writes the document there; `--strict` exits 1 when a target is missed or a step failed).
The clusters are stopped and removed at the end, also when a step fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# `python bench/reflection.py` puts bench/ first on sys.path: the repository root instead (see bench.harness).
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench import harness, offloading
from bench.harness import Target
from bench.offloading import percentile
from bench.peering import CLOCK_TICKS, STEP_ERRORS, component_of, cpu_ticks, rss_bytes
from playground.cluster import Cluster, down, resolve, up
from runtime.api import constants as c
from runtime.api.kinds import CONFIGMAPS, NAMESPACES, PODS
from runtime.core import Client
from runtime.forge import virtualnode as forge_vn

CONSUMER, PROVIDER = "rome", "milan"
VIRTUAL_NODE = forge_vn.node_name_for(PROVIDER)
REFLECTED, HELD, DIRECT = "bench-reflect", "bench-hold", "bench-direct"
#: requests sent at once when creating or editing many objects
CONCURRENCY = 100
POLL = 0.5
#: the virtual kubelet's health port (its /metrics), on its pod's address
HEALTH_PORT = 8080
WRITES = ("create", "update", "patch", "delete")


def twin(namespace: str) -> str:
    return f"{namespace}-{CONSUMER}"


def targets(burst: int, hold: int) -> list[Target]:
    return [
        Target("p99 single edit -> copy", "reflect_single_p99_s", 0.2, "s"),
        Target(f"p99 burst of {burst} -> copies", f"reflect_burst_{burst}_p99_s", 2.0, "s"),
        Target(f"virtual kubelet RSS per {hold} objects", f"vk_rss_per_{hold}_mb", 100.0, "MB"),
        Target("writes to milan per change", "milan_writes_per_change", 1.01, "req"),
        Target("lists per change (either cluster)", "lists_per_change", 0.01, "req"),
        Target("writes after a restart, nothing changed", "writes_after_restart", 0.5, "req"),
    ]


@dataclass
class Run(harness.Run):
    """A bench run that also keeps the load average (1 min) when each figure was taken."""

    loads: dict[str, float] = field(default_factory=dict)

    def put(self, name: str, value: float) -> None:
        self.figures[name] = value
        self.loads[name] = round(os.getloadavg()[0], 2)


async def wait_for(check: Callable[[], Awaitable[Any]], *, seconds: float, what: str) -> Any:
    return await offloading.wait_for(check, seconds=seconds, what=what, every=POLL)


class Copies:
    """A watch on one namespace of milan: when each ConfigMap was first seen with each value of key `v`."""

    def __init__(self, api: Client, namespace: str) -> None:
        self._api = api
        self._namespace = namespace
        self._seen: dict[tuple[str, str], float] = {}
        self._waiters: dict[tuple[str, str], asyncio.Future[float]] = {}
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        listed = await self._api.list(CONFIGMAPS, namespace=self._namespace)
        now = time.perf_counter()
        for obj in listed.items:
            self._seen[(str(obj["metadata"]["name"]), str((obj.get("data") or {}).get("v")))] = now
        self._task = asyncio.create_task(
            self._watch(listed.resource_version), name=f"watch {self._namespace}"
        )

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _watch(self, version: str) -> None:
        while True:
            events = self._api.watch(
                CONFIGMAPS, namespace=self._namespace, resource_version=version, timeout_seconds=300
            )
            async with contextlib.aclosing(events):
                async for event in events:
                    obj = event["object"]
                    version = str(obj["metadata"].get("resourceVersion") or version)
                    key = (str(obj["metadata"]["name"]), str((obj.get("data") or {}).get("v")))
                    if key not in self._seen:
                        self._seen[key] = time.perf_counter()
                        waiter = self._waiters.pop(key, None)
                        if waiter is not None and not waiter.done():
                            waiter.set_result(self._seen[key])

    async def seen(self, name: str, value: str, *, seconds: float) -> float:
        """When the watch saw ConfigMap `name` with `v=value` (waiting for it up to `seconds`)."""
        key = (name, value)
        if key in self._seen:
            return self._seen[key]
        waiter = self._waiters.setdefault(key, asyncio.get_running_loop().create_future())
        return await asyncio.wait_for(asyncio.shield(waiter), seconds)


async def create_configmaps(api: Client, namespace: str, names: Sequence[str]) -> None:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(name: str) -> None:
        async with gate:
            await api.create(
                CONFIGMAPS,
                {"metadata": {"name": name}, "data": {"v": "0", "payload": "x" * 64}},
                namespace=namespace,
            )

    await asyncio.gather(*(one(name) for name in names))


async def edit_all(api: Client, namespace: str, names: Sequence[str], value: str) -> dict[str, float]:
    """Patch `v=value` into every ConfigMap of `names` at once; when each request was sent."""
    sent: dict[str, float] = {}
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(name: str) -> None:
        async with gate:
            sent[name] = time.perf_counter()
            await api.patch(CONFIGMAPS, name, {"data": {"v": value}}, namespace=namespace)

    await asyncio.gather(*(one(name) for name in names))
    return sent


async def singles(api: Client, namespace: str, copies: Copies, count: int) -> list[float]:
    """`count` edits of one ConfigMap, one after the other, each until the watch saw it."""
    latencies = []
    for value in range(1, count + 1):
        started = time.perf_counter()
        await api.patch(CONFIGMAPS, "single", {"data": {"v": str(value)}}, namespace=namespace)
        latencies.append(await copies.seen("single", str(value), seconds=60) - started)
    return latencies


async def burst(api: Client, namespace: str, copies: Copies, names: Sequence[str], value: str) -> list[float]:
    sent = await edit_all(api, namespace, names, value)
    seen = await asyncio.gather(
        *(copies.seen(name, value, seconds=max(120.0, len(names) * 0.2)) for name in names)
    )
    return [at - sent[name] for name, at in zip(names, seen, strict=True)]


def put_latencies(run: Run, prefix: str, values: Sequence[float]) -> None:
    run.put(f"{prefix}_p50_s", round(statistics.median(values), 4))
    run.put(f"{prefix}_p99_s", round(percentile(values, 0.99), 4))


# the virtual kubelet


async def virtual_kubelet_pod(api: Client) -> dict[str, Any]:
    pods = (
        await api.list(
            PODS,
            namespace=f"{c.TENANT_NAMESPACE_PREFIX}{PROVIDER}",
            label_selector=f"{c.LABEL_COMPONENT}={forge_vn.COMPONENT}",
        )
    ).items
    running = [
        p
        for p in pods
        if (p.get("status") or {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    ]
    if len(running) != 1:
        raise RuntimeError(f"{CONSUMER}: {len(running)} virtual kubelet pods Running, not 1")
    return running[0]


async def scrape(cluster: Cluster, pod: Mapping[str, Any]) -> str:
    """The pod's /metrics, fetched from inside the cluster's network (pod addresses are not routed to the host)."""
    status, text = await cluster.http_get(str(pod["status"]["podIP"]), HEALTH_PORT, "/metrics", seconds=30)
    if status != 200:
        raise RuntimeError(f"{CONSUMER}: the virtual kubelet's /metrics answered {status}")
    return text


def requests(scraped: str) -> dict[tuple[str, str], float]:
    """(client, verb) -> requests sent, summed over status codes."""
    found: dict[tuple[str, str], float] = {}
    for line in scraped.splitlines():
        if not line.startswith("rest_client_requests_total{"):
            continue
        labels = dict(part.split("=", 1) for part in line[line.index("{") + 1 : line.index("}")].split(","))
        key = (labels["client"].strip('"'), labels["verb"].strip('"'))
        found[key] = found.get(key, 0.0) + float(line.rsplit(" ", 1)[1])
    return found


def samples(scraped: str, prefix: str) -> float:
    """The sum of the samples whose line starts with `prefix` (0 when none does)."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in scraped.splitlines() if line.startswith(prefix))


#: where a reflected change spends its time, from the virtual kubelet's histograms: (figure, sum line, count line)
TIME_SPLITS = (
    (
        "vk_queue_wait_mean_s",
        'workqueue_queue_duration_seconds_sum{name="configmap-reflection"}',
        'workqueue_queue_duration_seconds_count{name="configmap-reflection"}',
    ),
    (
        "vk_handle_mean_s",
        'controller_runtime_reconcile_time_seconds_sum{controller="configmap-reflection"}',
        'controller_runtime_reconcile_time_seconds_count{controller="configmap-reflection"}',
    ),
)


def reflected(scraped: str, namespace: str) -> float:
    for line in scraped.splitlines():
        if (
            line.startswith("liqo_virtual_kubelet_reflection_item_counter{")
            and f'namespace="{namespace}"' in line
            and 'reflector_resource="configmap"' in line
        ):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


# the steps


async def prepare(rome_cluster: Cluster, milan_cluster: Cluster, rome: Client, milan: Client) -> None:
    await offloading.peer_and_offload(rome_cluster, milan_cluster, rome, milan, (REFLECTED, HELD))
    await milan.create(NAMESPACES, {"metadata": {"name": DIRECT}})


async def latency(
    rome_cluster: Cluster,
    rome: Client,
    milan: Client,
    run: Run,
    args: argparse.Namespace,
    log: Callable[[str], None],
) -> list[str]:
    """Single edits and a burst, reflected and direct; the burst's names (reflected by now)."""
    names = [f"burst-{i:05d}" for i in range(args.burst)]
    await create_configmaps(rome, REFLECTED, ["single", *names])
    await create_configmaps(milan, DIRECT, ["single", *names])
    copies, direct = Copies(milan, twin(REFLECTED)), Copies(milan, DIRECT)
    await copies.start()
    await direct.start()
    try:
        for name in ["single", *names]:
            await copies.seen(name, "0", seconds=300)
        log(f"{args.burst + 1} ConfigMaps reflected")
        put_latencies(run, "direct_single", await singles(milan, DIRECT, direct, args.singles))
        put_latencies(run, "reflect_single", await singles(rome, REFLECTED, copies, args.singles))
        log(f"single edits: reflected p99 {run.figures['reflect_single_p99_s']} s")
        put_latencies(run, f"direct_burst_{args.burst}", await burst(milan, DIRECT, direct, names, "1"))
        kubelet = await virtual_kubelet_pod(rome)
        pids = component_of(rome_cluster, kubelet).pids()
        first, ticks = await scrape(rome_cluster, kubelet), cpu_ticks(pids)
        put_latencies(run, f"reflect_burst_{args.burst}", await burst(rome, REFLECTED, copies, names, "1"))
        run.put("vk_cpu_ms_per_change", round(1000 * (cpu_ticks(pids) - ticks) / CLOCK_TICKS / args.burst, 2))
        log(f"burst of {args.burst}: reflected p99 {run.figures[f'reflect_burst_{args.burst}_p99_s']} s")
        # the Events of the burst are written after the copies: let them land before counting
        await asyncio.sleep(5)
        last = await scrape(rome_cluster, kubelet)
        before, after = requests(first), requests(last)
        for figure, total, count in TIME_SPLITS:
            handled = samples(last, count) - samples(first, count)
            if handled:
                run.put(figure, round((samples(last, total) - samples(first, total)) / handled, 4))
    finally:
        await copies.stop()
        await direct.stop()
    for kind in ("single", f"burst_{args.burst}"):
        for share in ("p50", "p99"):
            run.put(
                f"ratio_{kind}_{share}",
                round(run.figures[f"reflect_{kind}_{share}_s"] / run.figures[f"direct_{kind}_{share}_s"], 2),
            )
    changes = float(args.burst)
    delta = {key: after.get(key, 0.0) - before.get(key, 0.0) for key in set(after) | set(before)}
    for (who, verb), sent in sorted(delta.items()):
        if sent:
            run.put(f"per_change_{who}_{verb}", round(sent / changes, 3))
    run.put(
        "milan_writes_per_change",
        round(sum(v for (cl, verb), v in delta.items() if cl == "provider" and verb in WRITES) / changes, 3),
    )
    run.put(
        "lists_per_change", round(sum(v for (_, verb), v in delta.items() if verb == "list") / changes, 3)
    )
    return names


async def restart(
    rome_cluster: Cluster, rome: Client, run: Run, expected: int, log: Callable[[str], None]
) -> None:
    """SIGKILL the virtual kubelet; once it reflected everything again, the writes it made (there should be none)."""
    kubelet = await virtual_kubelet_pod(rome)
    pid = rome_cluster.container_pid(kubelet, kubelet["spec"]["containers"][0]["name"])
    if pid is None:
        raise RuntimeError("the virtual kubelet's process is not found")
    os.kill(pid, signal.SIGKILL)

    async def again() -> str | None:
        try:
            pod = await virtual_kubelet_pod(rome)
            if not pod["status"].get("podIP"):
                return None
            text = await scrape(rome_cluster, pod)
        except (RuntimeError, OSError, TimeoutError, KeyError):
            return None
        return text if reflected(text, REFLECTED) >= expected else None

    await wait_for(again, seconds=300, what="the virtual kubelet back, everything reflected again")
    await asyncio.sleep(5)
    counted = requests(await scrape(rome_cluster, await virtual_kubelet_pod(rome)))
    run.put(
        "writes_after_restart",
        sum(counted.get(("provider", verb), 0.0) for verb in WRITES) + counted.get(("local", "create"), 0.0),
    )
    run.put("lists_after_restart", sum(v for (_, verb), v in counted.items() if verb == "list"))
    log(
        f"restarted: {run.figures['writes_after_restart']} writes, {run.figures['lists_after_restart']} lists"
    )


async def memory(
    rome_cluster: Cluster, rome: Client, run: Run, count: int, log: Callable[[str], None]
) -> None:
    kubelet = await virtual_kubelet_pod(rome)
    pids = component_of(rome_cluster, kubelet).pids()
    before = rss_bytes(pids)
    run.put("vk_rss_before_mb", round(before / 2**20, 1))
    await create_configmaps(rome, HELD, [f"held-{i:05d}" for i in range(count)])

    async def held() -> bool:
        return reflected(await scrape(rome_cluster, kubelet), HELD) >= count

    started = time.perf_counter()
    await wait_for(held, seconds=max(600.0, count * 0.1), what=f"{count} ConfigMaps reflected")
    run.put(f"hold_{count}_seconds", round(time.perf_counter() - started, 1))
    after = rss_bytes(pids)
    run.put("vk_rss_after_mb", round(after / 2**20, 1))
    run.put(f"vk_rss_per_{count}_mb", round((after - before) / 2**20, 1))
    log(f"{count} held: RSS {run.figures['vk_rss_after_mb']} MB")


async def measure(state_dir: Path, args: argparse.Namespace, run: Run, log: Callable[[str], None]) -> None:
    specs = resolve([CONSUMER, PROVIDER], state_dir=state_dir, nodes=1)
    clusters = await up(specs, state_dir=state_dir)
    try:
        rome_cluster, milan_cluster = clusters
        async with rome_cluster.client() as rome, milan_cluster.client() as milan:
            await prepare(rome_cluster, milan_cluster, rome, milan)
            log("peered; namespaces offloaded")
            names = await latency(rome_cluster, rome, milan, run, args, log)
            # the burst's ConfigMaps, `single` and kube-root-ca.crt
            await restart(rome_cluster, rome, run, len(names) + 2, log)
            await memory(rome_cluster, rome, run, args.hold, log)
    finally:
        await down([CONSUMER, PROVIDER], state_dir=state_dir)


def table(report: Mapping[str, Any]) -> str:
    lines = harness.target_lines(report["targets"], width=44, loads=report["load_averages"])
    lines += [
        f"  {name:<42} {value:>10}  (load {report['load_averages'].get(name, '-')})"
        for name, value in sorted(report["figures"].items())
    ]
    return "\n".join(lines + harness.footnotes(report))


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__, step_failures=True)
    parser.add_argument("--singles", type=int, default=100, help="single edits, one after the other")
    parser.add_argument("--burst", type=int, default=1000, help="ConfigMaps edited at once")
    parser.add_argument("--hold", type=int, default=10000, help="ConfigMaps reflected for the memory figure")
    harness.add_state_dir(parser)
    args = parser.parse_args(argv)

    run = Run()
    harness.measure(measure, args, run, prefix="bench-reflect-", errors=STEP_ERRORS)
    return harness.conclude(
        run,
        args,
        targets=targets(args.burst, args.hold),
        table=table,
        sections={"load_averages": run.loads},
        load_key="load_average_at_end",
    )


if __name__ == "__main__":
    sys.exit(main())
