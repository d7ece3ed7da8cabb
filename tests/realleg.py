"""The real leg of `make test`: what touches a cluster, against the real control plane.

    KUBEBUILDER_ASSETS=DIR python -m tests.realleg [PYTEST_ARGS...]

1. the API behaviour suite (`tests/apiserver`) against a real-binary playground cluster,
   through `LIQO_TEST_KUBECONFIG`;
2. every test marked `cluster` (tests/clustermarker.py) in real-binary mode: the
   playground fixture and `playground.testing` take the mode from `KUBEBUILDER_ASSETS`.

Both run even when the first fails; the exit code is the first nonzero one. `make
test-real` builds DIR first (`make real-k8s`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from playground.cluster import ClusterError
from playground.realbinary import ASSETS_ENV, AssetsError, find_assets
from playground.testing import clusters

BEHAVIOUR_SUITE = "tests/apiserver"
BEHAVIOUR_CLUSTER = "behaviour"


def pytest(args: Sequence[str], *, env: Mapping[str, str]) -> int:
    return subprocess.run([sys.executable, "-m", "pytest", *args], env=dict(env), check=False).returncode


def main(argv: Sequence[str]) -> int:
    try:
        assets = find_assets(os.environ)
    except AssetsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if assets is None:
        print(f"error: set {ASSETS_ENV} to the real binaries' folder (make test-real does)", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        with (
            tempfile.TemporaryDirectory(prefix="realleg-") as state_dir,
            clusters(BEHAVIOUR_CLUSTER, state_dir=Path(state_dir)) as (cluster,),
        ):
            print(
                f"real leg: the API behaviour suite against {cluster.spec.api_server_url} ({assets.directory})"
            )
            behaviour = pytest(
                [BEHAVIOUR_SUITE, *argv], env={**os.environ, "LIQO_TEST_KUBECONFIG": str(cluster.kubeconfig)}
            )
    except ClusterError as exc:
        print(f"real leg: no cluster for the API behaviour suite: {exc}", file=sys.stderr)
        behaviour = 1
    halfway = time.monotonic()
    print("real leg: every test marked `cluster`, in real-binary mode")
    marked = pytest(["-m", "cluster", *argv], env=os.environ)
    print(
        f"real leg: behaviour suite {'passed' if behaviour == 0 else 'FAILED'} in {halfway - started:.0f} s, "
        f"cluster tests {'passed' if marked == 0 else 'FAILED'} in {time.monotonic() - halfway:.0f} s"
    )
    return behaviour or marked


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
