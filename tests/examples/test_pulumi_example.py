"""examples/pulumi under Pulumi's mock runtime: the program runs as `pulumi up` would run it, and its graph is
the quick start's (two Installs, a Generate on milan after milan's Install, a Peer on rome after rome's
Install taking the Generate's outputs, the namespace liqo-demo on rome offloaded after the peering), with
the kubeconfigs and the token secret."""

from __future__ import annotations

import asyncio
import runpy
from pathlib import Path
from typing import Any

import pulumi
import pytest

import pulumi_liqo
from tests.pulumi_liqo.mocks import DYNAMIC_OUTPUTS, RecordingMonitor

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pulumi"
PROJECT = "liqo-quickstart"


@pytest.fixture
def program(tmp_path: Path, pulumi_loop: asyncio.AbstractEventLoop) -> RecordingMonitor:
    """The mock runtime with the example's configuration (kubeconfig files of its own)."""
    config: dict[str, str] = {}
    for name in ("rome", "milan"):
        path = tmp_path / f"{name}.kubeconfig"
        path.write_text(f"apiVersion: v1\nkind: Config\ncurrent-context: {name}\n")
        config[f"{PROJECT}:{name}Kubeconfig"] = str(path)
    config[f"{PROJECT}:nodeLabels"] = '{"example.com/tier": "burst"}'
    monitor = RecordingMonitor()
    pulumi.runtime.set_mocks(monitor.mocks, project=PROJECT, preview=False, monitor=monitor)
    pulumi.runtime.set_all_config(config)
    return monitor


def test_the_project_has_a_virtual_environment_of_its_own_made_from_its_requirements() -> None:
    import yaml

    project = yaml.safe_load((EXAMPLE / "Pulumi.yaml").read_text())
    assert project["name"] == PROJECT
    assert project["runtime"]["name"] == "python"
    # as `pulumi new` makes it: ./venv, from requirements.txt, not the repository's development environment
    assert project["runtime"]["options"] == {"toolchain": "pip", "virtualenv": "venv"}
    requirements = [
        line for line in (EXAMPLE / "requirements.txt").read_text().splitlines() if not line.startswith("#")
    ]
    assert requirements == ["--find-links ../../dist", "pulumi-liqo"], (
        "the component package, as `make dist` built it"
    )
    assert {"romeKubeconfig", "milanKubeconfig"} <= set(project["config"])


@pulumi.runtime.test
def test_the_example_peers_rome_with_milan(program: RecordingMonitor) -> pulumi.Output[Any]:
    names = runpy.run_path(str(EXAMPLE / "__main__.py"), run_name="__main__")

    def check(_: Any) -> None:
        installs = {found.name: found for found in program.by_type(pulumi_liqo.install.TYPE)}
        assert set(installs) == {"rome", "milan"}
        (generate,) = program.by_type(pulumi_liqo.generate.TYPE)
        (peer,) = program.by_type(pulumi_liqo.peer.TYPE)
        # depending on a component is depending on all its children: the runtime ready among them
        assert program.named("milan-runtime").urn in generate.dependencies
        assert program.named("rome-runtime").urn in peer.dependencies
        assert not any("::rome" in urn for urn in generate.dependencies)
        assert not any("::milan" in urn for urn in peer.dependencies)
        token = program.one("pulumi-python:dynamic/liqo:Token")
        peering = program.one("pulumi-python:dynamic/liqo:Peering")
        assert token.parent == generate.urn and peering.parent == peer.urn
        assert token.inputs["kubeconfig"].endswith("current-context: milan\n")
        assert peering.inputs["kubeconfig"].endswith("current-context: rome\n")
        assert (
            peering.inputs["cluster_token"]
            == DYNAMIC_OUTPUTS["pulumi-python:dynamic/liqo:Token"]["local_token"]
        )
        assert {"kubeconfig", "cluster_token"} <= peering.secret_inputs
        assert peering.inputs["node_labels"] == {"example.com/tier": "burst"}
        assert (peering.inputs["cpu"], peering.inputs["memory"], peering.inputs["pods"]) == ("2", "4Gi", "20")
        milan_identity = [
            found
            for found in program.by_type("kubernetes:core/v1:ConfigMap")
            if found.name == "milan-configmap-liqo-clusterid-configmap"
        ]
        assert milan_identity[0].inputs["data"]["clusterLabels"] == '{"topology.liqo.io/region": "north"}'
        # liqo-demo: made on rome through rome's Install's provider, offloaded once the peering is up
        (namespace,) = [
            found for found in program.by_type("kubernetes:core/v1:Namespace") if found.name == "liqo-demo"
        ]
        assert namespace.provider.startswith(program.named("rome-kubernetes").urn + "::")
        (offload,) = program.by_type(pulumi_liqo.offload.TYPE)
        offloading = program.one("pulumi-python:dynamic/liqo:Offloading")
        assert offloading.parent == offload.urn
        assert offloading.inputs["namespace"] == "liqo-demo"
        assert offloading.inputs["kubeconfig"].endswith("current-context: rome\n")
        assert namespace.urn in offloading.dependencies
        assert program.named("rome-milan-peering").urn in offload.dependencies

    return pulumi.Output.all(
        names["peer"].virtual_node,
        names["rome"].cluster_id,
        names["milan"].cluster_id,
        names["offload"].offloading_phase,
        names["demo"].metadata,
    ).apply(check)
