"""A tiny builder for structural OpenAPI v3 schemas, so the CRDs read like the shapes they describe.

Every function returns a plain dict (the JSON a CRD carries). Structural rules the API
server enforces (every node typed, `x-kubernetes-preserve-unknown-fields` only where a
shape is open) are satisfied by construction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Schema = dict[str, Any]


def string(
    description: str = "",
    *,
    enum: tuple[str, ...] = (),
    pattern: str = "",
    default: str | None = None,
    fmt: str = "",
) -> Schema:
    schema: Schema = {"type": "string"}
    if enum:
        schema["enum"] = list(enum)
    if pattern:
        schema["pattern"] = pattern
    if default is not None:
        schema["default"] = default
    if fmt:
        schema["format"] = fmt
    return _described(schema, description)


def integer(description: str = "", *, minimum: int | None = None, default: int | None = None) -> Schema:
    schema: Schema = {"type": "integer", "format": "int64"}
    if minimum is not None:
        schema["minimum"] = minimum
    if default is not None:
        schema["default"] = default
    return _described(schema, description)


def boolean(description: str = "", *, default: bool | None = None) -> Schema:
    schema: Schema = {"type": "boolean"}
    if default is not None:
        schema["default"] = default
    return _described(schema, description)


def quantity(description: str = "") -> Schema:
    """A resource quantity (`500m`, `2Gi`): an int or a string, like `resource.Quantity`."""
    return _described(
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": True,
            "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
        },
        description,
    )


def string_map(description: str = "") -> Schema:
    return _described({"type": "object", "additionalProperties": {"type": "string"}}, description)


def quantity_map(description: str = "") -> Schema:
    return _described({"type": "object", "additionalProperties": quantity()}, description)


def array(
    items: Schema, description: str = "", *, list_type: str = "atomic", keys: tuple[str, ...] = ()
) -> Schema:
    schema: Schema = {"type": "array", "items": items, "x-kubernetes-list-type": list_type}
    if keys:
        schema["x-kubernetes-list-map-keys"] = list(keys)
    return _described(schema, description)


def obj(description: str = "", *, required: tuple[str, ...] = (), **properties: Schema) -> Schema:
    """An object with these properties (keyword names are the JSON keys; use `fields()` for keys that are not identifiers)."""
    return fields(properties, description, required=required)


def fields(
    properties: Mapping[str, Schema], description: str = "", *, required: tuple[str, ...] = ()
) -> Schema:
    # an empty map is left out: kube-apiserver stores none (omitempty), and a schema that reads back
    # different from what was applied is a diff for ever to Pulumi's kubernetes provider
    schema: Schema = {"type": "object", "properties": dict(properties)} if properties else {"type": "object"}
    if required:
        schema["required"] = list(required)
    return _described(schema, description)


def open_object(description: str = "") -> Schema:
    """An object whose content is not described here (an embedded pod spec, say): kept as sent."""
    return _described({"type": "object", "x-kubernetes-preserve-unknown-fields": True}, description)


def immutable(schema: Schema, message: str) -> Schema:
    """The field may be set on create and never changed afterwards (a CEL rule, like Liqo's CRDs)."""
    return {**schema, "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": message}]}


def conditions(
    description: str = "Current state, one entry per condition type.",
    *,
    statuses: tuple[str, ...] = ("True", "False", "Unknown"),
) -> Schema:
    """A list of conditions, one per type; `statuses` the words a status may be (metav1.Condition's by default)."""
    condition = obj(
        required=("type", "status"),
        type=string("Type of the condition, in CamelCase."),
        status=string(f"{', '.join(statuses[:-1])} or {statuses[-1]}.", enum=statuses),
        reason=string("One CamelCase word for the last transition."),
        message=string("What happened, in a sentence a user can act on."),
        lastTransitionTime=string("When the status last changed.", fmt="date-time"),
        observedGeneration=integer("The .metadata.generation the condition was set from."),
    )
    return array(condition, description, list_type="map", keys=("type",))


def _described(schema: Schema, description: str) -> Schema:
    if description:
        schema["description"] = description
    return schema
