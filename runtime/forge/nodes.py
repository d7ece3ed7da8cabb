"""Nodes as Liqo reads them: a node's most reachable address, and where other clusters reach the API server.

Pure functions of Node objects, shared by the authentication service (its NodePort URL)
and the installers (the API server URL consumers are given).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from runtime.api.objects import nested

#: node address types, most reachable from other clusters first (Liqo's `preferOrder`)
ADDRESS_TYPES = ("ExternalDNS", "ExternalIP", "InternalDNS", "InternalIP", "Hostname")
#: the labels that mark control-plane nodes, in the order Liqo looks for them
CONTROL_PLANE_LABELS = (
    "node-role.kubernetes.io/control-plane",
    "node-role.kubernetes.io/master",
    "node-role.kubernetes.io/controlplane",
)
#: kubeadm's API server port, which Liqo assumes on a control-plane node
API_SERVER_PORT = 6443


def node_address(node: Mapping[str, Any]) -> tuple[str, str] | None:
    """(type, address) of the node's most reachable address, in `ADDRESS_TYPES` order; None if it has none."""
    addresses = nested(node, "status", "addresses") or []
    for address_type in ADDRESS_TYPES:
        for entry in addresses:
            if entry.get("type") == address_type and entry.get("address"):
                return address_type, str(entry["address"])
    return None


def control_plane_nodes(nodes: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The nodes with the first control-plane label any node has (Liqo's `getMasterNodes`)."""
    listed = list(nodes)
    for label in CONTROL_PLANE_LABELS:
        found = [n for n in listed if label in (nested(n, "metadata", "labels") or {})]
        if found:
            return found
    return []


def names_loopback(server: str) -> bool:
    """Whether a server URL names this host's loopback (`https://127.0.0.1:<port>`, `localhost`)."""
    host = urlsplit(server).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def api_server_url(kubeconfig_server: str, nodes: Iterable[Mapping[str, Any]]) -> str:
    """The API server URL other clusters are given, when none is configured.

    The kubeconfig's server, unless it names a loopback address: a local cluster
    reached through a port of this host (kind's `https://127.0.0.1:<port>`), which
    nothing in another cluster can reach. Then Liqo's default, a control-plane node's
    address and port 6443 (liqoctl's kubeadm and kind providers), when there is one.
    """
    if not names_loopback(kubeconfig_server):
        return kubeconfig_server
    for node in sorted(control_plane_nodes(nodes), key=lambda n: str(nested(n, "metadata", "name"))):
        address = node_address(node)
        if address is not None:
            host = f"[{address[1]}]" if ":" in address[1] else address[1]
            return f"https://{host}:{API_SERVER_PORT}"
    return kubeconfig_server
