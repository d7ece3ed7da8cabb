"""Validation of NamespaceOffloadings: what the CRD's schema cannot say.

- a namespace has one NamespaceOffloading, named `offloading` (the pod webhook and the
  controller look for that name);
- the mapping strategy never changes once set, nor the selected name: the twin
  namespaces exist under the names they gave, on every selected cluster, with the pods
  and reflected objects in them, and renaming would orphan all of it. Unoffloading and
  offloading again is the way to change them (the message says so);
- SelectedName needs `remoteNamespaceName`, a valid namespace name that is not one of a
  cluster's own (`default`, `kube-*`) or a tenant namespace;
- the cluster selector's requirements are well formed (In and NotIn with values, Exists
  and DoesNotExist without, Gt and Lt with one integer; fields only `metadata.name`), so a
  typo is refused at once instead of silently selecting no cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runtime.api import constants as c
from runtime.api import validation
from runtime.api.objects import JSON, nested

from .review import forbidden, invalid


def _spec(obj: JSON | None) -> JSON:
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def validate(request: JSON) -> Sequence[str]:
    """Problems of a NamespaceOffloading CREATE or UPDATE."""
    obj = request.get("object") or {}
    spec = _spec(obj)
    problems: list[str] = []
    name = nested(obj, "metadata", "name") or request.get("name")
    if request.get("operation") == "CREATE" and name != c.NAMESPACE_OFFLOADING_NAME:
        problems.append(
            invalid(
                "metadata.name",
                name,
                f"a namespace is offloaded by one NamespaceOffloading named {c.NAMESPACE_OFFLOADING_NAME!r}",
            )
        )
    strategy = spec.get("namespaceMappingStrategy") or c.MAPPING_DEFAULT_NAME
    selected = spec.get("remoteNamespaceName")
    if strategy == c.MAPPING_SELECTED_NAME:
        problems += _selected_name(selected)
    if request.get("operation") == "UPDATE":
        old = _spec(request.get("oldObject"))
        old_strategy = old.get("namespaceMappingStrategy") or c.MAPPING_DEFAULT_NAME
        if strategy != old_strategy:
            problems.append(
                forbidden(
                    "spec.namespaceMappingStrategy",
                    f"the mapping strategy is immutable (it was {old_strategy}): the twin namespaces exist under "
                    "the names it gave, with what runs in them; to change it, unoffload the namespace (delete "
                    "the NamespaceOffloading) and offload it again",
                )
            )
        elif strategy == c.MAPPING_SELECTED_NAME and selected != old.get("remoteNamespaceName"):
            problems.append(
                forbidden(
                    "spec.remoteNamespaceName",
                    f"the twin namespace's name is immutable (it was {old.get('remoteNamespaceName')!r}); to "
                    "change it, unoffload the namespace and offload it again",
                )
            )
    problems += cluster_selector_problems(spec.get("clusterSelector"))
    return problems


def _selected_name(name: Any) -> list[str]:
    path = "spec.remoteNamespaceName"
    if not name:
        return [invalid(path, name, "the SelectedName strategy needs the twin namespaces' name")]
    problem = validation.twin_namespace_name(str(name))
    return [invalid(path, name, problem)] if problem else []


def cluster_selector_problems(selector: Any, *, path: str = "spec.clusterSelector") -> list[str]:
    """What is wrong with a cluster selector (a node selector) at `path`."""
    if selector is None:
        return []
    if not isinstance(selector, dict):
        return [invalid(path, selector, "must be a node selector")]
    problems = []
    terms = selector.get("nodeSelectorTerms") or []
    if not isinstance(terms, list):
        return [invalid(f"{path}.nodeSelectorTerms", terms, "must be a list of node selector terms")]
    for i, term in enumerate(terms):
        if not isinstance(term, dict):
            problems.append(invalid(f"{path}.nodeSelectorTerms[{i}]", term, "must be a node selector term"))
            continue
        for kind in ("matchExpressions", "matchFields"):
            requirements = term.get(kind) or []
            if not isinstance(requirements, list):
                problems.append(
                    invalid(f"{path}.nodeSelectorTerms[{i}].{kind}", requirements, "must be a list")
                )
                continue
            for j, requirement in enumerate(requirements):
                where = f"{path}.nodeSelectorTerms[{i}].{kind}[{j}]"
                if not isinstance(requirement, dict):
                    problems.append(invalid(where, requirement, "must have a key, an operator and values"))
                    continue
                problem = validation.node_selector_requirement(
                    str(requirement.get("key") or ""),
                    str(requirement.get("operator") or ""),
                    [str(v) for v in requirement.get("values") or []],
                    field=kind == "matchFields",
                )
                if problem:
                    problems.append(invalid(where, requirement, problem))
    return problems
