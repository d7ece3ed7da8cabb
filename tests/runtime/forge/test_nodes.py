"""Where other clusters reach an API server when no URL is configured."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.forge.nodes import api_server_url, control_plane_nodes


def node(name: str, *addresses: tuple[str, str], role: str | None = "control-plane") -> dict[str, Any]:
    labels = {f"node-role.kubernetes.io/{role}": ""} if role else {}
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {"addresses": [{"type": kind, "address": address} for kind, address in addresses]},
    }


KIND = [
    node("kind-worker", ("InternalIP", "172.18.0.3"), role=None),
    node("kind-control-plane", ("InternalIP", "172.18.0.2")),
]


@pytest.mark.parametrize(
    ("server", "nodes", "expected"),
    [
        ("https://127.0.0.1:39123", KIND, "https://172.18.0.2:6443"),
        ("https://localhost:6443", KIND, "https://172.18.0.2:6443"),
        ("https://api.example.com:6443", KIND, "https://api.example.com:6443"),
        ("https://10.0.0.1:443", KIND, "https://10.0.0.1:443"),
        (
            "https://127.0.0.1:39123",
            [node("w", ("InternalIP", "10.1.1.1"), role=None)],
            "https://127.0.0.1:39123",
        ),
        (
            "https://127.0.0.1:39123",
            [node("m", ("InternalIP", "10.1.1.1"), ("ExternalIP", "203.0.113.7"), role="master")],
            "https://203.0.113.7:6443",
        ),
    ],
    ids=["kind", "localhost", "public-name", "private-address", "no-control-plane", "master-label"],
)
def test_a_loopback_kubeconfig_server_gives_way_to_a_control_plane_nodes_address(
    server: str, nodes: list[dict[str, Any]], expected: str
) -> None:
    assert api_server_url(server, nodes) == expected


def test_control_plane_labels_are_looked_for_in_liqos_order() -> None:
    nodes = [node("old", role="master"), node("new", role="control-plane")]
    assert [n["metadata"]["name"] for n in control_plane_nodes(nodes)] == ["new"]
