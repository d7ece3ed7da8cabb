"""Nodes: the one kind whose status may be set on create (the kubelet registers a Node with its status)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from kubernetes import client

from .conftest import Cluster


@pytest.fixture
def node_name(cluster: Cluster) -> Iterator[str]:
    name = f"t-node-{uuid.uuid4().hex[:8]}"
    yield name
    status, _ = cluster.json("DELETE", f"/api/v1/nodes/{name}")
    assert status in (200, 404)


def test_node_status_is_kept_on_create_and_ignored_by_updates(cluster: Cluster, node_name: str) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node_name},
        "status": {
            "capacity": {"cpu": "4", "pods": "110"},
            "addresses": [{"type": "InternalIP", "address": "10.0.0.9"}],
        },
    }
    status, created = cluster.json("POST", "/api/v1/nodes", body)
    assert status == 201, created
    assert created["status"]["capacity"] == {"cpu": "4", "pods": "110"}
    assert created["status"]["addresses"] == [{"type": "InternalIP", "address": "10.0.0.9"}]
    core = client.CoreV1Api(cluster.api)
    patched = core.patch_node(node_name, {"status": {"capacity": {"cpu": "8"}}})
    assert patched.status.capacity is not None and patched.status.capacity["cpu"] == "4"
    patched = core.patch_node_status(node_name, {"status": {"capacity": {"cpu": "8"}}})
    assert patched.status.capacity is not None and patched.status.capacity["cpu"] == "8"
