"""A peer's networks (pure): what parses, what is refused and why (issue 20, finding 1)."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.forge.cidrs import (
    MAX_NETWORKS,
    CidrError,
    Network,
    Reservation,
    address,
    network,
    peer_network,
    peer_networks,
    refusal,
)
from runtime.forge.networking import Cidrs

POOL = [Network("10.0.0.0/8"), Network("172.16.0.0/12"), Network("192.168.0.0/16")]
HERE = [
    Reservation(Network("10.244.0.0/16"), "this cluster's pod CIDR"),
    Reservation(Network("10.96.0.0/12"), "this cluster's Service CIDR"),
]


@pytest.mark.parametrize(
    "value", ["10.244.0.0/16", "10.0.0.0/8", "192.168.7.0/28", "203.0.113.0/24", "10.0.0.7/32"]
)
def test_a_canonical_ipv4_cidr_parses(value: str) -> None:
    assert str(network(value)) == value


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("10.0.0.1/16", "host bits set"),
        ("10.0.0.0", "write it 10.0.0.0/32"),
        ("10.1.0.0/255.255.0.0", "write it 10.1.0.0/16"),
        ("default", "not an IPv4 network"),
        ("", "not an IPv4 network"),
        (" 10.0.0.0/16", "not an IPv4 network"),
        ("10.0.0.0/16 } ; flush ruleset", "not an IPv4 network"),
        ("10.0.0.0/16\nflush ruleset", "not an IPv4 network"),
        ("10.0.0.0/16 via 192.0.2.1", "not an IPv4 network"),
        ("010.0.0.0/16", "not an IPv4 network"),
        ("fd00::/64", "not an IPv4 network"),
        (12345, "not a CIDR"),
        (None, "not a CIDR"),
        (["10.0.0.0/16"], "not a CIDR"),
    ],
)
def test_anything_else_is_not_a_network(value: Any, message: str) -> None:
    with pytest.raises(CidrError, match=message):
        network(value)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("169.254.169.254/32", "is link-local"),
        ("169.254.0.0/16", "is link-local"),
        ("127.0.0.0/8", "is loopback"),
        ("224.0.0.0/4", "is multicast"),
        ("239.255.0.0/16", "is multicast"),
        ("240.0.0.0/4", "is reserved"),
        ("255.255.255.255/32", "is reserved"),
        ("0.0.0.0/8", '"this network"'),
        ("0.0.0.0/0", "wider than /8"),
        ("128.0.0.0/1", "wider than /8"),
        ("160.0.0.0/3", "wider than /8"),
        ("169.0.0.0/8", "overlaps link-local"),
        ("10.244.0.0/16", "overlaps this cluster's pod CIDR"),
        ("10.100.0.0/16", "overlaps this cluster's Service CIDR"),
        ("8.8.8.0/24", "outside the IPAM's pool"),
    ],
)
def test_a_network_no_peer_may_have_is_refused_with_the_reason(value: str, reason: str) -> None:
    found = refusal(network(value), reservations=HERE, within=POOL)
    assert found is not None and reason in found
    with pytest.raises(CidrError, match=value.replace(".", r"\.")):
        peer_network(value, reservations=HERE, within=POOL)


def test_a_private_network_clear_of_reservations_is_accepted() -> None:
    assert peer_network("10.0.0.0/16", reservations=HERE, within=POOL) == Network("10.0.0.0/16")


def test_a_list_keeps_what_is_accepted_and_says_why_the_rest_is_not() -> None:
    checked = peer_networks(["10.1.0.0/16", "127.0.0.0/8", "10.1.0.0/16", "nope", 7])
    assert checked.accepted == (Network("10.1.0.0/16"),)
    assert len(checked.refused) == 3
    assert "loopback" in checked.refused[0] and "'nope'" in checked.refused[1] and "7" in checked.refused[2]


def test_a_peer_has_at_most_a_few_networks_of_a_kind() -> None:
    values = [f"10.{i}.0.0/16" for i in range(MAX_NETWORKS + 2)]
    checked = peer_networks(values)
    assert [str(n) for n in checked.accepted] == values[:MAX_NETWORKS]
    assert all("one network too many" in reason for reason in checked.refused) and len(checked.refused) == 2


@pytest.mark.parametrize("value", [{"pod": ["10.0.0.0/16"]}, "10.0.0.0/16", 3])
def test_a_list_that_is_not_one_is_refused_whole(value: Any) -> None:
    checked = peer_networks(value)
    assert checked.accepted == () and len(checked.refused) == 1


def test_an_address_must_be_a_canonical_ipv4_one() -> None:
    assert str(address("10.0.0.7")) == "10.0.0.7"
    for bad in ("10.0.0.07", "10.0.0.7 ", "fd00::1", "10.0.0.0/32", None):
        with pytest.raises(CidrError):
            address(bad)


def test_a_configurations_half_as_read_holds_only_accepted_networks() -> None:
    """What every reader of a Configuration gets (`Cidrs.of`): never garbage, never a special range."""
    half = {
        "cidr": {
            "pod": ["10.0.0.0/16", "169.254.169.254/32", "10.0.0.0/16 } ; flush ruleset"],
            "external": ["128.0.0.0/1", "10.70.0.0/16"],
        }
    }
    assert Cidrs.of(half) == Cidrs(pod=("10.0.0.0/16",), external=("10.70.0.0/16",))
    assert len(Cidrs.refused(half)) == 3
    assert Cidrs.of({"cidr": "10.0.0.0/16"}) == Cidrs() and Cidrs.of(None) == Cidrs()
