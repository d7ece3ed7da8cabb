"""The scheduler's view of the cluster for one pass: nodes with the pods placed on them.

`PodInfo` holds what the filters read of a pod, computed once per pod version (quantities
parsed, affinity terms resolved); `NodeInfo` holds a node with its pods and their running
totals, and `Snapshot` all nodes plus namespace labels. A pass builds one snapshot from the
informers' stores and its own assumed placements, then adds every pod it places, so the next
pod of the same pass already sees it (kube-scheduler's cache and snapshot, minus the
incremental bookkeeping: a pass rebuilds the snapshot, which a playground can afford).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from runtime.api.objects import JSON
from runtime.api.selectors import Labels

from .affinity import PodAffinityTerm, required_pod_affinity_terms
from .resources import Resources, add, allocatable, non_zero_requests, pod_requests
from .taints import node_taints

ANY_IP = "0.0.0.0"


@dataclass(frozen=True)
class HostPort:
    ip: str
    protocol: str
    port: int

    def conflicts(self, other: HostPort) -> bool:
        """Same port and protocol, and the same address or either one on all addresses."""
        return (
            self.port == other.port
            and self.protocol == other.protocol
            and (self.ip == other.ip or ANY_IP in (self.ip, other.ip))
        )


def host_ports(pod: Mapping[str, Any]) -> tuple[HostPort, ...]:
    """The host ports a pod's containers and sidecars claim (a hostNetwork pod claims its container ports)."""
    spec = pod.get("spec") or {}
    containers = list(spec.get("containers") or []) + [
        c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"
    ]
    ports = []
    for container in containers:
        for port in container.get("ports") or []:
            number = port.get("hostPort") or (port.get("containerPort") if spec.get("hostNetwork") else 0)
            if number and number > 0:
                ports.append(
                    HostPort(port.get("hostIP") or ANY_IP, port.get("protocol") or "TCP", int(number))
                )
    return tuple(ports)


@dataclass(eq=False)
class PodInfo:
    pod: JSON
    namespace: str
    name: str
    uid: str
    labels: Labels
    priority: int
    requests: Resources
    non_zero: Resources
    host_ports: tuple[HostPort, ...]
    tolerations: list[JSON]
    affinity: tuple[PodAffinityTerm, ...]
    anti_affinity: tuple[PodAffinityTerm, ...]
    #: why the pod cannot be scheduled whatever the nodes (a malformed quantity); it then requests nothing
    error: str | None = None

    @classmethod
    def of(cls, pod: JSON) -> PodInfo:
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        error = None
        try:
            requests, non_zero = pod_requests(pod), non_zero_requests(pod)
        except ValueError as exc:
            requests, non_zero, error = {}, {}, str(exc)
        return cls(
            pod=pod,
            namespace=str(meta.get("namespace", "")),
            name=str(meta.get("name", "")),
            uid=str(meta.get("uid", "")),
            labels=meta.get("labels") or {},
            priority=int(spec.get("priority") or 0),
            requests=requests,
            non_zero=non_zero,
            host_ports=host_ports(pod),
            tolerations=list(spec.get("tolerations") or []),
            affinity=required_pod_affinity_terms(pod, "podAffinity"),
            anti_affinity=required_pod_affinity_terms(pod, "podAntiAffinity"),
            error=error,
        )

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def spec(self) -> JSON:
        return self.pod.get("spec") or {}


@dataclass(eq=False)
class NodeInfo:
    node: JSON
    name: str
    labels: Labels
    allocatable: Resources
    #: the node's taints, with the one its readiness implies
    taints: list[JSON]
    pods: list[PodInfo] = field(default_factory=list)
    requested: Resources = field(default_factory=dict)
    non_zero_requested: Resources = field(default_factory=dict)
    used_ports: list[HostPort] = field(default_factory=list)

    @classmethod
    def of(cls, node: JSON) -> NodeInfo:
        meta = node.get("metadata") or {}
        return cls(
            node=node,
            name=str(meta["name"]),
            labels=meta.get("labels") or {},
            allocatable=allocatable(node),
            taints=node_taints(node),
        )

    @property
    def unschedulable(self) -> bool:
        return bool((self.node.get("spec") or {}).get("unschedulable"))

    def add(self, pod: PodInfo) -> None:
        self.pods.append(pod)
        add(self.requested, pod.requests)
        add(self.non_zero_requested, pod.non_zero)
        self.used_ports.extend(pod.host_ports)


@dataclass
class Snapshot:
    #: by node name
    nodes: dict[str, NodeInfo]
    #: namespace name -> its labels (for namespace selectors of pod affinity terms)
    namespace_labels: dict[str, Labels]
    #: placed pods with required anti-affinity terms, which every other pod must respect
    with_anti_affinity: list[tuple[PodInfo, NodeInfo]] = field(default_factory=list)

    @classmethod
    def of(
        cls, nodes: Iterable[JSON], placed: Iterable[tuple[PodInfo, str]], namespaces: Iterable[JSON]
    ) -> Snapshot:
        """Nodes with the pods placed on them (pods on nodes it does not know are left out)."""
        infos = sorted(map(NodeInfo.of, nodes), key=lambda info: info.name)
        labels = {str(ns["metadata"]["name"]): ns["metadata"].get("labels") or {} for ns in namespaces}
        snapshot = cls({info.name: info for info in infos}, labels)
        for pod, node in placed:
            snapshot.place(pod, node)
        return snapshot

    def place(self, pod: PodInfo, node: str) -> None:
        info = self.nodes.get(node)
        if info is not None:
            info.add(pod)
            if pod.anti_affinity:
                self.with_anti_affinity.append((pod, info))

    def labels_of_namespace(self, namespace: str) -> Labels:
        return self.namespace_labels.get(namespace) or {}

    def pods(self) -> Iterable[tuple[PodInfo, NodeInfo]]:
        for node in self.nodes.values():
            for pod in node.pods:
                yield pod, node
