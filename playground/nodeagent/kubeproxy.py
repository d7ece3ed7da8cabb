"""The node's kube-proxy: Service forwarding, as its own component with kube-proxy's identity.

A kubelet may not watch Services' endpoints: the Node authorizer gives
`system:node:<name>` no EndpointSlices. kube-proxy runs with its own credentials
(`system:kube-proxy`, bound by kube-apiserver's bootstrap policy to
`system:node-proxier`: list/watch of Services, EndpointSlices, Nodes and ServiceCIDRs,
and Events), so this component gets its own client, its own informers and its own
controller, and nothing of the kubelet waits for it: when its informers are refused
or slow, pods still start (the agent runs it beside the pod controller, never before).

Today it forwards NodePorts in user space (`nodeports.py`); it is the seam where a
kube-proxy programming nftables replaces that, with the same identity and rights.
"""

from __future__ import annotations

import asyncio
import logging

from playground.controllers.workloads.names import SERVICE_NAME
from runtime.api.kinds import ENDPOINTSLICES, SERVICES
from runtime.core import Client, Controller, InformerFactory, Settings

from .nodeports import NodePortProxy

logger = logging.getLogger(__name__)


class KubeProxy:
    """`run()` forwards the node's NodePorts until cancelled; `__init__` does no I/O."""

    def __init__(self, client: Client, *, node_name: str, address: str, settings: Settings) -> None:
        self._client = client
        self._node_name = node_name
        self._address = address
        self._settings = settings
        #: set once its informers have synced and the NodePort controller runs
        self.ready = asyncio.Event()

    async def run(self) -> None:
        informers = InformerFactory(self._client, settings=self._settings.watching)
        services = informers.informer(SERVICES)
        slices = informers.informer(ENDPOINTSLICES, label_selector=SERVICE_NAME)
        node_ports = NodePortProxy(
            node_name=self._node_name, address=self._address, services=services.store, slices=slices.store
        )
        controller = Controller("nodeports", node_ports, primary=services, settings=self._settings)
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(informers.run(), name=f"kube-proxy {self._node_name}: informers")
                await informers.wait_synced()
                group.create_task(controller.run(), name=f"kube-proxy {self._node_name}: nodeports")
                self.ready.set()
                logger.info("%s: kube-proxy forwards NodePorts on %s", self._node_name, self._address)
        finally:
            self.ready.clear()
            await node_ports.close()
