"""Required inter-pod affinity and anti-affinity, for any topology key (kube's InterPodAffinity filter).

Counted once per pod against a snapshot (kube's PreFilter), then checked per node:

- the pod's affinity: every term needs a node label for its topology key, and a placed pod
  in that topology domain matching all the terms; except that the first pod of a group that
  selects itself may go anywhere the labels exist, when no placed pod matches yet;
- the pod's anti-affinity: no placed pod matching a term in the node's domain for that term;
- placed pods' anti-affinity: the pod must not land in a domain where a placed pod has a term
  that selects it (anti-affinity is symmetric).

The messages are kube-scheduler's, checked in its order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from .nodeinfo import NodeInfo, PodInfo, Snapshot

AFFINITY_MISMATCH = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_MISMATCH = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_MISMATCH = "node(s) didn't satisfy existing pods anti-affinity rules"

#: (topology key, value)
Domain = tuple[str, str]


class InterPodAffinity:
    def __init__(self, pod: PodInfo, snapshot: Snapshot) -> None:
        self._pod = pod
        #: domains holding a placed pod that matches all of the pod's affinity terms (per term key)
        self._affinity: Counter[Domain] = Counter()
        #: domains holding a placed pod one of the pod's anti-affinity terms matches
        self._anti_affinity: Counter[Domain] = Counter()
        #: domains where a placed pod's anti-affinity term selects this pod
        self._existing: Counter[Domain] = Counter()
        if pod.affinity or pod.anti_affinity:
            for other, node in snapshot.pods():
                namespace_labels = snapshot.labels_of_namespace(other.namespace)
                if pod.affinity and all(
                    t.matches(other.namespace, other.labels, namespace_labels=namespace_labels)
                    for t in pod.affinity
                ):
                    _count(self._affinity, node, (t.topology_key for t in pod.affinity))
                _count(
                    self._anti_affinity,
                    node,
                    (
                        t.topology_key
                        for t in pod.anti_affinity
                        if t.matches(other.namespace, other.labels, namespace_labels=namespace_labels)
                    ),
                )
        own_labels = snapshot.labels_of_namespace(pod.namespace)
        for other, node in snapshot.with_anti_affinity:
            _count(
                self._existing,
                node,
                (
                    t.topology_key
                    for t in other.anti_affinity
                    if t.matches(pod.namespace, pod.labels, namespace_labels=own_labels)
                ),
            )
        self._self_affine = all(
            t.matches(pod.namespace, pod.labels, namespace_labels=own_labels) for t in pod.affinity
        )

    def reasons(self, node: NodeInfo) -> tuple[str, ...]:
        if not self._fits_affinity(node):
            return (AFFINITY_MISMATCH,)
        if any(
            self._anti_affinity[(t.topology_key, node.labels[t.topology_key])] > 0
            for t in self._pod.anti_affinity
            if t.topology_key in node.labels
        ):
            return (ANTI_AFFINITY_MISMATCH,)
        if self._existing and any(self._existing[domain] > 0 for domain in node.labels.items()):
            return (EXISTING_ANTI_AFFINITY_MISMATCH,)
        return ()

    def _fits_affinity(self, node: NodeInfo) -> bool:
        terms = self._pod.affinity
        if any(t.topology_key not in node.labels for t in terms):
            return False
        if all(self._affinity[(t.topology_key, node.labels[t.topology_key])] > 0 for t in terms):
            return True
        # the first of a group of pods with affinity to each other
        return not self._affinity and self._self_affine


def _count(counter: Counter[Domain], node: NodeInfo, keys: Iterable[str]) -> None:
    for key in keys:
        if key in node.labels:
            counter[(key, node.labels[key])] += 1
