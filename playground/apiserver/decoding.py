"""Request bodies as kube-apiserver decodes them: JSON and YAML to values, then typed decoding.

kube-apiserver never lets a body reach its registry as it came: Go's `encoding/json`
decodes it into the kind's Go struct first. The emulator keeps objects as dicts, so it
needs that front door spelled out, or a body Go would refuse (a string where a list
belongs, `NaN`, a 1000-deep array) crashes a strategy or gets stored and breaks every
client that lists it.

`loads_json` / `loads_yaml` turn bytes into JSON values as the Go decoders do: invalid
UTF-8 inside strings becomes U+FFFD, `NaN`/`Infinity` and numbers beyond float64 are
refused, nesting is bounded, and YAML becomes plain JSON (timestamps stay strings, keys
become strings, aliases may not expand without bound). Failures raise `ValueError`
worded like Go's.

`typed` checks a built-in object against the kind's definition in kube-apiserver 1.32's
OpenAPI (shipped in `data/`) and returns it as the Go round trip leaves it (`null`
fields gone, `null` items and map values at their zero value); a value of the wrong JSON
type raises `TypeMismatch` with encoding/json's message for the first one in document
order. Fields the definitions do not know are kept as sent.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from typing import Any

import yaml

from .openapi import load_builtin_definitions
from .schema import go_json_type

#: kube-apiserver's Go decoder allows 10000 levels; no object the API serves comes close to this.
MAX_DEPTH = 100
#: YAML aliases may repeat nodes, but not blow a body up by more than this factor
ALIAS_EXPANSION = 10
REF_PREFIX = "#/definitions/"
META = "io.k8s.apimachinery.pkg.apis.meta.v1."
#: types with their own UnmarshalJSON that take any JSON value
ANY_TYPES = frozenset(
    {
        "io.k8s.apimachinery.pkg.runtime.RawExtension",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
        META + "FieldsV1",
    }
)
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
TIMES = frozenset({META + "Time", META + "MicroTime"})
QUANTITY_PATTERN = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


# --- bytes to JSON values ------------------------------------------------------------------------------


def _constant(name: str) -> Any:
    """`NaN`, `Infinity` and `-Infinity` are not JSON: Go's scanner stops at their first letter."""
    if name.startswith("-"):
        raise ValueError(f"invalid character '{name[1]}' in numeric literal")
    raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"json: cannot unmarshal number {text} into Go value of type float64")
    return value


def loads_json(body: bytes) -> Any:
    """A JSON body as Go's decoder reads it; `ValueError` when Go would refuse it."""
    text = body.decode("utf-8", errors="replace")
    try:
        value = json.loads(text, parse_constant=_constant, parse_float=_finite)
    except RecursionError:
        raise ValueError(_too_deep("[")) from None
    _check_depth(value)
    return value


def _too_deep(opener: str) -> str:
    return f"invalid character '{opener}' exceeded max depth"


def _children(node: Any) -> Any:
    return node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()


def _check_depth(value: Any) -> None:
    """Refuse values nested deeper than MAX_DEPTH, one level at a time (no recursion)."""
    level = [value]
    for _ in range(MAX_DEPTH):
        level = [
            child
            for node in level
            if isinstance(node, dict | list)
            for child in (node.values() if isinstance(node, dict) else node)
        ]
        if not level:
            return
    deep = next((node for node in level if _children(node)), None)
    if deep is not None:
        raise ValueError(_too_deep("{" if isinstance(deep, dict) else "["))


class _Loader(yaml.SafeLoader):
    """YAML 1.1 as sigs.k8s.io/yaml reads it: timestamps are plain strings."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def loads_yaml(body: bytes) -> Any:
    """A YAML body as the JSON value sigs.k8s.io/yaml makes of it; `ValueError` (or YAMLError) if none."""
    try:
        loaded = yaml.load(body.decode("utf-8"), Loader=_Loader)
    except RecursionError:
        raise ValueError(_too_deep("[")) from None
    budget = [ALIAS_EXPANSION * len(body) + 1000]
    return _to_json(loaded, 0, budget)


def _to_json(value: Any, depth: int, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError("yaml: document contains excessive aliasing")
    if isinstance(value, dict | list) and depth >= MAX_DEPTH:
        raise ValueError(_too_deep("{" if isinstance(value, dict) else "["))
    if isinstance(value, dict):
        return {_key(k): _to_json(v, depth + 1, budget) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_json(v, depth + 1, budget) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"json: unsupported value: {value}")
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise ValueError(f"yaml: cannot convert a {type(value).__name__} to JSON")


def _key(key: Any) -> str:
    """sigs.k8s.io/yaml's JSON key for a YAML key."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool) or key is None:
        return json.dumps(key)
    if isinstance(key, int | float):
        return str(key)
    raise ValueError(f"yaml: invalid map key: {key!r}")


# --- typed decoding of built-in kinds ------------------------------------------------------------------


class TypeMismatch(ValueError):
    """A value does not fit the Go type it decodes into; the message is encoding/json's."""


@functools.cache
def _definitions() -> tuple[dict[str, Any], dict[tuple[str, str, str], str]]:
    definitions = load_builtin_definitions()
    kinds: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions.items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            kinds.setdefault((gvk["group"], gvk["version"], gvk["kind"]), name)
    return definitions, kinds


def typed(group: str, version: str, kind: str, obj: Any) -> Any:
    """`obj` as decoding into the kind's Go type leaves it; unknown kinds pass unchanged."""
    definitions, kinds = _definitions()
    name = kinds.get((group, version, kind))
    if name is None:
        return obj
    return _Decoder(definitions).value({"$ref": REF_PREFIX + name}, obj, _Context(kind, ""))


class _Context:
    """encoding/json's error context: the innermost struct and the JSON path to the field."""

    def __init__(self, struct: str, path: str) -> None:
        self.struct = struct
        self.path = path

    def field(self, struct: str, name: str) -> _Context:
        return _Context(struct, f"{self.path}.{name}" if self.path else name)

    def mismatch(self, value: Any, go_type: str, literal: bool = False) -> TypeMismatch:
        shown = go_json_type(value) + (f" {json.dumps(value)}" if literal else "")
        where = f"Go struct field {self.struct}.{self.path}" if self.path else "Go value"
        return TypeMismatch(f"json: cannot unmarshal {shown} into {where} of type {go_type}")


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _go_name(name: str) -> str:
    """`io.k8s.api.core.v1.PodSpec` -> `v1.PodSpec`, as reflect names the type."""
    parts = name.split(".")
    return f"{parts[-2]}.{parts[-1]}"


class _Decoder:
    def __init__(self, definitions: Mapping[str, Any]) -> None:
        self.definitions = definitions

    def go_type(self, schema: Mapping[str, Any]) -> str:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return _go_name(ref.removeprefix(REF_PREFIX))
        kind = schema.get("type")
        if kind == "array":
            return "[]" + self.go_type(schema.get("items") or {})
        if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
            return "map[string]" + self.go_type(schema["additionalProperties"])
        if kind == "string":
            return "[]uint8" if schema.get("format") == "byte" else "string"
        if kind == "integer":
            return str(schema.get("format") or "int64")
        if kind == "number":
            return "float32" if schema.get("format") == "float" else "float64"
        return "bool" if kind == "boolean" else "interface {}"

    def zero(self, schema: Mapping[str, Any]) -> Any:
        """What a JSON null decodes to as an item or map value: the type's zero value."""
        ref = schema.get("$ref")
        if isinstance(ref, str):
            name = ref.removeprefix(REF_PREFIX)
            if name in ANY_TYPES or name in TIMES or name in (QUANTITY, INT_OR_STRING):
                return None
            return self.zero(self.definitions.get(name) or {})
        defaults = {"string": "", "integer": 0, "number": 0, "boolean": False}
        kind = schema.get("type")
        if kind == "object" and "additionalProperties" not in schema:
            return {}
        return defaults.get(str(kind))

    def value(self, schema: Mapping[str, Any], value: Any, ctx: _Context) -> Any:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self.named(ref.removeprefix(REF_PREFIX), value, ctx)
        kind = schema.get("type")
        if kind == "object":
            return self.object(schema, value, ctx, self.go_type(schema))
        if kind == "array":
            return self.array(schema, value, ctx)
        self.scalar(schema, value, ctx)
        return value

    def named(self, name: str, value: Any, ctx: _Context) -> Any:
        if name in ANY_TYPES:
            return value
        if name in TIMES:
            if not isinstance(value, str):
                raise _Context("", "").mismatch(value, "string")
            return value
        if name == QUANTITY:
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                raise TypeMismatch(f"quantities must match the regular expression '{QUANTITY_PATTERN}'")
            return value
        if name == INT_OR_STRING:
            if not isinstance(value, str) and not _fits_int(value, "int32"):
                raise _Context("", "").mismatch(value, "int32", literal=_is_number(value))
            return value
        schema = self.definitions.get(name) or {}
        if schema.get("type") == "object" and isinstance(schema.get("properties"), Mapping):
            return self.object(schema, value, ctx, _go_name(name), struct=_short(name))
        return self.value(schema, value, ctx)

    def object(
        self, schema: Mapping[str, Any], value: Any, ctx: _Context, go_type: str, *, struct: str = ""
    ) -> Any:
        if not isinstance(value, dict):
            raise ctx.mismatch(value, go_type)
        properties = schema.get("properties")
        if struct and isinstance(properties, Mapping):
            out = {}
            for key, item in value.items():
                field_schema = properties.get(key)
                if field_schema is None:
                    out[key] = item
                elif item is not None:
                    decoded = self.value(field_schema, item, ctx.field(struct, key))
                    if not _omitted_when_empty(struct, field_schema, decoded):
                        out[key] = decoded
            return out
        items = schema.get("additionalProperties")
        if isinstance(items, Mapping):
            return {k: self.item(items, v, ctx) for k, v in value.items()}
        return value

    def array(self, schema: Mapping[str, Any], value: Any, ctx: _Context) -> Any:
        if not isinstance(value, list):
            raise ctx.mismatch(value, self.go_type(schema))
        items = schema.get("items") or {}
        return [self.item(items, v, ctx) for v in value]

    def item(self, schema: Mapping[str, Any], value: Any, ctx: _Context) -> Any:
        return self.zero(schema) if value is None else self.value(schema, value, ctx)

    def scalar(self, schema: Mapping[str, Any], value: Any, ctx: _Context) -> None:
        kind = schema.get("type")
        go_type = self.go_type(schema)
        if kind == "string" and not isinstance(value, str):
            raise ctx.mismatch(value, go_type)
        if kind == "boolean" and not isinstance(value, bool):
            raise ctx.mismatch(value, go_type)
        if kind == "number" and not _is_number(value):
            raise ctx.mismatch(value, go_type)
        if kind == "integer" and not _fits_int(value, go_type):
            raise ctx.mismatch(value, go_type, literal=_is_number(value))


def _omitted_when_empty(struct: str, schema: Mapping[str, Any], value: Any) -> bool:
    """encoding/json's `omitempty`: the API types tag every map field and every ObjectMeta list with it."""
    if value == {} and isinstance(schema.get("additionalProperties"), Mapping):
        return True
    return struct == "ObjectMeta" and value == []


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fits_int(value: Any, go_type: str) -> bool:
    low, high = INT_RANGES.get(go_type, INT_RANGES["int64"])
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
