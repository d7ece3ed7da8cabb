"""Admission of pods in offloaded namespaces: where the namespace's pod offloading strategy lets them run.

The mutating webhook is called for pods created in namespaces labelled
`liqo.io/scheduling-enabled=true` (the NamespaceOffloading controller sets it) and
applies the namespace's NamespaceOffloading, as Liqo's pod webhook does:

- LocalAndRemote and Remote add the toleration of the virtual-node taint (NoExecute), so
  the scheduler may place the pod on a virtual node; Local adds nothing (the taint keeps
  pods off virtual nodes);
- Remote requires a virtual node: `liqo.io/type In (virtual-node)` joins every term of the
  cluster selector;
- LocalAndRemote with a cluster selector requires one of its virtual nodes, or a local
  node (a term `liqo.io/type NotIn (virtual-node)` joins the selector's terms);
- the result is merged into the pod's own required node affinity (each of the pod's terms
  ANDed with each imposed term), so a pod lands only on virtual nodes of selected clusters
  and still honours its own constraints.

DaemonSet pods are never offloaded: they are left as they are (a DaemonSet pod on a
virtual node stays Pending, see the virtual kubelet). A namespace labelled while its
NamespaceOffloading does not exist yet refuses pods (their controllers retry), as Liqo
documents; once the NamespaceOffloading is being deleted, pods are admitted unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from runtime.api import constants as c
from runtime.api.objects import JSON, nested
from runtime.forge import namespaceoffloading as forge

from .review import Mutation, forbidden

#: namespace -> its NamespaceOffloading (None: there is none)
Lookup = Callable[[str], JSON | None]

VIRTUAL_NODE_TOLERATION: JSON = {
    "key": c.TAINT_VIRTUAL_NODE,
    "operator": "Exists",
    "effect": c.TAINT_VIRTUAL_NODE_EFFECT,
}


def _type_requirement(operator: str) -> JSON:
    return {"key": c.LABEL_TYPE, "operator": operator, "values": [c.TYPE_VIRTUAL_NODE]}


def imposed_node_selector(offloading: JSON) -> JSON | None:
    """The node selector the strategy and the cluster selector impose (None: nothing to impose)."""
    strategy = forge.pod_offloading_strategy(offloading)
    terms = forge.selector_terms(offloading)
    if strategy == c.POD_OFFLOADING_REMOTE:
        terms = terms or [{}]
        return {
            "nodeSelectorTerms": [
                {**term, "matchExpressions": [*(term.get("matchExpressions") or []), _type_requirement("In")]}
                for term in terms
            ]
        }
    if strategy == c.POD_OFFLOADING_LOCAL_AND_REMOTE and terms:
        return {"nodeSelectorTerms": [*terms, {"matchExpressions": [_type_requirement("NotIn")]}]}
    return None


def merged_node_selector(own: JSON | None, imposed: JSON) -> JSON:
    """Both selectors at once: every pair of terms ANDed (the pod's terms first)."""
    own_terms = (own or {}).get("nodeSelectorTerms") or []
    if not own_terms:
        return copy.deepcopy(imposed)
    terms = []
    for mine in own_terms:
        for theirs in imposed["nodeSelectorTerms"]:
            term: JSON = {}
            for key in ("matchExpressions", "matchFields"):
                joined = [*(mine.get(key) or []), *(theirs.get(key) or [])]
                if joined:
                    term[key] = copy.deepcopy(joined)
            terms.append(term)
    return {"nodeSelectorTerms": terms}


def is_daemon_set_pod(pod: JSON) -> bool:
    return any(
        ref.get("kind") == "DaemonSet" and ref.get("controller")
        for ref in nested(pod, "metadata", "ownerReferences") or []
    )


def offloadable_spec(pod: JSON, offloading: JSON) -> JSON:
    """The pod's spec with the toleration and node affinity the NamespaceOffloading imposes."""
    spec = copy.deepcopy(pod.get("spec") or {})
    if forge.pod_offloading_strategy(offloading) == c.POD_OFFLOADING_LOCAL or is_daemon_set_pod(pod):
        return spec
    tolerations = spec.get("tolerations") or []
    if VIRTUAL_NODE_TOLERATION not in tolerations:
        spec["tolerations"] = [*tolerations, dict(VIRTUAL_NODE_TOLERATION)]
    imposed = imposed_node_selector(offloading)
    if imposed is not None:
        affinity = spec.setdefault("affinity", {})
        node_affinity = affinity.setdefault("nodeAffinity", {})
        key = "requiredDuringSchedulingIgnoredDuringExecution"
        node_affinity[key] = merged_node_selector(node_affinity.get(key), imposed)
    return spec


def spec_patch(before: JSON, after: JSON) -> list[JSON]:
    """JSON Patch operations taking a pod spec from `before` to `after` (top-level fields only)."""
    return [
        {"op": "add", "path": f"/spec/{key}", "value": value}
        for key, value in after.items()
        if before.get(key) != value
    ]


def _shape_problem(pod: Any) -> str:
    """What of the fields this webhook reads has the wrong JSON type ("" when none): the API server decodes a
    pod before admission, so only a hand-made review carries such a pod, and it is refused."""
    if not isinstance(pod, dict):
        return "object: must be a pod"
    meta = pod.get("metadata") or {}
    if not isinstance(meta, dict) or not _all_objects(meta.get("ownerReferences")):
        return "metadata.ownerReferences: must be a list of owner references"
    spec = pod.get("spec") or {}
    if not isinstance(spec, dict) or not isinstance(spec.get("tolerations") or [], list):
        return "spec.tolerations: must be a list of tolerations"
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {} if isinstance(affinity, dict) else None
    required = (node_affinity or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    if not isinstance(node_affinity, dict) or not isinstance(required, dict):
        return "spec.affinity.nodeAffinity: must be a node affinity"
    terms = required.get("nodeSelectorTerms")
    if not _all_objects(terms) or not all(
        isinstance(term.get(key) or [], list)
        for term in terms or []
        for key in ("matchExpressions", "matchFields")
    ):
        return "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: must be a node selector"
    return ""


def _all_objects(value: Any) -> bool:
    return isinstance(value or [], list) and all(isinstance(item, dict) for item in value or [])


def pod_mutator(lookup: Lookup) -> Callable[[JSON], Mutation]:
    """The handler of `/mutate/pods`, reading NamespaceOffloadings through `lookup`."""

    def mutate(request: JSON) -> Mutation:
        if request.get("operation") != "CREATE":
            return Mutation()
        pod = request.get("object") or {}
        shape = _shape_problem(pod)
        if shape:
            path, _, detail = shape.partition(": ")
            return Mutation(problems=[forbidden(path, detail)])
        namespace = str(request.get("namespace") or nested(pod, "metadata", "namespace") or "")
        offloading = lookup(namespace)
        if offloading is None:
            return Mutation(
                problems=[
                    forbidden(
                        "metadata.namespace",
                        f"namespace {namespace} is labelled {c.LABEL_SCHEDULING_ENABLED}=true but has no "
                        f"NamespaceOffloading {c.NAMESPACE_OFFLOADING_NAME!r} yet: pods are admitted once it "
                        "exists (or remove the label)",
                    )
                ]
            )
        if offloading["metadata"].get("deletionTimestamp"):
            return Mutation()
        before = pod.get("spec") or {}
        return Mutation(patch=spec_patch(before, offloadable_spec(pod, offloading)))

    return mutate
