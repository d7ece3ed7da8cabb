"""Validation of NamespaceOffloadingSets: what the CRD's schema cannot say.

- the namespace selector is a label selector kube-apiserver would read (label keys, In
  and NotIn with values, Exists and DoesNotExist without), so a typo is refused at once
  instead of silently offloading no namespace;
- the template's cluster selector is well formed, as a NamespaceOffloading's must be
  (`namespaceoffloadings.cluster_selector_problems`): the set's controller writes it
  into every NamespaceOffloading it makes, and one refused there would offload nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runtime.api import validation
from runtime.api.objects import JSON, nested

from .namespaceoffloadings import cluster_selector_problems
from .review import invalid

_PATH = "spec.namespaceSelector"


def validate(request: JSON) -> Sequence[str]:
    """Problems of a NamespaceOffloadingSet CREATE or UPDATE."""
    spec = nested(request, "object", "spec") or {}
    template = spec.get("template") or {}
    return [
        *_namespace_selector_problems(spec.get("namespaceSelector")),
        *cluster_selector_problems(template.get("clusterSelector"), path="spec.template.clusterSelector"),
    ]


def _namespace_selector_problems(selector: Any) -> list[str]:
    if not isinstance(selector, dict):
        return [invalid(_PATH, selector, "must be a label selector")]
    problems = [
        invalid(f"{_PATH}.matchLabels", key, f"{key!r} is not a label key: {problem}")
        for key in selector.get("matchLabels") or {}
        if (problem := validation.label_key_problem(str(key)))
    ]
    for i, expression in enumerate(selector.get("matchExpressions") or []):
        where = f"{_PATH}.matchExpressions[{i}]"
        if not isinstance(expression, dict):
            problems.append(invalid(where, expression, "must have a key, an operator and values"))
            continue
        key, operator = str(expression.get("key") or ""), str(expression.get("operator") or "")
        values = list(expression.get("values") or [])
        if problem := validation.label_key_problem(key):
            problems.append(invalid(where, expression, f"{key!r} is not a label key: {problem}"))
        elif operator in ("In", "NotIn") and not values:
            problems.append(invalid(where, expression, f"operator {operator} needs at least one value"))
        elif operator in ("Exists", "DoesNotExist") and values:
            problems.append(invalid(where, expression, f"operator {operator} takes no values"))
    return problems
