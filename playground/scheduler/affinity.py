"""Selectors the scheduler evaluates: label selectors, and node selectors (`nodeSelector`, node affinity).

Semantics follow `k8s.io/apimachinery/pkg/labels` and `k8s.io/component-helpers/scheduling/
corev1/nodeaffinity`:

- a label selector ANDs its `matchLabels` and `matchExpressions` (In, NotIn, Exists,
  DoesNotExist); an empty selector matches everything, a missing (None) one nothing;
- node selector terms are ORed and the requirements inside a term ANDed; a term without
  requirements matches no node; `matchExpressions` read node labels and add Gt and Lt (whole
  numbers), `matchFields` read fields, of which only `metadata.name` exists (DaemonSets pin
  their pods with it), with In or NotIn and one value;
- NotIn and DoesNotExist match an object without the label;
- a pod (anti-)affinity term selects pods by labels in the namespaces it lists or selects,
  or in its own pod's namespace when it does neither (`namespaceSelector: {}` means all).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

JSON = dict[str, Any]
Labels = Mapping[str, str]


def matches_label_selector(selector: Mapping[str, Any] | None, labels: Labels) -> bool:
    """A `metav1.LabelSelector` against a label set (None matches nothing, `{}` everything)."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(_matches_requirement(r, labels, numeric=False) for r in selector.get("matchExpressions") or [])


def _matches_requirement(requirement: Mapping[str, Any], labels: Labels, *, numeric: bool) -> bool:
    key = requirement.get("key", "")
    operator = requirement.get("operator")
    values = requirement.get("values") or []
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if numeric and operator in ("Gt", "Lt") and present and len(values) == 1:
        label, bound = _integer(labels[key]), _integer(values[0])
        if label is None or bound is None:
            return False
        return label > bound if operator == "Gt" else label < bound
    return False


def _integer(text: str) -> int | None:
    try:
        return int(text, 10)
    except ValueError:
        return None


def matches_node_selector_term(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """One `NodeSelectorTerm`: all its expressions (labels) and fields hold; an empty term matches nothing."""
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    node_fields = {"metadata.name": str(meta.get("name", ""))}
    return all(_matches_requirement(r, labels, numeric=True) for r in expressions) and all(
        _matches_field(r, node_fields) for r in fields
    )


def _matches_field(requirement: Mapping[str, Any], fields: Labels) -> bool:
    """A field requirement: In or NotIn with exactly one value, on a field that exists (else it matches nothing)."""
    return (
        requirement.get("key") in fields
        and requirement.get("operator") in ("In", "NotIn")
        and len(requirement.get("values") or []) == 1
        and _matches_requirement(requirement, fields, numeric=False)
    )


def matches_node_selector_terms(terms: Sequence[Mapping[str, Any]], node: Mapping[str, Any]) -> bool:
    """A `NodeSelector`: any of its terms matches."""
    return any(matches_node_selector_term(term, node) for term in terms)


def _node_affinity(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}


def fits_node_selector(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """The pod's `nodeSelector` and required node affinity both admit `node` (the NodeAffinity filter)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    for key, value in ((pod.get("spec") or {}).get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    return matches_node_selector_terms(required.get("nodeSelectorTerms") or [], node)


def preferred_node_weight(pod: Mapping[str, Any], node: Mapping[str, Any]) -> int:
    """The sum of the weights of the pod's preferred node affinity terms that `node` matches."""
    preferred = _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution") or []
    return sum(
        int(term.get("weight") or 0)
        for term in preferred
        if matches_node_selector_term(term.get("preference") or {}, node)
    )


@dataclass(frozen=True)
class PodAffinityTerm:
    """A required (anti-)affinity term of one pod, its namespaces resolved against that pod's namespace.

    It matches a pod in `namespaces` or in a namespace `namespace_selector` selects (the
    term's own namespace when it names neither), whose labels `selector` matches; the pods
    that count are those on nodes sharing the node's value of `topology_key`.
    """

    selector: JSON | None
    namespaces: frozenset[str]
    namespace_selector: JSON | None
    topology_key: str

    @classmethod
    def of(cls, term: Mapping[str, Any], *, namespace: str) -> PodAffinityTerm:
        names = frozenset(term.get("namespaces") or [])
        namespace_selector = term.get("namespaceSelector")
        if not names and namespace_selector is None:
            names = frozenset({namespace})
        return cls(term.get("labelSelector"), names, namespace_selector, str(term.get("topologyKey", "")))

    def matches(self, namespace: str, labels: Labels, *, namespace_labels: Labels) -> bool:
        """Whether a pod in `namespace` (labelled `namespace_labels`) with `labels` is one this term selects."""
        in_scope = namespace in self.namespaces or (
            self.namespace_selector is not None
            and matches_label_selector(self.namespace_selector, namespace_labels)
        )
        return in_scope and matches_label_selector(self.selector, labels)


def required_pod_affinity_terms(pod: Mapping[str, Any], kind: str) -> tuple[PodAffinityTerm, ...]:
    """The required terms of `kind` (`podAffinity` or `podAntiAffinity`) of a pod."""
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}
    namespace = str((pod.get("metadata") or {}).get("namespace", ""))
    return tuple(
        PodAffinityTerm.of(term, namespace=namespace)
        for term in affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or []
    )
