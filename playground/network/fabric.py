"""One cluster's nodes on the state dir's network, as kind's node containers sit on Docker's `kind` network.

For every node `create` makes what Docker and kindnet make for a kind node:

- a network namespace (the node container's), with `eth0` at the node's address on the
  state dir's bridge (`pgbr-<state id>` on the host, the first address of the /24 the
  host's, kind's `172.18.0.1`), a default route through the host, loopback up;
- the pods' bridge `cni0` with the first address of the node's pod CIDR (their gateway),
  forwarding on, bridged traffic through netfilter (`bridge-nf-call-iptables`, so
  kube-proxy's NAT also sees pod-to-pod traffic on one bridge, as with the bridge CNI
  plugin);
- routes to the other nodes' pod CIDRs through those nodes' addresses (kindnet's), and
  kindnet's masquerade: pod traffic leaving the cluster's pod CIDR takes the node's
  address (`table ip kindnet-masquerade`), so replies find their way back even when
  another cluster uses the same pod CIDR.

Pod CIDRs are routed only inside the cluster's node namespaces, so two clusters with
the same CIDRs never meet; the host reaches the nodes' addresses over the bridge.

Nothing of the playground leaves the machine: the host forwards nothing between the
bridge and any other interface (`table inet <bridge>` on the host, made with the bridge
and removed with it), even when something turns the host's `ip_forward` on; traffic
that has no business outside (a pod asking a name server of the internet, say) is
dropped at the host rather than sent out of the uplink with a playground address.
`remove` deletes every namespace of the cluster's nodes and pods (found by name, see
`names.py`), the host ends of the nodes' links, and the bridge once no node is left on
it. Everything inside a node's namespace (its links, routes, pods' links, nftables
tables) goes with the namespace. Blocking: call both from a worker thread.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import netns, subnets
from .names import (
    NODE_INTERFACE,
    POD_BRIDGE,
    bridge_name,
    cluster_netns_pattern,
    node_link_name,
    node_link_prefix,
    node_netns,
)
from .netlink import Netlink

logger = logging.getLogger(__name__)

MASQUERADE_TABLE = "kindnet-masquerade"
_SYSCTLS = {
    "net/ipv4/ip_forward": "1",
    "net/bridge/bridge-nf-call-iptables": "1",
}


@dataclass(frozen=True)
class NodeNetwork:
    name: str
    index: int
    #: the node's address on the playground network (its InternalIP)
    address: str
    pod_cidr: str

    @property
    def pod_gateway(self) -> str:
        """The first address of the node's pod CIDR: `cni0`'s, the pods' default gateway."""
        return str(ipaddress.IPv4Network(self.pod_cidr).network_address + 1)


@dataclass(frozen=True)
class ClusterNetwork:
    state_dir: Path
    cluster: str
    #: the state dir's /24
    subnet: str
    #: the cluster's pod CIDR (what kindnet does not masquerade)
    pod_cidr: str
    nodes: tuple[NodeNetwork, ...]

    @property
    def bridge(self) -> str:
        return bridge_name(self.state_dir)

    @property
    def gateway(self) -> str:
        return subnets.gateway(self.subnet)

    @property
    def prefix_length(self) -> int:
        return ipaddress.IPv4Network(self.subnet).prefixlen

    def netns(self, node: NodeNetwork) -> str:
        return node_netns(self.state_dir, node.name)

    def host_link(self, node: NodeNetwork) -> str:
        return node_link_name(self.state_dir, self.cluster, node.index)


def isolation_rules(bridge: str) -> str:
    """The host's rule keeping the playground network on the machine, as an nftables script (replaces
    the table when applied again): no forwarding between the bridge and any other interface."""
    return (
        f"table inet {bridge}\n"
        f"delete table inet {bridge}\n"
        f"table inet {bridge} {{\n"
        "  chain forward {\n"
        "    type filter hook forward priority filter - 10; policy accept;\n"
        f'    iifname "{bridge}" oifname != "{bridge}" drop\n'
        f'    oifname "{bridge}" iifname != "{bridge}" drop\n'
        "  }\n"
        "}\n"
    )


def masquerade_rules(pod_cidr: str) -> str:
    """kindnet's masquerade, as an nftables script (replaces the table when applied again)."""
    return (
        f"table ip {MASQUERADE_TABLE}\n"
        f"delete table ip {MASQUERADE_TABLE}\n"
        f"table ip {MASQUERADE_TABLE} {{\n"
        "  chain postrouting {\n"
        "    type nat hook postrouting priority srcnat + 10; policy accept;\n"
        f"    ip saddr {pod_cidr} ip daddr != {pod_cidr} masquerade\n"
        "  }\n"
        "}\n"
    )


def create(network: ClusterNetwork) -> None:
    """Make the cluster's network from scratch (what a crashed run left is removed first)."""
    remove(network.state_dir, network.cluster)
    with subnets.lock(network.state_dir):
        _ensure_bridge(network)
        for node in network.nodes:
            _create_node(network, node)
    for node in network.nodes:
        _configure_node(network, node)


def _ensure_bridge(network: ClusterNetwork) -> None:
    nft(isolation_rules(network.bridge))
    with Netlink() as link:
        try:
            link.add_bridge(network.bridge)
        except FileExistsError:
            return
        link.add_address(network.bridge, f"{network.gateway}/{network.prefix_length}")
        link.set_link(
            network.bridge, up=True, alias=f"playground network of {network.state_dir.absolute()}"[:255]
        )


def _create_node(network: ClusterNetwork, node: NodeNetwork) -> None:
    path = netns.create(network.netns(node))
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        with Netlink() as link:
            host_link = network.host_link(node)
            link.add_veth(host_link, peer=NODE_INTERFACE, peer_netns=fd)
            link.set_link(
                host_link,
                master=network.bridge,
                up=True,
                alias=f"playground node {node.name} ({network.state_dir.absolute()})"[:255],
            )
    finally:
        os.close(fd)


def _configure_node(network: ClusterNetwork, node: NodeNetwork) -> None:
    with netns.entered(netns.path(network.netns(node))):
        with Netlink() as link:
            link.set_link("lo", up=True)
            link.add_address(NODE_INTERFACE, f"{node.address}/{network.prefix_length}")
            link.set_link(NODE_INTERFACE, up=True)
            link.add_route("0.0.0.0/0", gateway=network.gateway)
            link.add_bridge(POD_BRIDGE)
            link.add_address(
                POD_BRIDGE, f"{node.pod_gateway}/{ipaddress.IPv4Network(node.pod_cidr).prefixlen}"
            )
            link.set_link(POD_BRIDGE, up=True)
            for other in network.nodes:
                if other.name != node.name:
                    link.add_route(other.pod_cidr, gateway=other.address)
        for key, value in _SYSCTLS.items():
            Path("/proc/sys", key).write_text(value)
        # a child forked from this thread starts in the node's namespace
        nft(masquerade_rules(network.pod_cidr))


def nft(script: str) -> None:
    """Apply an nftables script in the calling thread's namespace (one atomic transaction)."""
    result = subprocess.run(["nft", "-f", "-"], input=script, text=True, capture_output=True, check=False)
    if result.returncode:
        raise OSError(f"nft -f: {result.stderr.strip()}")


def remove(state_dir: Path, cluster: str) -> list[str]:
    """Remove everything of `cluster` on the host, whatever state it was left in; what was removed.

    The nodes' host links go first: deleting one removes its pair at once, whereas a
    namespace's links go only when the kernel frees it, later, so the bridge would still
    look used.
    """
    removed: list[str] = []
    with subnets.lock(state_dir):
        prefix = node_link_prefix(state_dir, cluster)
        with Netlink() as link:
            for name in _host_links():
                if name.startswith(prefix) and link.delete_link(name):
                    removed.append(f"link {name}")
    pattern = cluster_netns_pattern(state_dir, cluster)
    for name in netns.names():
        if pattern.match(name) and netns.delete(name):
            removed.append(f"netns {name}")
    with subnets.lock(state_dir), Netlink() as link:
        bridge = bridge_name(state_dir)
        if _exists(bridge) and not _ports(bridge):
            link.delete_link(bridge)
            subnets.release(state_dir)
            removed.append(f"link {bridge}")
        if not _exists(bridge) and _delete_table(f"inet {bridge}"):
            removed.append(f"table inet {bridge}")
    if removed:
        logger.info("cluster %s: removed %s", cluster, ", ".join(removed))
    return removed


def _delete_table(table: str) -> bool:
    """Delete an nftables table of the calling thread's namespace; False when there was none."""
    result = subprocess.run(["nft", "delete", "table", *table.split()], capture_output=True, check=False)
    return result.returncode == 0


def _host_links() -> Sequence[str]:
    with contextlib.suppress(FileNotFoundError):
        return sorted(entry.name for entry in subnets.SYS_CLASS_NET.iterdir())
    return []


def _exists(link: str) -> bool:
    return (subnets.SYS_CLASS_NET / link).exists()


def _ports(bridge: str) -> list[str]:
    with contextlib.suppress(FileNotFoundError):
        return [entry.name for entry in (subnets.SYS_CLASS_NET / bridge / "brif").iterdir()]
    return []
