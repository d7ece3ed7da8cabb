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
  binaries (`make real-k8s`): `playground up rome` and `playground up rome milan` in both
  modes, their ratios, `playground down` of the two real clusters, and how long the
  supervisor took to stop each process (from its log).

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
from playground.cluster import Cluster, down, resolve, up
from playground.realbinary import ASSETS_ENV
from runtime.api.image import runtime_image
from runtime.api.kinds import DEPLOYMENTS, PODS
from runtime.core import Client

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
) -> float:
    """`playground up NAMES` from an empty state dir (real binaries from `assets`), then `playground down`."""
    env = {**os.environ, "PLAYGROUND_STATE_DIR": str(directory), ASSETS_ENV: str(assets or "")}
    try:
        return timed(
            [PYTHON, "-m", "playground", "up", *names, "--network", network, "--wait", "180"], env=env
        )
    finally:
        subprocess.run([PYTHON, "-m", "playground", "down"], env=env, check=True, capture_output=True)


#: what the supervisor logs for each process it stopped
_STOPPED = re.compile(r" INFO playground\.supervisor: (\S+) stopped in ([0-9.]+) s$")


def real_binary(root: Path, assets: Path, log: Any) -> dict[str, float]:
    """`playground up rome` and `up rome milan` in both modes, and the real clusters' stop."""
    figures: dict[str, float] = {}
    for label, names in (("one", ("rome",)), ("two", ("rome", "milan"))):
        log(f"playground up {' '.join(names)}: emulator, then real binaries")
        figures[f"up_{label}_emulator_s"] = round(cold_start(root / f"emulator-{label}", names), 3)
        figures[f"up_{label}_real_s"] = round(cold_start(root / f"real-{label}", names, assets=assets), 3)
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
        figures |= real_binary(root / "real", assets, log)
    return figures


def ratios(figures: dict[str, float]) -> dict[str, float]:
    real = {
        f"up_{label}_real / up_{label}_emulator": round(
            figures[f"up_{label}_real_s"] / figures[f"up_{label}_emulator_s"], 2
        )
        for label in ("one", "two")
        if f"up_{label}_real_s" in figures
    }
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
    args = parser.parse_args(argv)

    started = time.perf_counter()
    with harness.scratch(None, prefix="playground-bench-") as root:
        figures = measure(root, args.starts, harness.log, assets=args.real)
    report = harness.document(
        {"figures": figures, "ratios": ratios(figures), "targets": harness.verdicts(TARGETS, figures)},
        started=started,
        environment=harness.environment(),
    )
    harness.publish(table(report), report, args.json)
    return harness.exit_code(args.strict, (verdict["pass"] for verdict in report["targets"]))


if __name__ == "__main__":
    sys.exit(main())
