"""What a real node makes on the host, made before its processes start and removed after they stopped.

`prepare` gives the node its mount namespace (see `mountns`: the tmpfs at
`/run/containerd`, the node's folders at kubelet's fixed paths) and its cgroup (see
`cgroups`), and saves the kernel settings kubelet is about to change (see `tunables`),
after removing whatever a crashed run of the same node left. `remove`, once the
cluster's supervisor has stopped containerd, kubelet and kube-proxy, stops what they
leave running: the containerd shims (found by their mount namespace) and the
containers (found by their cgroup), then deletes the mount namespace (every mount of
the node goes with it: container root filesystems, volumes, the pods' network
namespaces), the cgroups, and, when no real node is left on the machine, puts the
kernel settings back. The node's network namespace, and everything kubelet, kube-proxy
and the CNI plugins made in it (links, routes, iptables and nftables rules), is the
network fabric's to remove.

Blocking: call from a worker thread.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from dataclasses import dataclass

from . import cgroups, mountns, tunables
from .config import CONTAINERD_RUN, NodeFiles

logger = logging.getLogger(__name__)

_POLL = 0.05
#: how long the processes of a node's mount namespace have to exit after SIGKILL
_KILL_TIMEOUT = 10.0


@dataclass(frozen=True)
class NodeHost:
    """One real node's share of the host."""

    #: the node's namespaces' name (its network namespace's), which names its mount namespace and cgroup
    namespace: str
    files: NodeFiles

    @property
    def cgroup(self) -> str:
        return cgroups.node_cgroup(self.namespace)


def prepare(node: NodeHost) -> None:
    """The node's mount namespace and cgroup, new (leftovers of a crashed run are removed first)."""
    remove(node)
    with tunables.machine_lock():
        mountns.create(node.namespace, tmpfs=[CONTAINERD_RUN], binds=node.files.binds())
        tunables.save()
    try:
        cgroups.create(node.cgroup)
    except OSError:
        remove(node)
        raise


def remove(node: NodeHost) -> list[str]:
    """Stop what the node's processes left, remove its mount namespace and cgroups, and restore the
    kernel settings when it was the machine's last real node; what was removed."""
    removed = []
    stopped = _kill_namespace(node.namespace) | (cgroups.processes(node.cgroup) - cgroups.kill(node.cgroup))
    if stopped:
        removed.append(f"{len(stopped)} processes")
    with tunables.machine_lock():
        if mountns.delete(node.namespace):
            removed.append(f"mount namespace {node.namespace}")
        if not mountns.names():
            restored = tunables.restore()
            if restored:
                removed.append(
                    "kernel settings " + ", ".join(f"{key}={value}" for key, value in restored.items())
                )
    left = cgroups.remove(node.cgroup)
    if left:
        logger.warning("node %s: cgroups %s still busy; left them", node.namespace, ", ".join(map(str, left)))
    if removed:
        logger.info("node %s: removed %s", node.namespace, ", ".join(removed))
    return removed


def _kill_namespace(name: str) -> set[int]:
    """SIGKILL every process in the mount namespace `name` (the containerd shims, once containerd and
    kubelet are stopped) and wait until they are gone; their pids."""
    pids = set(mountns.processes(name))
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + _KILL_TIMEOUT
    while set(mountns.processes(name)) & pids and time.monotonic() < deadline:
        time.sleep(_POLL)
    return pids
