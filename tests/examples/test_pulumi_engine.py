"""examples/pulumi under the real Pulumi engine (`make pulumi-engine`) against two playground clusters:
`pulumi up` (both installs, the token, the peering, the offloading of liqo-demo), `pulumi preview` with no
changes (also after a `pulumi refresh`), changes applied in place, `pulumi destroy`.

The CLI and pulumi-kubernetes' plugin are the ones built from their Go modules; the Python
language host, which cannot be built here, is `tools/pulumi_language_host.py` (it only
starts the Python SDK's own program runner). Everything Pulumi writes goes to this test's
temporary directory: a file backend, a passphrase secrets provider, PULUMI_HOME and HOME.
It runs wherever the engine is already in its cache (both legs of `make test`: on the
emulator, and in real-binary mode in the real leg) and is skipped, saying why, where it is
not: no test run builds the engine (docs/pulumi/engine.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from playground.testing import Playground
from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS, NAMESPACEOFFLOADINGS
from runtime.api.kinds import DEPLOYMENTS, NAMESPACES, NODES
from runtime.core import NotFoundError
from tools import pulumi_engine, pulumi_language_host

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pulumi"
ENGINE = pulumi_engine.built()

pytestmark = [
    pytest.mark.slow,
    pytest.mark.pulumi_engine,
    pytest.mark.skipif(
        ENGINE is None,
        reason="the Pulumi engine is not in its cache: `make pulumi-engine` builds it once (a cold build costs "
        "15 CPU-minutes or more, so no test run builds it)",
    ),
]

#: generous bounds for one pulumi command on a shared machine
COMMAND_SECONDS = 900


class Pulumi:
    """The engine's CLI in a project folder, with everything it writes under `home`."""

    def __init__(self, engine: Path, project: Path, home: Path) -> None:
        self.project = project
        bin_dir = home / "bin"
        pulumi_language_host.install(bin_dir)
        self.environ = {
            **os.environ,
            "PATH": os.pathsep.join([str(bin_dir), str(engine / "bin"), os.environ.get("PATH", "")]),
            "HOME": str(home / "user"),
            "PULUMI_HOME": str(home / "pulumi"),
            "PULUMI_CONFIG_PASSPHRASE": "playground",
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_PYTHON_CMD": sys.executable,
            "PULUMI_BACKEND_URL": f"file://{home / 'state'}",
        }
        for folder in ("user", "pulumi", "state"):
            (home / folder).mkdir()

    def __call__(self, *args: str) -> str:
        done = subprocess.run(
            ["pulumi", *args, "--non-interactive"],
            cwd=self.project,
            env=self.environ,
            capture_output=True,
            text=True,
            timeout=COMMAND_SECONDS,
            check=False,
        )
        assert done.returncode == 0, f"pulumi {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done.stdout


def project(tmp_path: Path, engine: Path) -> Path:
    """The example, its project file pointing at this virtual environment and the engine's Kubernetes plugin."""
    folder = tmp_path / "project"
    shutil.copytree(EXAMPLE, folder)
    settings: dict[str, Any] = yaml.safe_load((folder / "Pulumi.yaml").read_text())
    settings["runtime"]["options"]["virtualenv"] = str(Path(sys.prefix))
    settings["plugins"] = {"providers": [{"name": "kubernetes", "path": str(engine / "bin")}]}
    (folder / "Pulumi.yaml").write_text(yaml.safe_dump(settings, sort_keys=False))
    return folder


def planned_steps(preview_json: str) -> dict[str, str]:
    """Resource name -> planned operation, from `pulumi preview --json`."""
    steps = json.loads(preview_json).get("steps") or []
    return {step["urn"].rsplit("::", 1)[-1]: step["op"] for step in steps}


async def test_up_preview_update_in_place_and_destroy(playground: Playground, tmp_path: Path) -> None:
    assert ENGINE is not None
    rome, milan = await playground.up("rome", "milan")
    pulumi = Pulumi(ENGINE, project(tmp_path, ENGINE), tmp_path / "home")
    pulumi("login", f"file://{tmp_path / 'home' / 'state'}")
    pulumi("stack", "init", "dev")
    pulumi("config", "set", "romeKubeconfig", str(rome.kubeconfig))
    pulumi("config", "set", "milanKubeconfig", str(milan.kubeconfig))

    pulumi("up", "--yes")
    assert pulumi("stack", "output", "virtual_node").strip() == "liqo-milan"
    async with rome.client() as api:
        node = await api.get(NODES, "liqo-milan")
        assert any(
            cond["type"] == "Ready" and cond["status"] == "True" for cond in node["status"]["conditions"]
        )
    assert "local_token" not in pulumi("stack", "output", "--show-secrets=false")
    # liqo-demo offloaded: its twin namespace on milan
    assert pulumi("stack", "output", "offloading_phase").strip() == "Ready"
    assert pulumi("stack", "output", "twin_namespace").strip() == "liqo-demo-rome"
    async with milan.client() as api:
        await api.get(NAMESPACES, "liqo-demo-rome")

    # right after, nothing to do; nor after a refresh, which reads every resource back (the dynamic ones
    # through their providers' read) without drift
    pulumi("preview", "--expect-no-changes")
    pulumi("refresh", "--yes")
    pulumi("preview", "--expect-no-changes")

    # changes applied in place: new node labels update the peering, a stricter pod offloading strategy the
    # offloading; nothing is replaced
    pulumi("config", "set", "nodeLabels", '{"example.com/tier": "gold"}')
    pulumi("config", "set", "podOffloadingStrategy", "Remote")
    steps = planned_steps(pulumi("preview", "--json"))
    assert steps["rome-milan-peering"] == "update"
    assert steps["liqo-demo-offloading"] == "update"
    assert "replace" not in steps.values() and "create-replacement" not in steps.values()
    pulumi("up", "--yes")
    async with rome.client() as api:
        node = await api.get(NODES, "liqo-milan")
        assert node["metadata"]["labels"]["example.com/tier"] == "gold"
        offloading = await api.get(NAMESPACEOFFLOADINGS, "offloading", namespace="liqo-demo")
        assert offloading["spec"]["podOffloadingStrategy"] == "Remote"
    pulumi("preview", "--expect-no-changes")

    pulumi("destroy", "--yes")
    async with rome.client() as api:
        with pytest.raises(NotFoundError):
            await api.get(FOREIGNCLUSTERS, "milan")
        with pytest.raises(NotFoundError):
            await api.get(NAMESPACEOFFLOADINGS, "offloading", namespace="liqo-demo")
        with pytest.raises(NotFoundError):
            await api.get(DEPLOYMENTS, "liqo-controller-manager", namespace=c.DEFAULT_NAMESPACE)
    async with milan.client() as api:
        with pytest.raises(NotFoundError):
            await api.get(DEPLOYMENTS, "liqo-auth", namespace=c.DEFAULT_NAMESPACE)
