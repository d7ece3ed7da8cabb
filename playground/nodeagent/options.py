"""Everything one node agent is told about its node: one frozen dataclass, checked on construction.

The CLI (`__main__.py`) builds it from flags and tests build it directly; both get the
same validation, so a bad CIDR or a heartbeat longer than the lease fails before
anything talks to the API server, with a message that names the flag. Defaults follow
the kubelet (lease 40 s renewed every 10 s, node status reported every 5 min when
unchanged, container restart back-off 10 s doubling to 5 min); times are in seconds.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

#: a Kubernetes resource quantity (`8`, `500m`, `16Gi`, `1e3`), as apimachinery's parser accepts it
_QUANTITY = re.compile(r"^[+]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[numkMGTPE]|[KMGTPE]i)?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@dataclass(frozen=True)
class Taint:
    key: str
    effect: str
    value: str = ""

    def as_json(self) -> dict[str, Any]:
        taint: dict[str, Any] = {"key": self.key, "effect": self.effect}
        if self.value:
            taint["value"] = self.value
        return taint


@dataclass(frozen=True)
class NodeAgentOptions:
    node_name: str
    #: the node's pod CIDR (spec.podCIDR); pod IPs are allocated from it
    pod_cidr: str
    #: the node's InternalIP, also its pods' hostIP (None: the first address of the node's loopback /24)
    address: str | None = None
    #: pods get network namespaces named this plus their uid, linked to the node's bridge `cni0`
    #: (the agent runs in its node's namespace); None: the loopback fallback (process pods on the
    #: host's network, on loopback addresses of their own)
    pod_netns_prefix: str | None = None
    cpu: str = "8"
    memory: str = "16Gi"
    pods: int = 110
    ephemeral_storage: str = "100Gi"
    #: labels on top of the well-known ones (hostname, os, arch)
    labels: Mapping[str, str] = field(default_factory=dict)
    #: taints set when the agent registers the Node (the kubelet's --register-with-taints)
    taints: tuple[Taint, ...] = ()
    #: the kubelet API's port (0: any free port); published as status.daemonEndpoints.kubeletEndpoint.Port
    kubelet_port: int = 0
    #: where runners keep per-pod files and the kubelet API its certificate (None: a temporary directory)
    state_dir: Path | None = None
    #: the CA whose client certificates the kubelet API accepts (None: the cluster CA of the agent's kubeconfig)
    client_ca_file: Path | None = None
    #: the node Lease's leaseDurationSeconds
    lease_duration: int = 40
    #: how often the Lease is renewed
    heartbeat: float = 10.0
    #: how often an unchanged node status is written anyway (kubelet's nodeStatusReportFrequency)
    node_status_report_period: float = 300.0
    #: container restart and image pull back-off: this, doubling per retry, up to `restart_backoff_max`
    restart_backoff: float = 10.0
    restart_backoff_max: float = 300.0

    def __post_init__(self) -> None:
        errors = self.errors()
        if errors:
            raise ValueError("; ".join(errors))

    def errors(self) -> list[str]:
        errors: list[str] = []
        if len(self.node_name) > 253 or not _DNS_SUBDOMAIN.match(self.node_name):
            errors.append(
                f"--node {self.node_name!r}: a node name must be a DNS subdomain (lowercase letters, digits, '-' and '.')"
            )
        errors += _cidr_errors(self.pod_cidr)
        if self.pod_netns_prefix is not None and self.address is None:
            errors.append("--pod-netns-prefix needs --address (the node's address in its namespace)")
        if self.address is not None:
            try:
                ipaddress.ip_address(self.address)
            except ValueError:
                errors.append(f"--address {self.address!r}: not an IP address")
        for flag, value in (("--cpu", self.cpu), ("--memory", self.memory)):
            if not _QUANTITY.match(value):
                errors.append(f"{flag} {value!r}: not a resource quantity (like 8, 500m or 16Gi)")
        if not _QUANTITY.match(self.ephemeral_storage):
            errors.append(
                f"--ephemeral-storage {self.ephemeral_storage!r}: not a resource quantity (like 100Gi)"
            )
        if self.pods < 1:
            errors.append(f"--pods {self.pods}: must be at least 1")
        for key, value in self.labels.items():
            errors += _label_errors(key, value)
        for taint in self.taints:
            errors += _taint_errors(taint)
        if not 0 <= self.kubelet_port < 65536:
            errors.append(f"--kubelet-port {self.kubelet_port}: must be between 0 and 65535")
        if self.lease_duration < 1:
            errors.append(f"--lease-duration {self.lease_duration}: must be at least 1 second")
        if not 0 < self.heartbeat < self.lease_duration:
            errors.append(
                f"--heartbeat {self.heartbeat}: must be positive and shorter than --lease-duration "
                f"({self.lease_duration}), or the Lease expires between renewals"
            )
        if self.node_status_report_period <= 0:
            errors.append("the node status report period must be positive")
        if not 0 < self.restart_backoff <= self.restart_backoff_max:
            errors.append("the restart back-off must be positive and at most its maximum")
        return errors


def parse_label(text: str) -> tuple[str, str]:
    """`key=value` (the value may be empty) as the kubelet's --node-labels takes it."""
    key, sep, value = text.partition("=")
    if not sep:
        raise ValueError(f"--label {text!r}: expected key=value")
    return key, value


def parse_taint(text: str) -> Taint:
    """`key=value:Effect` or `key:Effect`, as kubectl taint and the kubelet's --register-with-taints take it."""
    spec, sep, effect = text.rpartition(":")
    if not sep:
        raise ValueError(f"--taint {text!r}: expected key=value:Effect or key:Effect")
    key, _, value = spec.partition("=")
    return Taint(key=key, value=value, effect=effect)


def _cidr_errors(cidr: str) -> list[str]:
    try:
        network = ipaddress.ip_network(cidr, strict=True)
    except ValueError as exc:
        return [f"--pod-cidr {cidr!r}: not a network in CIDR notation ({exc})"]
    # the network address, the gateway (.1) and the IPv4 broadcast address are never pod IPs
    usable = network.num_addresses - (3 if network.version == 4 else 2)
    if usable < 1:
        return [f"--pod-cidr {cidr!r}: too small to hold any pod IP (use a /30 or larger)"]
    return []


def _label_errors(key: str, value: str) -> list[str]:
    errors: list[str] = []
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        errors.append(f"--label {key}={value}: the key's prefix must be a DNS subdomain")
    if not name or len(name) > 63 or not _LABEL_NAME.match(name):
        errors.append(
            f"--label {key}={value}: the key's name must be 1-63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        errors.append(
            f"--label {key}={value}: the value must be at most 63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    return errors


def _taint_errors(taint: Taint) -> list[str]:
    text = f"{taint.key}={taint.value}:{taint.effect}"
    errors = [e.replace("--label", "--taint") for e in _label_errors(taint.key, taint.value)]
    if taint.effect not in TAINT_EFFECTS:
        errors.append(f"--taint {text}: the effect must be one of {', '.join(TAINT_EFFECTS)}")
    return errors
