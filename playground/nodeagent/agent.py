"""The node agent: one playground node's kubelet, composed from its controllers (`NodeAgent(client, options).run()`).

Modelled on kwok's fake kubelet and virtual-kubelet's node controller: separate node,
lease and pod controllers over informers (this Node; the pods bound to it; Services,
for the `kubernetes` Service pods are pointed at and the names stand-ins resolve), with
the runners behind the narrow `Runner` protocol (the process runner for the runtime's
own image, the simulated runner for every other) and the kubelet API serving their
logs. All of that is the kubelet, and uses the kubelet's credentials
(`system:node:<name>`, held to what the Node authorizer and NodeRestriction allow).
Services are kube-proxy's job (`playground.kubeproxy`, a process of its own with its
own identity, as on kind); nothing of the kubelet waits for it, nor for the Services
informer: until Services are known, process pods reach the API server at the address
of the agent's kubeconfig.

The agent runs in its node's network namespace (`options.pod_netns_prefix` set, the
playground's default): the node's address is `options.address`, and every pod gets a
sandbox of its own (`podnetwork.py`) with an IP from the node's pod CIDR. In the
loopback fallback, process pods share the host's network on addresses of a loopback
/24 the agent claims, whose first address is the node's unless `options.address` says
otherwise, so it stays the same across restarts. Start-up order, as the kubelet's:

1. claim the loopback block (loopback fallback) and serve the kubelet API on the
   node's address (its port goes into the Node's daemonEndpoints);
2. register the Node (create it, or adopt the existing one after a restart), retrying
   with back-off while the API server is unreachable;
3. start the kubelet's informers and wait until both have listed;
4. reserve the IPs of the pods already bound to the node (`PodSync.adopt`), so no
   running pod's IP is handed out again, and remove the sandboxes of pods no longer here;
5. run the node status controller, the Lease heartbeat (the runtime's, as the virtual
   kubelet's) and the pod controller.

`run()` blocks until cancelled; on the way out every runner stops its pods (nothing
is deleted in the API: a restarted agent adopts them). Runners keep their files in
`options.state_dir`, or in a temporary directory that lives as long as `run()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from playground.network.netns import Namespaces
from runtime.api.kinds import NODES, PODS, SERVICES
from runtime.api.objects import JSON
from runtime.core import (
    APIError,
    Client,
    Controller,
    EventRecorder,
    InformerFactory,
    QueueingSettings,
    Settings,
)
from runtime.virtualkubelet.lease import LeaseHeartbeat, LeaseSettings

from .ipam import PodIPAllocator
from .kubeletapi import KubeletAPI
from .loopback import LoopbackBlock, claim_block
from .node import HostInfo, NodeStatusReconciler
from .objects import APIObjectSource
from .options import NodeAgentOptions
from .podnetwork import PodNetwork
from .podrun import ProcessSettings
from .pods import PodSync
from .processes import ProcessRunner
from .simulated import SimulatedRunner

logger = logging.getLogger(__name__)

#: concurrent pod reconciles (a stop may wait out a pod's grace period, so there are many)
POD_WORKERS = 16
#: registration retries start after this many seconds and double up to `REGISTER_RETRY_MAX`
REGISTER_RETRY = 0.5
REGISTER_RETRY_MAX = 30.0
#: the Event source of everything the agent records
EVENT_COMPONENT = "kubelet"


class NodeAgent:
    """One node: `client` has the kubelet's credentials."""

    def __init__(
        self,
        client: Client,
        options: NodeAgentOptions,
        *,
        settings: Settings | None = None,
    ) -> None:
        self.options = options
        self._client = client
        self._settings = settings or Settings(server=None, queueing=QueueingSettings(workers=POD_WORKERS))
        self._informers = InformerFactory(client, settings=self._settings.watching)
        self._nodes = self._informers.informer(NODES, field_selector=f"metadata.name={options.node_name}")
        self._pods = self._informers.informer(PODS, field_selector=f"spec.nodeName={options.node_name}")
        #: Services have an informer factory of their own: the pods' informers never wait for them
        self._service_informers = InformerFactory(client, settings=self._settings.watching)
        self._services = self._service_informers.informer(SERVICES)
        self._recorder = EventRecorder(client, component=EVENT_COMPONENT, instance=options.node_name)
        self._pod_sync: PodSync | None = None
        #: set once the Node is registered, the caches have synced and every controller runs
        self.ready = asyncio.Event()
        #: the kubelet API's port, once it serves
        self.kubelet_port: int | None = None
        #: the node's address (InternalIP), once the agent runs
        self.address: str | None = None

    async def run(self) -> None:
        name = self.options.node_name
        host = await HostInfo.detect(name)
        namespaces = Namespaces()
        async with self._state_dir() as state_dir, self._loopback_block(state_dir) as block:
            address = self.options.address or (block.node_address if block is not None else "")
            self.address = address
            pool = PodIPAllocator(block.cidr) if block is not None else None
            network = None
            if self.options.pod_netns_prefix is not None:
                network = PodNetwork(
                    prefix=self.options.pod_netns_prefix,
                    pod_cidr=self.options.pod_cidr,
                    namespaces=namespaces,
                )
            processes, simulated = self._runners(state_dir, pool, address, namespaces)
            pods = PodSync(
                self._client,
                self.options,
                pods=self._pods.store,
                runners=[processes, simulated],
                runner_pools=[pool] if pool is not None else [],
                record=self.record,
                address=address,
                network=network,
            )
            self._pod_sync = pods
            # Processes a previous run of this node left behind go before any pod of this run starts.
            await processes.prepare()
            try:
                async with asyncio.TaskGroup() as group:
                    self.kubelet_port = await self._serve_kubelet_api(group, pods, state_dir, address)
                    node_status = NodeStatusReconciler(
                        self._client,
                        self.options,
                        host=host,
                        nodes=self._nodes.store,
                        address=address,
                        kubelet_port=self.kubelet_port,
                    )
                    group.create_task(self._service_informers.run(), name=f"node agent {name}: services")
                    await self._register(node_status)
                    group.create_task(self._informers.run(), name=f"node agent {name}: informers")
                    await self._informers.wait_synced()
                    pods.adopt()
                    if network is not None:
                        await network.sweep({str(pod["metadata"]["uid"]) for pod in self._pods.store})
                    nodes = Controller(
                        "node-status", node_status, primary=self._nodes, settings=self._settings
                    )
                    pod_controller = Controller("pods", pods, primary=self._pods, settings=self._settings)
                    pods.bind(pod_controller.enqueue)
                    group.create_task(nodes.run(), name=f"node agent {name}: node status")
                    group.create_task(pod_controller.run(), name=f"node agent {name}: pods")
                    group.create_task(
                        self._lease_heartbeat().run(),
                        name=f"node agent {name}: lease",
                    )
                    self.ready.set()
                    logger.info(
                        "%s: node agent ready (%d pods bound to the node)", name, len(self._pods.store)
                    )
            finally:
                self.ready.clear()
                self._pod_sync = None
                await pods.close()
                namespaces.close()

    def _kubernetes_service(self) -> tuple[str, int] | None:
        """ClusterIP and port of the `kubernetes` Service, as kubelet gives pods (None until it is known)."""
        service = self._services.store.get("kubernetes", namespace="default")
        spec = (service or {}).get("spec") or {}
        ports = spec.get("ports") or []
        if not spec.get("clusterIP") or not ports:
            return None
        return str(spec["clusterIP"]), int(ports[0]["port"])

    async def record(self, pod: JSON, type: Literal["Normal", "Warning"], reason: str, message: str) -> None:
        """Record an Event about a pod, as the kubelet of this node (the `RecordEvent` runners are given)."""
        involved = {"apiVersion": PODS.api_version, "kind": PODS.kind, **pod}
        await self._recorder.record(involved, reason=reason, message=message, type=type)

    def _notify(self, uid: str) -> None:
        if self._pod_sync is not None:
            self._pod_sync.notify(uid)

    def _service_ip(self, namespace: str, name: str) -> str | None:
        """A Service's ClusterIP, as kube-dns would answer for its name (stand-ins resolve names with it)."""
        spec = (self._services.store.get(name, namespace=namespace) or {}).get("spec") or {}
        ip = spec.get("clusterIP")
        return str(ip) if ip and ip != "None" else None

    def _runners(
        self, state_dir: Path, pool: PodIPAllocator | None, address: str, namespaces: Namespaces
    ) -> tuple[ProcessRunner, SimulatedRunner]:
        server = urlsplit(self._client.config.server)
        processes = ProcessRunner(
            APIObjectSource(self._client),
            state_dir=state_dir,
            node_address=address,
            api_host=server.hostname or address,
            api_port=server.port or (443 if server.scheme == "https" else 80),
            api_service=self._kubernetes_service if self.options.pod_netns_prefix is not None else None,
            notify=self._notify,
            record=self.record,
            allocatable={"cpu": self.options.cpu, "memory": self.options.memory},
            address_pool=pool,
            settings=ProcessSettings(
                backoff_base=self.options.restart_backoff, backoff_cap=self.options.restart_backoff_max
            ),
        )
        simulated = SimulatedRunner(
            notify=self._notify,
            record=self.record,
            backoff=self.options.restart_backoff,
            backoff_max=self.options.restart_backoff_max,
            namespaces=namespaces,
            service_ip=self._service_ip,
        )
        return processes, simulated

    async def _serve_kubelet_api(
        self, group: asyncio.TaskGroup, pods: PodSync, state_dir: Path, address: str
    ) -> int:
        """Serve the kubelet API on `address` in `group`; its port (0 when there is no client CA to check
        callers against)."""
        ca_pem = await self._client_ca()
        if ca_pem is None:
            logger.error(
                "%s: no client CA (the kubeconfig names none): the kubelet API is not served and `kubectl logs` "
                "fails for this node's pods; give --client-ca-file",
                self.options.node_name,
            )
            return 0
        api = KubeletAPI(
            pods.find,
            node_name=self.options.node_name,
            address=address,
            port=self.options.kubelet_port,
            ca_pem=ca_pem,
            pki_dir=state_dir / "pki",
        )
        group.create_task(api.run(), name=f"node agent {self.options.node_name}: kubelet API")
        await api.ready.wait()
        return api.port

    async def _client_ca(self) -> bytes | None:
        """The CA that signs the API server's client certificate: --client-ca-file, else the cluster's CA."""
        if self.options.client_ca_file is not None:
            return await asyncio.to_thread(self.options.client_ca_file.read_bytes)
        return self._client.config.certificate_authority

    @contextlib.asynccontextmanager
    async def _loopback_block(self, state_dir: Path) -> AsyncIterator[LoopbackBlock | None]:
        """The loopback fallback: this node's loopback /24 for process pods, claimed while the agent runs."""
        if self.options.pod_netns_prefix is not None:
            yield None
            return
        block = await asyncio.to_thread(claim_block, state_dir)
        logger.info("%s: process pods get addresses in %s", self.options.node_name, block.cidr)
        try:
            yield block
        finally:
            await asyncio.to_thread(block.release)

    @contextlib.asynccontextmanager
    async def _state_dir(self) -> AsyncIterator[Path]:
        if self.options.state_dir is not None:
            await asyncio.to_thread(self.options.state_dir.mkdir, parents=True, exist_ok=True)
            yield self.options.state_dir
            return
        temporary = Path(
            await asyncio.to_thread(tempfile.mkdtemp, prefix=f"nodeagent-{self.options.node_name}-")
        )
        try:
            yield temporary
        finally:
            await asyncio.to_thread(shutil.rmtree, temporary, True)

    def _lease_heartbeat(self) -> LeaseHeartbeat:
        """The runtime's node Lease heartbeat, owned by this Node once the informer has it."""
        name = self.options.node_name
        settings = LeaseSettings(duration=self.options.lease_duration, renew_interval=self.options.heartbeat)

        def node_uid() -> str | None:
            node = self._nodes.store.get(name)
            return None if node is None else str(node["metadata"]["uid"])

        return LeaseHeartbeat(self._client, node_name=name, settings=settings, node_uid=node_uid)

    async def _register(self, node_status: NodeStatusReconciler) -> None:
        delay = REGISTER_RETRY
        while True:
            try:
                await node_status.register()
                return
            except APIError as exc:
                logger.warning(
                    "%s: could not register the Node (%s); retrying in %.3g s",
                    self.options.node_name,
                    exc,
                    delay,
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, REGISTER_RETRY_MAX)
