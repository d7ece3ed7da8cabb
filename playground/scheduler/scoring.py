"""Pick the best of the nodes a pod fits on, with kube-scheduler's default scores and weights.

- NodeResourcesFit, least allocated (weight 1): per cpu and memory, the share of allocatable
  left after placing the pod, 0..100, averaged; requests use the non-zero defaults (100m,
  200Mi), so pods that request nothing still spread.
- TaintToleration (weight 3): PreferNoSchedule taints the pod does not tolerate, the node with
  most getting 0 and nodes with none 100.
- NodeAffinity (weight 2): the weights of the preferred node affinity terms a node matches,
  the best node getting 100.

kube-scheduler breaks ties at random; here the node with fewest pods wins, then the first by
name, so equal nodes fill evenly and a run can be replayed.
"""

from __future__ import annotations

from collections.abc import Sequence

from runtime.api.selectors import preferred_node_affinity_weight

from .nodeinfo import NodeInfo, PodInfo
from .resources import CPU, MEMORY
from .taints import intolerable_preferences

MAX_SCORE = 100
RESOURCES_WEIGHT = 1
TAINTS_WEIGHT = 3
NODE_AFFINITY_WEIGHT = 2


def least_allocated(pod: PodInfo, node: NodeInfo) -> int:
    scores = []
    for name in (CPU, MEMORY):
        capacity = node.allocatable.get(name, 0)
        requested = node.non_zero_requested.get(name, 0) + pod.non_zero.get(name, 0)
        scores.append(
            0 if capacity == 0 or requested > capacity else (capacity - requested) * MAX_SCORE // capacity
        )
    return sum(scores) // len(scores)


def normalized(raw: Sequence[int], *, reverse: bool) -> list[int]:
    """kube's DefaultNormalizeScore: scale to 0..100 by the largest; `reverse` turns most into least."""
    top = max(raw, default=0)
    if top == 0:
        return [MAX_SCORE if reverse else 0 for _ in raw]
    scaled = [MAX_SCORE * value // top for value in raw]
    return [MAX_SCORE - value for value in scaled] if reverse else scaled


def scores(pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
    """The weighted total of every node, in the order given."""
    taints = normalized([intolerable_preferences(n.taints, pod.tolerations) for n in nodes], reverse=True)
    preferred = normalized([preferred_node_affinity_weight(pod.spec, n.node) for n in nodes], reverse=False)
    return [
        RESOURCES_WEIGHT * least_allocated(pod, node)
        + TAINTS_WEIGHT * taint
        + NODE_AFFINITY_WEIGHT * affinity
        for node, taint, affinity in zip(nodes, taints, preferred, strict=True)
    ]


def best_node(pod: PodInfo, nodes: Sequence[NodeInfo]) -> NodeInfo:
    """The highest scoring of `nodes` (not empty); ties go to the node with fewest pods, then by name."""
    ranked = zip(scores(pod, nodes), nodes, strict=True)
    return min(ranked, key=lambda pair: (-pair[0], len(pair[1].pods), pair[1].name))[1]
