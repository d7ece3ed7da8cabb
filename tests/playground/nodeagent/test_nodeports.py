"""The node's kube-proxy for NodePorts: listeners follow Services, connections reach ready endpoints."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from playground.controllers.workloads.names import SERVICE_NAME
from playground.nodeagent.nodeports import (
    NodePortProxy,
    node_ports,
    ready_endpoints,
)
from runtime.api.kinds import ENDPOINTSLICES, SERVICES
from runtime.core import Client, Request, Store, TemporaryError
from tests.playground.conftest import eventually

from .conftest import agent, options

JSON = dict[str, Any]
HOST = "127.0.0.1"


def service(
    name: str = "web", *, type: str = "NodePort", ports: list[JSON] | None = None, **spec: Any
) -> JSON:
    return {
        "metadata": {"name": name, "namespace": "shop"},
        "spec": {"type": type, "ports": ports if ports is not None else [], **spec},
    }


def endpoint_slice(
    name: str, endpoints: list[tuple[str, int, bool | None]], *, port_name: str = "http", service: str = "web"
) -> JSON:
    """A slice of `(address, port, ready)` endpoints (ready None: no condition), all on node-1."""
    by_port: dict[int, list[JSON]] = {}
    for address, port, ready in endpoints:
        conditions = {} if ready is None else {"ready": ready}
        by_port.setdefault(port, []).append(
            {"addresses": [address], "conditions": conditions, "nodeName": "node-1"}
        )
    assert len(by_port) <= 1, "one port per slice"
    port = next(iter(by_port), 80)
    return {
        "metadata": {"name": name, "namespace": "shop", "labels": {SERVICE_NAME: service}},
        "addressType": "IPv4",
        "ports": [{"name": port_name, "port": port, "protocol": "TCP"}],
        "endpoints": by_port.get(port, []),
    }


def free_port(host: str = HOST) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


@contextlib.asynccontextmanager
async def backend(tag: bytes, *, hold: bool = False) -> AsyncIterator[int]:
    """A TCP server on 127.0.0.1 answering `tag` + everything it read once the client half-closes;
    with `hold` it reads until the client goes and never answers."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = await reader.read()
        if not hold:
            writer.write(tag + data)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, HOST, 0)
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        server.close()
        await server.wait_closed()


async def exchange(host: str, port: int, data: bytes) -> bytes:
    """Send `data`, half-close, and read everything the other side sends until it closes."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(data)
        writer.write_eof()
        return await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()


async def dropped(host: str, port: int) -> bool:
    """Whether the connection is closed without an answer (a FIN, or a reset since the data went unread)."""
    try:
        return await exchange(host, port, b"hello") == b""
    except ConnectionResetError:
        return True


async def refused(host: str, port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection(host, port)
    except (ConnectionRefusedError, ConnectionResetError):  # a reset: the listener closed while connecting
        return True
    writer.close()
    return False


@pytest.fixture
async def proxy() -> AsyncIterator[tuple[NodePortProxy, Store, Store]]:
    services, slices = Store(), Store()
    node_ports_proxy = NodePortProxy(node_name="node-1", address=HOST, services=services, slices=slices)
    try:
        yield node_ports_proxy, services, slices
    finally:
        await node_ports_proxy.close()


WEB = Request("shop", "web")


def test_only_tcp_ports_with_a_node_port_of_node_port_and_load_balancer_services_are_proxied() -> None:
    ports = [
        {"name": "http", "port": 80, "nodePort": 30080},
        {"name": "dns", "port": 53, "protocol": "UDP", "nodePort": 30053},
        {"name": "bare", "port": 81},
        {"port": 82, "protocol": "TCP", "nodePort": 30082},
    ]
    assert node_ports(service(ports=ports)) == {30080: "http", 30082: ""}
    assert node_ports(service(type="LoadBalancer", ports=ports)) == {30080: "http", 30082: ""}
    assert node_ports(service(type="ClusterIP", ports=ports)) == {}
    assert node_ports(None) == {}


def test_ready_endpoints_take_the_slice_port_of_the_service_port_s_name() -> None:
    slices = [
        endpoint_slice("a", [("10.0.0.1", 8080, True), ("10.0.0.2", 8080, False), ("10.0.0.3", 8080, None)]),
        endpoint_slice("b", [("10.0.0.4", 9090, True)], port_name="metrics"),
        {**endpoint_slice("c", [("web.example", 8080, True)]), "addressType": "FQDN"},
    ]
    web = service()
    assert ready_endpoints(web, slices, port_name="http", node_name="node-1") == [
        ("10.0.0.1", 8080),
        ("10.0.0.3", 8080),
    ]
    assert ready_endpoints(web, slices, port_name="metrics", node_name="node-1") == [("10.0.0.4", 9090)]
    assert ready_endpoints(web, slices, port_name="", node_name="node-1") == []
    local = service(externalTrafficPolicy="Local")
    assert ready_endpoints(local, slices, port_name="http", node_name="node-2") == []
    assert len(ready_endpoints(local, slices, port_name="http", node_name="node-1")) == 2


async def test_connections_reach_the_ready_endpoints_in_turn_both_ways(
    proxy: tuple[NodePortProxy, Store, Store],
) -> None:
    node_ports_proxy, services, slices = proxy
    node_port = free_port()
    async with backend(b"a:") as a, backend(b"b:") as b, backend(b"unready:") as unready:
        services.upsert(service(ports=[{"name": "http", "port": 80, "nodePort": node_port}]))
        slices.upsert(endpoint_slice("web-1", [(HOST, a, True)]))
        slices.upsert(endpoint_slice("web-2", [(HOST, b, True)]))
        slices.upsert(endpoint_slice("web-3", [(HOST, unready, False)]))
        await node_ports_proxy.reconcile(WEB)
        assert node_ports_proxy.ports == {node_port: "shop/web"}
        replies = [await exchange(HOST, node_port, b"x" * 200_000 + bytes([i])) for i in range(4)]
    tags = [reply[:2] for reply in replies]
    assert set(tags[:2]) == {b"a:", b"b:"} and tags[2:] == tags[:2]  # round-robin; never the unready one
    assert all(reply[2:] == b"x" * 200_000 + bytes([i]) for i, reply in enumerate(replies))


async def test_without_a_ready_or_reachable_endpoint_the_connection_is_closed(
    proxy: tuple[NodePortProxy, Store, Store],
) -> None:
    node_ports_proxy, services, slices = proxy
    node_port = free_port()
    services.upsert(service(ports=[{"name": "http", "port": 80, "nodePort": node_port}]))
    await node_ports_proxy.reconcile(WEB)
    assert await dropped(HOST, node_port)
    async with backend(b"unready:") as unready:
        slices.upsert(endpoint_slice("web-1", [(HOST, unready, False)]))
        assert await dropped(HOST, node_port)
        slices.upsert(endpoint_slice("web-1", [(HOST, unready, True)]))
        assert await exchange(HOST, node_port, b"hello") == b"unready:hello"
    slices.upsert(endpoint_slice("web-1", [(HOST, free_port(), True)]))  # nothing listens there
    assert await dropped(HOST, node_port)


async def test_listeners_follow_the_service_s_ports_type_and_deletion(
    proxy: tuple[NodePortProxy, Store, Store],
) -> None:
    node_ports_proxy, services, slices = proxy
    first, second = free_port(), free_port()
    async with backend(b"web:") as web:
        ports = [
            {"name": "http", "port": 80, "nodePort": first},
            {"name": "alt", "port": 81, "nodePort": second},
        ]
        services.upsert(service(ports=ports))
        slices.upsert(endpoint_slice("web-1", [(HOST, web, True)], port_name="alt"))
        await node_ports_proxy.reconcile(WEB)
        assert set(node_ports_proxy.ports) == {first, second}
        assert await exchange(HOST, second, b"1") == b"web:1"
        assert await dropped(HOST, first)  # the slice serves "alt" only
        # The second port is renamed: the listener stays and follows the name.
        services.upsert(service(ports=[ports[0], {**ports[1], "name": "http"}]))
        await node_ports_proxy.reconcile(WEB)
        assert await dropped(HOST, second)
        slices.upsert(endpoint_slice("web-1", [(HOST, web, True)], port_name="http"))
        assert await exchange(HOST, first, b"3") == b"web:3"
        services.upsert(service(ports=[ports[0]]))
        await node_ports_proxy.reconcile(WEB)
        assert set(node_ports_proxy.ports) == {first}
        assert await refused(HOST, second)
        services.upsert(service(type="ClusterIP", ports=[ports[0]]))
        await node_ports_proxy.reconcile(WEB)
        assert node_ports_proxy.ports == {} and await refused(HOST, first)
        services.upsert(service(ports=[ports[0]]))
        await node_ports_proxy.reconcile(WEB)
        assert await exchange(HOST, first, b"4") == b"web:4"
        services.remove(service())
        await node_ports_proxy.reconcile(WEB)
        assert node_ports_proxy.ports == {} and await refused(HOST, first)


async def test_a_node_port_in_use_is_retried_until_it_frees(
    proxy: tuple[NodePortProxy, Store, Store],
) -> None:
    node_ports_proxy, services, _ = proxy
    taken = socket.socket()
    taken.bind((HOST, 0))
    taken.listen()
    node_port = int(taken.getsockname()[1])
    services.upsert(service(ports=[{"name": "http", "port": 80, "nodePort": node_port}]))
    with pytest.raises(TemporaryError, match=f"Service shop/web: cannot listen on .* nodePort {node_port} "):
        await node_ports_proxy.reconcile(WEB)
    assert node_ports_proxy.ports == {}
    taken.close()
    await node_ports_proxy.reconcile(WEB)
    assert node_ports_proxy.ports == {node_port: "shop/web"}


async def test_close_ends_the_connections_in_flight(proxy: tuple[NodePortProxy, Store, Store]) -> None:
    node_ports_proxy, services, slices = proxy
    node_port = free_port()
    async with backend(b"", hold=True) as held:
        services.upsert(service(ports=[{"name": "http", "port": 80, "nodePort": node_port}]))
        slices.upsert(endpoint_slice("web-1", [(HOST, held, True)]))
        await node_ports_proxy.reconcile(WEB)
        reader, writer = await asyncio.open_connection(HOST, node_port)
        writer.write(b"waiting")
        await writer.drain()
        pending = asyncio.create_task(reader.read())
        await asyncio.sleep(0.1)
        assert not pending.done()
        await node_ports_proxy.close()
        assert await asyncio.wait_for(pending, 10) == b""
        writer.close()
        assert await refused(HOST, node_port)


async def test_the_agent_serves_node_ports_on_the_node_address(
    fresh_emulator: Path, api: Client, ns: str
) -> None:
    """Through the agent: the emulator allocates the nodePort; the listener is on the node's address."""
    async with backend(b"pod:") as pod_port, agent(fresh_emulator, options()) as node_agent:
        assert node_agent.address is not None and node_agent.address != HOST
        created = await api.create(
            SERVICES,
            {
                "metadata": {"name": "web"},
                "spec": {"type": "NodePort", "ports": [{"name": "http", "port": 80}]},
            },
            namespace=ns,
        )
        node_port = int(created["spec"]["ports"][0]["nodePort"])
        slice_body = endpoint_slice("web-abc", [(HOST, pod_port, True)])
        slice_body["metadata"] = {"name": "web-abc", "labels": {SERVICE_NAME: "web"}}
        await api.create(ENDPOINTSLICES, slice_body, namespace=ns)

        async def answers() -> bool:
            try:
                return await exchange(node_agent.address or "", node_port, b"hi") == b"pod:hi"
            except OSError:
                return False

        await eventually(answers, within=10)
        assert await refused(HOST, node_port)  # only the node's own address
        await api.delete(SERVICES, "web", namespace=ns)
        await eventually(lambda: refused(node_agent.address or "", node_port), within=10)
