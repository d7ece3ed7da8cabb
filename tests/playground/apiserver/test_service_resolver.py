"""Service webhook routing as kube-apiserver's endpoint resolver does it (k8s.io/apiserver/pkg/util/proxy)."""

from __future__ import annotations

import random

import pytest

from playground.apiserver.service_resolver import Endpoint, ResolveError, resolve_endpoint
from runtime.api.objects import JSON


def service(*ports: tuple[str, int], families: tuple[str, ...] = ()) -> JSON:
    spec: JSON = {"ports": [{"name": name, "port": number} for name, number in ports]}
    if families:
        spec["ipFamilies"] = list(families)
    return {"metadata": {"name": "hooks"}, "spec": spec}


def endpoint_slice(
    *endpoints: tuple[str, bool | None], ports: tuple[tuple[str | None, int], ...], family: str = "IPv4"
) -> JSON:
    return {
        "addressType": family,
        "endpoints": [
            {"addresses": [address], **({} if ready is None else {"conditions": {"ready": ready}})}
            for address, ready in endpoints
        ],
        "ports": [{**({} if name is None else {"name": name}), "port": number} for name, number in ports],
    }


@pytest.mark.parametrize(
    ("slices", "expected"),
    [
        ([endpoint_slice(("10.0.0.1", None), ports=(("https", 8443),))], Endpoint("10.0.0.1", 8443)),
        (
            [endpoint_slice(("10.0.0.1", False), ("10.0.0.2", True), ports=(("https", 8443),))],
            Endpoint("10.0.0.2", 8443),
        ),
        (
            [endpoint_slice(("10.0.0.1", True), ports=(("metrics", 9090), ("https", 8443)))],
            Endpoint("10.0.0.1", 8443),
        ),
        (
            [endpoint_slice(("fd00::1", None), ports=(("https", 8443),), family="IPv6")],
            Endpoint("fd00::1", 8443),
        ),
    ],
    ids=["no-condition-is-ready", "skips-not-ready", "port-by-service-port-name", "ipv6"],
)
def test_a_ready_endpoint_on_the_slice_port_named_like_the_service_port(
    slices: list[JSON], expected: Endpoint
) -> None:
    assert resolve_endpoint(service(("https", 443)), slices, name="hooks", port=443) == expected


def test_an_ipv6_endpoint_is_bracketed() -> None:
    assert Endpoint("fd00::1", 8443).address == "[fd00::1]:8443"


def test_the_primary_family_is_tried_first() -> None:
    slices = [
        endpoint_slice(("10.0.0.1", True), ports=(("https", 8443),)),
        endpoint_slice(("fd00::1", True), ports=(("https", 8443),), family="IPv6"),
    ]
    for seed in range(20):
        chosen = resolve_endpoint(
            service(("https", 443), families=("IPv6", "IPv4")),
            slices,
            name="hooks",
            port=443,
            rng=random.Random(seed),
        )
        assert chosen.host == "fd00::1"


def test_every_ready_endpoint_gets_picked() -> None:
    slices = [
        endpoint_slice(("10.0.0.1", True), ("10.0.0.2", None), ("10.0.0.3", False), ports=(("https", 8443),))
    ]
    rng = random.Random(1)
    picked = {
        resolve_endpoint(service(("https", 443)), slices, name="hooks", port=443, rng=rng).host
        for _ in range(50)
    }
    assert picked == {"10.0.0.1", "10.0.0.2"}


@pytest.mark.parametrize(
    ("svc", "slices", "message"),
    [
        (None, [], 'service "hooks" not found'),
        (
            {"spec": {"type": "ExternalName", "externalName": "x"}},
            [],
            'unsupported service type "ExternalName"',
        ),
        (service(("web", 80)), [], 'no service port 443 found for service "hooks"'),
        (service(("https", 443)), [], 'no endpoints available for service "hooks"'),
        (
            service(("https", 443)),
            [endpoint_slice(("10.0.0.1", True), ports=((None, 8443),))],
            'no endpoints available for service "hooks"',
        ),
        (
            service(("https", 443)),
            [endpoint_slice(ports=(("https", 8443),))],
            'no endpoints available for service "hooks"',
        ),
    ],
    ids=["missing", "external-name", "no-service-port", "no-slices", "unnamed-slice-port", "no-endpoints"],
)
def test_what_cannot_be_routed_fails_with_kubes_reason(
    svc: JSON | None, slices: list[JSON], message: str
) -> None:
    with pytest.raises(ResolveError) as failure:
        resolve_endpoint(svc, slices, name="hooks", port=443)
    assert str(failure.value) == message
