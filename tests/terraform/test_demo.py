"""`make demo` end to end: `python -m playground.demo` as the Makefile runs it, in a state dir, mirror and
HOME of the test's own, then the cluster state checked with the Kubernetes client, traffic both ways
across the network fabric, and the clusters stopped."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from playground.cluster import STATE_DIR_ENV
from playground.demo import OFFLOADED, TWIN
from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS
from runtime.api.kinds import NODES, PODS, SERVICES
from runtime.core import Client
from tests.runtime.liqo_docs import MILAN_NETWORKED
from tests.runtime.test_playground_fabric import copy_endpoints, fetch, pod
from tests.runtime.test_playground_offloading import get, until
from tools.release.executable import cache_root
from tools.release.mirror import ENVIRONMENT as MIRROR_ENV

pytestmark = [pytest.mark.slow, pytest.mark.kubectl]

ROOT = Path(__file__).resolve().parents[2]
#: the bound of the whole demo (it takes well under a minute on the playground)
DEMO_TIMEOUT = 300
HOSTNAME = "kubernetes.io/hostname"


def _table_row(output: str, first: str) -> list[str]:
    """The columns of the first line of a kubectl table that starts with `first`."""
    for line in output.splitlines():
        columns = line.split()
        if columns and columns[0] == first:
            return columns
    raise AssertionError(f"no row {first!r} in:\n{output}")


async def traffic_across_the_fabric(rome: Client, milan: Client, kubeconfig: Path) -> None:
    """The demo's clusters (same pod CIDR, peered by `terraform apply`): a pod of rome fetches from the offloaded
    nginx through its Service, and a pod offloaded to milan fetches from a Service of rome's pods through its
    copy on milan (the curl stand-in reads no DNS: it is given the copy's ClusterIP)."""
    nginx = await rome.get(SERVICES, "nginx", namespace=OFFLOADED)
    page = await fetch(rome, kubeconfig, "default", "to-nginx", f"http://{nginx['spec']['clusterIP']}/")
    assert "Welcome to nginx" in page

    home = pod("home", image="nginx", labels={"app": "home"}, node_selector={HOSTNAME: "rome-control-plane"})
    await rome.create(PODS, home, namespace=OFFLOADED)
    service = {"metadata": {"name": "home"}, "spec": {"selector": {"app": "home"}, "ports": [{"port": 80}]}}
    await rome.create(SERVICES, service, namespace=OFFLOADED)

    async def copy_with_endpoint() -> str:
        found = await get(milan, SERVICES, "home", namespace=TWIN)
        if found is None or not await copy_endpoints(milan, TWIN, "home"):
            return ""
        return str(found["spec"].get("clusterIP") or "")

    copy_ip = await until(
        copy_with_endpoint, "milan: the copy of Service home with rome's pod as its endpoint"
    )
    page = await fetch(
        rome,
        kubeconfig,
        OFFLOADED,
        "to-home",
        f"http://{copy_ip}/",
        node_selector={c.LABEL_TYPE: c.TYPE_VIRTUAL_NODE},
    )
    assert "Welcome to nginx" in page


# `make demo` runs the emulator on a fresh machine: that mode is what users meet first, so it runs in both legs
@pytest.mark.emulator
async def test_the_demo_peers_rome_with_milan_offloads_liqo_demo_and_leaves_the_clusters_up(
    tmp_path: Path,
) -> None:
    assert shutil.which("kubectl"), "kubectl is not on PATH"
    state_dir, home = tmp_path / "state", tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        STATE_DIR_ENV: str(state_dir),
        MIRROR_ENV: str(tmp_path / "mirror"),
        "HOME": str(home),
        # the provider's executable from the cache this session uses (built once, not again under the test's HOME)
        "XDG_CACHE_HOME": str(cache_root().parents[1]),
    }
    try:
        demo = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "playground.demo"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=DEMO_TIMEOUT,
        )
        output = demo.stdout + demo.stderr
        assert demo.returncode == 0, output

        assert "Terraform has been successfully initialized!" in output
        assert "Apply complete! Resources: 6 added, 0 changed, 0 destroyed." in output
        header = _table_row(output, "NAME")
        assert "OUTGOING" in header and "AUTHENTICATION" in header, header
        # the network fabric up too (liqo_peer waits for its tunnel)
        assert _table_row(output, "milan")[:6] == MILAN_NETWORKED
        assert _table_row(output, "liqo-milan")[1] == "Ready"
        assert _table_row(output, "rome-control-plane")[1] == "Ready"
        assert _table_row(output, "liqo-demo")[1:5] == [
            "offloading",
            "DefaultName",
            "LocalAndRemote",
            "Ready",
        ]
        # the pods Running on liqo-milan on rome, and the same pods in the twin namespace on milan
        on_rome = re.findall(r"^(nginx-\S+)\s+1/1\s+Running\s.*\sliqo-milan\s", output, re.MULTILINE)
        on_milan = re.findall(
            r"^(nginx-\S+)\s+1/1\s+Running\s.*\smilan-control-plane\s", output, re.MULTILINE
        )
        assert len(on_rome) == 2 and sorted(on_rome) == sorted(on_milan), output
        assert re.search(r"^\s+total\s+\d+\.\d s$", output, re.MULTILINE), "the timings"
        assert "destroy" in output and "playground down" in output
        assert not (home / ".terraform.d").exists(), "nothing under $HOME"

        rome_kubeconfig = state_dir / "rome" / "kubeconfig"
        async with (
            await Client.from_kubeconfig(rome_kubeconfig) as rome,
            await Client.from_kubeconfig(state_dir / "milan" / "kubeconfig") as milan,
        ):
            peering = await rome.get(FOREIGNCLUSTERS, "milan")
            assert peering["status"]["outgoingPeering"] == "Established"
            node = await rome.get(NODES, "liqo-milan")
            ready = [entry for entry in node["status"]["conditions"] if entry["type"] == "Ready"]
            assert ready[0]["status"] == "True"
            await traffic_across_the_fabric(rome, milan, rome_kubeconfig)
    finally:
        down = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "playground", "down", "--state-dir", str(state_dir)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert down.returncode == 0, down.stdout + down.stderr
