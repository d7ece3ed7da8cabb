"""The fabric's nftables rules, pure: the gateway's remapping NAT and the nodes' masquerade bypass.

Addresses on the tunnel are always in the receiving side's view: a packet from cluster A
to cluster B leaves A's gateway with its source moved into the network B's IPAM gave A
(SNAT by prefix, on the way out of the tunnel interface) and its destination already in
the network A's IPAM gave B (the address A's pods use); B's gateway moves the destination
back into B's real pod CIDR (DNAT by prefix, on the way in). Replies are undone by
conntrack. Both prefix maps are identities when nothing was remapped, and are then left out.

On every node, traffic from local pods to remote pod networks must keep its pod source
address (the CNI's masquerade would otherwise replace it with the node's, which the remote
gateway does not accept): an identity SNAT before the CNI's chain marks the connection as
NATed, as Liqo's `masquerade-bypass` FirewallConfiguration does.

Every network is parsed (`runtime.forge.cidrs.network`) before it is written into a script:
a value that is not a canonical IPv4 CIDR raises CidrError and never reaches nft.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from .cidrs import network

GATEWAY_TABLE: Final = "liqo-gateway"
NODE_TABLE: Final = "liqo-fabric"


def _replace(table: str, chains: list[str]) -> str:
    """A script that replaces `table` (created empty first, so the delete never fails) with these chains."""
    return f"table ip {table}\ndelete table ip {table}\ntable ip {table} {{\n" + "".join(chains) + "}\n"


def gateway_rules(*, interface: str, local_pod: str, local_seen_remotely: str) -> str:
    """The gateway's NAT: this cluster's pods seen by the remote cluster in `local_seen_remotely`."""
    local_pod, local_seen_remotely = str(network(local_pod)), str(network(local_seen_remotely))
    chains: list[str] = []
    if local_seen_remotely != local_pod:
        chains.append(
            "  chain prerouting {\n"
            "    type nat hook prerouting priority dstnat; policy accept;\n"
            f'    iifname "{interface}" ip daddr {local_seen_remotely} '
            f"dnat ip prefix to ip daddr map {{ {local_seen_remotely} : {local_pod} }}\n"
            "  }\n"
        )
        chains.append(
            "  chain postrouting {\n"
            "    type nat hook postrouting priority srcnat; policy accept;\n"
            f'    oifname "{interface}" ip saddr {local_pod} '
            f"snat ip prefix to ip saddr map {{ {local_pod} : {local_seen_remotely} }}\n"
            "  }\n"
        )
    return _replace(GATEWAY_TABLE, chains)


def node_rules(*, pod_cidr: str, remote_cidrs: Sequence[str]) -> str:
    """The node's masquerade bypass towards every remote pod network (an empty table when there is none)."""
    pod_cidr = str(network(pod_cidr))
    chains: list[str] = []
    if remote_cidrs:
        remotes = ", ".join(sorted({str(network(cidr)) for cidr in remote_cidrs}))
        chains.append(
            "  chain postrouting {\n"
            "    type nat hook postrouting priority srcnat - 1; policy accept;\n"
            f"    ip saddr {pod_cidr} ip daddr {{ {remotes} }} "
            f"snat ip prefix to ip saddr map {{ {pod_cidr} : {pod_cidr} }}\n"
            "  }\n"
        )
    return _replace(NODE_TABLE, chains)
