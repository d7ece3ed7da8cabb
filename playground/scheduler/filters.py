"""Predicates: can this pod run on this node, and if not, why (in kube-scheduler's words).

Each filter is a pure function of the pod and the node with its placed pods, returning the
reasons it fails (empty: it fits); most give one reason, the resource check one per short
resource. They run in kube-scheduler's default order and stop at the first that fails, as
its framework does, so a node counts once, under its first failing plugin, in the message:

    0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 Insufficient cpu.

(kube-scheduler appends what preemption could do; this scheduler does not preempt.)
Node readiness is checked as the taint it implies (see `taints.py`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from runtime.api.selectors import required_node_affinity_matches

from .interpod import InterPodAffinity
from .nodeinfo import NodeInfo, PodInfo
from .resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from .taints import NO_EXECUTE, NO_SCHEDULE, TAINT_UNSCHEDULABLE, tolerated, untolerated_taint

Reasons = tuple[str, ...]
Filter = Callable[[PodInfo, NodeInfo], Reasons]

UNSCHEDULABLE = "node(s) were unschedulable"
NODE_AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
PORTS_IN_USE = "node(s) didn't have free ports for the requested pod ports"
TOO_MANY_PODS = "Too many pods"
NO_NODES = "no nodes available to schedule pods"


def node_unschedulable(pod: PodInfo, node: NodeInfo) -> Reasons:
    """A cordoned node takes only pods that tolerate `node.kubernetes.io/unschedulable:NoSchedule`."""
    if node.unschedulable and not tolerated(
        pod.tolerations, {"key": TAINT_UNSCHEDULABLE, "effect": NO_SCHEDULE}
    ):
        return (UNSCHEDULABLE,)
    return ()


def taint_toleration(pod: PodInfo, node: NodeInfo) -> Reasons:
    """Every NoSchedule and NoExecute taint must be tolerated (PreferNoSchedule only lowers the score)."""
    taint = untolerated_taint(node.taints, pod.tolerations, effects=(NO_SCHEDULE, NO_EXECUTE))
    if taint is None:
        return ()
    return (f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value') or ''}}}",)


def node_affinity(pod: PodInfo, node: NodeInfo) -> Reasons:
    return () if required_node_affinity_matches(pod.spec, node.node) else (NODE_AFFINITY_MISMATCH,)


def node_ports(pod: PodInfo, node: NodeInfo) -> Reasons:
    if any(wanted.conflicts(used) for wanted in pod.host_ports for used in node.used_ports):
        return (PORTS_IN_USE,)
    return ()


def node_resources_fit(pod: PodInfo, node: NodeInfo) -> Reasons:
    """The pod fits next to the node's pods within `allocatable`, and the pod count stays within `pods`.

    As kube's NodeResourcesFit: a resource the pod does not request never blocks it, even on
    an overcommitted node; cpu, memory and ephemeral-storage come first, then any other
    (extended) resource in name order.
    """
    reasons = []
    if len(node.pods) + 1 > node.allocatable.get(PODS, 0):
        reasons.append(TOO_MANY_PODS)
    others = sorted(set(pod.requests) - {CPU, MEMORY, EPHEMERAL_STORAGE, PODS})
    for name in (CPU, MEMORY, EPHEMERAL_STORAGE, *others):
        wanted = pod.requests.get(name, 0)
        if wanted > 0 and wanted > node.allocatable.get(name, 0) - node.requested.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return tuple(reasons)


#: kube-scheduler's default filter plugins that apply here, in its order (InterPodAffinity comes last)
FILTERS: Sequence[Filter] = (
    node_unschedulable,
    taint_toleration,
    node_affinity,
    node_ports,
    node_resources_fit,
)


def failures(pod: PodInfo, node: NodeInfo, *, inter_pod: InterPodAffinity) -> Reasons:
    """Why `pod` cannot go to `node` (empty: it can): the reasons of the first filter that fails."""
    for check in FILTERS:
        reasons = check(pod, node)
        if reasons:
            return reasons
    return inter_pod.reasons(node)


def fit_error(nodes: int, reasons: Mapping[str, Reasons]) -> str:
    """kube-scheduler's FitError message: how many nodes failed for each reason, sorted as strings."""
    if nodes == 0:
        return NO_NODES
    histogram = Counter(reason for node_reasons in reasons.values() for reason in node_reasons)
    parts = sorted(f"{count} {reason}" for reason, count in histogram.items())
    return f"0/{nodes} nodes are available: {', '.join(parts)}."
