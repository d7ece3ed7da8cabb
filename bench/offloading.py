"""Benchmark of offloading on playground clusters (`python bench/offloading.py`).

Two playground clusters (rome consumes, milan provides) with the runtime as process pods,
installed and peered as the Terraform resources do it (`playground.liqo`), and namespaces
offloaded as `liqo_offload` does. Measures, in the same run:

- create-to-Running latency of batches of `--sizes` pods (1, 100 and 1,000 by default):
  each pod from its create request until a watch on rome shows it Running, p50 and p99,
  for pods bound to rome's own nodes (the baseline: the node agent runs them) and for
  pods bound to the virtual node `liqo-milan` in an offloaded namespace (the virtual
  kubelet's reflection, milan's ShadowPod controller, scheduler and node agent, and the
  status back). Both are bound by `spec.nodeName`, so neither goes through rome's
  scheduler and the comparison is of the two kubelets; the ratios offloaded/local are the
  figures the targets speak of (p50 within 1.5x, p99 within 2x);
- the virtual kubelet's RSS and CPU while it holds 1,000 and `--hold` (10,000) offloaded
  pods: pods bound to `liqo-milan` in one burst, until milan holds a ShadowPod for each;
  "held without errors" means every ShadowPod exists and the virtual kubelet is the same
  process (no crash, no restart). milan has only `--nodes` nodes of 110 pods each, so most
  of its Pods stay Pending there; what is measured is the virtual kubelet holding them.
  `--sizes 1 --hold 10000` measures only this on one node per cluster.

`--real` runs it on real nodes (`KUBEBUILDER_ASSETS` naming the folder of `make
real-k8s`): containerd, kubelet and kube-proxy per node, the runtime image and the nginx
test image built from Debian packages (tools/images) and loaded into every node, so both
the local and the offloaded pods are containers started by a real kubelet (milan's for
the offloaded ones) and every runtime component is a container. Its defaults are sizes
1, 20 and 100, no hold, and Liqo's own targets: p50 within 1.3x,
p99 within 1.6x. It also reports the RSS of each runtime component's container (its
processes) in both clusters and the runtime image's size (the archive, and unpacked).

Prints a table and a JSON document with every figure, target and pass/fail (`--json
PATH` writes the document there; `--strict` exits 1 when a target is missed or a step
failed). The clusters are stopped and removed at the end, also when a step fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

# `python bench/offloading.py` puts bench/ first on sys.path: the repository root instead (see bench.harness).
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench import harness
from bench.harness import Run, Target
from bench.peering import CLOCK_TICKS, STEP_ERRORS, Component, component_of, cpu_ticks, rss_bytes
from playground.cluster import Cluster, down, resolve, up
from playground.liqo import install_runtime, issue_token, peer
from playground.realbinary import find_assets
from runtime.api import constants as c
from runtime.api.crds import NAMESPACEOFFLOADINGS, SHADOWPODS
from runtime.api.kinds import NAMESPACES, NODES, PODS, SERVICEACCOUNTS
from runtime.core import Client, NotFoundError
from runtime.forge import conditions
from runtime.forge import virtualnode as forge_vn
from runtime.forge.namespaceoffloading import namespace_offloading
from tools.images import oci

ROOT = Path(__file__).resolve().parent.parent
IMAGES_TOOL = ROOT / "tools" / "images" / "build.py"

CONSUMER, PROVIDER = "rome", "milan"
VIRTUAL_NODE = forge_vn.node_name_for(PROVIDER)
LOCAL_NAMESPACE, OFFLOADED_NAMESPACE, HELD_NAMESPACE = "bench-local", "bench-offloaded", "bench-held"
#: pods created at once (each a request of its own)
CREATE_CONCURRENCY = 50
#: how long one batch may take to be Running, per pod, and at least
SECONDS_PER_POD, MIN_BATCH_SECONDS = 1.0, 120.0
#: on real nodes each pod is a sandbox and a container (13 MB shim each): a batch may take a few times longer
REAL_SECONDS_PER_POD = 5.0
POLL = 1.0


def targets(sizes: Sequence[int], hold: int, *, real: bool = False) -> list[Target]:
    """The ratio targets per size (on real nodes Liqo's: 1.3x and 1.6x), and the hold's when there is one."""
    p50, p99 = (1.3, 1.6) if real else (1.5, 2.0)
    found = []
    for size in sizes:
        found += [
            Target(f"offloaded/local p50, {size} pods", f"ratio_p50_{size}", p50, "x"),
            Target(f"offloaded/local p99, {size} pods", f"ratio_p99_{size}", p99, "x"),
        ]
    if hold >= 1000:
        found.append(Target("virtual kubelet RSS, 1,000 pods", "vk_rss_1000_mb", 150.0, "MB"))
    if hold:
        found.append(Target(f"pods held without errors, of {hold}", f"held_missing_{hold}", 1.0, "pods"))
    return found


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)]


def pod(name: str, node: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {
            "nodeName": node,
            # never pulled: on real nodes the image is the one loaded (`nginx` alone would be `:latest`, pulled)
            "containers": [{"name": "web", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent"}],
            "terminationGracePeriodSeconds": 0,
        },
    }


async def create_pods(
    api: Client, namespace: str, nodes: Sequence[str], count: int, prefix: str
) -> dict[str, float]:
    """Create `count` pods round-robin over `nodes`; each name with when its create request was sent."""
    sent: dict[str, float] = {}
    gate = asyncio.Semaphore(CREATE_CONCURRENCY)

    async def one(index: int) -> None:
        name = f"{prefix}-{index:05d}"
        async with gate:
            sent[name] = time.perf_counter()
            await api.create(PODS, pod(name, nodes[index % len(nodes)]), namespace=namespace)

    await asyncio.gather(*(one(index) for index in range(count)))
    return sent


async def running_times(api: Client, namespace: str, names: set[str], *, seconds: float) -> dict[str, float]:
    """When (perf counter) a watch first showed each pod of `names` Running."""
    seen: dict[str, float] = {}
    listed = await api.list(PODS, namespace=namespace)
    now = time.perf_counter()
    for item in listed.items:
        if item["metadata"]["name"] in names and (item.get("status") or {}).get("phase") == "Running":
            seen[item["metadata"]["name"]] = now
    deadline = time.perf_counter() + seconds
    version = listed.resource_version
    while len(seen) < len(names):
        left = deadline - time.perf_counter()
        if left <= 0:
            raise RuntimeError(f"{namespace}: {len(seen)}/{len(names)} pods Running after {seconds:g} s")
        events = api.watch(PODS, namespace=namespace, resource_version=version, timeout_seconds=min(left, 60))
        async with contextlib.aclosing(events):
            async for event in events:
                obj = event["object"]
                version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                name = (obj.get("metadata") or {}).get("name")
                if name in names and name not in seen and (obj.get("status") or {}).get("phase") == "Running":
                    seen[name] = time.perf_counter()
                    if len(seen) == len(names):
                        break
    return seen


async def batch(
    api: Client, namespace: str, nodes: Sequence[str], size: int, prefix: str, *, per_pod: float
) -> list[float]:
    """Create-to-Running seconds of each pod of one batch (bounded by `per_pod` seconds a pod, at least
    MIN_BATCH_SECONDS); the batch is deleted afterwards."""
    seconds = max(MIN_BATCH_SECONDS, size * per_pod)
    names = {f"{prefix}-{index:05d}" for index in range(size)}
    watcher = asyncio.create_task(running_times(api, namespace, names, seconds=seconds))
    await asyncio.sleep(0.2)
    sent = await create_pods(api, namespace, nodes, size, prefix)
    running = await watcher
    latencies = [running[name] - sent[name] for name in names]
    await delete_all(api, namespace, seconds=seconds)
    return latencies


async def delete_all(api: Client, namespace: str, *, seconds: float) -> None:
    for item in (await api.list(PODS, namespace=namespace)).items:
        with contextlib.suppress(NotFoundError):
            await api.delete(PODS, item["metadata"]["name"], namespace=namespace, grace_period_seconds=0)
    deadline = time.perf_counter() + seconds
    while (await api.list(PODS, namespace=namespace)).items:
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{namespace}: pods still there {seconds:g} s after their deletion")
        await asyncio.sleep(POLL)


async def wait_for(
    check: Callable[[], Awaitable[Any]], *, seconds: float, what: str, every: float = POLL
) -> Any:
    """The first truthy value of `check`, polled every `every` s; RuntimeError naming `what` after `seconds`."""
    deadline = time.perf_counter() + seconds
    while True:
        value = await check()
        if value:
            return value
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{what}: not after {seconds:g} s")
        await asyncio.sleep(every)


async def virtual_kubelet(cluster: Cluster, api: Client) -> Component:
    pods = (
        await api.list(
            PODS,
            namespace=f"{c.TENANT_NAMESPACE_PREFIX}{PROVIDER}",
            label_selector=f"{c.LABEL_COMPONENT}={forge_vn.COMPONENT}",
        )
    ).items
    running = [item for item in pods if (item.get("status") or {}).get("phase") == "Running"]
    if len(running) != 1:
        raise RuntimeError(f"{CONSUMER}: {len(running)} virtual kubelet pods Running, not 1")
    return component_of(cluster, running[0])


async def peer_and_offload(
    rome_cluster: Cluster, milan_cluster: Cluster, rome: Client, milan: Client, namespaces: Sequence[str]
) -> None:
    """The runtime in both clusters, rome peered with milan (its virtual node Ready), and `namespaces` made on
    rome and offloaded (Ready): what every bench on a peering measures on."""
    _, identity = await asyncio.gather(install_runtime(rome_cluster), install_runtime(milan_cluster))
    await peer(rome, identity, await issue_token(milan))

    async def node_ready() -> bool:
        try:
            node = await rome.get(NODES, VIRTUAL_NODE)
        except NotFoundError:
            return False
        return conditions.is_true((node.get("status") or {}).get("conditions"), "Ready")

    await wait_for(node_ready, seconds=300, what=f"{VIRTUAL_NODE} Ready")
    for namespace in namespaces:
        await rome.create(NAMESPACES, {"metadata": {"name": namespace}})
        await rome.create(NAMESPACEOFFLOADINGS, namespace_offloading(namespace))

        async def offloaded(namespace: str = namespace) -> bool:
            found = await rome.get(NAMESPACEOFFLOADINGS, "offloading", namespace=namespace)
            return (found.get("status") or {}).get("offloadingPhase") == c.PHASE_READY

        await wait_for(offloaded, seconds=120, what=f"{namespace} offloaded")


async def prepare(rome_cluster: Cluster, milan_cluster: Cluster, rome: Client, milan: Client) -> None:
    await peer_and_offload(rome_cluster, milan_cluster, rome, milan, (OFFLOADED_NAMESPACE, HELD_NAMESPACE))
    await rome.create(NAMESPACES, {"metadata": {"name": LOCAL_NAMESPACE}})
    for namespace in (LOCAL_NAMESPACE, OFFLOADED_NAMESPACE, HELD_NAMESPACE):

        async def account(namespace: str = namespace) -> bool:
            try:
                await rome.get(SERVICEACCOUNTS, "default", namespace=namespace)
            except NotFoundError:
                return False
            return True

        await wait_for(account, seconds=60, what=f"{namespace}: ServiceAccount default")


async def latencies(
    rome: Client, run: Run, sizes: Sequence[int], local_nodes: Sequence[str], log: Any, *, per_pod: float
) -> None:
    for size in sizes:
        local = await batch(rome, LOCAL_NAMESPACE, local_nodes, size, f"local-{size}", per_pod=per_pod)
        offloaded = await batch(
            rome, OFFLOADED_NAMESPACE, [VIRTUAL_NODE], size, f"offloaded-{size}", per_pod=per_pod
        )
        for name, values in (("local", local), ("offloaded", offloaded)):
            run.figures[f"{name}_p50_{size}_s"] = round(statistics.median(values), 3)
            run.figures[f"{name}_p99_{size}_s"] = round(percentile(values, 0.99), 3)
        for share in ("p50", "p99"):
            run.figures[f"ratio_{share}_{size}"] = round(
                run.figures[f"offloaded_{share}_{size}_s"] / run.figures[f"local_{share}_{size}_s"], 2
            )
        log(
            f"{size} pods: local p50 {run.figures[f'local_p50_{size}_s']} s, offloaded p50 "
            f"{run.figures[f'offloaded_p50_{size}_s']} s"
        )


async def hold(rome_cluster: Cluster, rome: Client, milan: Client, run: Run, count: int, log: Any) -> None:
    twin = f"{HELD_NAMESPACE}-{CONSUMER}"
    kubelet = await virtual_kubelet(rome_cluster, rome)
    pids = kubelet.pids()
    ticks, started = cpu_ticks(pids), time.perf_counter()
    creating = asyncio.create_task(create_pods(rome, HELD_NAMESPACE, [VIRTUAL_NODE], count, "held"))
    marks = sorted({mark for mark in (1000, count) if mark <= count})
    deadline = time.perf_counter() + max(600.0, count * 0.2)
    shadows = 0
    while marks:
        shadows = len((await milan.list(SHADOWPODS, namespace=twin)).items)
        while marks and shadows >= marks[0]:
            mark = marks.pop(0)
            elapsed = time.perf_counter() - started
            run.figures[f"vk_rss_{mark}_mb"] = round(rss_bytes(pids) / 2**20, 1)
            run.figures[f"vk_cpu_{mark}_percent"] = round(
                100 * (cpu_ticks(pids) - ticks) / CLOCK_TICKS / elapsed, 1
            )
            run.figures[f"held_{mark}_seconds"] = round(elapsed, 1)
            log(f"{mark} pods held: virtual kubelet RSS {run.figures[f'vk_rss_{mark}_mb']} MB")
        if time.perf_counter() > deadline:
            run.notes.append(f"only {shadows} of {count} ShadowPods on {PROVIDER} within the bound")
            break
        await asyncio.sleep(2.0)
    await creating
    again = await virtual_kubelet(rome_cluster, rome)
    restarted = again.record.pid != kubelet.record.pid
    if restarted:
        run.notes.append("the virtual kubelet restarted while holding the pods")
    run.figures[f"held_missing_{count}"] = float(count - shadows + (count if restarted else 0))


def build_images(folder: Path) -> list[Path]:
    """The runtime image and the test images as archives (tools/images, cached after the first build)."""
    archives = []
    for image in ("runtime", "test"):
        printed = subprocess.run(
            [sys.executable, str(IMAGES_TOOL), image, "--out", str(folder)],
            stdout=subprocess.PIPE,
            text=True,
            check=True,
        ).stdout
        archives += [Path(line) for line in printed.split()]
    return archives


async def component_memory(clusters: Sequence[Cluster], run: Run, log: Any) -> None:
    """The RSS of each runtime component's container (every process of it), in each cluster."""
    for cluster in clusters:
        async with cluster.client() as api:
            pods = (await api.list(PODS)).items
        for item in pods:
            namespace = item["metadata"]["namespace"]
            if namespace != c.DEFAULT_NAMESPACE and not namespace.startswith(c.TENANT_NAMESPACE_PREFIX):
                continue
            component = component_of(cluster, item)
            key = f"rss_{cluster.name}_{component.record.role}_mb"
            run.figures[key] = round(rss_bytes(component.pids()) / 2**20, 1)
            log(f"{cluster.name}: {component.name} ({component.record.role}) RSS {run.figures[key]} MB")


def image_size(archive: Path, run: Run) -> None:
    run.figures["runtime_image_archive_mb"] = round(archive.stat().st_size / 1e6, 1)
    run.figures["runtime_image_unpacked_mb"] = round(oci.unpacked_size(archive) / 1e6, 1)


async def measure(state_dir: Path, args: argparse.Namespace, run: Run, log: Any) -> None:
    sizes = [int(size) for size in args.sizes.split(",") if size]
    # with more than one node, the control-plane node is tainted: milan's scheduler places the Pods of ShadowPods
    # on its workers only (about 105 pods each, after the DaemonSets)
    nodes = args.nodes or (1 if max(sizes) <= 90 else math.ceil(max(sizes) / 100) + 2)
    archives = await asyncio.to_thread(build_images, state_dir / "images") if args.real else []
    specs = resolve([CONSUMER, PROVIDER], state_dir=state_dir, nodes=nodes, real_nodes=args.real or None)
    try:
        # inside: `up` that fails for one cluster leaves the other running
        rome_cluster, milan_cluster = clusters = await up(specs, state_dir=state_dir)
        for cluster in clusters if args.real else ():
            for archive in archives:
                await cluster.load_image(archive)
        async with rome_cluster.client() as rome, milan_cluster.client() as milan:
            await prepare(rome_cluster, milan_cluster, rome, milan)
            log("peered; namespaces offloaded")
            if args.real:
                await component_memory(clusters, run, log)
                image_size(archives[0], run)
            per_pod = REAL_SECONDS_PER_POD if args.real else SECONDS_PER_POD
            await latencies(rome, run, sizes, rome_cluster.node_names, log, per_pod=per_pod)
            if args.hold:
                await hold(rome_cluster, rome, milan, run, args.hold, log)
    finally:
        await down([CONSUMER, PROVIDER], state_dir=state_dir)


def table(report: dict[str, Any]) -> str:
    lines = harness.target_lines(report["targets"], width=40)
    lines += [f"  {name:<38} {value}" for name, value in sorted(report["figures"].items())]
    return "\n".join(lines + harness.footnotes(report))


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__, step_failures=True)
    parser.add_argument(
        "--sizes", help="pods per latency batch, comma-separated (default 1,100,1000; with --real 1,20,100)"
    )
    parser.add_argument(
        "--hold",
        type=int,
        help="pods the virtual kubelet holds at the end (default 10000; with --real 0: none)",
    )
    parser.add_argument(
        "--real",
        action="store_true",
        help="on real nodes (KUBEBUILDER_ASSETS naming the folder of make real-k8s): pods are containers",
    )
    parser.add_argument(
        "--nodes", type=int, default=0, help="nodes per cluster (default: enough for the largest batch)"
    )
    harness.add_state_dir(parser)
    args = parser.parse_args(argv)
    if args.real:
        assets = find_assets(os.environ)
        if assets is None or not assets.runs_real_nodes:
            parser.error(
                "--real needs KUBEBUILDER_ASSETS naming a folder that runs real nodes (make real-k8s)"
            )
    args.sizes = args.sizes or ("1,20,100" if args.real else "1,100,1000")
    args.hold = (0 if args.real else 10000) if args.hold is None else args.hold

    sizes = [int(size) for size in args.sizes.split(",") if size]
    run = Run()
    harness.measure(measure, args, run, prefix="bench-offload-", errors=STEP_ERRORS)
    return harness.conclude(run, args, targets=targets(sizes, args.hold, real=args.real), table=table)


if __name__ == "__main__":
    sys.exit(main())
