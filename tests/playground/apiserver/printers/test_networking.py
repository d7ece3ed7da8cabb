"""Networking kinds: Services, Endpoints, EndpointSlices, Ingresses, IngressClasses, NetworkPolicies."""

from __future__ import annotations

from typing import Any

import pytest

from .support import META, Obj, ago, row, rt

# --- services -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "status", "expected"),
    [
        (
            {
                "type": "ClusterIP",
                "clusterIP": "10.96.0.10",
                "clusterIPs": ["10.96.0.10"],
                "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}],
                "selector": {"k8s-app": "dns"},
            },
            {},
            ["ClusterIP", "10.96.0.10", "<none>", "53/UDP,53/TCP", "k8s-app=dns"],
        ),
        (
            {
                "type": "NodePort",
                "clusterIP": "10.96.1.1",
                "ports": [{"port": 80, "nodePort": 30080}],
                "externalIPs": ["1.2.3.4"],
            },
            {},
            ["NodePort", "10.96.1.1", "1.2.3.4", "80:30080/TCP", "<none>"],
        ),
        (
            {
                "type": "LoadBalancer",
                "clusterIPs": ["10.96.2.2"],
                "ports": [{"port": 443, "nodePort": 31443, "protocol": "TCP"}],
            },
            {},
            ["LoadBalancer", "10.96.2.2", "<pending>", "443:31443/TCP", "<none>"],
        ),
        (
            {"type": "LoadBalancer", "clusterIPs": ["10.96.2.2"], "externalIPs": ["9.9.9.9"]},
            {"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}, {"hostname": "lb.example.com"}]}},
            ["LoadBalancer", "10.96.2.2", "5.6.7.8,lb.example.com,9.9.9.9", "<none>", "<none>"],
        ),
        (
            {"type": "ExternalName", "externalName": "db.example.com"},
            {},
            ["ExternalName", "<none>", "db.example.com", "<none>", "<none>"],
        ),
        (
            {
                "clusterIP": "None",
                "clusterIPs": ["None"],
                "ports": [{"port": 5432}],
                "selector": {"b": "2", "a": "1"},
            },
            {},
            ["ClusterIP", "None", "<none>", "5432/TCP", "a=1,b=2"],
        ),
    ],
    ids=[
        "cluster-ip-udp-and-tcp",
        "node-port-with-external-ip",
        "load-balancer-pending",
        "load-balancer-ingress-and-external",
        "external-name",
        "headless",
    ],
)
def test_service_cells(spec: Obj, status: Obj, expected: list[str]) -> None:
    obj = {"metadata": {"name": "svc", "creationTimestamp": ago(days=1)}, "spec": spec, "status": status}
    cells = row(rt("", "services"), obj)
    assert cells[0] == "svc"
    assert cells[5] == "24h"
    assert [*cells[1:5], cells[6]] == expected


# --- the others --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "plural", "obj", "expected"),
    [
        (
            "",
            "endpoints",
            {
                "subsets": [
                    {
                        "addresses": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}],
                        "ports": [{"port": 80}, {"port": 443}],
                    }
                ]
            },
            ["x", "10.0.0.1:80,[fd00::1]:80,10.0.0.1:443 + 1 more...", "3m20s"],
        ),
        ("", "endpoints", {"subsets": [{"addresses": [{"ip": "10.0.0.1"}]}]}, ["x", "10.0.0.1", "3m20s"]),
        ("", "endpoints", {}, ["x", "<none>", "3m20s"]),
        (
            "discovery.k8s.io",
            "endpointslices",
            {
                "addressType": "IPv4",
                "ports": [{"port": 80}, {"name": "dns"}, {}],
                "endpoints": [
                    {"addresses": ["10.0.0.1"]},
                    {"addresses": ["10.0.0.2", "10.0.0.3", "10.0.0.4"]},
                ],
            },
            ["x", "IPv4", "80,dns,*", "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...", "3m20s"],
        ),
        (
            "discovery.k8s.io",
            "endpointslices",
            {"addressType": "IPv6"},
            ["x", "IPv6", "<unset>", "<unset>", "3m20s"],
        ),
        (
            "networking.k8s.io",
            "ingresses",
            {
                "spec": {
                    "ingressClassName": "nginx",
                    "tls": [{}],
                    "rules": [{"host": "a.io"}, {}, {"host": "b.io"}, {"host": "c.io"}, {"host": "d.io"}],
                },
                "status": {"loadBalancer": {"ingress": [{"ip": "1.1.1.1"}]}},
            },
            ["x", "nginx", "a.io,b.io,c.io + 2 more...", "1.1.1.1", "80, 443", "3m20s"],
        ),
        (
            "networking.k8s.io",
            "ingresses",
            {"spec": {"rules": [{}]}},
            ["x", "<none>", "*", "", "80", "3m20s"],
        ),
        (
            "networking.k8s.io",
            "ingressclasses",
            {
                "spec": {
                    "controller": "k8s.io/ingress-nginx",
                    "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "lb"},
                }
            },
            ["x", "k8s.io/ingress-nginx", "IngressParameters.k8s.example.com/lb", "3m20s"],
        ),
        (
            "networking.k8s.io",
            "ingressclasses",
            {
                "spec": {
                    "controller": "example.com/ingress",
                    "parameters": {
                        "kind": "ConfigMap",
                        "name": "cfg",
                        "scope": "Namespace",
                        "namespace": "ns",
                    },
                }
            },
            ["x", "example.com/ingress", "ConfigMap/cfg", "3m20s"],
        ),
        (
            "networking.k8s.io",
            "ingressclasses",
            {"spec": {"controller": "example.com/ingress"}},
            ["x", "example.com/ingress", "<none>", "3m20s"],
        ),
        (
            "networking.k8s.io",
            "networkpolicies",
            {
                "spec": {
                    "podSelector": {
                        "matchLabels": {"role": "db"},
                        "matchExpressions": [{"key": "tier", "operator": "Exists"}],
                    }
                }
            },
            ["x", "role=db,tier", "3m20s"],
        ),
        ("networking.k8s.io", "networkpolicies", {"spec": {"podSelector": {}}}, ["x", "<none>", "3m20s"]),
        (
            "networking.k8s.io",
            "networkpolicies",
            {"spec": {"podSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}},
            ["x", "<error>", "3m20s"],
        ),
    ],
    ids=[
        "endpoints-with-more",
        "endpoints-without-ports",
        "endpoints-empty",
        "endpointslice",
        "endpointslice-empty",
        "ingress",
        "ingress-catch-all",
        "ingressclass-with-parameters",
        "ingressclass-core-parameters",
        "ingressclass-without-parameters",
        "networkpolicy",
        "networkpolicy-all-pods",
        "networkpolicy-bad-selector",
    ],
)
def test_networking_cells(group: str, plural: str, obj: Obj, expected: list[Any]) -> None:
    """One row per case: every cell of a networking kind's printer."""
    assert row(rt(group, plural), {"metadata": META, **obj}) == expected
