"""Where consumers dial a gateway server (pure): the nodePort at a Ready real node, or the load balancer."""

from __future__ import annotations

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.controllers.networking.gateway import server_endpoint


def node(name: str, address: str, *, ready: bool = True, virtual: bool = False) -> JSON:
    labels = {c.LABEL_TYPE: c.TYPE_VIRTUAL_NODE} if virtual else {}
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {
            "addresses": [{"type": "InternalIP", "address": address}],
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def service(kind: str = "NodePort", node_port: int | None = 31000, ingress: list[JSON] | None = None) -> JSON:
    port: JSON = {"port": 51840, "protocol": "UDP"} | ({"nodePort": node_port} if node_port else {})
    return {"spec": {"type": kind, "ports": [port]}, "status": {"loadBalancer": {"ingress": ingress or []}}}


def test_a_node_port_is_dialled_at_a_ready_real_node() -> None:
    nodes = [
        node("liqo-x", "10.0.0.1", virtual=True),
        node("down", "172.30.0.3", ready=False),
        node("up", "172.30.0.2"),
    ]
    assert server_endpoint(service(), nodes, port=51840) == {
        "addresses": ["172.30.0.2"],
        "port": 31000,
        "protocol": "UDP",
    }


def test_nothing_to_dial_before_the_service_or_a_node_port_or_an_ingress() -> None:
    assert server_endpoint(None, [node("up", "1.2.3.4")], port=51840) is None
    assert server_endpoint(service(node_port=None), [node("up", "1.2.3.4")], port=51840) is None
    assert server_endpoint(service("LoadBalancer"), [node("up", "1.2.3.4")], port=51840) is None
    assert server_endpoint(service("LoadBalancer", ingress=[{"ip": "203.0.113.7"}]), [], port=51840) == {
        "addresses": ["203.0.113.7"],
        "port": 51840,
        "protocol": "UDP",
    }
