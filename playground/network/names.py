"""The names of everything the playground network creates on the host, pure.

Two engineers may run clusters called `rome` at the same time from two state dirs, and a
crashed run must be found and removed by name alone. So every name carries a short,
stable id of the state dir (`state_id`: six hex digits of the SHA-256 of its absolute
path), and everything of one cluster can be told from everything of another:

| object | where | name |
| --- | --- | --- |
| the state dir's network (kind's `kind` Docker network) | bridge in the host's namespace | `pgbr-<state id>` |
| a node's link on that network | veth end in the host's namespace | `pg<cluster id>-<node index>` |
| a node | network namespace (`ip netns`) | `pg_<state id>_<node name>` |
| a pod | network namespace | `pg_<state id>_<node name>_<pod uid>` |

Link names have at most 15 characters (IFNAMSIZ), too few for a cluster name, so a
node's host link is named after `cluster_id` (six hex digits of the state dir and the
cluster name) and carries the node's name in its alias. Namespace names have no such
limit; cluster and node names are DNS labels and never contain `_`, so the prefix
`pg_<state id>_<node name>` of one node never matches another node's names. Inside a
node's namespace the names are the node's own (`eth0`, the pods' bridge `cni0`, a pod's
link `veth<8 hex>`, nftables tables), as inside a kind node container: nothing there
can collide with another node's, and everything there goes with the namespace.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

#: the longest link name Linux takes (IFNAMSIZ - 1)
MAX_LINK_NAME = 15
#: the bridge pods are attached to, inside every node's namespace (the bridge CNI plugin's default)
POD_BRIDGE = "cni0"
#: a node's interface on the playground network, inside its namespace (a kind node container's)
NODE_INTERFACE = "eth0"
#: a pod's interface, inside its namespace
POD_INTERFACE = "eth0"
_ID_DIGITS = 6


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:_ID_DIGITS]


def state_id(state_dir: Path) -> str:
    """Six hex digits standing for the state dir (its absolute path)."""
    return _digest(str(state_dir.absolute()))


def cluster_id(state_dir: Path, cluster: str) -> str:
    """Six hex digits standing for one cluster of one state dir."""
    return _digest(str(state_dir.absolute()), cluster)


def bridge_name(state_dir: Path) -> str:
    """The state dir's network bridge in the host's namespace."""
    return f"pgbr-{state_id(state_dir)}"


def node_link_name(state_dir: Path, cluster: str, index: int) -> str:
    """The host's end of node `index`'s link to the network (index 0 is the control-plane node)."""
    name = f"pg{cluster_id(state_dir, cluster)}-{index}"
    if len(name) > MAX_LINK_NAME:
        raise ValueError(f"node index {index} makes the link name {name} longer than {MAX_LINK_NAME}")
    return name


def node_link_prefix(state_dir: Path, cluster: str) -> str:
    """What every host link of the cluster's nodes starts with."""
    return f"pg{cluster_id(state_dir, cluster)}-"


def node_netns(state_dir: Path, node: str) -> str:
    return f"pg_{state_id(state_dir)}_{node}"


def pod_netns(state_dir: Path, node: str, pod_uid: str) -> str:
    return f"{node_netns(state_dir, node)}_{pod_uid}"


def pod_veth(pod_uid: str) -> str:
    """The node's end of a pod's link (inside the node's namespace, as the CNI plugins name it)."""
    return f"veth{hashlib.sha256(pod_uid.encode()).hexdigest()[:8]}"


def cluster_netns_pattern(state_dir: Path, cluster: str) -> re.Pattern[str]:
    """Matches the names of the namespaces of `cluster`'s nodes and pods (kind's node names), and nothing else."""
    prefix = re.escape(f"pg_{state_id(state_dir)}_{cluster}-")
    return re.compile(rf"^{prefix}(control-plane|worker\d*)(_.+)?$")


def node_pods_netns_prefix(state_dir: Path, node: str) -> str:
    """What the names of the namespaces of `node`'s pods start with."""
    return f"{node_netns(state_dir, node)}_"
