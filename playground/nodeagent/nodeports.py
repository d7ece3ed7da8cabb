"""The node's kube-proxy, for NodePorts: `<node address>:<nodePort>` forwards to a ready endpoint.

The playground programs no Service IPs, but a NodePort is reachable the way it is on
kind: every node listens on its own address (its InternalIP) at the nodePort of each
TCP port of every Service of type NodePort or LoadBalancer, and forwards each
connection to a ready endpoint of that Service. One level-triggered reconcile per
Service key (fed by the Service informer) opens and closes the listeners: a new port,
a removed port, a Service changed to ClusterIP or deleted. Endpoints are not part of
the reconcile: each connection reads the Service's EndpointSlices (label
`kubernetes.io/service-name`) from the informer's cache when it arrives, takes the
slice port of the Service port's name, and picks the next ready endpoint round-robin
(only this node's with `externalTrafficPolicy: Local`, as kube-proxy does). Without a
ready endpoint, or when the endpoint refuses or does not answer within
`CONNECT_TIMEOUT`, the connection is closed at once (kube-proxy rejects it).

Bytes are copied both ways with asyncio streams; an end of stream on one side is
passed on as a half-close, and the connection ends when both directions have, or as
soon as either side fails. Only process pods' addresses (the node agents' loopback
blocks) can be reached: simulated pods' IPs are routed nowhere. UDP and SCTP ports are
not proxied.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from playground.controllers.workloads.names import SERVICE_NAME
from runtime.core import Request, Result, Store, TemporaryError

logger = logging.getLogger(__name__)

JSON = dict[str, Any]
#: the label that ties an EndpointSlice to its Service
#: the index of the EndpointSlice cache by `namespace/service`
BY_SERVICE = "nodeports-by-service"
NODE_PORT_TYPES = ("NodePort", "LoadBalancer")
#: how long a connection waits for its endpoint to accept before it is closed
CONNECT_TIMEOUT = 5.0
#: when a nodePort cannot be listened on (the address is in use), the next try is this much later
LISTEN_RETRY = 5.0
_CHUNK = 64 * 1024


def slice_service_key(endpoint_slice: JSON) -> Iterable[str]:
    """`namespace/service` of the Service an EndpointSlice belongs to (the BY_SERVICE index)."""
    meta = endpoint_slice.get("metadata") or {}
    service = (meta.get("labels") or {}).get(SERVICE_NAME)
    return [f"{meta.get('namespace') or ''}/{service}"] if service else []


def node_ports(service: JSON | None) -> dict[int, str]:
    """nodePort -> the Service port's name, for each TCP port with a nodePort of a NodePort/LoadBalancer Service."""
    spec = (service or {}).get("spec") or {}
    if spec.get("type") not in NODE_PORT_TYPES:
        return {}
    return {
        int(port["nodePort"]): str(port.get("name") or "")
        for port in spec.get("ports") or []
        if port.get("nodePort") and (port.get("protocol") or "TCP") == "TCP"
    }


def ready_endpoints(
    service: JSON, slices: Iterable[JSON], *, port_name: str, node_name: str
) -> list[tuple[str, int]]:
    """(address, port) of every ready endpoint serving the Service port named `port_name`, sorted.

    An endpoint without a `ready` condition counts as ready (the API's rule); with
    `externalTrafficPolicy: Local` only endpoints on `node_name` count.
    """
    local = ((service.get("spec") or {}).get("externalTrafficPolicy")) == "Local"
    found: set[tuple[str, int]] = set()
    for endpoint_slice in slices:
        if endpoint_slice.get("addressType") not in ("IPv4", "IPv6"):
            continue
        number = next(
            (
                int(port["port"])
                for port in endpoint_slice.get("ports") or []
                if (port.get("name") or "") == port_name
                and (port.get("protocol") or "TCP") == "TCP"
                and port.get("port")
            ),
            None,
        )
        if number is None:
            continue
        for endpoint in endpoint_slice.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready") is False:
                continue
            if local and endpoint.get("nodeName") != node_name:
                continue
            addresses = endpoint.get("addresses") or []
            if addresses:
                found.add((str(addresses[0]), number))
    return sorted(found)


@dataclass
class _Listener:
    service: Request
    node_port: int
    #: the Service port this nodePort belongs to (its name; "" for an unnamed port)
    port_name: str
    server: asyncio.Server | None = None
    #: connections handed out so far (the round-robin position)
    turn: int = 0


class NodePortProxy:
    """The NodePort reconciler (one key per Service); `close()` stops every listener and connection."""

    def __init__(self, *, node_name: str, address: str, services: Store, slices: Store) -> None:
        self._node_name = node_name
        self._address = address
        self._services = services
        self._slices = slices
        slices.add_index(BY_SERVICE, slice_service_key)
        #: nodePort -> its listener
        self._listeners: dict[int, _Listener] = {}
        self._connections: set[asyncio.Task[Any]] = set()

    @property
    def ports(self) -> dict[int, str]:
        """nodePort -> `namespace/service` for every port listened on (for tests and logs)."""
        return {port: str(listener.service) for port, listener in sorted(self._listeners.items())}

    async def reconcile(self, request: Request) -> Result | None:
        wanted = node_ports(self._services.get(request.name, namespace=request.namespace))
        for port in [p for p, held in self._listeners.items() if held.service == request and p not in wanted]:
            await self._close_listener(port)
        failed: list[str] = []
        for port, name in sorted(wanted.items()):
            listener = self._listeners.get(port)
            if listener is not None and listener.service == request:
                listener.port_name = name
            elif listener is not None:
                failed.append(f"{port} (taken by Service {listener.service})")
            else:
                try:
                    await self._listen(request, port, name)
                except OSError as exc:
                    failed.append(f"{port} ({exc.strerror or exc})")
        if failed:
            raise TemporaryError(
                f"Service {request}: cannot listen on node {self._node_name}'s address {self._address} for "
                f"nodePort {', '.join(failed)}: free the port (or delete the Service holding it)",
                delay=LISTEN_RETRY,
            )
        return None

    async def close(self) -> None:
        for port in list(self._listeners):
            await self._close_listener(port)
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    async def _listen(self, service: Request, port: int, port_name: str) -> None:
        listener = _Listener(service, port, port_name)
        self._listeners[port] = listener
        try:
            listener.server = await asyncio.start_server(
                functools.partial(self._forward, listener), host=self._address, port=port
            )
        except BaseException:
            del self._listeners[port]
            raise
        logger.info("%s: Service %s: nodePort %s:%d open", self._node_name, service, self._address, port)

    async def _close_listener(self, port: int) -> None:
        listener = self._listeners.pop(port)
        if listener.server is not None:
            listener.server.close()
            await listener.server.wait_closed()
        logger.info(
            "%s: Service %s: nodePort %s:%d closed", self._node_name, listener.service, self._address, port
        )

    def _pick(self, listener: _Listener) -> tuple[str, int] | None:
        service = self._services.get(listener.service.name, namespace=listener.service.namespace)
        if service is None:
            return None
        endpoints = ready_endpoints(
            service,
            self._slices.by_index(BY_SERVICE, str(listener.service)),
            port_name=listener.port_name,
            node_name=self._node_name,
        )
        if not endpoints:
            return None
        listener.turn += 1
        return endpoints[(listener.turn - 1) % len(endpoints)]

    async def _forward(
        self, listener: _Listener, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            target = self._pick(listener)
            if target is None:
                logger.info(
                    "%s: Service %s: no ready endpoint for nodePort %d: connection closed",
                    self._node_name,
                    listener.service,
                    listener.node_port,
                )
                return
            try:
                upstream_reader, upstream_writer = await asyncio.wait_for(
                    asyncio.open_connection(*target), CONNECT_TIMEOUT
                )
            except (OSError, TimeoutError) as exc:
                logger.info(
                    "%s: Service %s: nodePort %d: endpoint %s:%d unreachable (%s): connection closed",
                    self._node_name,
                    listener.service,
                    listener.node_port,
                    *target,
                    exc or type(exc).__name__,
                )
                return
            try:
                async with asyncio.TaskGroup() as group:
                    group.create_task(_copy(client_reader, upstream_writer))
                    group.create_task(_copy(upstream_reader, client_writer))
            except* OSError:
                pass  # a reset or broken pipe on either side ends the connection both ways
            finally:
                upstream_writer.close()
        finally:
            client_writer.close()
            if task is not None:
                self._connections.discard(task)


async def _copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Copy until the source ends, then half-close the sink (the other direction may go on)."""
    while chunk := await source.read(_CHUNK):
        sink.write(chunk)
        await sink.drain()
    if sink.can_write_eof():
        with contextlib.suppress(OSError):
            sink.write_eof()
