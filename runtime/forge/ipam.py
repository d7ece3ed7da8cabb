"""The IPAM's allocation rule, pure: which CIDR a peer's network is known by here.

A cluster reserves its own pod and Service CIDRs, its external CIDR and its nodes'
networks. A peer's pod CIDR is used as it is when it lies in the pool (Liqo's default
pool: the private ranges of RFC 1918) and overlaps nothing reserved or already given to
another peer; otherwise it is remapped to the first free network of the same size in the
pool. So every network the IPAM gives lies in its pool: a peer asking for a public range
(8.8.8.0/24) never makes this cluster route it. Whether a peer's network may be asked for
at all (parsed, not special-purpose, not too wide) is `runtime.forge.cidrs`'s to say. Allocations are kept in
`ipam.liqo.io` Network objects (spec: what was asked, status: what was given), so the
rule is called with every earlier allocation and gives the same answer after a restart:
an allocation that is already recorded and still free of conflicts is kept as it is.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from .cidrs import Network, network

#: where remapped networks come from (Liqo's default pool)
DEFAULT_POOL: Final = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
#: the network standing for this cluster's external addresses (Liqo's default)
DEFAULT_EXTERNAL_CIDR: Final = "10.70.0.0/16"


class IPAMError(Exception):
    """A request the IPAM cannot satisfy: no free network of that size left."""


def pool_networks(pool: Sequence[str] = DEFAULT_POOL) -> list[Network]:
    return [network(cidr) for cidr in pool]


@dataclass(frozen=True)
class Reserved:
    """What a cluster's own addresses occupy: nothing a peer is mapped to may overlap them."""

    pod_cidr: str
    service_cidr: str
    external_cidr: str = DEFAULT_EXTERNAL_CIDR
    #: further networks in use here (the nodes' networks)
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
    """The network a peer's `requested` network is known by here: always in `pool`.

    `allocated` are the networks given to other requests (not this one); `current` is what
    this request was given before, kept when it still conflicts with nothing.
    """
    wanted = network(requested)
    taken = [*reserved.networks(), *(network(cidr) for cidr in allocated)]
    blocks = pool_networks(pool)

    def free(candidate: Network) -> bool:
        return any(candidate.subnet_of(block) for block in blocks) and not _overlaps(candidate, taken)

    if current:
        kept = network(current)
        if kept.prefixlen == wanted.prefixlen and free(kept):
            return str(kept)
    if free(wanted):
        return str(wanted)
    for block in blocks:
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
