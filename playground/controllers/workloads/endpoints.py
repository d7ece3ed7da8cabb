"""What a Service's EndpointSlices and Endpoints should say, as pure functions.

Mirrors kube's endpointslice reconciler and endpoints controller
(`pkg/controller/endpointslice`, `pkg/controller/endpoint`, `endpointslice/util`):

- a pod is an endpoint when it has an IP, is not finished, and (for the legacy
  Endpoints) is not terminating unless the Service publishes not-ready addresses;
- a slice endpoint is `ready` when the pod is Ready and not terminating (or the Service
  publishes not-ready addresses), `serving` when Ready, `terminating` while deleting;
- ports come from the Service's targetPort, a name looked up among the pod's container
  ports of the same protocol;
- endpoints are grouped by (address type, ports) into slices of at most
  `max_per_slice`; `plan_slices` keeps existing slices where it can (an endpoint stays
  in the slice it is in) so updates touch few objects, and keeps one empty placeholder
  slice for a Service without endpoints;
- the legacy Endpoints object packs the same pods into subsets (`RepackSubsets`).
"""

from __future__ import annotations

import copy
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from runtime.api.objects import JSON

from . import names, pods
from .ownership import controller_ref, name, namespace, uid

IPV4, IPV6 = "IPv4", "IPv6"
#: (address type, ports as a sorted tuple): endpoints with the same key share slices
GroupKey = tuple[str, tuple[tuple[str, int, str, str], ...]]
EndpointKey = tuple[str, tuple[str, ...], str]


def family(ip: str) -> str:
    return IPV6 if ipaddress.ip_address(ip).version == 6 else IPV4


def service_families(service: JSON) -> list[str]:
    """The Service's IP families: spec.ipFamilies, else its cluster IPs' families, else IPv4."""
    spec = service.get("spec") or {}
    families = [str(f) for f in spec.get("ipFamilies") or []]
    if families:
        return families
    ips = [ip for ip in spec.get("clusterIPs") or [spec.get("clusterIP")] if ip and ip != "None"]
    return [family(ip) for ip in ips] or [IPV4]


def is_headless(service: JSON) -> bool:
    return (service.get("spec") or {}).get("clusterIP") == "None"


def pod_ips(pod: JSON) -> list[str]:
    status = pod.get("status") or {}
    ips = [str(item.get("ip")) for item in status.get("podIPs") or [] if item.get("ip")]
    if not ips and status.get("podIP"):
        ips = [str(status["podIP"])]
    return ips


def should_include(pod: JSON, *, include_terminating: bool) -> bool:
    """`ShouldPodBeInEndpoints`."""
    if pods.is_terminal(pod) or not pod_ips(pod):
        return False
    return include_terminating or not pods.is_terminating(pod)


def find_port(pod: JSON, service_port: JSON) -> int | None:
    """`podutil.FindPort`: the container port a Service port's targetPort names (None: no such port)."""
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    protocol = service_port.get("protocol") or "TCP"
    spec = pod.get("spec") or {}
    sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    for container in [*(spec.get("containers") or []), *sidecars]:
        for port in container.get("ports") or []:
            if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                return int(port["containerPort"])
    return None


def slice_ports(service: JSON, pod: JSON) -> list[JSON]:
    """The EndpointSlice ports of `pod` for `service` (ports it cannot resolve are left out)."""
    ports: list[JSON] = []
    for service_port in (service.get("spec") or {}).get("ports") or []:
        number = find_port(pod, service_port)
        if number is None:
            continue
        port: JSON = {
            "name": service_port.get("name", ""),
            "port": number,
            "protocol": service_port.get("protocol") or "TCP",
        }
        if service_port.get("appProtocol"):
            port["appProtocol"] = service_port["appProtocol"]
        ports.append(port)
    return ports


def _target_ref(pod: JSON) -> JSON:
    return {"kind": "Pod", "namespace": namespace(pod), "name": name(pod), "uid": uid(pod)}


def sets_hostname(pod: JSON, service: JSON) -> bool:
    """`ShouldSetHostname`: the pod names a hostname and this Service as its subdomain."""
    spec = pod.get("spec") or {}
    return (
        bool(spec.get("hostname"))
        and spec.get("subdomain") == name(service)
        and namespace(pod) == namespace(service)
    )


def slice_endpoint(pod: JSON, service: JSON, address_type: str, *, node: JSON | None) -> JSON:
    """`podToEndpoint`."""
    publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    serving = pods.is_ready(pod)
    terminating = pods.is_terminating(pod)
    endpoint: JSON = {
        "addresses": [ip for ip in pod_ips(pod) if family(ip) == address_type],
        "conditions": {
            "ready": publish or (serving and not terminating),
            "serving": serving,
            "terminating": terminating,
        },
    }
    if sets_hostname(pod, service):
        endpoint["hostname"] = (pod.get("spec") or {})["hostname"]
    if pods.node_name(pod):
        endpoint["nodeName"] = pods.node_name(pod)
    endpoint["targetRef"] = _target_ref(pod)
    zone = ((node or {}).get("metadata") or {}).get("labels", {}).get(names.TOPOLOGY_ZONE)
    if zone:
        endpoint["zone"] = zone
    return endpoint


def endpoint_key(endpoint: JSON) -> EndpointKey:
    """What makes two endpoints the same endpoint (`hashEndpoint`): addresses, hostname, target."""
    ref = endpoint.get("targetRef") or {}
    return (
        f"{ref.get('namespace', '')}/{ref.get('name', '')}",
        tuple(sorted(endpoint.get("addresses") or [])),
        str(endpoint.get("hostname") or ""),
    )


def group_key(address_type: str, ports: Iterable[JSON]) -> GroupKey:
    return address_type, tuple(
        sorted(
            (
                str(p.get("name") or ""),
                int(p.get("port") or 0),
                str(p.get("protocol") or "TCP"),
                str(p.get("appProtocol") or ""),
            )
            for p in ports
        )
    )


def desired_endpoints(
    service: JSON, selected: Iterable[JSON], *, nodes: Mapping[str, JSON]
) -> dict[GroupKey, dict[EndpointKey, tuple[JSON, list[JSON]]]]:
    """Endpoints by group, each with its ports; pods on unknown nodes are left out unless the
    Service publishes not-ready addresses (kube's reconciler skips them)."""
    publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    groups: dict[GroupKey, dict[EndpointKey, tuple[JSON, list[JSON]]]] = {}
    for pod in selected:
        if not should_include(pod, include_terminating=True):
            continue
        node = nodes.get(pods.node_name(pod))
        if node is None and not publish:
            continue
        ports = slice_ports(service, pod)
        for address_type in service_families(service):
            endpoint = slice_endpoint(pod, service, address_type, node=node)
            if endpoint["addresses"]:
                groups.setdefault(group_key(address_type, ports), {})[endpoint_key(endpoint)] = (
                    endpoint,
                    ports,
                )
    return groups


def slice_labels(service: JSON) -> dict[str, str]:
    """The Service's labels, minus the reserved ones, plus service-name, managed-by and headless."""
    reserved = (names.SERVICE_NAME, names.MANAGED_BY, names.HEADLESS)
    labels = {
        k: v for k, v in ((service.get("metadata") or {}).get("labels") or {}).items() if k not in reserved
    }
    if is_headless(service):
        labels[names.HEADLESS] = ""
    labels[names.SERVICE_NAME] = name(service)
    labels[names.MANAGED_BY] = names.ENDPOINTSLICE_CONTROLLER
    return labels


def new_slice(service: JSON, address_type: str, ports: list[JSON], endpoints: list[JSON]) -> JSON:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "generateName": f"{name(service)}-",
            "namespace": namespace(service),
            "labels": slice_labels(service),
            "ownerReferences": [controller_ref(service)],
        },
        "addressType": address_type,
        "endpoints": endpoints,
        "ports": ports,
    }


@dataclass
class SlicePlan:
    create: list[JSON] = field(default_factory=list)
    update: list[JSON] = field(default_factory=list)
    delete: list[JSON] = field(default_factory=list)


def plan_slices(
    service: JSON,
    desired: Mapping[GroupKey, Mapping[EndpointKey, tuple[JSON, list[JSON]]]],
    existing: Iterable[JSON],
    *,
    max_per_slice: int,
) -> SlicePlan:
    """The writes that turn the Service's `existing` slices into `desired` (see the module docstring)."""
    plan = SlicePlan()
    labels = slice_labels(service)
    by_group: dict[GroupKey, list[JSON]] = {}
    for current in sorted(existing, key=name):
        key = group_key(str(current.get("addressType")), current.get("ports") or [])
        by_group.setdefault(key, []).append(current)
    kept: list[JSON] = []
    for key, slices in by_group.items():
        if key not in desired:
            plan.delete += slices
            continue
        remaining = dict(desired[key])
        ports = next(iter(remaining.values()))[1]
        filled: list[tuple[JSON, list[JSON]]] = []
        for current in slices:
            endpoints: list[JSON] = []
            for endpoint_id in map(endpoint_key, current.get("endpoints") or []):
                if endpoint_id in remaining and len(endpoints) < max_per_slice:
                    endpoints.append(remaining.pop(endpoint_id)[0])
            filled.append((current, endpoints))
        for current, endpoints in filled:
            while len(endpoints) < max_per_slice and remaining:
                endpoints.append(remaining.pop(next(iter(remaining)))[0])
            if not endpoints:
                plan.delete.append(current)
                continue
            updated = copy.deepcopy(current)
            updated["endpoints"] = endpoints
            updated["ports"] = ports
            updated["metadata"]["labels"] = labels
            kept.append(updated)
            if updated != current:
                plan.update.append(updated)
        _create_rest(plan, service, key, remaining, max_per_slice)
    for key, group in desired.items():
        if key not in by_group:
            _create_rest(plan, service, key, dict(group), max_per_slice)
    if not kept and not plan.create:
        _keep_placeholder(plan, service)
    return plan


def _create_rest(
    plan: SlicePlan,
    service: JSON,
    key: GroupKey,
    remaining: dict[EndpointKey, tuple[JSON, list[JSON]]],
    max_per_slice: int,
) -> None:
    values = list(remaining.values())
    for start in range(0, len(values), max_per_slice):
        chunk = values[start : start + max_per_slice]
        plan.create.append(new_slice(service, key[0], chunk[0][1], [endpoint for endpoint, _ in chunk]))


def _keep_placeholder(plan: SlicePlan, service: JSON) -> None:
    """A Service without endpoints keeps one empty slice of its primary family."""
    placeholder = new_slice(service, service_families(service)[0], [], [])
    for index, doomed in enumerate(plan.delete):
        if (doomed.get("addressType"), doomed.get("endpoints") or [], doomed.get("ports") or []) == (
            placeholder["addressType"],
            [],
            [],
        ):
            del plan.delete[index]
            if (doomed.get("metadata") or {}).get("labels") != placeholder["metadata"]["labels"]:
                updated = copy.deepcopy(doomed)
                updated["metadata"]["labels"] = placeholder["metadata"]["labels"]
                plan.update.append(updated)
            return
    plan.create.append(placeholder)


# -- the legacy Endpoints object ------------------------------------------------------------------


def _address(pod: JSON, service: JSON) -> JSON | None:
    """`podToEndpointAddressForService`: the pod IP of the Service's primary family."""
    wanted = service_families(service)[0]
    ip = next((ip for ip in pod_ips(pod) if family(ip) == wanted), None)
    if ip is None:
        return None
    address: JSON = {"ip": ip}
    if sets_hostname(pod, service):
        address["hostname"] = (pod.get("spec") or {})["hostname"]
    if pods.node_name(pod):
        address["nodeName"] = pods.node_name(pod)
    address["targetRef"] = _target_ref(pod)
    return address


def _port_key(port: JSON) -> tuple[str, int, str, str]:
    return (
        str(port.get("name") or ""),
        int(port.get("port") or 0),
        str(port.get("protocol") or ""),
        str(port.get("appProtocol") or ""),
    )


def endpoint_subsets(service: JSON, selected: Iterable[JSON]) -> list[JSON]:
    """The Endpoints subsets of `service` (kube's endpoints controller, repacked as `RepackSubsets` does)."""
    spec = service.get("spec") or {}
    publish = bool(spec.get("publishNotReadyAddresses"))
    #: port key (None: a headless Service without ports) -> address key -> (address, ready)
    by_port: dict[tuple[str, int, str, str] | None, dict[tuple[str, str], tuple[JSON, bool]]] = {}
    ports: dict[tuple[str, int, str, str], JSON] = {}
    for pod in selected:
        if not should_include(pod, include_terminating=publish):
            continue
        address = _address(pod, service)
        if address is None:
            continue
        ready = publish or pods.is_ready(pod)
        address_key = (address["ip"], uid(pod))
        entries: list[tuple[str, int, str, str] | None] = []
        if not spec.get("ports") and is_headless(service):
            entries.append(None)
        for service_port in spec.get("ports") or []:
            number = find_port(pod, service_port)
            if number is None:
                continue
            port: JSON = {"port": number, "protocol": service_port.get("protocol") or "TCP"}
            if service_port.get("name"):
                port = {"name": service_port["name"], **port}
            if service_port.get("appProtocol"):
                port["appProtocol"] = service_port["appProtocol"]
            ports[_port_key(port)] = port
            entries.append(_port_key(port))
        for entry in entries:
            addresses = by_port.setdefault(entry, {})
            known = addresses.get(address_key)
            addresses[address_key] = (address, ready or (known is not None and known[1]))
    #: the same addresses (with the same readiness) share one subset
    subsets: dict[tuple[tuple[tuple[str, str], bool], ...], list[tuple[str, int, str, str] | None]] = {}
    for port_key, addresses in by_port.items():
        shape = tuple(sorted((key, ready) for key, (_, ready) in addresses.items()))
        subsets.setdefault(shape, []).append(port_key)
    result: list[JSON] = []
    for shape, port_keys in subsets.items():
        first = by_port[port_keys[0]]
        subset: JSON = {}
        ready_addresses = [first[key][0] for key, ready in shape if ready]
        not_ready = [first[key][0] for key, ready in shape if not ready]
        if ready_addresses:
            subset["addresses"] = ready_addresses
        if not_ready:
            subset["notReadyAddresses"] = not_ready
        subset_ports = [ports[key] for key in sorted(k for k in port_keys if k is not None)]
        if subset_ports:
            subset["ports"] = subset_ports
        result.append(subset)
    return sorted(result, key=_subset_order)


def _subset_order(subset: JSON) -> tuple[str, ...]:
    addresses = [*(subset.get("addresses") or []), *(subset.get("notReadyAddresses") or [])]
    return tuple(str(address["ip"]) for address in addresses)


def endpoints_labels(service: JSON) -> dict[str, str]:
    """The Service's labels plus `endpointslice.kubernetes.io/skip-mirror: "true"` (and headless)."""
    labels = dict((service.get("metadata") or {}).get("labels") or {})
    labels[names.SKIP_MIRROR] = "true"
    if is_headless(service):
        labels[names.HEADLESS] = ""
    else:
        labels.pop(names.HEADLESS, None)
    return labels
