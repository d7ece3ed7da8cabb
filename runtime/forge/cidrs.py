"""What a network written by a peer may be, pure: every CIDR read from a peering's objects is parsed here.

A peer writes networks into the objects of its peering (a consumer its pod CIDR into its
Configuration on the provider, and may patch that Configuration's status; a provider its own
networks, which its consumer copies home), and those networks become host routes on every
node, a gateway's route and WireGuard allowed IPs, and prefixes in nft scripts. So no CIDR
is ever used as the text it was read as: `network()` parses it into an `IPv4Network`, in its
canonical form only (no host bits, no netmask notation, no bare address, no spaces, no IPv6:
the fabric is IPv4), and `refusal()` says why a parsed network can never be a peer's:

- it is (or overlaps) a special-purpose range (`SPECIAL`): "this network" 0.0.0.0/8,
  loopback, link-local (where cloud metadata services answer), multicast, and the reserved
  240.0.0.0/4 with the limited broadcast address;
- it is wider than `MIN_PREFIX_LENGTH` (/8, the widest private range): 128.0.0.0/1 would
  take half of every address a node reaches;
- it lies outside `within` when that is given (where the IPAM gives networks: its pool);
- it overlaps a `Reservation` of the place that reads it (the cluster's own pod, Service and
  external CIDRs, its nodes' addresses, the host's routes), named so the refusal says which.

A peer has at most `MAX_NETWORKS` networks of each kind. `CidrError` names the value and the
reason in words an operator can act on.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

Network = ipaddress.IPv4Network
Address = ipaddress.IPv4Address

#: the widest network a peer may have (a /8: the widest private range)
MIN_PREFIX_LENGTH: Final = 8
#: how many networks of one kind (pod, external) a peer may have
MAX_NETWORKS: Final = 4


class CidrError(ValueError):
    """A network a peer wrote that is refused: the message names it and says why."""


@dataclass(frozen=True)
class Reservation:
    """A network no peer network may overlap where it is read, and what it is (for the refusal's message)."""

    network: Network
    what: str


def _special(cidr: str, what: str) -> Reservation:
    return Reservation(Network(cidr), what)


#: the special-purpose ranges (RFC 6890) that are never a peer's network
SPECIAL: Final = (
    _special("0.0.0.0/8", '"this network" (RFC 1122), never a destination'),
    _special("127.0.0.0/8", "loopback"),
    _special("169.254.0.0/16", "link-local (cloud metadata services answer there)"),
    _special("224.0.0.0/4", "multicast"),
    _special("240.0.0.0/4", "reserved (RFC 1112), with the limited broadcast address"),
)


def network(value: object) -> Network:
    """`value` as an IPv4 network, written canonically (`10.0.0.0/16`); CidrError otherwise."""
    if not isinstance(value, str):
        raise CidrError(f"{value!r} is not a CIDR (a string such as 10.0.0.0/16)")
    try:
        parsed = Network(value, strict=True)
    except ValueError as exc:
        raise CidrError(f"{value!r} is not an IPv4 network: {exc}") from None
    if str(parsed) != value:
        raise CidrError(f"{value!r} is not written as a CIDR: write it {parsed}")
    return parsed


def address(value: object) -> Address:
    """`value` as an IPv4 address, written canonically; CidrError otherwise."""
    if not isinstance(value, str):
        raise CidrError(f"{value!r} is not an IPv4 address")
    try:
        parsed = Address(value)
    except ValueError as exc:
        raise CidrError(f"{value!r} is not an IPv4 address: {exc}") from None
    if str(parsed) != value:
        raise CidrError(f"{value!r} is not written as an IPv4 address: write it {parsed}")
    return parsed


def refusal(
    candidate: Network, *, reservations: Iterable[Reservation] = (), within: Sequence[Network] = ()
) -> str | None:
    """Why `candidate` can never be a peer's network here (None: it can)."""
    for special in SPECIAL:
        if candidate.subnet_of(special.network):
            return f"is {special.what} ({special.network})"
    if candidate.prefixlen < MIN_PREFIX_LENGTH:
        return (
            f"is wider than /{MIN_PREFIX_LENGTH} ({candidate.num_addresses} addresses): no peer network is"
            " wider than the widest private range"
        )
    for special in SPECIAL:
        if candidate.overlaps(special.network):
            return f"overlaps {special.what} ({special.network})"
    if within and not any(candidate.subnet_of(pool) for pool in within):
        return f"is outside the IPAM's pool ({', '.join(str(pool) for pool in within)})"
    for reserved in reservations:
        if candidate.overlaps(reserved.network):
            return f"overlaps {reserved.what} ({reserved.network})"
    return None


def peer_network(
    value: object, *, reservations: Iterable[Reservation] = (), within: Sequence[Network] = ()
) -> Network:
    """A CIDR a peer wrote, parsed and checked; CidrError naming it and the reason otherwise."""
    candidate = network(value)
    reason = refusal(candidate, reservations=reservations, within=within)
    if reason is not None:
        raise CidrError(f"{candidate} {reason}")
    return candidate


@dataclass(frozen=True)
class Checked:
    """A peer's list of networks of one kind: those that may be used here, and why each other one may not."""

    accepted: tuple[Network, ...]
    refused: tuple[str, ...]


def peer_networks(
    values: object, *, reservations: Iterable[Reservation] = (), within: Sequence[Network] = ()
) -> Checked:
    """Each of `values` (a list a peer wrote) through `peer_network()`, at most MAX_NETWORKS of them, no repeats."""
    if values is None:
        return Checked((), ())
    if not isinstance(values, list | tuple):
        return Checked((), (f"{values!r} is not a list of CIDRs",))
    reservations = tuple(reservations)
    accepted: list[Network] = []
    refused: list[str] = []
    for value in values:
        try:
            candidate = peer_network(value, reservations=reservations, within=within)
        except CidrError as exc:
            refused.append(str(exc))
            continue
        if candidate in accepted:
            continue
        if len(accepted) == MAX_NETWORKS:
            refused.append(
                f"{candidate} is one network too many: a peer has at most {MAX_NETWORKS} of a kind"
            )
            continue
        accepted.append(candidate)
    return Checked(tuple(accepted), tuple(refused))
