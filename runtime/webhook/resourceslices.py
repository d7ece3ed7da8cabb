"""Validation of ResourceSlices, which consumers create on providers with their own credentials.

- every requested resource (`spec.resources`) is a quantity the API server would
  parse, and not negative: the provider's negotiation sums them;
- `spec.consumerClusterID` never changes once set: the provider's grant, Quota and
  Tenant are tied to it.
"""

from __future__ import annotations

from collections.abc import Sequence

from runtime.api.objects import JSON
from runtime.api.quantity import parse_quantity

from .review import invalid


def _spec(obj: JSON | None) -> JSON:
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def validate(request: JSON) -> Sequence[str]:
    """Problems of a ResourceSlice CREATE or UPDATE."""
    spec = _spec(request.get("object"))
    problems: list[str] = []
    resources = spec.get("resources") or {}
    if not isinstance(resources, dict):
        problems.append(invalid("spec.resources", resources, "must map resource names to quantities"))
        resources = {}
    for name, value in sorted(resources.items()):
        path = f"spec.resources[{name}]"
        try:
            quantity = parse_quantity(value)
        except ValueError as exc:
            problems.append(invalid(path, value, f"not a quantity ({exc})"))
            continue
        if quantity.value < 0:
            problems.append(invalid(path, value, "must not be negative"))
    if request.get("operation") == "UPDATE":
        old = _spec(request.get("oldObject")).get("consumerClusterID")
        new = spec.get("consumerClusterID")
        if old is not None and new != old:
            problems.append(
                invalid(
                    "spec.consumerClusterID",
                    new,
                    f"consumerClusterID is immutable (it was {old}); create another ResourceSlice instead",
                )
            )
    return problems
