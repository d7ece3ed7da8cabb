"""One scheduling decision: the node a pod goes to, or kube-scheduler's message for why none fits.

Pure: a pod and a snapshot in, a decision out. The pass in `scheduler.py` calls it for each
pending pod, highest priority first, and places each chosen pod into the snapshot before the
next decision, so pods scheduled together see each other.
"""

from __future__ import annotations

from dataclasses import dataclass

from .filters import Reasons, failures, fit_error
from .interpod import InterPodAffinity
from .nodeinfo import PodInfo, Snapshot
from .scoring import best_node


@dataclass(frozen=True)
class Decision:
    #: where the pod goes (None: nowhere)
    node: str | None
    #: why it goes nowhere (kube-scheduler's FitError message)
    message: str = ""


def decide(pod: PodInfo, snapshot: Snapshot) -> Decision:
    if pod.error is not None:
        return Decision(None, f"invalid pod: {pod.error}")
    inter_pod = InterPodAffinity(pod, snapshot)
    feasible = []
    reasons: dict[str, Reasons] = {}
    for node in snapshot.nodes.values():
        failed = failures(pod, node, inter_pod=inter_pod)
        if failed:
            reasons[node.name] = failed
        else:
            feasible.append(node)
    if not feasible:
        return Decision(None, fit_error(len(snapshot.nodes), reasons))
    return Decision(best_node(pod, feasible).name)


def priority_order(pod: PodInfo) -> tuple[int, str, str]:
    """Sort key of pending pods: higher `spec.priority` first, then older first, then by name."""
    created = str((pod.pod.get("metadata") or {}).get("creationTimestamp") or "")
    return (-pod.priority, created, pod.key)
