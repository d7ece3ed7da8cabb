"""Where other clusters reach the authentication service: the URL derived from its Service, as Liqo does.

A pure function of the `liqo-auth` Service, the Nodes and what the service knows about
itself (Liqo's `GetHomeAuthURL`, pkg/utils/foreigncluster):

| Service | URL |
| --- | --- |
| LoadBalancer with `status.loadBalancer.ingress` | `https://<ingress[0] hostname, else its ip>:<port>` |
| NodePort, or LoadBalancer without an ingress yet | `https://<a node's address>:<nodePort>` |
| ClusterIP | the pod's own address (`https://<listen address>:<port>`) |

The port is the Service port named `https` (else the first); `:443` is left out, as
Liqo does. A node qualifies when it is Ready and is not a virtual node (`liqo.io/type`
is not `virtual-node`: its address is in another cluster); its address is the first of
ExternalDNS, ExternalIP, InternalDNS, InternalIP, Hostname it has (Liqo's order). Of
the nodes that qualify, the one whose address the published URL already names is kept
(consumers hold the URL they were given at peering, so it changes only when it has to;
with the default `externalTrafficPolicy: Cluster` every node forwards the nodePort to the
pod), else the node the service runs on, else the first by name. Where Liqo gives up (a
LoadBalancer without ingress), the nodePort every LoadBalancer Service also has is used
until the ingress appears.

A ClusterIP Service is reachable only where pod and cluster IPs are (one cluster, or
clusters whose pod networks are routed to each other); it is the choice for a playground
whose pods share the host's loopback, or behind `--advertise-url` (an Ingress, say).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from runtime.api import constants as c
from runtime.api.objects import nested
from runtime.forge import conditions
from runtime.forge.nodes import node_address

HTTPS_PORT = 443


@dataclass(frozen=True)
class Endpoint:
    """A derived URL, and what it was derived from (for the log)."""

    url: str
    source: str


@dataclass(frozen=True)
class Unresolved:
    """No URL can be derived now; `reason` says what is missing and what to do."""

    reason: str


def url_for(host: str, port: int) -> str:
    """`https://host:port`, with brackets around an IPv6 address and without `:443`."""
    try:
        literal = f"[{host}]" if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        literal = host
    return f"https://{literal}" if port == HTTPS_PORT else f"https://{literal}:{port}"


def auth_endpoint(
    service: Mapping[str, Any] | None,
    nodes: Iterable[Mapping[str, Any]],
    *,
    pod_url: str,
    own_node: str = "",
    published: str = "",
) -> Endpoint | Unresolved:
    """The URL other clusters reach the service at, per the table in the module docstring.

    `pod_url` is the service's own address, `own_node` the node it runs on ("" unknown),
    `published` the URL published so far (its node is kept while it qualifies).
    """
    if service is None:
        return Unresolved(f"the Service {c.AUTH_SERVICE} is missing (liqo_install re-creates it)")
    name = _name(service)
    spec = service.get("spec") or {}
    kind = str(spec.get("type") or "ClusterIP")
    port = _port(spec)
    if kind == "ClusterIP":
        return Endpoint(pod_url, f"the pod's address (Service {name} is of type ClusterIP)")
    if kind not in ("NodePort", "LoadBalancer"):
        return Unresolved(
            f"Service {name} is of type {kind}: make it NodePort or LoadBalancer, or give --advertise-url"
        )
    if port is None:
        return Unresolved(f"Service {name} has no port")
    if kind == "LoadBalancer":
        host = _ingress_host(service)
        if host:
            return Endpoint(url_for(host, int(port.get("port") or 0)), f"Service {name}'s load balancer")
    node_port = int(port.get("nodePort") or 0)
    if not node_port:
        return Unresolved(
            f"Service {name} ({kind}) has no load balancer ingress yet and no nodePort"
            if kind == "LoadBalancer"
            else f"Service {name} has no nodePort yet"
        )
    chosen = _node(nodes, own_node=own_node, published_host=urlsplit(published).hostname or "")
    if chosen is None:
        waiting = " while its load balancer has no ingress" if kind == "LoadBalancer" else ""
        return Unresolved(
            f"no Ready node (other than virtual nodes) with an address to reach Service {name}'s "
            f"nodePort {node_port}{waiting}"
        )
    node, address_type, address = chosen
    return Endpoint(
        url_for(address, node_port), f"node {node}'s {address_type} and Service {name}'s nodePort"
    )


def qualifies(node: Mapping[str, Any]) -> bool:
    """Whether the node can stand for the cluster: Ready, not virtual, not being deleted."""
    meta = node.get("metadata") or {}
    if nested(meta, "labels", c.LABEL_TYPE) == c.TYPE_VIRTUAL_NODE or meta.get("deletionTimestamp"):
        return False
    return conditions.is_true(nested(node, "status", "conditions"), "Ready")


def _node(
    nodes: Iterable[Mapping[str, Any]], *, own_node: str, published_host: str
) -> tuple[str, str, str] | None:
    """(name, address type, address) of the node to use: the published one, the own one, the first by name."""
    candidates: list[tuple[str, str, str]] = []
    for node in nodes:
        found = node_address(node) if qualifies(node) else None
        if found is not None:
            candidates.append((str(nested(node, "metadata", "name") or ""), *found))
    if not candidates:
        return None
    published = published_host.lower()
    return min(
        candidates,
        key=lambda candidate: (candidate[2].lower() != published, candidate[0] != own_node, candidate[0]),
    )


def _port(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    ports = [port for port in spec.get("ports") or [] if isinstance(port, Mapping)]
    return next((port for port in ports if port.get("name") == "https"), ports[0] if ports else None)


def _ingress_host(service: Mapping[str, Any]) -> str:
    ingress = nested(service, "status", "loadBalancer", "ingress") or []
    first = ingress[0] if ingress and isinstance(ingress[0], Mapping) else {}
    return str(first.get("hostname") or first.get("ip") or "")


def _name(service: Mapping[str, Any]) -> str:
    meta = service.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
