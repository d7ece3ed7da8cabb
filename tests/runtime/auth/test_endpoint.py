"""The authURL derived from the `liqo-auth` Service and the Nodes (Liqo's rules), as a table of shapes."""

from __future__ import annotations

import pytest

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.auth.endpoint import Endpoint, Unresolved, auth_endpoint, url_for
from runtime.forge.nodes import node_address

POD_URL = "https://10.244.1.7:8443"


def service(
    kind: str, *, node_port: int | None = 31443, port: int = 443, ingress: list[JSON] | None = None
) -> JSON:
    ports: JSON = {"name": "https", "port": port, "targetPort": 8443, "protocol": "TCP"}
    if node_port is not None:
        ports["nodePort"] = node_port
    obj: JSON = {
        "metadata": {"name": c.AUTH_SERVICE, "namespace": "liqo"},
        "spec": {"type": kind, "ports": [ports]},
    }
    if ingress is not None:
        obj["status"] = {"loadBalancer": {"ingress": ingress}}
    return obj


def node(
    name: str,
    *addresses: tuple[str, str],
    ready: str = "True",
    labels: dict[str, str] | None = None,
    deleting: bool = False,
) -> JSON:
    meta: JSON = {"name": name, "labels": labels or {}}
    if deleting:
        meta["deletionTimestamp"] = "2030-01-01T00:00:00Z"
    return {
        "metadata": meta,
        "status": {
            "addresses": [{"type": kind, "address": address} for kind, address in addresses],
            "conditions": [{"type": "Ready", "status": ready}],
        },
    }


INTERNAL_A = node("a", ("InternalIP", "172.18.0.2"), ("Hostname", "a"))
INTERNAL_B = node("b", ("InternalIP", "172.18.0.3"), ("Hostname", "b"))
EXTERNAL_C = node("c", ("InternalIP", "172.18.0.4"), ("ExternalIP", "203.0.113.4"))
VIRTUAL = node("a-virtual", ("InternalIP", "10.9.9.9"), labels={c.LABEL_TYPE: c.TYPE_VIRTUAL_NODE})
NOT_READY = node("a-down", ("InternalIP", "172.18.0.9"), ready="False")
DELETING = node("a-going", ("InternalIP", "172.18.0.8"), deleting=True)
NO_ADDRESS = node("a-bare")
IPV6 = node("v6", ("InternalIP", "fd00::5"))


@pytest.mark.parametrize(
    ("svc", "nodes", "own", "published", "url"),
    [
        (service("ClusterIP", node_port=None), [INTERNAL_A], "", "", POD_URL),
        (service("NodePort"), [INTERNAL_B, INTERNAL_A], "", "", "https://172.18.0.2:31443"),
        (service("NodePort"), [INTERNAL_A, INTERNAL_B], "b", "", "https://172.18.0.3:31443"),
        (
            service("NodePort"),
            [INTERNAL_A, INTERNAL_B],
            "b",
            "https://172.18.0.2:31443",
            "https://172.18.0.2:31443",
        ),
        (
            service("NodePort"),
            [INTERNAL_A, INTERNAL_B],
            "",
            "https://172.18.0.9:31443",
            "https://172.18.0.2:31443",
        ),
        (service("NodePort"), [INTERNAL_A, EXTERNAL_C], "c", "", "https://203.0.113.4:31443"),
        (
            service("NodePort"),
            [VIRTUAL, NOT_READY, DELETING, NO_ADDRESS, INTERNAL_B],
            "a-down",
            "",
            "https://172.18.0.3:31443",
        ),
        (service("NodePort"), [IPV6], "", "", "https://[fd00::5]:31443"),
        (
            service("LoadBalancer", ingress=[{"ip": "198.51.100.7", "hostname": "auth.rome.example"}]),
            [INTERNAL_A],
            "",
            "",
            "https://auth.rome.example",
        ),
        (
            service("LoadBalancer", port=8443, ingress=[{"ip": "198.51.100.7"}]),
            [],
            "",
            "",
            "https://198.51.100.7:8443",
        ),
        (service("LoadBalancer", ingress=[]), [INTERNAL_A], "", "", "https://172.18.0.2:31443"),
        (service("LoadBalancer"), [INTERNAL_A], "", "", "https://172.18.0.2:31443"),
    ],
    ids=[
        "clusterip-pod-address",
        "nodeport-first-node-by-name",
        "nodeport-own-node",
        "nodeport-published-node-kept",
        "nodeport-published-node-gone",
        "nodeport-external-ip-preferred",
        "nodeport-skips-virtual-notready-deleting-bare",
        "nodeport-ipv6-bracketed",
        "lb-hostname-before-ip-443-omitted",
        "lb-ip-and-port",
        "lb-empty-ingress-uses-node-port",
        "lb-no-status-uses-node-port",
    ],
)
def test_the_url_follows_liqos_rules(
    svc: JSON, nodes: list[JSON], own: str, published: str, url: str
) -> None:
    derived = auth_endpoint(svc, nodes, pod_url=POD_URL, own_node=own, published=published)
    assert isinstance(derived, Endpoint), derived
    assert derived.url == url


@pytest.mark.parametrize(
    ("svc", "nodes", "reason"),
    [
        (None, [INTERNAL_A], "Service liqo-auth is missing"),
        (service("NodePort"), [], "no Ready node"),
        (service("NodePort"), [VIRTUAL, NOT_READY, NO_ADDRESS], "no Ready node"),
        (service("NodePort", node_port=None), [INTERNAL_A], "has no nodePort yet"),
        (
            service("LoadBalancer", node_port=None),
            [INTERNAL_A],
            "no load balancer ingress yet and no nodePort",
        ),
        (service("LoadBalancer"), [], "while its load balancer has no ingress"),
        (service("ExternalName"), [INTERNAL_A], "make it NodePort or LoadBalancer"),
    ],
    ids=[
        "no-service",
        "no-nodes",
        "no-usable-node",
        "no-node-port",
        "lb-nothing",
        "lb-no-nodes",
        "externalname",
    ],
)
def test_what_cannot_be_derived_says_why(svc: JSON | None, nodes: list[JSON], reason: str) -> None:
    derived = auth_endpoint(svc, nodes, pod_url=POD_URL)
    assert isinstance(derived, Unresolved)
    assert reason in derived.reason


def test_node_addresses_are_taken_in_liqos_order() -> None:
    everything = node(
        "n",
        ("Hostname", "n"),
        ("InternalIP", "172.18.0.2"),
        ("InternalDNS", "n.internal"),
        ("ExternalIP", "203.0.113.2"),
        ("ExternalDNS", "n.example"),
    )
    assert node_address(everything) == ("ExternalDNS", "n.example")
    assert node_address(node("n", ("Hostname", "n"), ("InternalIP", "172.18.0.2"))) == (
        "InternalIP",
        "172.18.0.2",
    )
    assert node_address(NO_ADDRESS) is None


def test_urls_bracket_ipv6_and_leave_out_the_https_port() -> None:
    assert url_for("fd00::1", 30000) == "https://[fd00::1]:30000"
    assert url_for("auth.example", 443) == "https://auth.example"
    assert url_for("127.0.0.1", 8443) == "https://127.0.0.1:8443"
