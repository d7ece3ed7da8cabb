"""Endpoint addresses: kube refuses loopback, link-local and unspecified ones in Endpoints and EndpointSlices.

No client elsewhere could reach such an address, so kube-apiserver's validation
(`ValidateEndpointIP`) refuses them with these messages, on create and on update.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Cluster

LOOPBACK = "may not be in the loopback range (127.0.0.0/8, ::1/128)"
LINK_LOCAL = "may not be in the link-local range (169.254.0.0/16, fe80::/10)"
MULTICAST = "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"


def _slice(name: str, addresses: list[str], address_type: str = "IPv4") -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": name},
        "addressType": address_type,
        "endpoints": [{"addresses": [address]} for address in addresses],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
    }


def _endpoints(name: str, ready: list[str], not_ready: tuple[str, ...] = ()) -> dict[str, Any]:
    subset: dict[str, Any] = {"ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}
    if ready:
        subset["addresses"] = [{"ip": ip} for ip in ready]
    if not_ready:
        subset["notReadyAddresses"] = [{"ip": ip} for ip in not_ready]
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name}, "subsets": [subset]}


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("127.63.10.4", LOOPBACK),
        ("169.254.169.254", LINK_LOCAL),
        ("224.0.0.251", MULTICAST),
        ("0.0.0.0", "may not be unspecified (0.0.0.0)"),
    ],
    ids=["loopback", "link-local", "link-local-multicast", "unspecified"],
)
def test_endpointslice_special_address_is_invalid(
    cluster: Cluster, namespace: str, address: str, problem: str
) -> None:
    status, body = cluster.json(
        "POST",
        f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices",
        _slice("special", ["10.244.1.7", address]),
    )
    assert status == 422, body
    assert body["reason"] == "Invalid"
    assert body["message"] == (
        f'EndpointSlice.discovery.k8s.io "special" is invalid: endpoints[1].addresses[0]: '
        f'Invalid value: "{address}": {problem}'
    )
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": f'Invalid value: "{address}": {problem}',
            "field": "endpoints[1].addresses[0]",
        }
    ]


def test_ipv6_loopback_in_ipv6_endpointslice_is_invalid(cluster: Cluster, namespace: str) -> None:
    status, body = cluster.json(
        "POST",
        f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices",
        _slice("loopback6", ["::1"], "IPv6"),
    )
    assert status == 422, body
    assert f'endpoints[0].addresses[0]: Invalid value: "::1": {LOOPBACK}' in body["message"]


def test_endpointslice_with_pod_addresses_is_created(cluster: Cluster, namespace: str) -> None:
    status, body = cluster.json(
        "POST",
        f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices",
        _slice("pods", ["10.244.1.7", "172.18.0.3"]),
    )
    assert status == 201, body


def test_endpointslice_update_to_loopback_is_invalid(cluster: Cluster, namespace: str) -> None:
    path = f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices"
    status, created = cluster.json("POST", path, _slice("moving", ["10.244.1.7"]))
    assert status == 201, created
    created["endpoints"][0]["addresses"] = ["127.0.0.1"]
    status, body = cluster.json("PUT", f"{path}/moving", created)
    assert status == 422, body
    assert f'endpoints[0].addresses[0]: Invalid value: "127.0.0.1": {LOOPBACK}' in body["message"]


def test_fqdn_endpointslice_addresses_are_names(cluster: Cluster, namespace: str) -> None:
    status, body = cluster.json(
        "POST",
        f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices",
        _slice("names", ["backend.example.com"], "FQDN"),
    )
    assert status == 201, body


def test_endpoints_loopback_address_is_invalid(cluster: Cluster, namespace: str) -> None:
    status, body = cluster.json(
        "POST",
        f"/api/v1/namespaces/{namespace}/endpoints",
        _endpoints("special", ["10.244.1.7"], ["127.63.10.4"]),
    )
    assert status == 422, body
    assert body["message"] == (
        'Endpoints "special" is invalid: subsets[0].notReadyAddresses[0].ip: '
        f'Invalid value: "127.63.10.4": {LOOPBACK}'
    )


def test_endpoints_with_pod_addresses_are_created(cluster: Cluster, namespace: str) -> None:
    status, body = cluster.json(
        "POST",
        f"/api/v1/namespaces/{namespace}/endpoints",
        _endpoints("pods", ["10.244.1.7"], ["10.244.2.9"]),
    )
    assert status == 201, body
