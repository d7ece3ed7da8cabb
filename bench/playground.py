"""Benchmark of whole playground clusters (`make bench`).

Measures, each in a fresh temporary state dir:

- cold start: `playground up a b` (the CLI, as a user runs it) until it returns, which
  is when both clusters are ready (API `/readyz`, nodes Ready, default ServiceAccount,
  control plane healthy); best of `--starts` runs;
- 100 pods: a 100-replica Deployment on a 3-node cluster, from the create until all
  100 pods are Running (polled every 50 ms);
- pod start: one pod at a time on a 1-node cluster, from the create until it is Running
  (polled every 10 ms), the median of `POD_STARTS` starts, for a process pod (the
  runtime's image, a real process) and for a simulated pod;
- the old network model: the cold start, the 100 pods and the pod starts again with
  `--network loopback` (every process on the host's loopback addresses, no namespaces),
  so the cost of kind's network (a namespace, links and an address per pod, kube-proxy
  per node) shows as a ratio measured in the same run (target: pod starts within 1.5x);
- idle: CPU (% of one core) and memory (RSS) of the two-cluster playground over 10 s,
  summed over every process it started and their children, from /proc;
- real-binary mode, when `--real DIR` (default `$KUBEBUILDER_ASSETS`) names the real
  binaries (`make real-k8s`): `playground up rome` and `playground up rome milan` on the
  emulator, on the real control plane with agent nodes, and (when DIR has kubelet and
  its images) on real nodes, their ratios, `playground down` of the two real clusters,
  and how long the supervisor took to stop each process (from its log);
- real nodes, when DIR has kubelet: a node Ready after its kubelet starts (a worker's
  kubelet stopped, its Node deleted, the kubelet started again: until the new Node is
  Ready, polled every 20 ms), a pod Running after its create (the sandbox image, one at
  a time, the median of `POD_STARTS`), and the memory (RSS) of each node's kubelet,
  containerd, kube-proxy and containerd shims on an idle two-node cluster.

`--real-only` measures only the last two (and the baseline for the ratios).

Wall-clock figures on a shared two-core machine are noisy, so the run also measures
baselines in the same conditions and prints ratios against them: the start-up of a
bare `python -c pass`, of `python -c "import runtime.core"` (what every component
imports) and of one bare API server emulator (process start until its kubeconfig is
written).

Prints a table and a JSON document with every figure, target and pass/fail (`--json
PATH` writes the document there instead of stdout; `--strict` exits 1 when a target
is missed).
"""

from __future__ import annotations

import asyncio
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# `python bench/playground.py` puts bench/ first on sys.path: the repository root instead (see bench.harness).
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench import harness
from bench.harness import Target
from playground import processes
from playground.cluster import AGENT_NODES_ENV, Cluster, down, resolve, up
from playground.realbinary import ASSETS_ENV, SANDBOX_IMAGE, find_assets
from playground.realnode import mountns
from playground.spec import CONTAINERD_ROLE_PREFIX, KUBE_PROXY_ROLE_PREFIX, NODE_ROLE_PREFIX, node_netns_name
from runtime.api.image import runtime_image
from runtime.api.kinds import DEPLOYMENTS, NODES, PODS
from runtime.core import Client, NotFoundError

PYTHON = sys.executable
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
REPLICAS = 100
POD_STARTS = 10
#: a process pod's container: the runtime's image runs it as a local process that waits
SLEEPER = ["python", "-c", "import time; time.sleep(3600)"]
SIMULATED_IMAGE = "registry.k8s.io/pause:3.10"
IDLE_SECONDS = 10.0
SETTLE_SECONDS = 3.0


TARGETS = [
    Target("two clusters ready", "up_two_clusters_s", 5.0, "s"),
    Target("100 pods Running on 3 nodes", "hundred_pods_running_s", 5.0, "s"),
    Target("process pod start vs old model", "process_pod_start_ratio", 1.5, "x"),
    Target("simulated pod start vs old model", "simulated_pod_start_ratio", 1.5, "x"),
    Target("idle two-cluster playground", "idle_cpu_percent", 1.0, "% of a core"),
]
NETNS, LOOPBACK = "netns", "loopback"


def timed(argv: list[str], **kwargs: Any) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, **kwargs)
    return time.perf_counter() - started


def emulator_start(directory: Path) -> float:
    """Start a bare emulator and return the time until its kubeconfig appears."""
    kubeconfig = directory / "kubeconfig"
    started = time.perf_counter()
    process = subprocess.Popen(
        [PYTHON, "-m", "playground.apiserver", "--listen", "127.0.0.1:0", "--state-dir", str(directory)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while not kubeconfig.exists():
            if process.poll() is not None:
                raise RuntimeError(f"the emulator exited with {process.returncode}")
            time.sleep(0.005)
        return time.perf_counter() - started
    finally:
        process.terminate()
        process.wait()


def cold_start(
    directory: Path,
    names: tuple[str, ...] = ("a", "b"),
    *,
    network: str = NETNS,
    assets: Path | None = None,
    agent_nodes: bool = False,
) -> float:
    """`playground up NAMES` from an empty state dir (real binaries from `assets`; with `agent_nodes`, node
    agents even when they could run real nodes), then `playground down`."""
    env = {**os.environ, "PLAYGROUND_STATE_DIR": str(directory), ASSETS_ENV: str(assets or "")}
    env.pop(AGENT_NODES_ENV, None)
    if agent_nodes:
        env[AGENT_NODES_ENV] = "1"
    try:
        return timed(
            [PYTHON, "-m", "playground", "up", *names, "--network", network, "--wait", "180"], env=env
        )
    finally:
        subprocess.run([PYTHON, "-m", "playground", "down"], env=env, check=True, capture_output=True)


#: what the supervisor logs for each process it stopped
_STOPPED = re.compile(r" INFO playground\.supervisor: (\S+) stopped in ([0-9.]+) s$")


def real_binary(root: Path, assets: Path, log: Any) -> dict[str, float]:
    """`playground up rome` and `up rome milan` in each mode, and the real clusters' stop."""
    figures: dict[str, float] = {}
    found = find_assets({ASSETS_ENV: str(assets)})
    real_nodes = found is not None and found.runs_real_nodes
    for label, names in (("one", ("rome",)), ("two", ("rome", "milan"))):
        log(f"playground up {' '.join(names)}: emulator, real control plane{', real nodes' * real_nodes}")
        figures[f"up_{label}_emulator_s"] = round(cold_start(root / f"emulator-{label}", names), 3)
        figures[f"up_{label}_real_s"] = round(
            cold_start(root / f"real-{label}", names, assets=assets, agent_nodes=True), 3
        )
        if real_nodes:
            figures[f"up_{label}_real_nodes_s"] = round(
                cold_start(root / f"nodes-{label}", names, assets=assets), 3
            )
    directory = root / "real-down"
    env = {**os.environ, "PLAYGROUND_STATE_DIR": str(directory), ASSETS_ENV: str(assets)}
    subprocess.run(
        [PYTHON, "-m", "playground", "up", "rome", "milan", "--wait", "180"],
        env=env,
        check=True,
        capture_output=True,
    )
    figures["down_two_real_s"] = round(timed([PYTHON, "-m", "playground", "down", "--keep"], env=env), 3)
    stops: dict[str, list[float]] = {}
    for name in ("rome", "milan"):
        for line in (directory / name / "logs" / "supervisor.log").read_text().splitlines():
            if match := _STOPPED.search(line):
                role = match.group(1).split("/")[0]
                stops.setdefault(role, []).append(float(match.group(2)))
    figures |= {f"real_stop_{role}_max_s": max(seconds) for role, seconds in stops.items()}
    subprocess.run([PYTHON, "-m", "playground", "down"], env=env, check=True, capture_output=True)
    return figures


async def hundred_pods(directory: Path, network: str = NETNS) -> float:
    specs = resolve(["hundred"], state_dir=directory, environ={}, nodes=3, network=network)
    (cluster,) = await up(specs, state_dir=directory)
    try:
        async with cluster.client() as api:
            body = {
                "metadata": {"name": "hundred"},
                "spec": {
                    "replicas": REPLICAS,
                    "selector": {"matchLabels": {"app": "hundred"}},
                    "template": {
                        "metadata": {"labels": {"app": "hundred"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
                    },
                },
            }
            started = time.perf_counter()
            await api.create(DEPLOYMENTS, body, namespace="default")
            while True:
                pods = (await api.list(PODS, namespace="default", label_selector="app=hundred")).items
                if sum(pod["status"].get("phase") == "Running" for pod in pods) >= REPLICAS:
                    return time.perf_counter() - started
                if time.perf_counter() - started > 120:
                    raise RuntimeError("the 100 pods were not Running after 120 s")
                await asyncio.sleep(0.05)
    finally:
        await down(["hundred"], state_dir=directory)


async def _start_pod(api: Client, name: str, container: dict[str, Any]) -> float:
    """Seconds from the create of a pod until it is Running; the pod is deleted again."""
    body = {
        "metadata": {"name": name},
        "spec": {"containers": [container], "terminationGracePeriodSeconds": 0},
    }
    started = time.perf_counter()
    await api.create(PODS, body, namespace="default")
    try:
        while True:
            pod = await api.get(PODS, name, namespace="default")
            if (pod.get("status") or {}).get("phase") == "Running":
                return time.perf_counter() - started
            if time.perf_counter() - started > 60:
                raise RuntimeError(f"pod {name} was not Running after 60 s")
            await asyncio.sleep(0.01)
    finally:
        await api.delete(PODS, name, namespace="default", grace_period_seconds=0)


async def pod_starts(directory: Path, network: str = NETNS) -> dict[str, float]:
    """Median start latency of a process pod and of a simulated pod, one at a time on one node."""
    specs = resolve(["starts"], state_dir=directory, environ={}, network=network)
    (cluster,) = await up(specs, state_dir=directory)
    try:
        async with cluster.client() as api:
            process = {"name": "c", "image": runtime_image(), "command": SLEEPER}
            simulated = {"name": "c", "image": SIMULATED_IMAGE}
            processes_s = [await _start_pod(api, f"process-{i}", process) for i in range(POD_STARTS)]
            simulated_s = [await _start_pod(api, f"simulated-{i}", simulated) for i in range(POD_STARTS)]
        return {
            "process_pod_start_s": round(statistics.median(processes_s), 3),
            "simulated_pod_start_s": round(statistics.median(simulated_s), 3),
        }
    finally:
        await down(["starts"], state_dir=directory)


def _cpu_ticks(pid: int) -> int:
    fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _rss_bytes(pid: int) -> int:
    for line in (Path("/proc") / str(pid) / "status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _playground_pids(clusters: list[Cluster]) -> list[int]:
    return [
        info.pid
        for cluster in clusters
        for record in cluster.records().values()
        for info in processes.owned_processes(record)
    ]


async def idle(directory: Path) -> dict[str, float]:
    clusters = await up(resolve(["a", "b"], state_dir=directory, environ={}), state_dir=directory)
    try:
        await asyncio.sleep(SETTLE_SECONDS)
        pids = _playground_pids(clusters)
        before = {pid: _cpu_ticks(pid) for pid in pids}
        started = time.perf_counter()
        await asyncio.sleep(IDLE_SECONDS)
        elapsed = time.perf_counter() - started
        ticks = sum(_cpu_ticks(pid) - before[pid] for pid in pids)
        return {
            "idle_cpu_percent": round(100 * ticks / CLOCK_TICKS / elapsed, 2),
            "idle_rss_mb": round(sum(_rss_bytes(pid) for pid in pids) / 2**20, 1),
            "idle_processes": len(pids),
        }
    finally:
        await down(["a", "b"], state_dir=directory)


async def _first_ready(api: Client, node: str) -> float:
    """When (perf_counter) the Node `node` is first seen Ready, polling every 20 ms."""
    while True:
        try:
            conditions = ((await api.get(NODES, node)).get("status") or {}).get("conditions") or []
        except NotFoundError:
            conditions = []
        if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            return time.perf_counter()
        await asyncio.sleep(0.02)


def _node_memory(cluster: Cluster) -> dict[str, list[int]]:
    """RSS of each node's kubelet, containerd, kube-proxy, and of each containerd shim, by what they are."""
    records = cluster.records()
    found: dict[str, list[int]] = {}
    for node in cluster.node_names:
        for label, prefix in (
            ("kubelet", NODE_ROLE_PREFIX),
            ("containerd", CONTAINERD_ROLE_PREFIX),
            ("kube_proxy", KUBE_PROXY_ROLE_PREFIX),
        ):
            found.setdefault(label, []).append(_rss_bytes(records[prefix + node].pid))
        for pid in mountns.processes(node_netns_name(cluster.spec, cluster.paths, node)):
            if "containerd-shim" in (Path("/proc") / str(pid) / "cmdline").read_text(errors="replace"):
                found.setdefault("shim", []).append(_rss_bytes(pid))
    return found


async def real_nodes(directory: Path, assets: Path) -> dict[str, float]:
    """A node Ready after its kubelet starts, pods Running after their create, memory per node."""
    specs = resolve(["nodes"], state_dir=directory, environ={ASSETS_ENV: str(assets)}, nodes=2)
    (cluster,) = await up(specs, state_dir=directory, wait=180)
    found = cluster.assets()
    assert found is not None
    figures: dict[str, float] = {}
    try:
        async with cluster.client() as api:
            worker = cluster.node_names[1]
            readies = []
            for _ in range(3):
                await cluster.stop_node(worker)
                await api.delete(NODES, worker)
                poll = asyncio.create_task(_first_ready(api, worker))
                started = time.perf_counter()
                await cluster.start_node(worker, wait=120)
                readies.append(await poll - started)
            figures["real_node_ready_after_kubelet_start_s"] = round(statistics.median(readies), 3)
            sandbox = {"name": "c", "image": found.image(SANDBOX_IMAGE).name, "imagePullPolicy": "Never"}
            starts = [await _start_pod(api, f"pause-{i}", sandbox) for i in range(POD_STARTS)]
            figures["real_node_pod_running_after_create_s"] = round(statistics.median(starts), 3)
        await asyncio.sleep(SETTLE_SECONDS)
        memory = _node_memory(cluster)
        for label, values in memory.items():
            figures[f"real_node_{label}_rss_mb"] = round(statistics.mean(values) / 2**20, 1)
        figures["real_node_shims_per_node"] = len(memory.get("shim", [])) / len(cluster.node_names)
        figures["real_node_rss_mb"] = round(
            sum(sum(values) for values in memory.values()) / len(cluster.node_names) / 2**20, 1
        )
    finally:
        await down(["nodes"], state_dir=directory)
    return figures


def measure(root: Path, starts: int, log: Any, *, assets: Path | None) -> dict[str, float]:
    figures: dict[str, float] = {}
    log("baselines: python -c pass, import runtime.core, a bare emulator")
    figures["baseline_python_s"] = round(min(timed([PYTHON, "-c", "pass"]) for _ in range(3)), 3)
    figures["baseline_import_runtime_core_s"] = round(
        min(timed([PYTHON, "-c", "import runtime.core"]) for _ in range(3)), 3
    )
    emulator_runs = []
    for run in range(3):
        directory = root / f"emulator-{run}"
        directory.mkdir()
        emulator_runs.append(emulator_start(directory))
    figures["baseline_emulator_start_s"] = round(min(emulator_runs), 3)
    for network, suffix in ((NETNS, ""), (LOOPBACK, "_loopback")):
        log(f"[{network}] cold start: playground up a b ({starts} runs)")
        runs = [cold_start(root / f"up-{network}-{run}", network=network) for run in range(starts)]
        figures[f"up_two_clusters{suffix}_s"] = round(min(runs), 3)
        figures[f"up_two_clusters{suffix}_median_s"] = round(statistics.median(runs), 3)
        log(f"[{network}] {REPLICAS} pods on a 3-node cluster")
        figures[f"hundred_pods_running{suffix}_s"] = round(
            asyncio.run(hundred_pods(root / f"hundred-{network}", network)), 3
        )
        log(f"[{network}] pod start latency, {POD_STARTS} process pods and {POD_STARTS} simulated pods")
        started = asyncio.run(pod_starts(root / f"starts-{network}", network))
        figures |= {key.replace("_start_s", f"_start{suffix}_s"): value for key, value in started.items()}
    for kind in ("process", "simulated"):
        figures[f"{kind}_pod_start_ratio"] = round(
            figures[f"{kind}_pod_start_s"] / figures[f"{kind}_pod_start_loopback_s"], 2
        )
    log(f"idle two-cluster playground over {IDLE_SECONDS:g} s")
    figures |= asyncio.run(idle(root / "idle"))
    if assets is not None:
        figures |= measure_real(root, assets, log)
    return figures


def measure_real(root: Path, assets: Path, log: Any) -> dict[str, float]:
    """Real-binary mode's figures, and real nodes' when the assets have kubelet."""
    figures = real_binary(root / "real", assets, log)
    found = find_assets({ASSETS_ENV: str(assets)})
    if found is not None and found.runs_real_nodes:
        log("real nodes: node Ready after kubelet start, pod Running after create, memory per node")
        figures |= asyncio.run(real_nodes(root / "nodes", assets))
    return figures


def ratios(figures: dict[str, float]) -> dict[str, float]:
    real = {
        f"up_{label}_{mode} / up_{label}_{base}": round(
            figures[f"up_{label}_{mode}_s"] / figures[f"up_{label}_{base}_s"], 2
        )
        for label in ("one", "two")
        for mode, base in (("real", "emulator"), ("real_nodes", "real"))
        if f"up_{label}_{mode}_s" in figures
    }
    if "up_two_clusters_s" not in figures:
        return real
    return real | {
        "up_two_clusters / loopback model": round(
            figures["up_two_clusters_s"] / figures["up_two_clusters_loopback_s"], 2
        ),
        "hundred_pods / loopback model": round(
            figures["hundred_pods_running_s"] / figures["hundred_pods_running_loopback_s"], 2
        ),
        "process_pod_start / loopback model": figures["process_pod_start_ratio"],
        "simulated_pod_start / loopback model": figures["simulated_pod_start_ratio"],
        "up_two_clusters / emulator_start": round(
            figures["up_two_clusters_s"] / figures["baseline_emulator_start_s"], 2
        ),
        "up_two_clusters / import_runtime_core": round(
            figures["up_two_clusters_s"] / figures["baseline_import_runtime_core_s"], 2
        ),
        "hundred_pods / emulator_start": round(
            figures["hundred_pods_running_s"] / figures["baseline_emulator_start_s"], 2
        ),
    }


def table(report: dict[str, Any]) -> str:
    return "\n".join(harness.target_lines(report["targets"], width=32, unit_width=13))


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--starts", type=int, default=3, help="cold starts to measure (the best counts)")
    parser.add_argument(
        "--real",
        type=Path,
        default=Path(os.environ[ASSETS_ENV]) if os.environ.get(ASSETS_ENV) else None,
        metavar="DIR",
        help="also measure real-binary mode with the binaries in DIR (default $KUBEBUILDER_ASSETS)",
    )
    parser.add_argument(
        "--real-only", action="store_true", help="measure real-binary mode and real nodes only (needs --real)"
    )
    args = parser.parse_args(argv)
    if args.real_only and args.real is None:
        parser.error("--real-only needs --real DIR or $KUBEBUILDER_ASSETS")

    started = time.perf_counter()
    with harness.scratch(None, prefix="playground-bench-") as root:
        figures = (
            measure_real(root, args.real, harness.log)
            if args.real_only
            else measure(root, args.starts, harness.log, assets=args.real)
        )
    report = harness.document(
        {
            "figures": figures,
            "ratios": ratios(figures),
            # --real-only measures none of the targets' figures
            "targets": harness.verdicts(
                [t for t in TARGETS if t.figure in figures or not args.real_only], figures
            ),
        },
        started=started,
        environment=harness.environment(),
    )
    harness.publish(table(report), report, args.json)
    return harness.exit_code(args.strict, (verdict["pass"] for verdict in report["targets"]))


if __name__ == "__main__":
    sys.exit(main())
