"""The node's CNI plugin: a network namespace per pod, a veth into the node's bridge, an address, a route.

What the bridge CNI plugin (with host-local IPAM, `pods.py`'s allocator) does when
kubelet creates a pod sandbox, done here in-process: the namespace
`<prefix><pod uid>` (`ip netns` shows it), the pair `veth<8 hex>` (in the node's
namespace, attached to `cni0`, hairpin on so a pod reaches itself through its
Service) and `eth0` (in the pod's, with the pod's IP in the node's pod CIDR and a
default route through `cni0`'s address), loopback up. Tearing down removes the
namespace only: the kernel destroys its `eth0`, and with it the node's end of the pair,
once nothing is left in it (the runners stop the pod's processes and sockets first).
Deleting the link ourselves would hold the kernel's rtnl lock through an RCU grace
period (about 30 ms here), stalling every other pod's set-up meanwhile.

The agent runs in its node's namespace, so links made from its threads are the node's;
the pod's side is configured from a thread that enters the pod's namespace meanwhile
(`playground.network.netns`). A set-up starts afresh: whatever a previous agent left
under the same name is removed first, so a restarted agent re-creates the sandboxes
of the pods it adopts. Each set-up is a few netlink requests and a namespace (about
5 ms), no process is started.
"""

from __future__ import annotations

import ipaddress
import logging
import os
from pathlib import Path

from playground.network import netns
from playground.network.names import POD_BRIDGE, POD_INTERFACE, pod_veth
from playground.network.netlink import Netlink
from playground.network.netns import Namespaces

logger = logging.getLogger(__name__)


class PodNetwork:
    """Pod sandboxes of one node; `await setup(uid, ip)` gives the path of the pod's namespace."""

    def __init__(self, *, prefix: str, pod_cidr: str, namespaces: Namespaces) -> None:
        network = ipaddress.IPv4Network(pod_cidr)
        self._prefix = prefix
        self._gateway = str(network.network_address + 1)
        self._prefix_length = network.prefixlen
        self._namespaces = namespaces

    def name(self, uid: str) -> str:
        return f"{self._prefix}{uid}"

    def path(self, uid: str) -> Path:
        return netns.path(self.name(uid))

    async def setup(self, uid: str, ip: str) -> Path:
        """The pod's namespace with its link and address, made afresh; OSError when the kernel refuses."""
        return await self._namespaces.run(self._setup, uid, ip)

    async def teardown(self, uid: str) -> None:
        await self._namespaces.run(self._teardown, uid)

    async def sweep(self, keep: set[str]) -> list[str]:
        """Remove the sandboxes of pods not in `keep` (uids) that a previous agent left; their uids."""
        return await self._namespaces.run(self._sweep, keep)

    def _setup(self, uid: str, ip: str) -> Path:
        self._remove_leftovers(uid)
        path = netns.create(self.name(uid))
        veth = pod_veth(uid)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                with Netlink() as link:
                    link.add_veth(veth, peer=POD_INTERFACE, peer_netns=fd)
                    link.set_link(veth, master=POD_BRIDGE, up=True)
                    link.set_hairpin(veth)
            finally:
                os.close(fd)
            with netns.entered(path), Netlink() as link:
                link.set_link("lo", up=True)
                link.add_address(POD_INTERFACE, f"{ip}/{self._prefix_length}")
                link.set_link(POD_INTERFACE, up=True)
                link.add_route("0.0.0.0/0", gateway=self._gateway)
        except BaseException:
            self._remove_leftovers(uid)
            raise
        return path

    def _teardown(self, uid: str) -> None:
        netns.delete(self.name(uid))

    def _remove_leftovers(self, uid: str) -> None:
        """What an earlier sandbox of this pod left (a restarted agent adopts the pod): its namespace, and the
        node's end of its link, which may outlive the namespace's name while something still holds it."""
        netns.delete(self.name(uid))
        with Netlink() as link:
            link.delete_link(pod_veth(uid))

    def _sweep(self, keep: set[str]) -> list[str]:
        removed = []
        for name in netns.names():
            uid = name.removeprefix(self._prefix)
            if name.startswith(self._prefix) and uid not in keep:
                self._teardown(uid)
                removed.append(uid)
        if removed:
            logger.info("removed the sandboxes of %d pods that are no longer on this node", len(removed))
        return removed
