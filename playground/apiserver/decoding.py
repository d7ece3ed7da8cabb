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
import re
import struct
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


# --- YAML as sigs.k8s.io/yaml reads it ---------------------------------------------------------------
#
# kube-apiserver turns a YAML body into JSON with sigs.k8s.io/yaml, which parses with its
# fork of go-yaml v2: YAML 1.1 scalars, resolved by go-yaml's own table and number rules
# (goyaml.v2/resolve.go), not PyYAML's. So `y`, `n`, `on` and `off` are booleans, `0o17`
# and `017` are 15, `09` and `1e3` are numbers, `1:30` (a base-60 integer to PyYAML) and
# timestamps stay strings. Keys that are not strings become strings as sigs.k8s.io/yaml
# writes them; a null key is refused.

_GO_YAML_TRUE = ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")
_GO_YAML_FALSE = ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")
#: go-yaml v2's table of plain scalars resolved by their exact text
_GO_YAML_WORDS: dict[str, Any] = {
    **dict.fromkeys(_GO_YAML_TRUE, True),
    **dict.fromkeys(_GO_YAML_FALSE, False),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), None),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}
#: strconv.ParseInt(s, 0, 64)'s syntax (sign, then 0x / 0o / 0b / leading-0 octal / decimal)
_GO_INTEGER = re.compile(r"^([+-]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$")
_GO_YAML_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
#: a timestamp-looking scalar (4 digits and a dash) stays a string whether or not it parses
_TIMESTAMP_LIKE = re.compile(r"^[0-9]{4}-")
_GO_YAML_PLAIN = "tag:playground.invalid,2026:go-yaml-v2-plain"


def _go_integer(text: str) -> int | None:
    """ParseInt/ParseUint/big.Int's SetString with base 0, on underscore-free text."""
    match = _GO_INTEGER.match(text)
    if match is None:
        return None
    sign, digits = match.groups()
    octal = len(digits) > 1 and digits[0] == "0" and digits[1].isdigit()
    value = int(digits, 8 if octal else 0)
    return -value if sign == "-" else value


def _go_float(text: str) -> float | None:
    """strconv.ParseFloat for the texts go-yaml hands it; None where Go fails (overflow included)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isinf(value) else value


def go_yaml_scalar(text: str) -> Any:
    """The value go-yaml v2 gives an untagged plain scalar (goyaml.v2 resolve())."""
    if text in _GO_YAML_WORDS:
        return _GO_YAML_WORDS[text]
    first = text[0]
    if first == ".":
        value = _go_float(text)
        return text if value is None else value
    if first not in "+-0123456789" or _TIMESTAMP_LIKE.match(text):
        return text
    plain = text.replace("_", "")
    integer = _go_integer(plain)
    if integer is not None:
        return integer
    if _GO_YAML_FLOAT.match(plain):
        value = _go_float(plain)
        if value is not None:
            return value
    return text


class GoYAMLLoader(yaml.SafeLoader):
    """PyYAML's parser with go-yaml v2's resolution of plain scalars, and mappings keyed as JSON.

    Keys become JSON keys as each mapping is built, as sigs.k8s.io/yaml converts go-yaml's
    map[interface{}]interface{}: `true:` and `1:` are two keys there, though Python's
    dicts would merge True and 1 into one.
    """

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode and implicit[0]:
            return "tag:yaml.org,2002:merge" if value == "<<" else _GO_YAML_PLAIN
        return str(super().resolve(kind, value, implicit))  # type: ignore[no-untyped-call]

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        self.flatten_mapping(node)
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            if key is None:
                json_key(key, self.construct_object(value_node, deep=True))
            mapping[json_key(key, None)] = self.construct_object(value_node, deep=deep)
        return mapping


def _construct_plain(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    return go_yaml_scalar(str(loader.construct_scalar(node)))  # type: ignore[arg-type]


GoYAMLLoader.add_constructor(_GO_YAML_PLAIN, _construct_plain)


class UnsupportedKeyError(ValueError):
    """A YAML mapping key JSON cannot have (null); the message is sigs.k8s.io/yaml's."""


def loads_yaml(body: bytes) -> Any:
    """A YAML body as the JSON value sigs.k8s.io/yaml makes of it; `ValueError` (or YAMLError) if none."""
    try:
        loaded = yaml.load(body.decode("utf-8"), Loader=GoYAMLLoader)
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
        return {str(k): _to_json(v, depth + 1, budget) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_json(v, depth + 1, budget) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"json: unsupported value: {_go_float_text(value)}")
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise ValueError(f"yaml: cannot convert a {type(value).__name__} to JSON")


def json_key(key: Any, value: Any) -> str:
    """sigs.k8s.io/yaml's JSON key for a YAML key (convertToJSONableObject)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return _go_float_key(key)
    shown = "<nil>" if key is None else repr(key)
    kind = "%!s(<nil>)" if key is None else type(key).__name__
    raise UnsupportedKeyError(f"unsupported map key of type: {kind}, key: {shown}, value: {_go_value(value)}")


def _go_float_text(value: float) -> str:
    return "NaN" if math.isnan(value) else "+Inf" if value > 0 else "-Inf"


def _go_float_key(value: float) -> str:
    """strconv.FormatFloat(key, 'g', -1, 32), with go-yaml's names for infinities and NaN."""
    if math.isnan(value):
        return ".nan"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = math.copysign(math.inf, value)
    if math.isinf(single):
        return ".inf" if single > 0 else "-.inf"
    if single == 0:
        return "-0" if math.copysign(1, single) < 0 else "0"
    for precision in range(1, 10):
        text = f"{single:.{precision - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            break
    mantissa, _, exponent = text.partition("e")
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "").rstrip("0") or "0"
    exp = int(exponent)
    if exp < -4 or exp >= 6:  # %e, as 'g' with the shortest precision decides
        tail = f".{digits[1:]}" if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{tail}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    point = exp + 1
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _go_value(value: Any) -> str:
    """fmt's %+#v of a decoded YAML value, as the unsupported-key message shows it."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(_go_value(v) for v in value) + "}"
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda item: str(item[0]))
        return (
            "map[interface {}]interface {}{"
            + ", ".join(f"{_go_value(k)}:{_go_value(v)}" for k, v in items)
            + "}"
        )
    return repr(value)


def summarize_data(body: bytes, limit: int = 30) -> str:
    """The handlers' summarizeData: a body's start, as text when it is JSON, else in hex."""
    if not body:
        return "<empty>"
    shown = body[:limit]
    text = shown.decode("utf-8", errors="replace") if body[:1] == b"{" else shown.hex()
    return f"{text} ..." if len(body) > limit else text


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
