"""The fabric agent's routes (pure): each remote pod network through its peering's running gateway pod."""

from __future__ import annotations

from typing import Any

from runtime.api import constants as c
from runtime.fabric.routes import desired_routes

JSON = dict[str, Any]


def configuration(namespace: str, remote_id: str, mapped: str | None) -> JSON:
    status = {"remote": {"cidr": {"pod": [mapped]}}} if mapped else {}
    return {
        "metadata": {"namespace": namespace, "name": "x"},
        "spec": {"remoteClusterID": remote_id},
        "status": status,
    }


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
    assert desired_routes(configurations, gateways, node_name="a") == {
        "10.0.0.0/16": "10.244.0.9",
        "10.1.0.0/16": "172.30.0.3",
    }


def test_no_route_without_a_running_gateway_or_a_mapping() -> None:
    assert (
        desired_routes(
            [configuration("t", "m", None)], [gateway("t", "m", node="a", ip="1", host_ip="2")], node_name="a"
        )
        == {}
    )
    assert (
        desired_routes(
            [configuration("t", "m", "10.0.0.0/16")],
            [gateway("t", "m", node="a", ip="10.244.0.9", host_ip="2", phase="Pending")],
            node_name="a",
        )
        == {}
    )
    assert desired_routes([configuration("t", "m", "10.0.0.0/16")], [], node_name="a") == {}
