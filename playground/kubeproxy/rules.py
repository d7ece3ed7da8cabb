"""kube-proxy's nftables ruleset for one node, from Services and EndpointSlices: pure.

The shape is kube-proxy's nftables mode (`pkg/proxy/nftables`), on a smaller scale:
one table `ip kube-proxy` that each sync replaces in one transaction, with

- `services`, jumped to from the nat prerouting and output hooks: a verdict map from
  `ClusterIP . protocol . port` to the Service port's chain, and for addresses of the
  node itself (`fib daddr type local`, loopback excluded) one from `protocol .
  nodePort` to its external chain;
- per Service port, `service-<hash>-<ns>/<name>/<proto>/<port>`: off-cluster clients
  (source outside `--cluster-cidr`) are marked for masquerade, then one endpoint is
  picked at random (`numgen random mod N`); `external-...` marks NodePort traffic for
  masquerade (externalTrafficPolicy Cluster) or, with `Local`, goes to this node's
  endpoints only, keeping the client's address;
- per endpoint, `endpoint-<hash>-<ns>/<name>/<proto>/<port>__<ip>/<port>`: a pod that
  reaches itself through its Service is masqueraded (hairpin), then DNAT to the endpoint;
- `masquerading` at the nat postrouting hook: what was marked (0x4000) leaves with the
  node's address;
- the filter hooks reject new connections to a Service port without endpoints (and to
  any other port of a ClusterIP), as kube-proxy does, instead of letting them time out.

Endpoints are the ready ones of the Service's EndpointSlices (a missing `ready`
condition counts as ready), by the Service port's name and protocol;
`internalTrafficPolicy: Local` keeps only this node's for ClusterIP traffic. Not
done: session affinity, LoadBalancer ingress IPs, externalIPs, IPv6, terminating
endpoints' fallback.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

TABLE = "kube-proxy"
MASQUERADE_MARK = "0x4000"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
NODE_PORT_TYPES = ("NodePort", "LoadBalancer")
PROTOCOLS = {"TCP": "tcp", "UDP": "udp", "SCTP": "sctp"}


@dataclass(frozen=True)
class Endpoint:
    address: str
    port: int
    node: str


@dataclass(frozen=True)
class ServicePort:
    namespace: str
    name: str
    port_name: str
    protocol: str
    cluster_ip: str
    port: int
    node_port: int | None
    external_local: bool
    internal_local: bool
    endpoints: tuple[Endpoint, ...]

    @property
    def key(self) -> str:
        """kube-proxy's `<ns>/<name>/<proto>/<port name>` (the port number when unnamed)."""
        return f"{self.namespace}/{self.name}/{PROTOCOLS[self.protocol]}/{self.port_name or self.port}"


def _hash(text: str) -> str:
    """Eight characters of base32 SHA-256, as kube-proxy names its chains."""
    return base64.b32encode(hashlib.sha256(text.encode()).digest()).decode()[:8]


def service_chain(port: ServicePort) -> str:
    return f"service-{_hash(port.key)}-{port.key}"


def external_chain(port: ServicePort) -> str:
    return f"external-{_hash(port.key)}-{port.key}"


def endpoint_chain(port: ServicePort, endpoint: Endpoint) -> str:
    text = f"{port.key}__{endpoint.address}/{endpoint.port}"
    return f"endpoint-{_hash(text)}-{text}"


def _ready(endpoint: Mapping[str, Any]) -> bool:
    return (endpoint.get("conditions") or {}).get("ready") is not False


def _endpoints(slices: Iterable[Mapping[str, Any]], *, port_name: str, protocol: str) -> tuple[Endpoint, ...]:
    found: set[Endpoint] = set()
    for endpoint_slice in slices:
        if endpoint_slice.get("addressType") != "IPv4":
            continue
        number = next(
            (
                int(port["port"])
                for port in endpoint_slice.get("ports") or []
                if (port.get("name") or "") == port_name
                and (port.get("protocol") or "TCP") == protocol
                and port.get("port")
            ),
            None,
        )
        if number is None:
            continue
        for endpoint in endpoint_slice.get("endpoints") or []:
            addresses = endpoint.get("addresses") or []
            if addresses and _ready(endpoint):
                found.add(Endpoint(str(addresses[0]), number, str(endpoint.get("nodeName") or "")))
    return tuple(sorted(found, key=lambda e: (e.address, e.port)))


def service_ports(
    services: Iterable[Mapping[str, Any]], slices: Iterable[Mapping[str, Any]]
) -> list[ServicePort]:
    """Every proxied port of every Service with a ClusterIP, with its ready endpoints."""
    by_service: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for endpoint_slice in slices:
        meta = endpoint_slice.get("metadata") or {}
        service = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
        if service:
            by_service.setdefault((str(meta.get("namespace") or ""), str(service)), []).append(endpoint_slice)
    ports = []
    for service in services:
        meta, spec = service.get("metadata") or {}, service.get("spec") or {}
        cluster_ip = str(spec.get("clusterIP") or "")
        if spec.get("type") == "ExternalName" or cluster_ip in ("", "None") or ":" in cluster_ip:
            continue
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        for port in spec.get("ports") or []:
            protocol = str(port.get("protocol") or "TCP")
            if protocol not in PROTOCOLS or not port.get("port"):
                continue
            port_name = str(port.get("name") or "")
            node_port = port.get("nodePort") if spec.get("type") in NODE_PORT_TYPES else None
            ports.append(
                ServicePort(
                    namespace=namespace,
                    name=name,
                    port_name=port_name,
                    protocol=protocol,
                    cluster_ip=cluster_ip,
                    port=int(port["port"]),
                    node_port=int(node_port) if node_port else None,
                    external_local=spec.get("externalTrafficPolicy") == "Local",
                    internal_local=spec.get("internalTrafficPolicy") == "Local",
                    endpoints=_endpoints(
                        by_service.get((namespace, name), []), port_name=port_name, protocol=protocol
                    ),
                )
            )
    return sorted(ports, key=lambda p: p.key)


def _pick(chains: list[str]) -> str:
    if len(chains) == 1:
        return f"goto {chains[0]}"
    choices = ", ".join(f"{index} : goto {chain}" for index, chain in enumerate(chains))
    return f"numgen random mod {len(chains)} vmap {{ {choices} }}"


def _elements(items: list[str]) -> str:
    return f" elements = {{ {', '.join(items)} }};" if items else ""


def ruleset(
    services: Iterable[Mapping[str, Any]],
    slices: Iterable[Mapping[str, Any]],
    *,
    node: str,
    cluster_cidr: str,
) -> str:
    """The nftables script that replaces the table with the rules for these Services (see the module docstring)."""
    ports = service_ports(services, slices)
    chains: list[str] = []
    service_ips: list[str] = []
    node_ports: list[str] = []
    no_endpoints: list[str] = []
    no_endpoint_node_ports: list[str] = []
    cluster_ips = sorted({port.cluster_ip for port in ports})
    for port in ports:
        proto = PROTOCOLS[port.protocol]
        target = f"{port.cluster_ip} . {proto} . {port.port}"
        internal = [e for e in port.endpoints if not port.internal_local or e.node == node]
        external = [e for e in port.endpoints if not port.external_local or e.node == node]
        for endpoint in port.endpoints:
            chains.append(
                f"chain {endpoint_chain(port, endpoint)} {{\n"
                f"    ip saddr {endpoint.address} jump mark-for-masquerade\n"
                f"    meta l4proto {proto} dnat to {endpoint.address}:{endpoint.port}\n"
                "  }"
            )
        if internal:
            service_ips.append(f"{target} : goto {service_chain(port)}")
            chains.append(
                f"chain {service_chain(port)} {{\n"
                f"    ip daddr {port.cluster_ip} {proto} dport {port.port} ip saddr != {cluster_cidr} "
                "jump mark-for-masquerade\n"
                f"    {_pick([endpoint_chain(port, e) for e in internal])}\n"
                "  }"
            )
        else:
            no_endpoints.append(f"{target} : goto reject-chain")
        if port.node_port is None:
            continue
        if external:
            node_ports.append(f"{proto} . {port.node_port} : goto {external_chain(port)}")
            if port.external_local:
                body = _pick([endpoint_chain(port, e) for e in external])
            else:
                body = f"jump mark-for-masquerade\n    {_pick([endpoint_chain(port, e) for e in external])}"
            chains.append(f"chain {external_chain(port)} {{\n    {body}\n  }}")
        else:
            no_endpoint_node_ports.append(f"{proto} . {port.node_port} : goto reject-chain")
    body = "\n  ".join(chains)
    return f"""table ip {TABLE}
delete table ip {TABLE}
table ip {TABLE} {{
  set cluster-ips {{ type ipv4_addr;{_elements(cluster_ips)} }}
  map service-ips {{ type ipv4_addr . inet_proto . inet_service : verdict;{_elements(service_ips)} }}
  map service-nodeports {{ type inet_proto . inet_service : verdict;{_elements(node_ports)} }}
  map no-endpoint-services {{ type ipv4_addr . inet_proto . inet_service : verdict;{_elements(no_endpoints)} }}
  map no-endpoint-nodeports {{ type inet_proto . inet_service : verdict;{_elements(no_endpoint_node_ports)} }}
  chain mark-for-masquerade {{
    meta mark set meta mark | {MASQUERADE_MARK}
  }}
  chain masquerading {{
    type nat hook postrouting priority srcnat; policy accept;
    meta mark & {MASQUERADE_MARK} == 0 return
    meta mark set meta mark ^ {MASQUERADE_MARK}
    masquerade fully-random
  }}
  chain services {{
    ip daddr . meta l4proto . th dport vmap @service-ips
    fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports
  }}
  chain nat-prerouting {{
    type nat hook prerouting priority dstnat; policy accept;
    jump services
  }}
  chain nat-output {{
    type nat hook output priority -100; policy accept;
    jump services
  }}
  chain reject-chain {{
    reject
  }}
  chain service-endpoints-check {{
    ip daddr . meta l4proto . th dport vmap @no-endpoint-services
  }}
  chain nodeport-endpoints-check {{
    fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @no-endpoint-nodeports
  }}
  chain cluster-ips-check {{
    ip daddr @cluster-ips reject
  }}
  chain filter-input {{
    type filter hook input priority -110; policy accept;
    ct state new jump nodeport-endpoints-check
    ct state new jump service-endpoints-check
  }}
  chain filter-forward {{
    type filter hook forward priority -110; policy accept;
    ct state new jump service-endpoints-check
    ct state new jump cluster-ips-check
  }}
  chain filter-output {{
    type filter hook output priority -110; policy accept;
    ct state new jump service-endpoints-check
  }}
  chain filter-output-post-dnat {{
    type filter hook output priority -90; policy accept;
    ct state new jump cluster-ips-check
  }}
  {body}
}}
"""


def udp_endpoints(ports: Iterable[ServicePort]) -> set[str]:
    """The addresses serving UDP Service ports: when one goes, its conntrack entries must go too (below)."""
    return {endpoint.address for port in ports if port.protocol == "UDP" for endpoint in port.endpoints}
