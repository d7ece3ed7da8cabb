"""Reflected Services, as pure functions: a consumer's Service to its copy in the twin namespace.

Services are reflected verbatim (Liqo's rules) except what a cluster allocates for itself:
the ClusterIP (the provider allocates its own; a headless Service stays headless), the IP
families, the health-check node port, the load balancer's IP and status, and the node
ports, unless the Service is annotated `liqo.io/force-remote-node-port=true` (then the
copy asks for the same node ports, which the provider may refuse if they are taken).
Pods find the Service by its DNS name on either side, so the addresses do not need to match.

An update of the copy keeps what the provider allocated (`service_update`), so writing it
back never asks for other addresses; what the consumer decides (type, selector, ports,
policies) is the consumer's and reverted if edited on the provider.

A provider exposes a consumer's Services on its own nodes only as far as its install allows
(`max_consumer_service_type`: ClusterIP by default): its admission webhook converts a
NodePort or LoadBalancer copy to the widest type allowed (`converted`), so offloaded pods
still find it by name while the provider opens no node port and buys no load balancer for
a consumer (its users reach the Service through the consumer's own). A copy the provider
converted is no difference to the reflector (`service_differs`), so it is not written
again and again.
"""

from __future__ import annotations

import copy
from typing import Final, Literal, get_args

from runtime.api import constants as c
from runtime.api.objects import JSON, nested

from .meta import metadata_differs, reflected_metadata

#: the spec fields a copy takes from the consumer's Service as they are
CARRIED: Final = (
    "type",
    "selector",
    "sessionAffinity",
    "sessionAffinityConfig",
    "publishNotReadyAddresses",
    "externalTrafficPolicy",
    "internalTrafficPolicy",
    "ipFamilyPolicy",
    "loadBalancerClass",
    "loadBalancerSourceRanges",
    "allocateLoadBalancerNodePorts",
    "externalName",
    "trafficDistribution",
)
#: the spec fields the provider allocates for the copy, kept when the copy is written again
ALLOCATED: Final = ("clusterIP", "clusterIPs", "ipFamilies", "healthCheckNodePort")
_PORT_FIELDS: Final = ("name", "protocol", "port", "targetPort", "appProtocol")
_NODE_PORT_TYPES: Final = ("NodePort", "LoadBalancer")
ServiceType = Literal["ClusterIP", "NodePort", "LoadBalancer"]
#: the Service types a provider may let a consumer keep, narrowest first (each exposes more than the one before)
EXPOSURES: Final[tuple[ServiceType, ...]] = get_args(ServiceType)
#: what only a load balancer has, and what only a node port has
_LOAD_BALANCER_FIELDS: Final = (
    "loadBalancerClass",
    "loadBalancerSourceRanges",
    "loadBalancerIP",
    "allocateLoadBalancerNodePorts",
    "healthCheckNodePort",
)
_NODE_PORT_FIELDS: Final = ("externalTrafficPolicy",)


def converted(spec: JSON, *, widest: ServiceType) -> JSON:
    """A Service spec narrowed to the type `widest` when it asks for more (ExternalName and ClusterIP, and
    anything already narrow enough, unchanged): a LoadBalancer becomes a NodePort without its load balancer
    fields, a NodePort a ClusterIP without its node ports."""
    kind = spec.get("type") or "ClusterIP"
    if kind not in EXPOSURES or EXPOSURES.index(kind) <= EXPOSURES.index(widest):
        return spec
    narrowed = {key: copy.deepcopy(value) for key, value in spec.items() if key not in _LOAD_BALANCER_FIELDS}
    narrowed["type"] = widest
    if widest == "ClusterIP":
        for key in _NODE_PORT_FIELDS:
            narrowed.pop(key, None)
        narrowed["ports"] = [
            {key: value for key, value in port.items() if key != "nodePort"}
            if isinstance(port, dict)
            else port
            for port in narrowed.get("ports") or []
        ]
        if not narrowed["ports"]:
            del narrowed["ports"]
    return narrowed


def forces_node_ports(service: JSON) -> bool:
    annotations = nested(service, "metadata", "annotations") or {}
    return str(annotations.get(c.ANNOTATION_FORCE_REMOTE_NODE_PORT, "")).lower() == "true"


def _ports(ports: list[JSON] | None, *, node_ports: bool) -> list[JSON]:
    fields = (*_PORT_FIELDS, "nodePort") if node_ports else _PORT_FIELDS
    return [{key: port[key] for key in fields if port.get(key) is not None} for port in ports or []]


def remote_service(local: JSON, *, namespace: str, origin_cluster_id: str) -> JSON:
    """The copy of the consumer's Service `local` in twin namespace `namespace`."""
    spec = local.get("spec") or {}
    remote_spec: JSON = {key: copy.deepcopy(spec[key]) for key in CARRIED if spec.get(key) is not None}
    remote_spec["ports"] = _ports(spec.get("ports"), node_ports=forces_node_ports(local))
    if not remote_spec["ports"]:
        del remote_spec["ports"]
    if spec.get("clusterIP") == "None":
        remote_spec["clusterIP"] = "None"
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": reflected_metadata(
            local,
            name=str(local["metadata"]["name"]),
            namespace=namespace,
            origin_cluster_id=origin_cluster_id,
        ),
        "spec": remote_spec,
    }


def _decided(spec: JSON, *, node_ports: bool) -> JSON:
    """What of a Service's spec the consumer decides (the rest the provider allocates)."""
    decided = {key: spec[key] for key in CARRIED if spec.get(key) is not None}
    decided["ports"] = _ports(spec.get("ports"), node_ports=node_ports)
    decided["headless"] = spec.get("clusterIP") == "None"
    return decided


def service_differs(current: JSON, desired: JSON) -> bool:
    """Whether the copy on the provider says something else than `desired` (what the provider allocated aside,
    and a type the provider narrowed it to)."""
    have = current.get("spec") or {}
    want = desired.get("spec") or {}
    kind = have.get("type") or "ClusterIP"
    if kind in EXPOSURES and (want.get("type") or "ClusterIP") in EXPOSURES:
        want = converted(want, widest=kind)
    node_ports = any("nodePort" in port for port in want.get("ports") or [])
    return metadata_differs(current, desired) or _decided(have, node_ports=node_ports) != (
        _decided(want, node_ports=node_ports)
    )


def service_update(current: JSON, desired: JSON) -> JSON:
    """The body that writes `desired` over the copy `current`, keeping what the provider allocated for it."""
    have = current.get("spec") or {}
    spec = copy.deepcopy(desired["spec"])
    kind = spec.get("type") or "ClusterIP"
    if kind != "ExternalName":
        for key in ("clusterIP", "clusterIPs", "ipFamilies"):
            if have.get(key) is not None:
                spec[key] = copy.deepcopy(have[key])
    if (
        kind == "LoadBalancer"
        and have.get("healthCheckNodePort")
        and spec.get("externalTrafficPolicy") == "Local"
    ):
        spec["healthCheckNodePort"] = have["healthCheckNodePort"]
    if kind in _NODE_PORT_TYPES:
        allocated = {
            (port.get("port"), port.get("protocol") or "TCP"): port.get("nodePort")
            for port in have.get("ports") or []
        }
        for port in spec.get("ports") or []:
            node_port = allocated.get((port.get("port"), port.get("protocol") or "TCP"))
            if "nodePort" not in port and node_port:
                port["nodePort"] = node_port
    metadata = {**desired["metadata"], "resourceVersion": current["metadata"].get("resourceVersion")}
    return {**desired, "metadata": metadata, "spec": spec}
