"""Liqo's own CLI reads a peering of this runtime as it reads Liqo's.

`liqoctl info -o json` (liqoctl v1.0.3, built from its Go module) on a consumer peered with a
provider: the local cluster ID from the cluster-ID ConfigMap, the Liqo version from the
controller manager's Deployment, and the peering with its role (the provider's) and its
authentication and offloading modules Healthy, networking Disabled. Skips when liqoctl is
not built: `GOFLAGS=-mod=mod GOBIN=~/.cache/liqo-iac/liqoctl/v1.0.3 go install
github.com/liqotech/liqo/cmd/liqoctl@v1.0.3` (or `LIQOCTL` naming the binary).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest

from runtime.api.crds import FOREIGNCLUSTERS
from runtime.api.image import package_version
from runtime.api.objects import JSON

from .harness import Clusters

pytestmark = pytest.mark.slow

VERSION = "v1.0.3"


@pytest.fixture
def liqoctl() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = Path(os.environ.get("LIQOCTL") or cache / "liqo-iac" / "liqoctl" / VERSION / "liqoctl")
    if not path.is_file():
        pytest.skip(
            f"liqoctl {VERSION} is not built at {path}: GOFLAGS=-mod=mod GOBIN={path.parent} go install "
            f"github.com/liqotech/liqo/cmd/liqoctl@{VERSION} (or set LIQOCTL)"
        )
    return path


def _info(liqoctl: Path, kubeconfig: Path) -> JSON:
    done = subprocess.run(
        [str(liqoctl), "info", "--kubeconfig", str(kubeconfig), "--namespace", "liqo", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    found: JSON = json.loads(done.stdout)
    return found


async def test_liqoctl_info_shows_the_peering_healthy(clusters: Clusters, liqoctl: Path) -> None:
    rome, milan = await asyncio.gather(clusters.cluster("rome"), clusters.cluster("milan"))
    await clusters.peer(rome, milan, networking=False)

    async def established() -> JSON | None:
        status = (await rome.admin.get(FOREIGNCLUSTERS, "milan")).get("status") or {}
        return status if status.get("outgoingPeering") == "Established" else None

    await clusters.eventually(established)
    info = await asyncio.to_thread(_info, liqoctl, rome.kubeconfig)
    assert info["local"]["clusterID"] == rome.cluster_id, info
    assert info["local"]["version"] == package_version(), info
    (peer,) = info["peerings"]["peers"]
    assert peer == {
        "clusterID": milan.cluster_id,
        "role": "Provider",
        "networkingStatus": "Disabled",
        "authenticationStatus": "Healthy",
        "offloadingStatus": "Healthy",
    }
