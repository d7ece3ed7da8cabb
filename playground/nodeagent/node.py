"""The Node object: registration, and its status kept current (the kubelet's node status manager).

`register` runs once at start-up, before anything else, as the kubelet's
registerWithAPIServer: it creates the Node (labels, podCIDR, taints and a full status)
or, when one of that name exists (the agent restarted), adopts it, adding its labels
and podCIDR; the pods bound to it are left alone. `NodeStatusReconciler` then keeps
the status current from the node informer: it writes at once when something differs
(capacity, addresses, the kubelet endpoint, or conditions somebody else changed, such
as the node lifecycle controller's Ready=Unknown), and otherwise refreshes the
conditions' lastHeartbeatTime every `node_status_report_period` (the kubelet's 5 min:
liveness is the Lease's job). If the Node is deleted while the agent runs, it is
registered again, as the kubelet does.

Allocatable equals capacity: nothing is reserved for system daemons on the playground.
"""

from __future__ import annotations

import asyncio
import logging
import platform
import sys
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from runtime.api.image import package_version
from runtime.api.kinds import NODES
from runtime.api.objects import JSON
from runtime.core import AlreadyExistsError, Client, Request, Result, Store
from runtime.forge import nodestatus

from .options import NodeAgentOptions

logger = logging.getLogger(__name__)


KUBELET_VERSION = "v1.32.0-playground"
#: where Linux publishes the ID of the current boot (the kubelet reads it for nodeInfo.bootID)
BOOT_ID_FILE = Path("/proc/sys/kernel/random/boot_id")
# Well-known labels a kubelet sets on its Node (k8s.io/api/core/v1 well_known_labels.go); role labels are
# kubeadm's to set, with admin rights (NodeRestriction refuses them to a kubelet).
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_OS = "kubernetes.io/os"
LABEL_ARCH = "kubernetes.io/arch"
LABEL_BETA_OS = "beta.kubernetes.io/os"
LABEL_BETA_ARCH = "beta.kubernetes.io/arch"
#: Python's machine names to Go's GOARCH, which node labels and nodeInfo use
_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "armv7l": "arm"}
#: the kubelet's conditions other than Ready: (type, reason, message) when all is well
_PRESSURE_CONDITIONS = (
    ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)
_READY = ("True", "KubeletReady", "kubelet is posting ready status")
#: status fields compared as a whole to decide whether the status changed
_STATUS_FIELDS = ("capacity", "allocatable", "addresses", "daemonEndpoints", "nodeInfo")


class NodeConflictError(Exception):
    """The Node exists with settings this agent cannot take over (another pod CIDR)."""


@dataclass(frozen=True)
class HostInfo:
    """What nodeInfo says about the machine the agent runs on."""

    kernel_version: str
    os_image: str
    architecture: str
    operating_system: str
    machine_id: str
    system_uuid: str
    boot_id: str

    @classmethod
    async def detect(cls, node_name: str) -> HostInfo:
        """This machine's kernel, OS, architecture and boot ID; machine IDs derived from the node name.

        Several nodes share one machine on the playground, so machine ID and system UUID are
        per node; the boot ID is the machine's (it changes on a reboot, not on an agent restart).
        """
        try:
            release = await asyncio.to_thread(platform.freedesktop_os_release)
            os_image = release.get("PRETTY_NAME") or release.get("NAME") or "Linux"
        except OSError:
            os_image = platform.system() or "Linux"
        stable = uuid.uuid5(uuid.NAMESPACE_DNS, f"{node_name}.nodes.playground.invalid")
        try:
            boot_id = (await asyncio.to_thread(BOOT_ID_FILE.read_text)).strip()
        except OSError:
            boot_id = str(stable)
        machine = platform.machine()
        return cls(
            kernel_version=platform.release(),
            os_image=os_image,
            architecture=_GOARCH.get(machine.lower(), machine.lower()),
            operating_system="linux" if sys.platform.startswith("linux") else sys.platform,
            machine_id=stable.hex,
            system_uuid=str(stable),
            boot_id=boot_id,
        )


def node_labels(options: NodeAgentOptions, host: HostInfo) -> dict[str, str]:
    labels = {
        LABEL_BETA_ARCH: host.architecture,
        LABEL_BETA_OS: host.operating_system,
        LABEL_ARCH: host.architecture,
        LABEL_HOSTNAME: options.node_name,
        LABEL_OS: host.operating_system,
    }
    labels.update(options.labels)
    return labels


def node_object(
    options: NodeAgentOptions, *, host: HostInfo, address: str, kubelet_port: int, now: str
) -> JSON:
    """The Node the agent registers, status included (the API server keeps a Node's status on create)."""
    spec: JSON = {"podCIDR": options.pod_cidr, "podCIDRs": [options.pod_cidr]}
    if options.taints:
        spec["taints"] = [taint.as_json() for taint in options.taints]
    return {
        "apiVersion": NODES.api_version,
        "kind": NODES.kind,
        "metadata": {"name": options.node_name, "labels": node_labels(options, host)},
        "spec": spec,
        "status": node_status(
            options, host=host, address=address, kubelet_port=kubelet_port, current=[], now=now
        ),
    }


def node_status(
    options: NodeAgentOptions,
    *,
    host: HostInfo,
    address: str,
    kubelet_port: int,
    current: list[JSON],
    now: str,
) -> JSON:
    """The status the agent writes (`address` is the InternalIP): every condition heartbeats at `now`;
    transitions keep their time."""
    capacity = {
        "cpu": options.cpu,
        "memory": options.memory,
        "pods": str(options.pods),
        "ephemeral-storage": options.ephemeral_storage,
    }
    return {
        "capacity": capacity,
        "allocatable": dict(capacity),
        "addresses": [
            {"type": "InternalIP", "address": address},
            {"type": "Hostname", "address": options.node_name},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
        "nodeInfo": {
            "machineID": host.machine_id,
            "systemUUID": host.system_uuid,
            "bootID": host.boot_id,
            "kernelVersion": host.kernel_version,
            "osImage": host.os_image,
            "containerRuntimeVersion": f"playground://{package_version()}",
            "kubeletVersion": KUBELET_VERSION,
            "operatingSystem": host.operating_system,
            "architecture": host.architecture,
        },
        "conditions": nodestatus.node_conditions(
            _PRESSURE_CONDITIONS, ready=_READY, current=current, now=now
        ),
    }


class NodeStatusReconciler:
    """Registers the Node, then keeps its status current (one key: the node's name)."""

    def __init__(
        self,
        client: Client,
        options: NodeAgentOptions,
        *,
        host: HostInfo,
        nodes: Store,
        address: str,
        kubelet_port: int,
    ) -> None:
        self._client = client
        self._options = options
        self._host = host
        self._nodes = nodes
        #: the node's InternalIP (the agent's --address, else the first address of its loopback /24)
        self._address = address
        self._kubelet_port = kubelet_port

    @property
    def request(self) -> Request:
        return Request("", self._options.node_name)

    async def register(self) -> JSON:
        """Create the Node, or adopt the one of this name (adding labels and podCIDR); returns it."""
        name = self._options.node_name
        body = node_object(
            self._options,
            host=self._host,
            address=self._address,
            kubelet_port=self._kubelet_port,
            now=nodestatus.timestamp(datetime.now(UTC)),
        )
        try:
            node = await self._client.create(NODES, body)
            logger.info("%s: registered the Node (pod CIDR %s)", name, self._options.pod_cidr)
            return node
        except AlreadyExistsError:
            existing = await self._client.get(NODES, name)
        spec = existing.get("spec") or {}
        cidr = spec.get("podCIDR")
        if cidr and cidr != self._options.pod_cidr:
            raise NodeConflictError(
                f"{name}: the Node exists with podCIDR {cidr}, not {self._options.pod_cidr}: start the agent "
                f"with --pod-cidr {cidr}, or delete the Node (kubectl delete node {name}) to register it afresh"
            )
        patch: JSON = {}
        labels = (existing.get("metadata") or {}).get("labels") or {}
        wanted = node_labels(self._options, self._host)
        if any(labels.get(key) != value for key, value in wanted.items()):
            patch["metadata"] = {"labels": wanted}
        if not cidr:
            patch["spec"] = {"podCIDR": self._options.pod_cidr, "podCIDRs": [self._options.pod_cidr]}
        if patch:
            existing = await self._client.patch(NODES, name, patch)
        logger.info("%s: the Node exists already: adopted it and the pods bound to it", name)
        return existing

    async def reconcile(self, request: Request) -> Result | None:
        period = self._options.node_status_report_period
        node = self._nodes.get(request.name)
        if node is None:
            logger.warning("%s: the Node is gone: registering it again", request.name)
            await self.register()
            return None
        current = node.get("status") or {}
        now = datetime.now(UTC)
        desired = node_status(
            self._options,
            host=self._host,
            address=self._address,
            kubelet_port=self._kubelet_port,
            current=current.get("conditions") or [],
            now=nodestatus.timestamp(now),
        )
        delay = nodestatus.report_delay(current, desired, fields=_STATUS_FIELDS, now=now, period=period)
        if not delay:
            await self._client.patch_status(NODES, request.name, {"status": desired}, patch_type="strategic")
            logger.debug("%s: node status written", request.name)
            return Result(requeue_after=period)
        return Result(requeue_after=delay)
