"""The multi-language plugin as Pulumi starts it: Pulumi's Python language host runs `python <plugin dir>
<engine address>` (the folder, not `-m`), the plugin prints its port and serves the `liqo` package's schema
over gRPC, with the kubeconfigs and the peering tokens marked secret."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

import pulumi_liqo
from pulumi_liqo._schema import schema

PLUGIN_DIR = Path(pulumi_liqo.__file__).resolve().parent
#: (type token, input or output, property): what a program must never see in plain text
SECRETS = [
    ("liqo:index:Install", "inputProperties", "kubeconfig"),
    ("liqo:index:Generate", "inputProperties", "kubeconfig"),
    ("liqo:index:Generate", "properties", "localToken"),
    ("liqo:index:Peer", "inputProperties", "kubeconfig"),
    ("liqo:index:Peer", "inputProperties", "clusterToken"),
    ("liqo:index:Offload", "inputProperties", "kubeconfig"),
]


@pytest.mark.parametrize(("token", "section", "name"), SECRETS, ids=[f"{t}.{n}" for t, _, n in SECRETS])
def test_the_schema_marks_kubeconfigs_and_tokens_secret(token: str, section: str, name: str) -> None:
    assert schema()["resources"][token][section][name]["secret"] is True


def test_only_credentials_are_secret() -> None:
    marked = {
        (token, section, name)
        for token, resource in schema()["resources"].items()
        for section in ("inputProperties", "properties")
        for name, spec in resource.get(section, {}).items()
        if spec.get("secret")
    }
    assert marked == set(SECRETS)


@pytest.fixture
def plugin(tmp_path: Path) -> Iterator[str]:
    """The plugin started as the language host starts it, from a directory of its own; its address."""
    process = subprocess.Popen(
        # an engine address nothing listens on: the plugin only logs to the engine, and nothing is logged here
        [sys.executable, str(PLUGIN_DIR), "127.0.0.1:9"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = process.stdout.readline().strip()
        if not port.isdigit():
            process.kill()
            _, errors = process.communicate(timeout=30)
            pytest.fail(f"the plugin did not start: {port!r}\n{errors}")
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_the_plugin_starts_from_its_folder_and_serves_the_schema(plugin: str) -> None:
    with grpc.insecure_channel(plugin) as channel:
        stub = provider_pb2_grpc.ResourceProviderStub(channel)
        response: Any = stub.GetSchema(provider_pb2.GetSchemaRequest(version=0), timeout=60)

    served = json.loads(response.schema)
    assert served["name"] == "liqo"
    assert set(served["resources"]) == {
        f"liqo:index:{name}" for name in ("Install", "Generate", "Peer", "Offload")
    }
    assert served["resources"]["liqo:index:Generate"]["properties"]["localToken"]["secret"] is True
    assert served == schema()
