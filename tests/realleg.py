"""The real leg of `make test`: what touches a cluster, against the real control plane.

    KUBEBUILDER_ASSETS=DIR python -m tests.realleg [--workers N] [PYTEST_ARGS...]

1. the API behaviour suite (`tests/apiserver`) against the real etcd and kube-apiserver
   alone, as envtest runs them (its conftest starts them when `KUBEBUILDER_ASSETS` is set),
   as it runs against the emulator alone;
2. every test marked `cluster` (tests/clustermarker.py) in real-binary mode: the
   playground fixture and `playground.testing` take the mode from `KUBEBUILDER_ASSETS`.
   The suites of `REAL_NODE_SUITES` run on real nodes (containerd, kubelet, kube-proxy,
   CoreDNS; the test and runtime images loaded, tests/nodeimages.py), as do the tests
   that ask for them (tests/playground/test_realnodes.py, tests/terraform/test_demo_real.py);
   the others on agent nodes (`PLAYGROUND_AGENT_NODES`): the playground's own machinery
   (tests/playground/test_cluster.py, test_cli.py), where the kind of node is beside the
   point, and the runtime's peerings, not yet run on real nodes (docs/playground.md, "The
   real leg"). Both passes run on `--workers` pytest-xdist workers (default `WORKERS`; 0:
   one after the other in a single pytest): they spend most of their time waiting on
   clusters, not on the CPU.

Both run even when the first fails; the exit code is the first nonzero one. `make
test-real` builds DIR first (`make real-k8s`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence

from playground.cluster import AGENT_NODES_ENV
from playground.realbinary import ASSETS_ENV, AssetsError, find_assets

BEHAVIOUR_SUITE = "tests/apiserver"
#: pytest-xdist workers for the cluster tests (docs/playground.md, "The real leg", has the timings)
WORKERS = 0
#: the cluster suites that run on real nodes in this leg (on agent nodes in the emulator leg)
REAL_NODE_SUITES = (
    "tests/playground/test_kind_like.py",
    "tests/playground/test_namespace_kubectl.py",
    "tests/playground/test_network.py",
)


def pytest(args: Sequence[str], *, env: Mapping[str, str]) -> int:
    return subprocess.run([sys.executable, "-m", "pytest", *args], env=dict(env), check=False).returncode


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.realleg", add_help=False, allow_abbrev=False)
    parser.add_argument("--workers", type=int, default=WORKERS)
    options, argv = parser.parse_known_args(argv)
    try:
        assets = find_assets(os.environ)
    except AssetsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if assets is None:
        print(f"error: set {ASSETS_ENV} to the real binaries' folder (make test-real does)", file=sys.stderr)
        return 2
    started = time.monotonic()
    print(f"real leg: the API behaviour suite against kube-apiserver alone ({assets.directory})")
    behaviour = pytest([BEHAVIOUR_SUITE, *argv], env=os.environ)
    halfway = time.monotonic()
    print("real leg: the cluster suites that run on real nodes")
    real_nodes = {name: value for name, value in os.environ.items() if name != AGENT_NODES_ENV}
    # a module's tests share its clusters: each module stays on one worker
    parallel = ["-n", str(options.workers), "--dist", "loadscope"] if options.workers else []
    on_real_nodes = pytest(["-m", "cluster", *REAL_NODE_SUITES, *parallel, *argv], env=real_nodes)
    print(
        "real leg: the other tests marked `cluster`, on agent nodes (real nodes where a test asks for them)"
    )
    ignored = [f"--ignore={suite}" for suite in REAL_NODE_SUITES]
    on_agent_nodes = pytest(
        ["-m", "cluster", *ignored, *parallel, *argv], env={**os.environ, AGENT_NODES_ENV: "1"}
    )
    marked = on_real_nodes or on_agent_nodes
    print(
        f"real leg: behaviour suite {'passed' if behaviour == 0 else 'FAILED'} in {halfway - started:.0f} s, "
        f"cluster tests {'passed' if marked == 0 else 'FAILED'} in {time.monotonic() - halfway:.0f} s"
    )
    return behaviour or marked


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
