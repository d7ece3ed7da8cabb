"""Required inter-pod (anti-)affinity terms, resolved once per pod for the InterPodAffinity filter.

A term selects pods by labels in the namespaces it lists or selects, or in its own pod's
namespace when it does neither (`namespaceSelector: {}` means all); its selectors follow
`runtime.api.selectors` (apimachinery's rules), and one that cannot be evaluated selects
nothing. Node selectors and node affinity are `runtime.api.selectors` too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runtime.api.selectors import NOTHING, Labels, Selector, SelectorError, label_selector


def _parsed(selector: Mapping[str, Any] | None) -> Selector:
    try:
        return label_selector(selector)
    except SelectorError:
        return NOTHING


@dataclass(frozen=True)
class PodAffinityTerm:
    """A required (anti-)affinity term of one pod, its namespaces resolved against that pod's namespace.

    It matches a pod in `namespaces` or in a namespace `namespace_selector` selects (the
    term's own namespace when it names neither), whose labels `selector` matches; the pods
    that count are those on nodes sharing the node's value of `topology_key`.
    """

    selector: Selector
    namespaces: frozenset[str]
    namespace_selector: Selector | None
    topology_key: str

    @classmethod
    def of(cls, term: Mapping[str, Any], *, namespace: str) -> PodAffinityTerm:
        names = frozenset(term.get("namespaces") or [])
        namespace_selector = term.get("namespaceSelector")
        if not names and namespace_selector is None:
            names = frozenset({namespace})
        return cls(
            _parsed(term.get("labelSelector")),
            names,
            None if namespace_selector is None else _parsed(namespace_selector),
            str(term.get("topologyKey", "")),
        )

    def matches(self, namespace: str, labels: Labels, *, namespace_labels: Labels) -> bool:
        """Whether a pod in `namespace` (labelled `namespace_labels`) with `labels` is one this term selects."""
        in_scope = namespace in self.namespaces or (
            self.namespace_selector is not None and self.namespace_selector.matches(namespace_labels)
        )
        return in_scope and self.selector.matches(labels)


def required_pod_affinity_terms(pod: Mapping[str, Any], kind: str) -> tuple[PodAffinityTerm, ...]:
    """The required terms of `kind` (`podAffinity` or `podAntiAffinity`) of a pod."""
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}
    namespace = str((pod.get("metadata") or {}).get("namespace", ""))
    return tuple(
        PodAffinityTerm.of(term, namespace=namespace)
        for term in affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or []
    )
