"""The fabric agent's routes (pure): each remote pod network through its peering's running gateway pod, and only
the networks the IPAM gave, in its pool, clear of this node's own routes."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.fabric.routes import desired_routes, host_reservations
from runtime.forge.cidrs import Network, Reservation


def configuration(namespace: str, remote_id: str, mapped: list[Any] | str | None) -> JSON:
    pods = [mapped] if isinstance(mapped, str) else mapped
    status = {"remote": {"cidr": {"pod": pods}}} if pods else {}
    return {
        "metadata": {"namespace": namespace, "name": "x", "uid": f"uid-{namespace}"},
        "spec": {"remoteClusterID": remote_id},
        "status": status,
    }


def given(namespace: str, *cidrs: str) -> list[JSON]:
    """The Networks the IPAM gave the Configuration of `namespace`."""
    return [
        {
            "metadata": {
                "namespace": namespace,
                "name": f"x-pod-{i}",
                "ownerReferences": [{"kind": "Configuration", "name": "x", "uid": f"uid-{namespace}"}],
            },
            "status": {"cidr": cidr},
        }
        for i, cidr in enumerate(cidrs)
    ]


def gateway(
    namespace: str, remote_id: str, *, node: str, ip: str, host_ip: str, phase: str = "Running"
) -> JSON:
    return {
        "metadata": {"namespace": namespace, "name": "gw", "labels": {c.LABEL_REMOTE_CLUSTER_ID: remote_id}},
        "spec": {"nodeName": node},
        "status": {"phase": phase, "podIP": ip, "hostIP": host_ip},
    }


def test_a_remote_network_goes_to_the_gateway_pod_on_its_node_and_to_its_node_elsewhere() -> None:
    configurations = [
        configuration("t-milan", "m", "10.0.0.0/16"),
        configuration("t-naples", "n", "10.1.0.0/16"),
    ]
    gateways = [
        gateway("t-milan", "m", node="a", ip="10.244.0.9", host_ip="172.30.0.2"),
        gateway("t-naples", "n", node="b", ip="10.244.1.4", host_ip="172.30.0.3"),
    ]
    networks = [*given("t-milan", "10.0.0.0/16"), *given("t-naples", "10.1.0.0/16")]
    routes = desired_routes(configurations, gateways, node_name="a", networks=networks)
    assert routes.hops == {"10.0.0.0/16": "10.244.0.9", "10.1.0.0/16": "172.30.0.3"}
    assert routes.refused == []


def test_no_route_without_a_running_gateway_or_a_mapping() -> None:
    networks = given("t", "10.0.0.0/16")
    running = [gateway("t", "m", node="a", ip="10.244.0.9", host_ip="2")]
    assert (
        desired_routes([configuration("t", "m", None)], running, node_name="a", networks=networks).hops == {}
    )
    pending = [gateway("t", "m", node="a", ip="10.244.0.9", host_ip="2", phase="Pending")]
    mapped = [configuration("t", "m", "10.0.0.0/16")]
    assert desired_routes(mapped, pending, node_name="a", networks=networks).hops == {}
    assert desired_routes(mapped, [], node_name="a", networks=networks).hops == {}


HOST = [
    Reservation(Network("10.244.0.0/16"), "this cluster's pod CIDR"),
    Reservation(Network("172.18.0.0/16"), "a route of this node (dev eth0)"),
]


@pytest.mark.parametrize(
    ("status_remote", "reason"),
    [
        ("169.254.169.254/32", "link-local"),
        ("127.0.0.0/8", "loopback"),
        ("224.0.0.0/4", "multicast"),
        ("128.0.0.0/1", "wider than /8"),
        ("0.0.0.0/0", "wider than /8"),
        ("172.18.0.0/16", "a route of this node"),
        ("172.18.4.0/24", "a route of this node"),
        ("10.244.0.0/16", "this cluster's pod CIDR"),
        ("8.8.8.0/24", "outside the IPAM's pool"),
        ("10.1.0.0/16", "not a network the IPAM gave"),
        ("10.0.0.0/16 via 1.2.3.4", "not an IPv4 network"),
        ("10.0.0.1/16", "not an IPv4 network"),
        ("fd00::/64", "not an IPv4 network"),
        (7, "not a CIDR"),
    ],
)
def test_a_status_a_peer_patched_is_never_routed(status_remote: Any, reason: str) -> None:
    """The consumer can patch its Configuration's status on the provider: the agent routes only what the IPAM gave
    (a Network the consumer cannot write), in the pool, clear of the node's routes; the rest is refused by name."""
    # even a Network saying so (the IPAM never writes one of those) does not make a refused network routed
    claimed = status_remote if isinstance(status_remote, str) and "IPAM gave" not in reason else "10.0.0.0/16"
    networks = [*given("t", "10.0.0.0/16", claimed), *given("other", "10.1.0.0/16")]
    routes = desired_routes(
        [configuration("t", "m", [status_remote])],
        [gateway("t", "m", node="a", ip="10.244.0.9", host_ip="172.18.0.2")],
        node_name="a",
        networks=networks,
        reservations=HOST,
    )
    assert routes.hops == {}
    assert len(routes.refused) == 1 and reason in routes.refused[0], routes.refused


def test_the_hosts_routes_are_reservations_but_the_default_and_the_agents_own() -> None:
    listed = [
        {"dst": "default", "gateway": "172.18.0.1", "dev": "eth0"},
        {"dst": "172.18.0.0/16", "dev": "eth0", "protocol": "kernel"},
        {"dst": "10.244.1.0/24", "gateway": "172.18.0.3", "dev": "eth0"},
        {"dst": "10.244.0.5", "dev": "veth1"},
        {"dst": "10.0.0.0/16", "gateway": "10.244.0.9", "dev": "eth0", "protocol": "147"},
    ]
    assert [str(r.network) for r in host_reservations(listed)] == [
        "172.18.0.0/16",
        "10.244.1.0/24",
        "10.244.0.5/32",
    ]
