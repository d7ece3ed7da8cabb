"""Pod IP allocation from a node's pod CIDR (pure)."""

from __future__ import annotations

import ipaddress

import pytest

from playground.nodeagent.ipam import IPExhaustedError, PodIPAllocator


def test_first_ip_skips_the_network_and_gateway_addresses() -> None:
    ipam = PodIPAllocator("10.244.1.0/24")
    assert ipam.allocate("a") == "10.244.1.2"
    assert ipam.allocate("b") == "10.244.1.3"
    assert ipam.range == "10.244.1.2-10.244.1.254"
    assert ipam.size == 253


def test_an_owner_keeps_its_ip() -> None:
    ipam = PodIPAllocator("10.244.1.0/24")
    first = ipam.allocate("a")
    assert ipam.allocate("a") == first
    assert ipam.ip_of("a") == first
    assert ipam.owner_of(first) == "a"
    assert len(ipam) == 1


def test_every_usable_address_is_handed_out_once_then_exhaustion() -> None:
    ipam = PodIPAllocator("10.244.1.0/24")
    ips = [ipam.allocate(f"pod-{i}") for i in range(253)]
    assert len(set(ips)) == 253
    assert "10.244.1.255" not in ips
    assert all(ipaddress.ip_address(ip) in ipaddress.ip_network("10.244.1.0/24") for ip in ips)
    with pytest.raises(IPExhaustedError) as failure:
        ipam.allocate("one-too-many")
    assert str(failure.value) == (
        "failed to allocate for range 0: no IP addresses available in range set: 10.244.1.2-10.244.1.254"
    )


def test_released_ips_are_reused_lowest_first() -> None:
    ipam = PodIPAllocator("10.244.1.0/24")
    for name in "abcde":
        ipam.allocate(name)
    assert ipam.release("d") == "10.244.1.5"
    assert ipam.release("b") == "10.244.1.3"
    assert ipam.release("b") is None
    assert ipam.allocate("f") == "10.244.1.3"
    assert ipam.allocate("g") == "10.244.1.5"
    assert ipam.allocate("h") == "10.244.1.7"


def test_reserved_ips_are_never_allocated_to_others() -> None:
    ipam = PodIPAllocator("10.244.1.0/24")
    assert ipam.reserve("adopted-1", "10.244.1.2")
    assert ipam.reserve("adopted-2", "10.244.1.4")
    assert ipam.allocate("new-1") == "10.244.1.3"
    assert ipam.allocate("new-2") == "10.244.1.5"


@pytest.mark.parametrize(
    ("owner", "ip", "accepted"),
    [
        ("b", "10.244.1.9", True),
        ("a", "10.244.1.9", False),  # it holds another already
        ("a", "10.244.1.2", True),  # what it already holds
        ("b", "10.244.1.2", False),  # another pod's
        ("a", "10.244.2.9", False),  # outside the CIDR
        ("b", "10.244.1.1", False),  # the gateway
        ("b", "10.244.1.255", False),  # the broadcast address
        ("b", "not-an-ip", False),
        ("b", "fd00::2", False),
    ],
    ids=["free", "second-ip", "own", "taken", "outside", "gateway", "broadcast", "garbage", "other-family"],
)
def test_reserve(owner: str, ip: str, accepted: bool) -> None:
    ipam = PodIPAllocator("10.244.1.0/24")
    ipam.allocate("a")
    assert ipam.reserve(owner, ip) is accepted


def test_a_released_ip_reserved_again_is_skipped() -> None:
    ipam = PodIPAllocator("10.244.1.0/24")
    ipam.allocate("a")
    ipam.allocate("b")
    ipam.release("a")
    assert ipam.reserve("c", "10.244.1.2")
    assert ipam.allocate("d") == "10.244.1.4"


def test_ipv6_ranges_have_no_broadcast_address() -> None:
    ipam = PodIPAllocator("fd00:10:244:1::/126")
    assert ipam.range == "fd00:10:244:1::2-fd00:10:244:1::3"
    assert [ipam.allocate("a"), ipam.allocate("b")] == ["fd00:10:244:1::2", "fd00:10:244:1::3"]
    with pytest.raises(IPExhaustedError):
        ipam.allocate("c")


def test_a_range_without_room_for_pods_is_refused() -> None:
    with pytest.raises(ValueError, match="too small"):
        PodIPAllocator("10.244.1.0/31")
