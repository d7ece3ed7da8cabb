"""The IPAM's allocation rule, pure: which CIDR a peer's network is known by here.

A cluster reserves its own pod and Service CIDRs and its external CIDR. A peer's pod
CIDR is used as it is when it overlaps nothing reserved or already given to another
peer; otherwise it is remapped to the first free network of the same size in the pool
(Liqo's default pool: the private ranges of RFC 1918). Allocations are kept in
`ipam.liqo.io` Network objects (spec: what was asked, status: what was given), so the
rule is called with every earlier allocation and gives the same answer after a restart:
an allocation that is already recorded and still free of conflicts is kept as it is.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

Network = ipaddress.IPv4Network

#: where remapped networks come from (Liqo's default pool)
DEFAULT_POOL: Final = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
#: the network standing for this cluster's external addresses (Liqo's default)
DEFAULT_EXTERNAL_CIDR: Final = "10.70.0.0/16"


class IPAMError(Exception):
    """A request the IPAM cannot satisfy: not a network, or no free network of that size left."""


def network(cidr: str) -> Network:
    """A CIDR as an IPv4 network (host bits refused)."""
    try:
        return ipaddress.IPv4Network(cidr, strict=True)
    except ValueError as exc:
        raise IPAMError(f"{cidr!r} is not an IPv4 network: {exc}") from None


@dataclass(frozen=True)
class Reserved:
    """What a cluster's own addresses occupy: nothing a peer is mapped to may overlap them."""

    pod_cidr: str
    service_cidr: str
    external_cidr: str = DEFAULT_EXTERNAL_CIDR
    #: further networks in use here (the nodes' network, say)
    others: tuple[str, ...] = ()

    def networks(self) -> list[Network]:
        return [
            network(cidr) for cidr in (self.pod_cidr, self.service_cidr, self.external_cidr, *self.others)
        ]


def _overlaps(candidate: Network, taken: Iterable[Network]) -> bool:
    return any(candidate.overlaps(other) for other in taken)


def allocate(
    requested: str,
    *,
    reserved: Reserved,
    allocated: Sequence[str] = (),
    current: str = "",
    pool: Sequence[str] = DEFAULT_POOL,
) -> str:
    """The network a peer's `requested` network is known by here.

    `allocated` are the networks given to other requests (not this one); `current` is what
    this request was given before, kept when it still conflicts with nothing.
    """
    wanted = network(requested)
    taken = [*reserved.networks(), *(network(cidr) for cidr in allocated)]
    if current:
        kept = network(current)
        if kept.prefixlen == wanted.prefixlen and not _overlaps(kept, taken):
            return str(kept)
    if not _overlaps(wanted, taken):
        return str(wanted)
    for block in (network(cidr) for cidr in pool):
        if block.prefixlen > wanted.prefixlen:
            continue
        for candidate in block.subnets(new_prefix=wanted.prefixlen):
            if not _overlaps(candidate, taken):
                return str(candidate)
    raise IPAMError(
        f"no free /{wanted.prefixlen} left in the pool {', '.join(pool)} to remap {requested}: unpeer a cluster"
        " or install with a larger pool"
    )


def translate(address: str, *, source: str, target: str) -> str:
    """`address` of network `source` moved to the same offset in `target` (same size); others, IPv6 too, as they are."""
    src, dst = network(source), network(target)
    try:
        ip = ipaddress.IPv4Address(address)
    except ipaddress.AddressValueError:
        return address
    if ip not in src or src.prefixlen != dst.prefixlen:
        return address
    return str(dst.network_address + (int(ip) - int(src.network_address)))
