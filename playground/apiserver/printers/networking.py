"""Printers for the kinds that route traffic: Services, Endpoints, EndpointSlices, Ingresses,
IngressClasses and NetworkPolicies."""

from __future__ import annotations

import ipaddress
from datetime import datetime
from typing import Any

from .columns import AGE, NAME, Cell, Column, Obj, Printer
from .fields import get_int, get_list, get_map, get_str, get_value, name_of
from .format import created, format_label_selector, format_labels, with_more


def _load_balancer(status: Obj) -> str:
    """The sorted, de-duplicated IPs (or hostnames) of `status.loadBalancer.ingress`."""
    ingress = get_list(status, "loadBalancer", "ingress")
    addresses = {get_str(entry, "ip") or get_str(entry, "hostname") for entry in ingress}
    return ",".join(sorted(address for address in addresses if address))


def _service_external_ip(spec: Obj, status: Obj) -> str:
    kind = get_str(spec, "type") or "ClusterIP"
    external = [ip for ip in get_list(spec, "externalIPs") if isinstance(ip, str)]
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if kind == "LoadBalancer":
        balancers = _load_balancer(status)
        if external:
            return ",".join([*(balancers.split(",") if balancers else []), *external])
        return balancers or "<pending>"
    if kind == "ExternalName":
        return get_str(spec, "externalName")
    return "<unknown>"


def _service_ports(ports: list[Any]) -> str:
    pieces = []
    for port in ports:
        protocol, node_port = get_str(port, "protocol") or "TCP", get_int(port, "nodePort")
        middle = f":{node_port}" if node_port > 0 else ""
        pieces.append(f"{get_int(port, 'port')}{middle}/{protocol}")
    return ",".join(pieces) or "<none>"


def _service_cells(svc: Obj, now: datetime) -> list[Cell]:
    spec = get_map(svc, "spec")
    cluster_ips = get_list(spec, "clusterIPs")
    cluster_ip = (
        cluster_ips[0] if cluster_ips and isinstance(cluster_ips[0], str) else get_str(spec, "clusterIP")
    )
    return [
        name_of(svc),
        get_str(spec, "type") or "ClusterIP",
        cluster_ip or "<none>",
        _service_external_ip(spec, get_map(svc, "status")),
        _service_ports(get_list(spec, "ports")),
        created(svc, now),
        format_labels(get_map(spec, "selector")),
    ]


def _host_port(ip: str, port: int) -> str:
    try:
        bracket = isinstance(ipaddress.ip_address(ip), ipaddress.IPv6Address)
    except ValueError:
        bracket = ":" in ip
    return f"[{ip}]:{port}" if bracket else f"{ip}:{port}"


def _endpoints_list(endpoints: Obj) -> str:
    subsets = get_list(endpoints, "subsets")
    if not subsets:
        return "<none>"
    items: list[str] = []
    total = 0
    for subset in subsets:
        addresses = [get_str(a, "ip") for a in get_list(subset, "addresses")]
        ports = get_list(subset, "ports") or [None]
        for port in ports:
            total += len(addresses)
            items.extend(ip if port is None else _host_port(ip, get_int(port, "port")) for ip in addresses)
    return with_more(items, total, empty="")


def _endpoints_cells(endpoints: Obj, now: datetime) -> list[Cell]:
    return [name_of(endpoints), _endpoints_list(endpoints), created(endpoints, now)]


def _slice_port(port: Any) -> str:
    number = get_int(port, "port", default=-1)
    return str(number) if number >= 0 else get_str(port, "name") or "*"


def _endpoint_slice_cells(eps: Obj, now: datetime) -> list[Cell]:
    ports = [_slice_port(port) for port in get_list(eps, "ports")]
    addresses = [a for endpoint in get_list(eps, "endpoints") for a in get_list(endpoint, "addresses")]
    return [
        name_of(eps),
        get_str(eps, "addressType"),
        with_more(ports, len(ports)),
        with_more([str(a) for a in addresses], len(addresses)),
        created(eps, now),
    ]


def _ingress_hosts(rules: list[Any]) -> str:
    """Up to three hosts; once three are found, any further rule adds "+ N more" (N counts rules)."""
    hosts: list[str] = []
    for rule in rules:
        if len(hosts) == 3:
            return f"{','.join(hosts)} + {len(rules) - 3} more..."
        if host := get_str(rule, "host"):
            hosts.append(host)
    return ",".join(hosts) or "*"


def _ingress_cells(ing: Obj, now: datetime) -> list[Cell]:
    spec = get_map(ing, "spec")
    return [
        name_of(ing),
        get_str(spec, "ingressClassName") or "<none>",
        _ingress_hosts(get_list(spec, "rules")),
        _load_balancer(get_map(ing, "status")),
        "80, 443" if get_list(spec, "tls") else "80",
        created(ing, now),
    ]


def _ingress_class_parameters(spec: Obj) -> str:
    """`Kind[.apiGroup]/name` of spec.parameters (the group only when the field is set)."""
    parameters = spec.get("parameters")
    if not isinstance(parameters, dict):
        return "<none>"
    kind = get_str(parameters, "kind")
    if isinstance(group := get_value(parameters, "apiGroup"), str):
        kind = f"{kind}.{group}"
    return f"{kind}/{get_str(parameters, 'name')}"


def _ingress_class_cells(ic: Obj, now: datetime) -> list[Cell]:
    spec = get_map(ic, "spec")
    return [name_of(ic), get_str(spec, "controller"), _ingress_class_parameters(spec), created(ic, now)]


def _network_policy_cells(policy: Obj, now: datetime) -> list[Cell]:
    selector = format_label_selector(get_map(policy, "spec", "podSelector"))
    return [name_of(policy), selector, created(policy, now)]


SERVICE = Printer(
    columns=(
        NAME,
        Column("Type", "type determines how the Service is exposed."),
        Column("Cluster-IP", "clusterIP is the IP address of the service."),
        Column("External-IP", "IP addresses for which nodes also accept traffic for this service."),
        Column("Port(s)", "The list of ports that are exposed by this service."),
        AGE,
        Column("Selector", "Route service traffic to pods with labels matching this selector.", priority=1),
    ),
    cells=_service_cells,
)
ENDPOINTS = Printer(
    columns=(NAME, Column("Endpoints", "The set of all endpoints is the union of all subsets."), AGE),
    cells=_endpoints_cells,
)
ENDPOINT_SLICE = Printer(
    columns=(
        NAME,
        Column("AddressType", "The type of address carried by this EndpointSlice."),
        Column("Ports", "The list of network ports exposed by each endpoint."),
        Column("Endpoints", "A list of unique endpoints in this slice."),
        AGE,
    ),
    cells=_endpoint_slice_cells,
)
INGRESS = Printer(
    columns=(
        NAME,
        Column(
            "Class", "The name of the IngressClass resource that should be used for additional configuration"
        ),
        Column("Hosts", "Hosts that incoming requests are matched against before the ingress rule"),
        Column("Address", "Address is a list containing ingress points for the load-balancer"),
        Column("Ports", "Ports of TLS configurations that open"),
        AGE,
    ),
    cells=_ingress_cells,
)
INGRESS_CLASS = Printer(
    columns=(
        NAME,
        Column("Controller", "Controller that is responsible for handling this class"),
        Column("Parameters", "A reference to a resource with additional parameters"),
        AGE,
    ),
    cells=_ingress_class_cells,
)
NETWORK_POLICY = Printer(
    columns=(
        NAME,
        Column("Pod-Selector", "Selects the pods to which this NetworkPolicy object applies."),
        AGE,
    ),
    cells=_network_policy_cells,
)

PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "services"): SERVICE,
    ("", "endpoints"): ENDPOINTS,
    ("discovery.k8s.io", "endpointslices"): ENDPOINT_SLICE,
    ("networking.k8s.io", "ingresses"): INGRESS,
    ("networking.k8s.io", "ingressclasses"): INGRESS_CLASS,
    ("networking.k8s.io", "networkpolicies"): NETWORK_POLICY,
}
