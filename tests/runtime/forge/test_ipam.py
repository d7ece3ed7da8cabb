"""The IPAM's rule: a peer's pod CIDR kept when free, remapped when it overlaps, stable across restarts."""

from __future__ import annotations

import pytest

from runtime.forge.cidrs import CidrError
from runtime.forge.ipam import IPAMError, Reserved, allocate, translate

KIND = Reserved(pod_cidr="10.244.0.0/16", service_cidr="10.96.0.0/16")


@pytest.mark.parametrize(
    ("requested", "allocated", "expected"),
    [
        ("10.200.0.0/16", [], "10.200.0.0/16"),
        ("10.244.0.0/16", [], "10.0.0.0/16"),
        ("10.244.0.0/16", ["10.0.0.0/16"], "10.1.0.0/16"),
        ("10.96.0.0/12", [], "10.0.0.0/12"),
        ("10.70.0.0/16", [], "10.0.0.0/16"),
        ("10.200.0.0/16", ["10.200.0.0/16"], "10.0.0.0/16"),
    ],
    ids=["free-kept", "same-as-ours", "second-peer", "covers-services", "external-cidr", "taken-by-peer"],
)
def test_a_peer_network_is_kept_when_free_and_remapped_when_it_overlaps(
    requested: str, allocated: list[str], expected: str
) -> None:
    assert allocate(requested, reserved=KIND, allocated=allocated) == expected


def test_an_earlier_allocation_survives_a_restart_even_when_the_request_became_free() -> None:
    first = allocate("10.244.0.0/16", reserved=KIND)
    again = allocate("10.244.0.0/16", reserved=KIND, current=first)
    assert again == first == "10.0.0.0/16"


def test_an_earlier_allocation_that_now_conflicts_is_moved() -> None:
    assert allocate("10.244.0.0/16", reserved=KIND, current="10.0.0.0/16", allocated=["10.0.0.0/16"]) == (
        "10.1.0.0/16"
    )


def test_many_peers_with_the_same_cidr_get_disjoint_networks() -> None:
    given: list[str] = []
    for _ in range(20):
        given.append(allocate("10.244.0.0/16", reserved=KIND, allocated=given))
    assert len(set(given)) == 20
    assert all(cidr != "10.244.0.0/16" and cidr != "10.96.0.0/16" for cidr in given)


def test_an_exhausted_pool_is_an_error_that_says_what_to_do() -> None:
    with pytest.raises(IPAMError, match=r"no free /16 left in the pool 10\.244\.0\.0/15"):
        allocate("10.244.0.0/16", reserved=KIND, allocated=["10.245.0.0/16"], pool=("10.244.0.0/15",))


def test_not_a_network_is_refused() -> None:
    with pytest.raises(CidrError, match="not an IPv4 network"):
        allocate("10.244.0.1/16", reserved=KIND)


@pytest.mark.parametrize(
    ("requested", "expected"),
    [("8.8.8.0/24", "10.0.0.0/24"), ("100.64.0.0/10", "10.0.0.0/10"), ("172.18.0.0/16", "10.0.0.0/16")],
    ids=["public", "cgnat", "node-network"],
)
def test_a_network_outside_the_pool_or_over_the_nodes_is_remapped_into_the_pool(
    requested: str, expected: str
) -> None:
    """A consumer asking for a public range never makes the provider route it: all the IPAM gives is in its pool."""
    nodes = Reserved(pod_cidr="10.244.0.0/16", service_cidr="10.96.0.0/16", others=("172.18.0.0/16",))
    assert allocate(requested, reserved=nodes) == expected


def test_a_kept_allocation_outside_the_pool_is_moved_into_it() -> None:
    assert allocate("8.8.8.0/24", reserved=KIND, current="8.8.8.0/24") == "10.0.0.0/24"


@pytest.mark.parametrize(
    ("address", "expected"),
    [("10.244.3.7", "10.0.3.7"), ("10.245.0.1", "10.245.0.1")],
    ids=["inside", "outside"],
)
def test_addresses_move_to_the_same_offset(address: str, expected: str) -> None:
    assert translate(address, source="10.244.0.0/16", target="10.0.0.0/16") == expected
