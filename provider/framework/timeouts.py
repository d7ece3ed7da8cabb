"""The `timeouts { create = "10m" ... }` block every resource has, with Go duration strings.

Same shape as terraform-plugin-framework-timeouts' block, so users write what they write
for any other provider. Each resource states its own defaults; `validate` reports a bad
duration on its attribute at plan time, and `seconds` gives the bound for one operation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from tf.types import String, Unknown
from tf.utils import Diagnostics

from runtime.api.validation import DurationError, parse_duration

from .schema import Attribute, SingleNestedBlock

BLOCK: Final = "timeouts"


def block(defaults: Mapping[str, float]) -> SingleNestedBlock:
    """The block for the operations in `defaults` (e.g. create/update/delete), each with its default in seconds."""
    attributes = [
        Attribute(
            operation,
            String(),
            optional=True,
            description=(
                f'How long {operation} may take, as a duration such as "30s", "10m" or "1h" '
                f"(default {_show(seconds)})."
            ),
        )
        for operation, seconds in defaults.items()
    ]
    return SingleNestedBlock(BLOCK, attributes, description="Bounds on how long each operation may take.")


def validate(diagnostics: Diagnostics, config: Mapping[str, Any]) -> None:
    """An error on `timeouts.<operation>` for every value that is not a duration."""
    values = config.get(BLOCK)
    if not isinstance(values, Mapping):
        return
    for operation, value in values.items():
        if value is None or value is Unknown:
            continue
        try:
            parse_duration(str(value))
        except DurationError as exc:
            diagnostics.add_error(f"Invalid {operation} timeout", str(exc), path=[BLOCK, operation])


def seconds(state: Mapping[str, Any], operation: str, *, default: float) -> float:
    """The bound of `operation` for a resource in `state` (its `timeouts` block, else `default`)."""
    values = state.get(BLOCK)
    value = values.get(operation) if isinstance(values, Mapping) else None
    if not isinstance(value, str):
        return default
    try:
        return parse_duration(value)
    except DurationError:
        return default


def _show(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{int(seconds // 3600)}h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}m"
    return f"{seconds:g}s"
