"""Strategies of core/v1 kinds other than Pods: Namespace, Service, Node, Secret,
ConfigMap, Event, ServiceAccount, Endpoints, PersistentVolume(Claim)."""

from __future__ import annotations

import base64
import binascii
import ipaddress
import random
import re
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import Cause, invalid
from ..validation import immutable, invalid_value
from .base import Obj, Strategy

NAMESPACE_FINALIZER = "kubernetes"
NODE_PORT_RANGE = range(30000, 32768)


class NamespaceStrategy(Strategy):
    name_rule = "label"
    return_deleted_object = True

    def default(self, obj: Obj) -> None:
        obj.setdefault("spec", {}).setdefault("finalizers", [NAMESPACE_FINALIZER])
        obj.setdefault("status", {}).setdefault("phase", "Active")
        labels = obj.setdefault("metadata", {}).setdefault("labels", {})
        if isinstance(labels, dict):
            labels["kubernetes.io/metadata.name"] = obj["metadata"].get("name", "")

    def prepare_for_create(self, obj: Obj, *, status_subresource: bool) -> None:
        obj["status"] = {"phase": "Active"}

    def prepare_for_update(self, new: Obj, old: Obj, *, status_subresource: bool) -> None:
        """Spec (finalizers) changes only through /finalize; status only through /status."""
        super().prepare_for_update(new, old, status_subresource=True)
        new["spec"] = old.get("spec", {})

    def field_labels(self, obj: Obj) -> dict[str, str]:
        return {"status.phase": (obj.get("status") or {}).get("phase", "")}


class NodeStrategy(Strategy):
    def prepare_for_create(self, obj: Obj, *, status_subresource: bool) -> None:
        """Nodes keep their status on create: the kubelet registers a Node with its capacity and conditions."""

    def field_labels(self, obj: Obj) -> dict[str, str]:
        return {"spec.unschedulable": str(bool((obj.get("spec") or {}).get("unschedulable", False))).lower()}


def _decode_errors(data: Any, field: str) -> list[Cause]:
    if data is None:
        return []
    if not isinstance(data, dict):
        return [Cause(field, "Invalid value: must be a map", "FieldValueTypeInvalid")]
    causes = []
    for key, value in data.items():
        if not isinstance(value, str):
            causes.append(
                Cause(f"{field}[{key}]", f"{invalid_value(value)}: must be a string", "FieldValueTypeInvalid")
            )
            continue
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            causes.append(Cause(f"{field}[{key}]", f"{invalid_value(value)}: illegal base64 data"))
    return causes


def _config_key_errors(data: Any, field: str) -> list[Cause]:
    causes = []
    for key in (data or {}) if isinstance(data, dict) else ():
        if not re.fullmatch(r"[-._a-zA-Z0-9]+", key) or len(key) > 253:
            causes.append(
                Cause(
                    f"{field}",
                    f'Invalid value: "{key}": a valid config key must consist of alphanumeric characters, '
                    "'-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
                    "validation is '[-._a-zA-Z0-9]+')",
                )
            )
    return causes


def _immutable_data(new: Obj, old: Obj) -> list[Cause]:
    if not old.get("immutable"):
        return []
    causes = immutable("data", new.get("data"), old.get("data"))
    if "binaryData" in new or "binaryData" in old:
        causes += immutable("binaryData", new.get("binaryData"), old.get("binaryData"))
    if not new.get("immutable"):
        causes.append(Cause("immutable", "Invalid value: false: field is immutable when `immutable` is set"))
    return causes


class ConfigMapStrategy(Strategy):
    def validate(self, obj: Obj) -> list[Cause]:
        causes = _config_key_errors(obj.get("data"), "data") + _config_key_errors(
            obj.get("binaryData"), "binaryData"
        )
        causes += _decode_errors(obj.get("binaryData"), "binaryData")
        for key, value in (obj.get("data") or {}).items() if isinstance(obj.get("data"), dict) else ():
            if not isinstance(value, str):
                causes.append(
                    Cause(
                        f"data[{key}]", f"{invalid_value(value)}: must be a string", "FieldValueTypeInvalid"
                    )
                )
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return self.validate(new) + _immutable_data(new, old)


class SecretStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        obj.setdefault("type", "Opaque")
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict):
            data = obj.setdefault("data", {}) or {}
            obj["data"] = data
            for key, value in string_data.items():
                if isinstance(value, str):
                    data[key] = base64.b64encode(value.encode()).decode()

    def validate(self, obj: Obj) -> list[Cause]:
        causes = _config_key_errors(obj.get("data"), "data") + _decode_errors(obj.get("data"), "data")
        if obj.get("type") == "kubernetes.io/service-account-token":
            annotations = (obj.get("metadata") or {}).get("annotations") or {}
            if not annotations.get("kubernetes.io/service-account.name"):
                causes.append(
                    Cause(
                        "metadata.annotations[kubernetes.io/service-account.name]",
                        "Required value",
                        "FieldValueRequired",
                    )
                )
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return (
            self.validate(new)
            + immutable("type", new.get("type"), old.get("type"))
            + _immutable_data(new, old)
        )

    def field_labels(self, obj: Obj) -> dict[str, str]:
        return {"type": obj.get("type", "")}


class EventStrategy(Strategy):
    allow_create_on_update = True

    def field_labels(self, obj: Obj) -> dict[str, str]:
        involved = obj.get("involvedObject") or {}
        source = obj.get("source") or {}
        fields = {f"involvedObject.{k}": str(involved.get(k, "")) for k in _INVOLVED_FIELDS}
        fields.update(
            reason=obj.get("reason", ""),
            reportingComponent=obj.get("reportingComponent", ""),
            source=source.get("component", ""),
            type=obj.get("type", ""),
        )
        return fields


_INVOLVED_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")


class ServiceAccountStrategy(Strategy):
    pass


def endpoint_ip_errors(address: Any, field: str) -> list[Cause]:
    """kube's `ValidateEndpointIP` (Endpoints and EndpointSlice addresses): no unspecified, loopback or
    link-local address, since nothing else could reach it (the message is kube's)."""
    try:
        ip = ipaddress.ip_address(str(address))
    except ValueError:
        return [Cause(field, f"{invalid_value(address)}: must be a valid IP address")]
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    problems = []
    if ip.is_unspecified:
        problems.append(f"may not be unspecified ({address})")
    if ip.is_loopback:
        problems.append("may not be in the loopback range (127.0.0.0/8, ::1/128)")
    if ip.is_link_local and not ip.is_multicast:
        problems.append("may not be in the link-local range (169.254.0.0/16, fe80::/10)")
    if ip in _LINK_LOCAL_MULTICAST[ip.version]:
        problems.append("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")
    return [Cause(field, f"{invalid_value(address)}: {problem}") for problem in problems]


_LINK_LOCAL_MULTICAST = {4: ipaddress.ip_network("224.0.0.0/24"), 6: ipaddress.ip_network("ff02::/16")}


class EndpointsStrategy(Strategy):
    allow_create_on_update = True

    def validate(self, obj: Obj) -> list[Cause]:
        causes: list[Cause] = []
        for i, subset in enumerate(obj.get("subsets") or []):
            if not isinstance(subset, dict):
                continue
            for key in ("addresses", "notReadyAddresses"):
                for j, address in enumerate(subset.get(key) or []):
                    if isinstance(address, dict) and "ip" in address:
                        causes += endpoint_ip_errors(address["ip"], f"subsets[{i}].{key}[{j}].ip")
        return causes


class EndpointSliceStrategy(Strategy):
    """EndpointSlice addresses of type IPv4/IPv6 must be addresses others can reach (FQDN ones are names)."""

    def validate(self, obj: Obj) -> list[Cause]:
        family = {"IPv4": 4, "IPv6": 6}.get(str(obj.get("addressType")))
        if family is None:
            return []
        causes: list[Cause] = []
        for i, endpoint in enumerate(obj.get("endpoints") or []):
            if not isinstance(endpoint, dict):
                continue
            for j, address in enumerate(endpoint.get("addresses") or []):
                field = f"endpoints[{i}].addresses[{j}]"
                causes += _ip_family_errors(address, family, field) + endpoint_ip_errors(address, field)
        return causes


def _ip_family_errors(address: Any, family: int, field: str) -> list[Cause]:
    """kube's `IsValidIPv4Address` / `IsValidIPv6Address`."""
    try:
        ip = ipaddress.ip_address(str(address))
    except ValueError:
        ip = None
    if ip is None or ip.version != family:
        return [Cause(field, f"{invalid_value(address)}: must be a valid IPv{family} address")]
    return []


class LeaseStrategy(Strategy):
    allow_create_on_update = True


class RBACStrategy(Strategy):
    """Roles and bindings may be created by PUT, and their names are path segments."""

    allow_create_on_update = True
    name_rule = "path"

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        if "roleRef" in old:
            return immutable("roleRef", new.get("roleRef"), old.get("roleRef"))
        return []


class ServiceStrategy(Strategy):
    """ClusterIP and nodePort allocation, defaults and immutability of the cluster IP."""

    name_rule = "label"
    return_deleted_object = True

    def __init__(self, *, service_cidr: str, services: Callable[[], Iterable[Obj]]) -> None:
        self._network = ipaddress.ip_network(service_cidr)
        self._services = services

    @property
    def kubernetes_ip(self) -> str:
        """The first address of the range belongs to the `kubernetes` Service."""
        return str(self._network.network_address + 1)

    def default(self, obj: Obj) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
                if "port" in port:
                    port.setdefault("targetPort", port["port"])
        if spec["type"] != "ExternalName":
            spec.setdefault("ipFamilies", ["IPv4"])
            spec.setdefault("ipFamilyPolicy", "SingleStack")
            spec.setdefault("internalTrafficPolicy", "Cluster")
        if spec["type"] in ("NodePort", "LoadBalancer"):
            spec.setdefault("externalTrafficPolicy", "Cluster")
        if spec["type"] == "LoadBalancer":
            spec.setdefault("allocateLoadBalancerNodePorts", True)
        obj.setdefault("status", {}).setdefault("loadBalancer", {})

    def prepare_for_create(self, obj: Obj, *, status_subresource: bool) -> None:
        obj["status"] = {"loadBalancer": {}}
        spec = obj.get("spec")
        if not isinstance(spec, dict) or spec.get("type") == "ExternalName":
            return
        used = self._used_ips()
        requested = spec.get("clusterIP") or ((spec.get("clusterIPs") or [None])[0])
        if requested == "None":
            spec["clusterIP"] = "None"
            spec["clusterIPs"] = ["None"]
        elif requested:
            self._check_requested_ip(obj, requested, used)
            spec["clusterIP"] = requested
            spec["clusterIPs"] = [requested]
        else:
            ip = self._allocate_ip(obj, used)
            spec["clusterIP"] = ip
            spec["clusterIPs"] = [ip]
        if spec.get("type") in ("NodePort", "LoadBalancer"):
            self._allocate_node_ports(spec)

    def prepare_for_update(self, new: Obj, old: Obj, *, status_subresource: bool) -> None:
        super().prepare_for_update(new, old, status_subresource=True)
        new_spec, old_spec = new.get("spec"), old.get("spec") or {}
        if isinstance(new_spec, dict):
            for key in ("clusterIP", "clusterIPs"):
                if not new_spec.get(key) and old_spec.get(key):
                    new_spec[key] = old_spec[key]
            if new_spec.get("type") in ("NodePort", "LoadBalancer"):
                old_ports = {
                    (p.get("port"), p.get("protocol")): p.get("nodePort") for p in old_spec.get("ports") or []
                }
                for port in new_spec.get("ports") or []:
                    if not port.get("nodePort") and old_ports.get((port.get("port"), port.get("protocol"))):
                        port["nodePort"] = old_ports[(port.get("port"), port.get("protocol"))]
                self._allocate_node_ports(new_spec)

    def validate(self, obj: Obj) -> list[Cause]:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [Cause("spec", "Required value", "FieldValueRequired")]
        causes: list[Cause] = []
        types = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
        if spec.get("type") not in types:
            supported = ", ".join(f'"{t}"' for t in types)
            causes.append(
                Cause(
                    "spec.type",
                    f'Unsupported value: "{spec.get("type")}": supported values: {supported}',
                    "FieldValueNotSupported",
                )
            )
        ports = spec.get("ports") or []
        if not ports and spec.get("clusterIP") != "None" and spec.get("type") != "ExternalName":
            causes.append(Cause("spec.ports", "Required value", "FieldValueRequired"))
        seen: set[tuple[Any, Any]] = set()
        for i, port in enumerate(ports):
            number = port.get("port") if isinstance(port, dict) else None
            if not isinstance(number, int) or not 0 < number < 65536:
                causes.append(
                    Cause(
                        f"spec.ports[{i}].port",
                        f"{invalid_value(number)}: must be between 1 and 65535, inclusive",
                    )
                )
            key = (number, port.get("protocol") if isinstance(port, dict) else None)
            if key in seen:
                causes.append(
                    Cause(
                        f"spec.ports[{i}]",
                        f"Duplicate value: {{{key[0]!r}, {key[1]!r}}}",
                        "FieldValueDuplicate",
                    )
                )
            seen.add(key)
            if len(ports) > 1 and isinstance(port, dict) and not port.get("name"):
                causes.append(Cause(f"spec.ports[{i}].name", "Required value", "FieldValueRequired"))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        old_ip = (old.get("spec") or {}).get("clusterIP")
        new_ip = (new.get("spec") or {}).get("clusterIP")
        if old_ip and (new.get("spec") or {}).get("type") != "ExternalName" and new_ip != old_ip:
            causes.append(Cause("spec.clusterIPs[0]", f"{invalid_value(new_ip)}: may not change once set"))
        return causes

    def _used_ips(self) -> set[str]:
        return {(s.get("spec") or {}).get("clusterIP", "") for s in self._services()} | {self.kubernetes_ip}

    def _check_requested_ip(self, obj: Obj, requested: str, used: set[str]) -> None:
        name = obj["metadata"].get("name", "")
        try:
            address = ipaddress.ip_address(requested)
        except ValueError:
            raise invalid(
                "Service",
                name,
                [Cause("spec.clusterIPs[0]", f"{invalid_value(requested)}: must be a valid IP address")],
            ) from None
        if address not in self._network:
            raise invalid(
                "Service",
                name,
                [
                    Cause(
                        "spec.clusterIPs",
                        f"{invalid_value([requested])}: failed to allocate IP {requested}: the provided IP "
                        f"({requested}) is not in the valid range. The range of valid IPs is {self._network}",
                    )
                ],
            )
        if requested in used and not (name == "kubernetes" and requested == self.kubernetes_ip):
            raise invalid(
                "Service",
                name,
                [
                    Cause(
                        "spec.clusterIPs",
                        f"{invalid_value([requested])}: failed to allocate IP {requested}: provided IP is already allocated",
                    )
                ],
            )

    def _allocate_ip(self, obj: Obj, used: set[str]) -> str:
        hosts = self._network.num_addresses - 2
        start = random.randrange(hosts)
        for offset in range(hosts):
            candidate = str(self._network.network_address + 1 + (start + offset) % hosts)
            if candidate not in used:
                return candidate
        raise invalid(
            "Service",
            obj["metadata"].get("name", ""),
            [
                Cause(
                    "spec.clusterIPs",
                    "Internal error: failed to allocate a serviceIP: range is full",
                    "InternalError",
                )
            ],
        )

    def _allocate_node_ports(self, spec: Obj) -> None:
        used = {
            p.get("nodePort")
            for s in self._services()
            for p in (s.get("spec") or {}).get("ports") or []
            if isinstance(p, dict)
        }
        for port in spec.get("ports") or []:
            if isinstance(port, dict) and not port.get("nodePort"):
                port["nodePort"] = next(p for p in NODE_PORT_RANGE if p not in used)
                used.add(port["nodePort"])


class PersistentVolumeClaimStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("volumeMode", "Filesystem")

    def prepare_for_create(self, obj: Obj, *, status_subresource: bool) -> None:
        obj["status"] = {"phase": "Pending"}


class PersistentVolumeStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
            spec.setdefault("volumeMode", "Filesystem")

    def prepare_for_create(self, obj: Obj, *, status_subresource: bool) -> None:
        obj["status"] = {"phase": "Pending"}


class CSRStrategy(Strategy):
    """CertificateSigningRequests: the spec is immutable, requests must be PEM CSRs."""

    def prepare_for_create(self, obj: Obj, *, status_subresource: bool) -> None:
        obj["status"] = {}

    def validate(self, obj: Obj) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes = []
        if not spec.get("signerName"):
            causes.append(Cause("spec.signerName", "Required value", "FieldValueRequired"))
        request = spec.get("request")
        try:
            pem = base64.b64decode(request or "", validate=True)
        except (binascii.Error, ValueError):
            pem = b""
        if b"CERTIFICATE REQUEST" not in pem:
            causes.append(
                Cause(
                    "spec.request", "Invalid value: []byte{...}: PEM block type must be CERTIFICATE REQUEST"
                )
            )
        if not spec.get("usages"):
            causes.append(Cause("spec.usages", "Required value", "FieldValueRequired"))
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return immutable("spec", new.get("spec"), old.get("spec"))

    def field_labels(self, obj: Obj) -> dict[str, str]:
        return {"spec.signerName": (obj.get("spec") or {}).get("signerName", "")}


class PathNamedStrategy(Strategy):
    """Kinds whose names need only be valid path segments."""

    name_rule = "path"
