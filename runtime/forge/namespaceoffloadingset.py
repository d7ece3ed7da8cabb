"""The NamespaceOffloadingSet (every namespace a label selector picks, offloaded alike) and what it decides.

`namespace_offloading_set()` is the object `liqo_offload` with `namespace_selector` and the
Pulumi component apply; `select()` is the set controller's decision, from the namespaces
and the NamespaceOffloadings it sees: which namespaces get a NamespaceOffloading from
the template (labelled with the set's name), which of its own need the template written
again, which it unoffloads (they stopped matching), and which it leaves alone because
they have a NamespaceOffloading it did not make (by hand, by a `liqo_offload` of their
own, by another set). It never takes over a NamespaceOffloading it did not make: the
first owner keeps the namespace, as one NamespaceOffloading per namespace allows.

Namespaces a cluster keeps for itself (`kube-*`), the runtime's namespace, tenant
namespaces and twin namespaces (a provider's, made for a consumer) are never picked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runtime.api import constants as c
from runtime.api.crds import NAMESPACEOFFLOADINGSETS
from runtime.api.objects import JSON, nested
from runtime.api.selectors import label_selector

from .namespaceoffloading import namespace_offloading


def namespace_offloading_set(
    name: str,
    *,
    namespace_selector: Mapping[str, Any],
    pod_offloading_strategy: str = c.POD_OFFLOADING_LOCAL_AND_REMOTE,
    namespace_mapping_strategy: str = c.MAPPING_DEFAULT_NAME,
    cluster_selector_terms: Sequence[Mapping[str, Any]] = (),
) -> JSON:
    """The NamespaceOffloadingSet `name`; `namespace_selector` is a LabelSelector object."""
    return {
        "apiVersion": NAMESPACEOFFLOADINGSETS.api_version,
        "kind": NAMESPACEOFFLOADINGSETS.kind,
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": dict(namespace_selector),
            "template": {
                "namespaceMappingStrategy": namespace_mapping_strategy,
                "podOffloadingStrategy": pod_offloading_strategy,
                "clusterSelector": {"nodeSelectorTerms": [dict(term) for term in cluster_selector_terms]},
            },
        },
    }


def offloading_of(offloading_set: Mapping[str, Any], namespace: str) -> JSON:
    """The NamespaceOffloading the set gives `namespace`: its template, labelled with the set's name."""
    template = nested(offloading_set, "spec", "template") or {}
    terms = nested(template, "clusterSelector", "nodeSelectorTerms") or []
    body = namespace_offloading(
        namespace,
        pod_offloading_strategy=str(
            template.get("podOffloadingStrategy") or c.POD_OFFLOADING_LOCAL_AND_REMOTE
        ),
        namespace_mapping_strategy=str(template.get("namespaceMappingStrategy") or c.MAPPING_DEFAULT_NAME),
        cluster_selector_terms=terms,
    )
    body["metadata"]["labels"] = {c.LABEL_NAMESPACE_OFFLOADING_SET: str(offloading_set["metadata"]["name"])}
    return body


def owner(offloading: Mapping[str, Any]) -> str:
    """The set that made a NamespaceOffloading ("" when none did)."""
    return str(nested(offloading, "metadata", "labels", c.LABEL_NAMESPACE_OFFLOADING_SET) or "")


def pickable(namespace: Mapping[str, Any], *, runtime_namespace: str) -> bool:
    """Whether a set may offload the namespace at all (not one a cluster or the runtime keeps for itself)."""
    meta = namespace.get("metadata") or {}
    name = str(meta.get("name") or "")
    labels = meta.get("labels") or {}
    return not (
        meta.get("deletionTimestamp")
        or name == runtime_namespace
        or name.startswith("kube-")
        or labels.get(c.LABEL_TENANT_NAMESPACE) == "true"
        or c.LABEL_ORIGIN_CLUSTER_ID in labels
    )


@dataclass(frozen=True)
class Selection:
    """What the set controller does next, by namespace name."""

    #: picked, without a NamespaceOffloading: one from the template is created
    create: list[str] = field(default_factory=list)
    #: its own, whose spec differs from the template: the template is written again
    update: list[str] = field(default_factory=list)
    #: its own, no longer picked (or the set is being deleted): unoffloaded
    delete: list[str] = field(default_factory=list)
    #: picked, with a NamespaceOffloading of another owner: left alone, and why
    conflicts: dict[str, str] = field(default_factory=dict)
    #: the namespaces whose NamespaceOffloading is its own and stays
    offloaded: list[str] = field(default_factory=list)


def _conflict(set_name: str, offloading: Mapping[str, Any]) -> str:
    other = owner(offloading)
    namespace = offloading["metadata"]["namespace"]
    if other:
        return (
            f"namespace {namespace} is offloaded by NamespaceOffloadingSet {other}, which picked it first; a "
            f"namespace has one NamespaceOffloading, so {set_name} leaves it alone"
        )
    return (
        f"namespace {namespace} has a NamespaceOffloading of its own (made by hand or by a liqo_offload of that "
        f"namespace); {set_name} leaves it alone (delete that NamespaceOffloading to let the set offload it)"
    )


def _spec_of(offloading: Mapping[str, Any]) -> JSON:
    return dict(offloading.get("spec") or {})


def select(
    offloading_set: Mapping[str, Any],
    namespaces: Iterable[Mapping[str, Any]],
    offloadings: Iterable[Mapping[str, Any]],
    *,
    runtime_namespace: str,
) -> Selection:
    """The set's next steps from the cluster's namespaces and NamespaceOffloadings (named `offloading`)."""
    meta = offloading_set["metadata"]
    name = str(meta["name"])
    deleting = bool(meta.get("deletionTimestamp"))
    selector = label_selector(nested(offloading_set, "spec", "namespaceSelector") or {})
    by_namespace = {
        str(o["metadata"]["namespace"]): o
        for o in offloadings
        if o["metadata"].get("name") == c.NAMESPACE_OFFLOADING_NAME
    }
    picked = set()
    if not deleting:
        picked = {
            str(ns["metadata"]["name"])
            for ns in namespaces
            if pickable(ns, runtime_namespace=runtime_namespace)
            and selector.matches(ns["metadata"].get("labels") or {})
        }
    selection = Selection()
    for namespace in sorted(picked | {ns for ns, o in by_namespace.items() if owner(o) == name}):
        found = by_namespace.get(namespace)
        if found is None:
            selection.create.append(namespace)
        elif owner(found) != name:
            selection.conflicts[namespace] = _conflict(name, found)
        elif namespace not in picked:
            if not found["metadata"].get("deletionTimestamp"):
                selection.delete.append(namespace)
        elif found["metadata"].get("deletionTimestamp"):
            continue
        else:
            selection.offloaded.append(namespace)
            wanted = _spec_of(offloading_of(offloading_set, namespace))
            have = _spec_of(found)
            if any(have.get(key) != value for key, value in wanted.items()):
                selection.update.append(namespace)
    return selection


def set_status(offloading_set: Mapping[str, Any], selection: Selection) -> JSON:
    """The status the controller writes after acting on `selection`."""
    return {
        "observedGeneration": offloading_set["metadata"].get("generation"),
        "namespaces": sorted({*selection.offloaded, *selection.create}),
        "offloadedNamespaces": len({*selection.offloaded, *selection.create}),
        "conflicts": [
            {"namespace": namespace, "message": message}
            for namespace, message in sorted(selection.conflicts.items())
        ],
    }
