"""The virtual node: the Node standing for a provider cluster, registered and kept current.

What the Node says comes from two places, and nowhere else:

- the VirtualNode (its spec, kept by the controller manager from the provider's grant):
  labels (the provider's cluster labels and the peering's extra ones), taints, and the
  capacity, which is also the allocatable (the provider already reserved its share);
- the provider's health (`health.py`): the Ready condition, and the version in nodeInfo.

Every virtual node carries `liqo.io/type=virtual-node`, `liqo.io/remote-cluster-id`,
the `agent` role (`node-role.kubernetes.io/agent`), `kubernetes.io/hostname` and
`kubernetes.io/os=linux`, and the taint `virtual-node.liqo.io/not-allowed:NoExecute`,
so only pods that tolerate it run remotely.

Labels and taints are shared with others (users label nodes; the node lifecycle
controller taints NotReady ones), so the virtual kubelet records on the Node which
label keys and taints it set (`offloading.liqo.io/managed-labels`/`-taints`) and
changes only those. Writes are replaces carrying the resourceVersion, so a
concurrent change is never overwritten: the conflict makes the reconcile run again on
fresh state. The status is written when anything but heartbeat times differs, and
otherwise every `status_report_period` (the Lease is the liveness signal). A Node
deleted while its VirtualNode exists is registered again, as the kubelet does; once
the VirtualNode is gone or being deleted the Node is left to the controller manager.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from runtime.api import constants as c
from runtime.api.image import package_version
from runtime.api.kinds import NODES
from runtime.api.objects import JSON, nested
from runtime.api.views import VirtualNodeSpec
from runtime.core import AlreadyExistsError, Client, Request, Result, Store
from runtime.forge import nodestatus

from .health import Health, HealthChecker

logger = logging.getLogger(__name__)


OPERATING_SYSTEM = "linux"
ARCHITECTURE = "amd64"
#: conditions other than Ready: a virtual node has no memory, disk or PID pressure of its own, nor a node network
_STEADY_CONDITIONS = (
    (
        "MemoryPressure",
        "ProviderHasSufficientMemory",
        "the provider grants memory through the resource slice",
    ),
    ("DiskPressure", "ProviderHasNoDiskPressure", "the provider grants storage through the resource slice"),
    ("PIDPressure", "ProviderHasSufficientPID", "the provider runs the pods' processes"),
    ("NetworkUnavailable", "VirtualNodeNetwork", "a virtual node needs no node network of its own"),
)
#: status fields compared as a whole to decide whether the status changed
STATUS_FIELDS = ("capacity", "allocatable", "addresses", "nodeInfo", "daemonEndpoints")


def node_labels(virtual_node: JSON, *, node_name: str) -> dict[str, str]:
    """The VirtualNode's labels, then the ones every virtual node carries (which win)."""
    spec: VirtualNodeSpec = virtual_node.get("spec") or {}
    return {
        **{str(k): str(v) for k, v in (spec.get("labels") or {}).items()},
        c.LABEL_TYPE: c.TYPE_VIRTUAL_NODE,
        c.LABEL_REMOTE_CLUSTER_ID: str(spec.get("clusterID", "")),
        c.LABEL_ROLE_AGENT: "",
        c.LABEL_HOSTNAME: node_name,
        c.LABEL_OS: OPERATING_SYSTEM,
    }


def taint_key(taint: Mapping[str, Any]) -> str:
    """`key:effect`, what identifies a taint on a node."""
    return f"{taint.get('key', '')}:{taint.get('effect', '')}"


def node_taints(virtual_node: JSON) -> list[JSON]:
    """The virtual-node taint, then the VirtualNode's own taints (one per key and effect)."""
    taints: dict[str, JSON] = {}
    always = {"key": c.TAINT_VIRTUAL_NODE, "effect": c.TAINT_VIRTUAL_NODE_EFFECT}
    for taint in [always, *(nested(virtual_node, "spec", "taints") or [])]:
        kept = {key: taint[key] for key in ("key", "value", "effect") if taint.get(key)}
        taints.setdefault(taint_key(kept), kept)
    return list(taints.values())


def capacity(virtual_node: JSON) -> dict[str, str]:
    """The Node's capacity (and allocatable): the VirtualNode's resources."""
    return {
        str(name): str(value) for name, value in (nested(virtual_node, "spec", "resources") or {}).items()
    }


def node_conditions(health: Health, *, current: Iterable[JSON], now: str) -> list[JSON]:
    """Ready from the provider's health, the others steady; every one heartbeats at `now`."""
    ready = (health.status, health.reason, health.message)
    return nodestatus.node_conditions(_STEADY_CONDITIONS, ready=ready, current=current, now=now)


def node_status(
    virtual_node: JSON,
    *,
    node_name: str,
    health: Health,
    version: str,
    address: str | None,
    current: Iterable[JSON],
    now: str,
    kubelet_port: int = 0,
) -> JSON:
    """The status the virtual kubelet writes; `current` are the Node's conditions (transition times kept).

    `kubelet_port` is where its kubelet API listens (the API server proxies `kubectl logs` there).
    """
    resources = capacity(virtual_node)
    addresses = [{"type": "InternalIP", "address": address}] if address else []
    addresses.append({"type": "Hostname", "address": node_name})
    return {
        "capacity": resources,
        "allocatable": dict(resources),
        "addresses": addresses,
        "nodeInfo": {
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
            "kernelVersion": "",
            "osImage": f"liqo provider {nested(virtual_node, 'spec', 'clusterName', default='')}".strip(),
            "containerRuntimeVersion": f"liqo://{package_version()}",
            "kubeletVersion": version,
            "kubeProxyVersion": "",
            "operatingSystem": OPERATING_SYSTEM,
            "architecture": ARCHITECTURE,
        },
        "conditions": node_conditions(health, current=current, now=now),
        "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
    }


def _managed(node: JSON, annotation: str) -> set[str]:
    value = nested(node, "metadata", "annotations", annotation) or ""
    return {item for item in value.split(",") if item}


def _annotations(labels: Mapping[str, str], taints: Iterable[JSON]) -> dict[str, str]:
    return {
        c.ANNOTATION_MANAGED_LABELS: ",".join(sorted(labels)),
        c.ANNOTATION_MANAGED_TAINTS: ",".join(sorted(taint_key(taint) for taint in taints)),
    }


def node_object(virtual_node: JSON, *, node_name: str, status: JSON) -> JSON:
    """The Node the virtual kubelet registers, status included (the API server keeps a Node's status on create)."""
    labels = node_labels(virtual_node, node_name=node_name)
    taints = node_taints(virtual_node)
    return {
        "apiVersion": NODES.api_version,
        "kind": NODES.kind,
        "metadata": {"name": node_name, "labels": labels, "annotations": _annotations(labels, taints)},
        "spec": {"taints": taints},
        "status": status,
    }


def with_labels_and_taints(node: JSON, virtual_node: JSON) -> JSON | None:
    """`node` with the labels and taints the VirtualNode asks for, others' kept; None when nothing changes."""
    name = str(node["metadata"]["name"])
    wanted_labels = node_labels(virtual_node, node_name=name)
    wanted_taints = node_taints(virtual_node)
    updated = copy.deepcopy(node)
    metadata = updated["metadata"]
    stale_labels = _managed(node, c.ANNOTATION_MANAGED_LABELS) - set(wanted_labels)
    labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k not in stale_labels}
    metadata["labels"] = {**labels, **wanted_labels}
    ours = _managed(node, c.ANNOTATION_MANAGED_TAINTS) | {taint_key(taint) for taint in wanted_taints}
    current_taints = nested(updated, "spec", "taints") or []
    others = [taint for taint in current_taints if taint_key(taint) not in ours]
    # ours keep the timeAdded they have on the Node, when they are there already
    added = {taint_key(taint): taint["timeAdded"] for taint in current_taints if taint.get("timeAdded")}
    taints = [
        taint | ({"timeAdded": added[taint_key(taint)]} if taint_key(taint) in added else {})
        for taint in wanted_taints
    ]
    updated.setdefault("spec", {})["taints"] = others + taints
    metadata["annotations"] = {
        **(metadata.get("annotations") or {}),
        **_annotations(wanted_labels, wanted_taints),
    }
    return None if updated == node else updated


class NodeReconciler:
    """Registers the virtual node and keeps it in line with its VirtualNode and the provider's health.

    One key: the Node's name. `registered` is set once the Node exists; `uid` is the uid of the Node last
    seen (the Lease's owner).
    """

    def __init__(
        self,
        client: Client,
        *,
        virtual_node: Request,
        node_name: str,
        virtual_nodes: Store,
        nodes: Store,
        health: HealthChecker,
        address: str | None,
        status_report_period: float,
        kubelet_port: Callable[[], int] = lambda: 0,
    ) -> None:
        self._client = client
        self._virtual_node = virtual_node
        self._node_name = node_name
        self._virtual_nodes = virtual_nodes
        self._nodes = nodes
        self._health = health
        self._address = address
        self._period = status_report_period
        self._kubelet_port = kubelet_port
        self.registered = asyncio.Event()
        self.uid: str | None = None

    @property
    def request(self) -> Request:
        return Request("", self._node_name)

    async def reconcile(self, request: Request) -> Result | None:
        ref = self._virtual_node
        virtual_node = self._virtual_nodes.get(ref.name, namespace=ref.namespace)
        if virtual_node is None or virtual_node["metadata"].get("deletionTimestamp"):
            logger.info("%s: the VirtualNode %s is gone or going: the Node is left alone", request.name, ref)
            return None
        node = self._nodes.get(request.name)
        now = datetime.now(UTC)
        if node is None:
            return await self._register(virtual_node, now)
        self.uid = str(node["metadata"]["uid"])
        self.registered.set()
        updated = with_labels_and_taints(node, virtual_node)
        if updated is not None:
            node = await self._client.replace(NODES, updated, field_manager=c.FIELD_MANAGER_VIRTUAL_KUBELET)
            logger.info("%s: labels and taints updated from the VirtualNode %s", request.name, ref)
        current = node.get("status") or {}
        desired = self._status(virtual_node, current.get("conditions") or [], now)
        delay = nodestatus.report_delay(current, desired, fields=STATUS_FIELDS, now=now, period=self._period)
        if not delay:
            await self._client.update_status(
                NODES, {**node, "status": desired}, field_manager=c.FIELD_MANAGER_VIRTUAL_KUBELET
            )
            logger.debug("%s: node status written", request.name)
            return Result(requeue_after=self._period)
        return Result(requeue_after=delay)

    async def _register(self, virtual_node: JSON, now: datetime) -> Result | None:
        body = node_object(
            virtual_node, node_name=self._node_name, status=self._status(virtual_node, [], now)
        )
        try:
            node = await self._client.create(NODES, body, field_manager=c.FIELD_MANAGER_VIRTUAL_KUBELET)
        except AlreadyExistsError:
            # the cache is behind: the informer's event for that Node reconciles again
            return None
        logger.info("%s: registered the virtual node for VirtualNode %s", self._node_name, self._virtual_node)
        self.uid = str(node["metadata"]["uid"])
        self.registered.set()
        return Result(requeue_after=self._period)

    def _status(self, virtual_node: JSON, current: Iterable[JSON], now: datetime) -> JSON:
        return node_status(
            virtual_node,
            node_name=self._node_name,
            health=self._health.health,
            version=self._health.version,
            address=self._address,
            current=current,
            now=nodestatus.timestamp(now),
            kubelet_port=self._kubelet_port(),
        )
