"""Benchmark of peering on playground clusters (`python bench/peering.py`).

Runs real playground clusters whose runtime pods run as local processes (the node
agent's process runner), installed as `liqo_install` does it, and peers them by writing
exactly what `liqo_peer` writes with a token issued as `liqo_generate` issues it (all
three through `playground.liqo`). Measures:

- to Ready: from the ForeignCluster's creation on the consumer until its virtual node
  `liqo-<provider>` is Ready (polled every 50 ms; also when it was first registered),
  for one provider, `--repeats` times with an unpeer (ForeignCluster deleted, its
  virtual node gone) in between: p50 and max;
- idle: RSS and CPU (% of one core) of each runtime component of the consumer
  (controller manager, auth service, webhook, and the virtual kubelet of the peering)
  over `--idle-seconds`, and of the controller manager before any peering;
- ten providers: the consumer peers with `--providers` provider clusters at once (the
  ForeignClusters created together): the time until every virtual node is Ready, the
  controller manager's CPU and peak RSS meanwhile (sampled every 100 ms), then its idle
  RSS and CPU with all those peerings. Providers are started in batches; when a batch
  does not come up, the run goes on with those that did and says so in `notes`.

Processes are found through the node agent's pid files (`Cluster.container_pid`), with
their descendants; RSS is `VmRSS` of
`/proc/<pid>/status`, CPU is utime + stime of `/proc/<pid>/stat`.

Wall-clock figures on a shared two-core machine are noisy, so the run also measures
baselines in the same conditions and prints ratios against them: the playground's own
time to bring the consumer and the first provider up (`playground.cluster.up`), a
trivial process pod's time from its Deployment's creation to Running on the consumer
(the same path a virtual kubelet's pod takes), and `python -c "import
runtime.virtualkubelet.main"` (what the virtual kubelet's process does before it can
register its node). Prints a table and a JSON document with every figure, target and
pass/fail (`--json PATH` writes the document there instead of stdout; `--strict` exits
1 when a target is missed or a step failed). The clusters are stopped and removed at
the end, also when a step fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

# `python bench/peering.py` puts bench/ first on sys.path: the repository root instead (see bench.harness).
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench import harness
from bench.harness import Run, Target
from playground import processes
from playground.cluster import Cluster, ClusterError, down, resolve, up
from playground.liqo import NAMESPACE, Identity, install_runtime, issue_token, peer
from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS
from runtime.api.image import runtime_image
from runtime.api.kinds import DEPLOYMENTS, NODES, PODS, SECRETS
from runtime.core import APIError, Client, NotFoundError
from runtime.forge import conditions, install, peering, tokens
from runtime.forge import virtualnode as forge_vn
from runtime.operations import peering as foreigncluster

T = TypeVar("T")
#: what a failed step on playground clusters raises (here and in the other playground benches)
STEP_ERRORS = (RuntimeError, ClusterError, OSError, TimeoutError, APIError)
Log = Callable[[str], None]

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
CONSUMER = "rome"
#: the runtime components of a consumer, as their pods' `app.kubernetes.io/component` label says
COMPONENTS = (*install.COMPONENTS, forge_vn.COMPONENT)
POLL = 0.05
SAMPLE = 0.1
SETTLE_SECONDS = 3.0
PEER_SECONDS = 120.0
UNPEER_SECONDS = 60.0
TRIVIAL_RUNS = 3
TRIVIAL = "bench-trivial"
VIRTUAL_KUBELET_MODULE = "runtime.virtualkubelet.main"


def key(component: str) -> str:
    return component.replace("-", "_")


TARGETS = [
    Target("ForeignCluster to Ready node, p50", "peer_ready_p50_s", 3.0, "s"),
    Target("ForeignCluster to Ready node, max", "peer_ready_max_s", 3.0, "s"),
    *(
        Target(f"idle RSS, {component}", f"idle_{key(component)}_rss_mb", 80.0, "MB")
        for component in COMPONENTS
    ),
]


def provider_names(count: int) -> list[str]:
    return [f"provider-{index:02d}" for index in range(1, count + 1)]


# processes


@dataclass(frozen=True)
class Component:
    """One runtime container of a cluster, as the node agent started it: its process and descendants."""

    name: str
    pod: str
    record: processes.ProcessRecord

    def pids(self) -> list[int]:
        found = processes.owned_processes(self.record)
        if not found:
            raise RuntimeError(
                f"{self.name} (pod {self.pod}): process {self.record.pid} is gone; the pod restarted or stopped"
            )
        return [info.pid for info in found]


def cpu_ticks(pids: Iterable[int]) -> int:
    total = 0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total


def rss_bytes(pids: Iterable[int]) -> int:
    total = 0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            for line in (Path("/proc") / str(pid) / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
    return total


def component_of(cluster: Cluster, pod: Mapping[str, Any]) -> Component:
    meta = pod["metadata"]
    name = f"{meta['namespace']}/{meta['name']}"
    container = str(pod["spec"]["containers"][0]["name"])
    pid = cluster.container_pid(pod, container)
    info = None if pid is None else processes.read_proc(pid)
    if info is None:
        raise RuntimeError(
            f"{cluster.name}: pod {name}: container {container} has no running process on node "
            f"{pod['spec'].get('nodeName')}; is it a process pod that runs?"
        )
    record = processes.ProcessRecord(
        role=str(meta["labels"][c.LABEL_COMPONENT]),
        pid=info.pid,
        start_time=info.start_time,
        cmdline=info.cmdline,
        log="",
    )
    return Component(record.role, name, record)


async def components(cluster: Cluster, api: Client) -> list[Component]:
    """The running runtime components of `cluster` (virtual kubelets included), by their pods."""
    selector = f"{c.LABEL_COMPONENT} in ({','.join(COMPONENTS)})"
    pods = (await api.list(PODS, label_selector=selector)).items
    running = [
        pod
        for pod in pods
        if (pod.get("status") or {}).get("phase") == "Running"
        and not pod["metadata"].get("deletionTimestamp")
    ]
    return [component_of(cluster, pod) for pod in running]


async def usage(parts: Sequence[Component], seconds: float) -> dict[str, tuple[float, float]]:
    """Each component's (RSS MB at the end, CPU % of one core) over `seconds`."""
    pids = {part.pod: part.pids() for part in parts}
    before = {pod: cpu_ticks(found) for pod, found in pids.items()}
    started = time.perf_counter()
    await asyncio.sleep(seconds)
    elapsed = time.perf_counter() - started
    return {
        part.pod: (
            rss_bytes(pids[part.pod]) / 2**20,
            100 * (cpu_ticks(pids[part.pod]) - before[part.pod]) / CLOCK_TICKS / elapsed,
        )
        for part in parts
    }


@dataclass
class Sampler:
    """The peak RSS (sampled every SAMPLE) and the CPU ticks of one component while something runs."""

    part: Component
    peak_rss: int = 0
    ticks: int = 0
    seconds: float = 0.0

    async def run(self, work: Awaitable[T]) -> T:
        pids = self.part.pids()
        before = cpu_ticks(pids)
        started = time.perf_counter()
        task = asyncio.ensure_future(work)
        while not task.done():
            self.peak_rss = max(self.peak_rss, rss_bytes(pids))
            await asyncio.wait({task}, timeout=SAMPLE)
        self.seconds = time.perf_counter() - started
        self.ticks = cpu_ticks(pids) - before
        self.peak_rss = max(self.peak_rss, rss_bytes(pids))
        return task.result()

    @property
    def cpu_percent(self) -> float:
        return 100 * self.ticks / CLOCK_TICKS / self.seconds if self.seconds else 0.0


# peering


async def until(check: Callable[[], Awaitable[str]], *, seconds: float, what: str) -> float:
    """Poll `check` (it returns "" when done, else what it sees) every POLL; the seconds it took."""
    started = time.perf_counter()
    last = ""
    while True:
        last = await check()
        if not last:
            return time.perf_counter() - started
        if time.perf_counter() - started > seconds:
            raise RuntimeError(f"{what}: not done after {seconds:g} s (last seen: {last})")
        await asyncio.sleep(POLL)


@dataclass(frozen=True)
class Timing:
    """Seconds from the ForeignCluster's creation until its virtual node was registered, and until it was Ready."""

    registered: float
    ready: float


async def ready_seconds(consumer: Client, provider: Identity, started: float) -> Timing:
    """How long after `started` the virtual node standing for `provider` was registered and Ready."""
    name = forge_vn.node_name_for(provider.cluster_name)
    registered: float | None = None

    async def check() -> str:
        nonlocal registered
        try:
            node = await consumer.get(NODES, name)
        except NotFoundError:
            found = await foreigncluster.get(consumer, provider.cluster_name)
            return f"node {name} missing; " + (found.summary() if found else "no ForeignCluster")
        if registered is None:
            registered = time.perf_counter() - started
        return (
            ""
            if conditions.is_true((node.get("status") or {}).get("conditions"), "Ready")
            else f"node {name} is not Ready"
        )

    await until(check, seconds=PEER_SECONDS, what=f"the peering with {provider.cluster_name}")
    ready = time.perf_counter() - started
    return Timing(registered=ready if registered is None else registered, ready=ready)


async def peer_and_wait(consumer: Client, provider: Identity, token: str) -> Timing:
    started = time.perf_counter()
    await peer(consumer, provider, token)
    return await ready_seconds(consumer, provider, started)


async def unpeer(consumer: Client, provider: Client, identity: Identity, token: str) -> float:
    """Delete the ForeignCluster as `liqo_peer`'s destroy does, until it and its node are gone; revoke the token."""
    name = identity.cluster_name
    node = forge_vn.node_name_for(name)
    started = time.perf_counter()
    await consumer.delete(FOREIGNCLUSTERS, name)
    await foreigncluster.wait_gone(consumer, name, seconds=UNPEER_SECONDS)

    async def node_gone() -> str:
        try:
            await consumer.get(NODES, node)
        except NotFoundError:
            return ""
        return f"node {node} still exists"

    await until(node_gone, seconds=UNPEER_SECONDS, what=f"the unpeer of {name}")
    elapsed = time.perf_counter() - started
    with contextlib.suppress(NotFoundError):
        await consumer.delete(SECRETS, peering.token_secret_name(name), namespace=NAMESPACE)
    with contextlib.suppress(NotFoundError):
        await provider.delete(SECRETS, tokens.token_secret_name(token), namespace=NAMESPACE)
    return elapsed


# baselines


def import_seconds(module: str) -> float:
    """The best of three starts of `python -c "import <module>"` (what a component's process does first)."""
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True, capture_output=True)
        runs.append(time.perf_counter() - started)
    return min(runs)


async def trivial_pod(api: Client) -> float:
    """Seconds from a one-replica Deployment of the runtime image (a process pod) to its pod Running."""
    labels = {"app": TRIVIAL}
    body = {
        "metadata": {"name": TRIVIAL, "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "sleep",
                            "image": runtime_image(),
                            "command": ["python", "-c", "import time; time.sleep(3600)"],
                        }
                    ],
                    "terminationGracePeriodSeconds": 0,
                },
            },
        },
    }
    started = time.perf_counter()
    await api.create(DEPLOYMENTS, body, namespace="default")

    async def check() -> str:
        pods = (await api.list(PODS, namespace="default", label_selector=f"app={TRIVIAL}")).items
        phases = [(pod.get("status") or {}).get("phase") for pod in pods]
        return "" if "Running" in phases else f"pods {phases or 'none yet'}"

    await until(check, seconds=PEER_SECONDS, what=f"Deployment default/{TRIVIAL} to run its pod")
    elapsed = time.perf_counter() - started
    await api.delete(DEPLOYMENTS, TRIVIAL, namespace="default")

    async def gone() -> str:
        pods = (await api.list(PODS, namespace="default", label_selector=f"app={TRIVIAL}")).items
        return f"{len(pods)} pod(s) left" if pods else ""

    await until(gone, seconds=PEER_SECONDS, what=f"the pods of Deployment default/{TRIVIAL} to go")
    return elapsed


# the measurements


def put_usage(
    run: Run, prefix: str, measured: Mapping[str, tuple[float, float]], parts: Sequence[Component]
) -> None:
    """`<prefix>_<component>_rss_mb` / `_cpu_percent`; several pods of one component: the largest RSS, summed CPU."""
    for component in COMPONENTS:
        mine = [measured[part.pod] for part in parts if part.name == component and part.pod in measured]
        if not mine:
            continue
        run.figures[f"{prefix}_{key(component)}_rss_mb"] = round(max(rss for rss, _ in mine), 1)
        run.figures[f"{prefix}_{key(component)}_cpu_percent"] = round(sum(cpu for _, cpu in mine), 2)
        if len(mine) > 1:
            run.figures[f"{prefix}_{key(component)}_count"] = len(mine)
            run.figures[f"{prefix}_{key(component)}_rss_mb_total"] = round(sum(rss for rss, _ in mine), 1)


async def one_provider(
    run: Run,
    consumer: Cluster,
    provider: Cluster,
    identity: Identity,
    *,
    repeats: int,
    idle_seconds: float,
    log: Log,
) -> None:
    """Peer, unpeer, peer... `repeats` times; the consumer's components idle before and with the peering."""
    async with consumer.client() as api, provider.client() as provider_api:
        log(f"idle consumer runtime, no peering ({idle_seconds:g} s)")
        await asyncio.sleep(SETTLE_SECONDS)
        parts = await components(consumer, api)
        put_usage(run, "unpeered_idle", await usage(parts, idle_seconds), parts)

        timings: list[Timing] = []
        unpeers: list[float] = []
        token = ""
        for attempt in range(repeats):
            if attempt:
                unpeers.append(await unpeer(api, provider_api, identity, token))
            token = await issue_token(provider_api)
            log(f"peering {attempt + 1}/{repeats} with {identity.cluster_name}")
            timings.append(await peer_and_wait(api, identity, token))
        ready = [timing.ready for timing in timings]
        registered = [timing.registered for timing in timings]
        run.figures["peer_ready_runs"] = len(ready)
        run.figures["peer_ready_p50_s"] = round(statistics.median(ready), 3)
        run.figures["peer_ready_max_s"] = round(max(ready), 3)
        run.figures["peer_ready_min_s"] = round(min(ready), 3)
        run.figures["peer_registered_p50_s"] = round(statistics.median(registered), 3)
        if unpeers:
            run.figures["unpeer_max_s"] = round(max(unpeers), 3)
        run.notes.append("peer_ready_s per run: " + ", ".join(f"{value:.3f}" for value in ready))
        if unpeers:
            run.notes.append("unpeer_s per run: " + ", ".join(f"{value:.3f}" for value in unpeers))

        log(f"idle consumer runtime with one peering ({idle_seconds:g} s)")
        await asyncio.sleep(SETTLE_SECONDS)
        parts = await components(consumer, api)
        put_usage(run, "idle", await usage(parts, idle_seconds), parts)
        await unpeer(api, provider_api, identity, token)


async def start_providers(
    run: Run, state_dir: Path, names: Sequence[str], *, batch: int, log: Log
) -> list[tuple[Cluster, Identity]]:
    """Bring the providers up and install the runtime, `batch` at a time; stop adding at the first batch that fails."""
    started: list[tuple[Cluster, Identity]] = []
    for index in range(0, len(names), batch):
        chunk = list(names[index : index + batch])
        log(f"providers up and installed: {', '.join(chunk)}")
        try:
            clusters = await up(resolve(chunk, state_dir=state_dir), state_dir=state_dir)
            identities = await asyncio.gather(*(install_runtime(cluster) for cluster in clusters))
        except (ClusterError, RuntimeError, OSError, TimeoutError, APIError) as exc:
            run.notes.append(
                f"only {len(started)} of {len(names)} provider clusters fit on this machine: "
                f"{', '.join(chunk)} did not come up ({exc}); measured with {len(started)}"
            )
            with contextlib.suppress(ClusterError, OSError):
                await down(chunk, state_dir=state_dir)
            break
        started += list(zip(clusters, identities, strict=True))
    return started


async def many_providers(
    run: Run,
    consumer: Cluster,
    providers: Sequence[tuple[Cluster, Identity]],
    *,
    idle_seconds: float,
    log: Log,
) -> None:
    """The consumer peers with every provider at once: time to all Ready, controller-manager CPU and RSS."""
    count = len(providers)
    run.figures["burst_providers"] = count
    run.notes.append(
        f"the burst ran {count + 1} playground clusters at once (one consumer, {count} providers)"
    )
    async with contextlib.AsyncExitStack() as stack:
        api = await stack.enter_async_context(consumer.client())
        clients = [await stack.enter_async_context(cluster.client()) for cluster, _ in providers]
        issued = await asyncio.gather(*(issue_token(client) for client in clients))
        await asyncio.sleep(SETTLE_SECONDS)
        managers = [
            part for part in await components(consumer, api) if part.name == install.CONTROLLER_MANAGER
        ]
        if len(managers) != 1:
            raise RuntimeError(
                f"{consumer.name}: {len(managers)} running controller-manager pods in {NAMESPACE}, expected 1"
            )
        sampler = Sampler(managers[0])
        log(f"peering with {count} providers at once")

        async def burst() -> list[Timing]:
            started = time.perf_counter()
            await asyncio.gather(
                *(peer(api, identity, token) for (_, identity), token in zip(providers, issued, strict=True))
            )
            return await asyncio.gather(*(ready_seconds(api, identity, started) for _, identity in providers))

        timings: list[Timing] = await sampler.run(burst())
        ready = [timing.ready for timing in timings]
        run.figures["burst_all_ready_s"] = round(max(ready), 3)
        run.figures["burst_ready_p50_s"] = round(statistics.median(ready), 3)
        run.figures["burst_registered_p50_s"] = round(statistics.median(t.registered for t in timings), 3)
        run.figures["burst_controller_manager_cpu_percent"] = round(sampler.cpu_percent, 1)
        run.figures["burst_controller_manager_peak_rss_mb"] = round(sampler.peak_rss / 2**20, 1)

        log(f"idle consumer runtime with {count} peerings ({idle_seconds:g} s)")
        await asyncio.sleep(SETTLE_SECONDS)
        parts = await components(consumer, api)
        put_usage(run, "burst_idle", await usage(parts, idle_seconds), parts)
        log(f"unpeering the {count} providers")
        await asyncio.gather(
            *(
                unpeer(api, client, identity, token)
                for client, (_, identity), token in zip(clients, providers, issued, strict=True)
            )
        )


async def measure(state_dir: Path, args: argparse.Namespace, run: Run, log: Log) -> None:
    names = provider_names(max(1, args.providers))
    try:
        log(f"baseline: playground up {CONSUMER} {names[0]}")
        started = time.perf_counter()
        consumer, first = await up(resolve([CONSUMER, names[0]], state_dir=state_dir), state_dir=state_dir)
        run.figures["baseline_clusters_ready_s"] = round(time.perf_counter() - started, 3)
        async with consumer.client() as api:
            log(f"baseline: a trivial process pod on {CONSUMER} ({TRIVIAL_RUNS} runs)")
            trivial = [await trivial_pod(api) for _ in range(TRIVIAL_RUNS)]
        run.figures["baseline_trivial_pod_running_s"] = round(statistics.median(trivial), 3)
        run.figures["baseline_import_virtual_kubelet_s"] = round(
            await asyncio.to_thread(import_seconds, VIRTUAL_KUBELET_MODULE), 3
        )
        log("installing the runtime on both (as liqo_install)")
        started = time.perf_counter()
        _, identity = await asyncio.gather(install_runtime(consumer), install_runtime(first))
        run.figures["install_two_clusters_s"] = round(time.perf_counter() - started, 3)
        await one_provider(
            run, consumer, first, identity, repeats=args.repeats, idle_seconds=args.idle_seconds, log=log
        )
        if args.providers > 1:
            started = time.perf_counter()
            more = await start_providers(run, state_dir, names[1:], batch=args.batch, log=log)
            run.figures["burst_providers_up_and_installed_s"] = round(time.perf_counter() - started, 3)
            await many_providers(
                run, consumer, [(first, identity), *more], idle_seconds=args.idle_seconds, log=log
            )
            if len(more) + 1 < args.providers:
                run.notes.append(
                    f"the burst peered {len(more) + 1} providers, not {args.providers}: see the note above"
                )
    finally:
        log("playground down")
        await down([], state_dir=state_dir)


def ratios(figures: Mapping[str, float]) -> dict[str, float]:
    pairs = {
        "peer_ready_p50 / clusters_ready": ("peer_ready_p50_s", "baseline_clusters_ready_s"),
        "peer_ready_p50 / trivial_pod_running": ("peer_ready_p50_s", "baseline_trivial_pod_running_s"),
        "peer_ready_max / trivial_pod_running": ("peer_ready_max_s", "baseline_trivial_pod_running_s"),
        "peer_ready_p50 / import_virtual_kubelet": ("peer_ready_p50_s", "baseline_import_virtual_kubelet_s"),
        "burst_all_ready / peer_ready_p50": ("burst_all_ready_s", "peer_ready_p50_s"),
        "burst_cm_peak_rss / idle_cm_rss": (
            "burst_controller_manager_peak_rss_mb",
            "idle_controller_manager_rss_mb",
        ),
    }
    return {
        name: round(figures[top] / figures[bottom], 2)
        for name, (top, bottom) in pairs.items()
        if top in figures and figures.get(bottom)
    }


def table(report: Mapping[str, Any]) -> str:
    lines = harness.target_lines(report["targets"], width=36)
    lines += [f"  {name:<42} {ratio:>8.2f}x" for name, ratio in report["ratios"].items()]
    return "\n".join(lines + harness.footnotes(report))


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__, step_failures=True)
    parser.add_argument(
        "--repeats", type=int, default=3, help="peerings with one provider (unpeered in between)"
    )
    parser.add_argument("--providers", type=int, default=10, help="providers the consumer peers with at once")
    parser.add_argument("--batch", type=int, default=3, help="provider clusters started together")
    parser.add_argument("--idle-seconds", type=float, default=10.0, help="length of each idle measurement")
    harness.add_state_dir(parser, cleared=True)
    args = parser.parse_args(argv)

    run = Run()
    harness.measure(measure, args, run, prefix="bench-peering-", errors=STEP_ERRORS)
    return harness.conclude(run, args, targets=TARGETS, table=table, sections={"ratios": ratios(run.figures)})


if __name__ == "__main__":
    sys.exit(main())
