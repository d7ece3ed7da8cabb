"""Structural schemas of custom resources: validation, defaulting and pruning.

kube-apiserver handles a custom resource body in three steps, each driven by the
`openAPIV3Schema` of the version being served: on decode it prunes the fields the schema
does not know (and the nulls a field cannot hold), then fills in defaults; before storing
it validates the object. This module does the same on JSON-shaped dicts and words every
problem the way kube-openapi's validator and apimachinery's field errors do, e.g.
`spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer:
"string"`, because kubectl and the client libraries show those messages verbatim.

The field-error constructors and Go-style value printing at the top are shared with
`crds.py`, which words CustomResourceDefinition problems the same way.

`x-kubernetes-validations` (CEL rules) are not evaluated.
"""

from __future__ import annotations

import base64
import binascii
import copy
import datetime
import functools
import ipaddress
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal
from typing import Any

from .errors import Cause

Schema = Mapping[str, Any]
Obj = dict[str, Any]

#: the field of an error that belongs to no path (Go prints a nil *field.Path so)
NIL_FIELD = "<nil>"

#: ObjectMeta's serialized fields: everything else under metadata is dropped on decode
OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
RESOURCE_META_FIELDS = frozenset({"apiVersion", "kind", "metadata"})

PRESERVE_UNKNOWN = "x-kubernetes-preserve-unknown-fields"
EMBEDDED_RESOURCE = "x-kubernetes-embedded-resource"
INT_OR_STRING = "x-kubernetes-int-or-string"
LIST_TYPE = "x-kubernetes-list-type"
LIST_MAP_KEYS = "x-kubernetes-list-map-keys"


# -- printing values as Go does -------------------------------------------------------------


class GoLiteral(str):
    """A value already printed the way Go's `%#v` prints it (typed structs and slices)."""


_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


def go_quote(text: str) -> str:
    """strconv.Quote: a double-quoted Go string literal."""
    return '"' + "".join(_quote_char(ch) for ch in text) + '"'


def _quote_char(ch: str) -> str:
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    if ch.isprintable():
        return ch
    code = ord(ch)
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def go_float(number: float) -> str:
    """fmt's %v of a float64: shortest digits, exponent form below 1e-4 and from 1e+06."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    if number == 0:
        return "-0" if math.copysign(1.0, number) < 0 else "0"
    sign, digit_tuple, exponent = Decimal(repr(number)).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent
    text = _exponent_form(digits, point - 1) if not -4 <= point - 1 < 6 else _plain_form(digits, point)
    return ("-" if sign else "") + text


def _exponent_form(digits: str, exp10: int) -> str:
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{mantissa}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"


def _plain_form(digits: str, point: int) -> str:
    if point <= 0:
        return "0." + "0" * -point + digits
    if point >= len(digits):
        return digits + "0" * (point - len(digits))
    return digits[:point] + "." + digits[point:]


def go_syntax(value: Any) -> str:
    """fmt's %#v of a value decoded from JSON into interface{}."""
    if isinstance(value, GoLiteral):
        return str(value)
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, Mapping):
        entries = ", ".join(f"{go_quote(str(k))}:{go_syntax(value[k])}" for k in sorted(value))
        return "map[string]interface {}{" + entries + "}"
    if isinstance(value, list | tuple):
        return "[]interface {}{" + ", ".join(go_syntax(v) for v in value) + "}"
    return go_quote(str(value))


def go_value(value: Any) -> str:
    """How a field error prints its bad value: null, %v for scalars, %q for strings, else %#v."""
    return '"null"' if value is None else go_syntax(value)


def go_json(value: Any) -> str:
    """encoding/json's compact form: integral floats lose their `.0`, map keys are sorted."""
    return json.dumps(_json_ready(value), separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _json_ready(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, Mapping):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    return value


# -- field errors, as apimachinery's util/validation/field builds them ----------------------


def _body(kind: str, value: Any, detail: str) -> str:
    return f"{kind}: {go_value(value)}: {detail}" if detail else f"{kind}: {go_value(value)}"


def _plain(kind: str, detail: str) -> str:
    return f"{kind}: {detail}" if detail else kind


def field_invalid(field: str, value: Any, detail: str) -> Cause:
    return Cause(field, _body("Invalid value", value, detail), "FieldValueInvalid")


def field_type_invalid(field: str, value: Any, detail: str) -> Cause:
    return Cause(field, _body("Invalid value", value, detail), "FieldValueTypeInvalid")


def field_required(field: str, detail: str = "") -> Cause:
    return Cause(field, _plain("Required value", detail), "FieldValueRequired")


def field_forbidden(field: str, detail: str) -> Cause:
    return Cause(field, _plain("Forbidden", detail), "FieldValueForbidden")


def field_duplicate(field: str, value: Any) -> Cause:
    return Cause(field, _body("Duplicate value", value, ""), "FieldValueDuplicate")


def field_not_supported(field: str, value: Any, supported: list[str]) -> Cause:
    detail = "supported values: " + ", ".join(go_quote(v) for v in supported) if supported else ""
    return Cause(field, _body("Unsupported value", value, detail), "FieldValueNotSupported")


def field_too_long(field: str, max_length: int) -> Cause:
    return Cause(field, f"Too long: may not be more than {max_length} bytes", "FieldValueTooLong")


def field_too_many(field: str, actual: int, maximum: int) -> Cause:
    return Cause(field, f"Too many: {actual}: must have at most {maximum} items", "FieldValueTooMany")


def child(path: str | None, name: str) -> str:
    """field.Path.Child: `spec.replicas`."""
    return f"{path}.{name}" if path else name


def key(path: str | None, name: str) -> str:
    """field.Path.Key: `properties[spec]`."""
    return f"{path or ''}[{name}]"


def index(path: str | None, i: int) -> str:
    """field.Path.Index: `versions[0]`."""
    return f"{path or ''}[{i}]"


# -- JSON value helpers ----------------------------------------------------------------------

_MAX_JSON_INT = float(2**53 - 1)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _json_kind(value: Any) -> tuple[str, str]:
    """The JSON type kube-openapi infers for a decoded value, and the Go format it reports."""
    if isinstance(value, bool):
        return "boolean", ""
    if isinstance(value, int):
        return "integer", "int64"
    if isinstance(value, float):
        return "number", "float64"
    if isinstance(value, str):
        return "string", ""
    if isinstance(value, list):
        return "array", ""
    return "object", ""


def _is_json_integer(number: float) -> bool:
    if not math.isfinite(number) or abs(number) > _MAX_JSON_INT:
        return False
    nearest = float(math.trunc(number))
    if number == nearest:
        return True
    return abs(number - nearest) / (abs(number) + abs(nearest)) < 1e-9


def json_equal(a: Any, b: Any) -> bool:
    """Equality of decoded JSON values, keeping booleans apart from numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def schema_types(schema: Schema) -> list[str]:
    """The types a node accepts: int-or-string is `integer,string`, as the validator sees it."""
    if schema.get(INT_OR_STRING):
        return ["integer", "string"]
    node_type = schema.get("type")
    return [node_type] if isinstance(node_type, str) and node_type else []


def _additional_schema(schema: Schema) -> Schema | None:
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None


def _properties(schema: Schema) -> Mapping[str, Schema]:
    props = schema.get("properties")
    return props if isinstance(props, Mapping) else {}


def _items(schema: Schema) -> Schema | None:
    items = schema.get("items")
    return items if isinstance(items, Mapping) else None


# -- string formats the apiserver checks ----------------------------------------------------

_DATE_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_DURATION = re.compile(r"^[-+]?(\d+(\.\d+)?\s*(ns|us|µs|ms|s|m|h|d|w|[a-zA-Z]+)\s*)+$")
_UUID = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$", re.IGNORECASE)
_HOST_LABEL = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?$")
_MAC = re.compile(
    r"^([0-9A-Fa-f]{2}([:-])){5}[0-9A-Fa-f]{2}(([:-][0-9A-Fa-f]{2}){2}|([:-][0-9A-Fa-f]{2}){14})?$"
)
_HEX_COLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_RGB_COLOR = re.compile(r"^rgb\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s*\)$")
_OBJECT_ID = re.compile(r"^[0-9a-fA-F]{24}$")
_SSN = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*:|/)\S*$")


def _is_date(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10


def _is_date_time(text: str) -> bool:
    match = _DATE_TIME.match(text)
    if not match or not _is_date(match.group(1)):
        return False
    hour, minute, second = (int(match.group(i)) for i in (2, 3, 4))
    return hour < 24 and minute < 60 and second < 61


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _is_ip(text: str, marker: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return marker in text


def _is_cidr(text: str) -> bool:
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return "/" in text


def _is_hostname(text: str) -> bool:
    labels = text.removesuffix(".").split(".")
    return 0 < len(text) <= 255 and all(_HOST_LABEL.match(label) for label in labels)


def _is_uuid_version(version: str) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        return bool(_UUID.match(text)) and text.replace("-", "")[12] == version

    return check


_CREDIT_CARD = re.compile(
    r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}"
    r"|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$"
)


def _is_isbn10(text: str) -> bool:
    digits = text.replace("-", "").replace(" ", "")
    if not re.fullmatch(r"[0-9]{9}[0-9X]", digits):
        return False
    values = [10 if ch == "X" else int(ch) for ch in digits]
    return sum((i + 1) * v for i, v in enumerate(values)) % 11 == 0


def _is_isbn13(text: str) -> bool:
    digits = text.replace("-", "").replace(" ", "")
    if not re.fullmatch(r"[0-9]{13}", digits):
        return False
    total = sum(int(ch) * (3 if i % 2 else 1) for i, ch in enumerate(digits[:12]))
    return (10 - total % 10) % 10 == int(digits[12])


def _is_credit_card(text: str) -> bool:
    return bool(_CREDIT_CARD.match(re.sub(r"[^0-9]", "", text)))


def _any_text(text: str) -> bool:
    return True


def _is_rgb(text: str) -> bool:
    match = _RGB_COLOR.match(text)
    return match is not None and all(int(part) <= 255 for part in match.groups())


_FORMATS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda t: bool(_OBJECT_ID.match(t)),
    "uri": lambda t: bool(_URI.match(t)),
    "email": lambda t: bool(_EMAIL.match(t)),
    "hostname": _is_hostname,
    "ipv4": lambda t: _is_ip(t, "."),
    "ipv6": lambda t: _is_ip(t, ":"),
    "cidr": _is_cidr,
    "mac": lambda t: bool(_MAC.match(t)),
    "uuid": lambda t: bool(_UUID.match(t)),
    "uuid3": _is_uuid_version("3"),
    "uuid4": _is_uuid_version("4"),
    "uuid5": _is_uuid_version("5"),
    "isbn": lambda t: _is_isbn10(t) or _is_isbn13(t),
    "isbn10": _is_isbn10,
    "isbn13": _is_isbn13,
    "creditcard": _is_credit_card,
    "ssn": lambda t: bool(_SSN.match(t)),
    "hexcolor": lambda t: bool(_HEX_COLOR.match(t)),
    "rgbcolor": _is_rgb,
    "byte": _is_base64,
    "password": _any_text,
    "date": _is_date,
    "duration": lambda t: bool(_DURATION.match(t)),
    "datetime": _is_date_time,
}


def effective_format(schema: Schema) -> str:
    """The format the validator honours: others (int32, int64, float, ...) are dropped."""
    fmt = schema.get("format")
    if not isinstance(fmt, str) or fmt.replace("-", "") not in _FORMATS:
        return ""
    return fmt


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> re.Pattern[str] | str:
    """The compiled pattern, or the compiler's complaint."""
    try:
        return re.compile(pattern, re.ASCII)
    except re.error as exc:
        return str(exc)


# -- kube-openapi value validation ---------------------------------------------------------


class _OpenAPIValidator:
    """kube-openapi's SchemaValidator; `prefix` is the field path of the validated value."""

    def __init__(self, prefix: str | None) -> None:
        self._prefix = prefix

    def check(self, value: Any, schema: Schema, path: str) -> list[Cause]:
        if value is None:
            return [*self._type(value, schema, path), *self._enum(value, schema, path)]
        causes = [*self._type(value, schema, path), *self._junctions(value, schema, path)]
        if isinstance(value, str):
            causes += self._string(value, schema, path)
            causes += self._format(value, schema, path)
        elif _is_number(value):
            causes += self._number(value, schema, path)
        elif isinstance(value, list):
            causes += self._array(value, schema, path)
        causes += self._enum(value, schema, path)
        if isinstance(value, dict):
            causes += self._object(value, schema, path)
        return causes

    # where an error lands and how it reads

    def _field(self, name: str) -> str:
        if name and name != ".":
            return child(self._prefix, name.removeprefix("."))
        return self._prefix or NIL_FIELD

    def _composite(self, message: str) -> Cause:
        return field_invalid(self._prefix or NIL_FIELD, "", message)

    # the validators, in kube-openapi's order

    def _type(self, value: Any, schema: Schema, path: str) -> list[Cause]:
        types, fmt = schema_types(schema), effective_format(schema)
        if not types and not fmt:
            return []
        if value is None:
            if types and not schema.get("nullable"):
                return [self._type_error(path, ",".join(types), "null")]
            return []
        kind, go_format = _json_kind(value)
        float_int = kind == "number" and _is_json_integer(value) and "integer" in types
        int_float = kind == "integer" and "number" in types
        matches = kind in types or float_int or int_float
        textual = isinstance(value, str | list)
        if not textual and fmt and not (matches or go_format == fmt):
            return [self._type_error(path, fmt, go_format)]
        if textual and fmt and "number" not in types and "integer" not in types:
            return []
        return [] if matches else [self._type_error(path, ",".join(types), kind)]

    def _type_error(self, path: str, expected: str, actual: str) -> Cause:
        return field_type_invalid(
            self._field(path), actual, f"{path} in body must be of type {expected}: {go_quote(actual)}"
        )

    def _junctions(self, value: Any, schema: Schema, path: str) -> list[Cause]:
        causes: list[Cause] = []
        if schema.get("anyOf"):
            causes += self._any_of(value, schema["anyOf"], path)
        if schema.get("oneOf"):
            causes += self._one_of(value, schema["oneOf"], path)
        if schema.get("allOf"):
            causes += self._all_of(value, schema["allOf"], path)
        if isinstance(schema.get("not"), Mapping) and not self.check(value, schema["not"], path):
            causes.append(self._composite(f"{go_quote(path)} must not validate the schema (not)"))
        return causes

    def _any_of(self, value: Any, alternatives: list[Schema], path: str) -> list[Cause]:
        closest: list[Cause] | None = None
        for alternative in alternatives:
            causes = self.check(value, alternative, path)
            if not causes:
                return []
            if closest is None or len(causes) < len(closest):
                closest = causes
        return [
            self._composite(f"{go_quote(path)} must validate at least one schema (anyOf)"),
            *(closest or []),
        ]

    def _one_of(self, value: Any, alternatives: list[Schema], path: str) -> list[Cause]:
        valid, closest = 0, None
        for alternative in alternatives:
            causes = self.check(value, alternative, path)
            if not causes:
                valid, closest = valid + 1, None
            elif valid == 0 and (closest is None or len(causes) < len(closest)):
                closest = causes
        if valid == 1:
            return []
        found = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
        message = f"{go_quote(path)} must validate one and only one schema (oneOf). {found}"
        return [self._composite(message), *(closest or [])]

    def _all_of(self, value: Any, parts: list[Schema], path: str) -> list[Cause]:
        causes: list[Cause] = []
        valid = 0
        for part in parts:
            found = self.check(value, part, path)
            valid += not found
            causes += found
        if valid != len(parts):
            none = ". None validated" if valid == 0 else ""
            causes.append(self._composite(f"{go_quote(path)} must validate all the schemas (allOf){none}"))
        return causes

    def _string(self, value: str, schema: Schema, path: str) -> list[Cause]:
        max_length, min_length, pattern = (
            schema.get("maxLength"),
            schema.get("minLength"),
            schema.get("pattern"),
        )
        if max_length is not None and len(value) > max_length:
            return [field_too_long(self._field(path), int(max_length))]
        if min_length is not None and len(value) < min_length:
            return [
                field_invalid(
                    self._field(path),
                    value,
                    f"{path} in body should be at least {int(min_length)} chars long",
                )
            ]
        if pattern:
            compiled = compile_pattern(pattern)
            if isinstance(compiled, str):
                shown = f"{pattern}, but pattern is invalid: {compiled}"
            elif compiled.search(value):
                return []
            else:
                shown = pattern
            return [field_invalid(self._field(path), value, f"{path} in body should match '{shown}'")]
        return []

    def _format(self, value: str, schema: Schema, path: str) -> list[Cause]:
        fmt = effective_format(schema)
        if not fmt or _FORMATS[fmt.replace("-", "")](value):
            return []
        return [
            field_type_invalid(
                self._field(path), value, f"{path} in body must be of type {fmt}: {go_quote(value)}"
            )
        ]

    def _number(self, value: float, schema: Schema, path: str) -> list[Cause]:
        causes: list[Cause] = []
        if schema.get("multipleOf") is not None:
            causes += self._multiple_of(value, schema["multipleOf"], path)
        if schema.get("minimum") is not None:
            causes += self._bound(
                value, schema["minimum"], bool(schema.get("exclusiveMinimum")), path, upper=False
            )
        if schema.get("maximum") is not None:
            causes += self._bound(
                value, schema["maximum"], bool(schema.get("exclusiveMaximum")), path, upper=True
            )
        return causes

    def _multiple_of(self, value: float, factor: float, path: str) -> list[Cause]:
        if isinstance(value, int):
            factor = int(factor)
            if factor < 0:
                return [self._not_positive(factor, path)]
            if factor == 0 or value % factor == 0:
                return []
        else:
            if factor < 0:
                return [self._not_positive(factor, path)]
            quotient = (1 / factor * value if factor < 1 else value / factor) if factor else math.inf
            if _is_json_integer(quotient):
                return []
        shown = str(factor) if isinstance(factor, int) else go_float(factor)
        return [field_invalid(self._field(path), value, f"{path} in body should be a multiple of {shown}")]

    def _not_positive(self, factor: float, path: str) -> Cause:
        shown = go_syntax(factor)
        return field_invalid(
            self._field(path), factor, f"factor MultipleOf declared for {path} must be positive: {shown}"
        )

    def _bound(self, value: float, limit: float, exclusive: bool, path: str, *, upper: bool) -> list[Cause]:
        bound: float = int(limit) if isinstance(value, int) else float(limit)
        beyond = (
            (value >= bound if exclusive else value > bound)
            if upper
            else (value <= bound if exclusive else value < bound)
        )
        if not beyond:
            return []
        relation = (
            ("less than" if exclusive else "less than or equal to")
            if upper
            else ("greater than" if exclusive else "greater than or equal to")
        )
        shown = str(bound) if isinstance(bound, int) else go_float(bound)
        return [field_invalid(self._field(path), value, f"{path} in body should be {relation} {shown}")]

    def _array(self, value: list[Any], schema: Schema, path: str) -> list[Cause]:
        causes: list[Cause] = []
        items = _items(schema)
        if items is not None:
            for i, item in enumerate(value):
                causes += self.check(item, items, f"{path}[{i}]")
        min_items, max_items = schema.get("minItems"), schema.get("maxItems")
        if min_items is not None and len(value) < min_items:
            causes.append(
                field_invalid(
                    self._field(path),
                    len(value),
                    f"{path} in body should have at least {int(min_items)} items",
                )
            )
        if max_items is not None and len(value) > max_items:
            causes.append(field_too_many(self._field(path), len(value), int(max_items)))
        if schema.get("uniqueItems") and _has_duplicates(value):
            causes.append(
                field_invalid(self._field(path), "", f"{path} in body shouldn't contain duplicates")
            )
        return causes

    def _enum(self, value: Any, schema: Schema, path: str) -> list[Cause]:
        allowed = schema.get("enum")
        if not allowed or any(json_equal(value, option) for option in allowed):
            return []
        shown = [option if isinstance(option, str) else go_json(option) for option in allowed]
        return [field_not_supported(self._field(path), value, shown)]

    def _object(self, value: Obj, schema: Schema, path: str) -> list[Cause]:
        count, min_props, max_props = len(value), schema.get("minProperties"), schema.get("maxProperties")
        if min_props is not None and count < min_props:
            return [
                field_invalid(
                    self._field(path),
                    count,
                    f"{path} in body should have at least {int(min_props)} properties",
                )
            ]
        if max_props is not None and count > max_props:
            return [field_too_many(self._field(path), count, int(max_props))]
        props = _properties(schema)
        causes = self._additional(value, schema, props, path)
        for name, prop in props.items():
            if name in value:
                causes += self.check(value[name], prop, f"{path}.{name}" if path else name)
        for name in schema.get("required") or []:
            if name not in value:
                causes.append(field_required(self._field(f"{path}.{name}")))
        return causes

    def _additional(self, value: Obj, schema: Schema, props: Mapping[str, Schema], path: str) -> list[Cause]:
        extra = schema.get("additionalProperties")
        unknown = [k for k in value if k not in props]
        if extra is False:
            message = "{0}.{1} in body is a forbidden property"
            return [field_invalid(self._field(path), k, message.format(path, k)) for k in unknown]
        if isinstance(extra, Mapping):
            return [cause for k in unknown for cause in self.check(value[k], extra, f"{path}.{k}")]
        return []


def _has_duplicates(values: list[Any]) -> bool:
    return any(json_equal(values[i], values[j]) for i in range(len(values)) for j in range(i))


# -- walking an object along its schema ------------------------------------------------------


def _walk(value: Any, schema: Schema | None, path: str | None) -> Iterator[tuple[str | None, Any, Schema]]:
    """Every (field path, value, schema) pair the schema describes, depth first."""
    if schema is None:
        return
    yield path, value, schema
    if isinstance(value, dict):
        props, extra = _properties(schema), _additional_schema(schema)
        for name, item in value.items():
            if name in props:
                yield from _walk(item, props[name], child(path, name))
            elif extra is not None:
                yield from _walk(item, extra, key(path, name))
    elif isinstance(value, list):
        items = _items(schema)
        for i, item in enumerate(value):
            yield from _walk(item, items, index(path, i))


# -- embedded resources (x-kubernetes-embedded-resource) -------------------------------------

_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1035_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def dns1035_label_errors(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1035_LABEL.match(value):
        errs.append(DNS1035_MESSAGE)
    return errs


def _embedded_causes(path: str | None, value: Obj) -> list[Cause]:
    causes = [field_required(child(path, name)) for name in ("apiVersion", "kind") if name not in value]
    if "apiVersion" in value:
        causes += _embedded_api_version(child(path, "apiVersion"), value["apiVersion"])
    if "kind" in value:
        causes += _embedded_kind(child(path, "kind"), value["kind"])
    if "metadata" in value:
        causes += _embedded_metadata(child(path, "metadata"), value["metadata"])
    return causes


def _embedded_api_version(field: str, api_version: Any) -> list[Cause]:
    if not isinstance(api_version, str):
        return [field_invalid(field, api_version, "must be a string")]
    if not api_version:
        return [field_required(field)]
    if api_version != "/" and api_version.count("/") > 1:
        return [field_invalid(field, api_version, f"unexpected GroupVersion string: {api_version}")]
    return []


def _embedded_kind(field: str, kind: Any) -> list[Cause]:
    if not isinstance(kind, str):
        return [field_invalid(field, kind, "must be a string")]
    if not kind:
        return [field_required(field)]
    errs = dns1035_label_errors(kind.lower())
    return (
        [field_invalid(field, kind, "may have mixed case, but should otherwise match: " + ",".join(errs))]
        if errs
        else []
    )


def _embedded_metadata(field: str, meta: Any) -> list[Cause]:
    if not isinstance(meta, dict):
        return [field_invalid(field, meta, "must be an object")]
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return []
    if name in (".", ".."):
        return [field_invalid(child(field, "name"), name, f"may not be '{name}'")]
    return [
        field_invalid(child(field, "name"), name, f"may not contain '{bad}'")
        for bad in ("/", "%")
        if bad in name
    ]


# -- x-kubernetes-list-type: set and map ---------------------------------------------------


def _list_causes(path: str | None, value: list[Any], schema: Schema) -> list[Cause]:
    list_type = schema.get(LIST_TYPE)
    if list_type == "set":
        return [field_duplicate(index(path, i), value[i]) for i in _repeats([_set_key(v) for v in value])]
    if list_type == "map":
        return _list_map_causes(
            path, value, [k for k in schema.get(LIST_MAP_KEYS) or [] if isinstance(k, str)]
        )
    return []


def _set_key(value: Any) -> tuple[str, str]:
    if isinstance(value, dict | list):
        return "compound", go_json(value)
    return type(value).__name__, repr(value)


def _repeats(keys: list[Any]) -> list[int]:
    """Indices where a key shows up for the second time (later repeats are not reported again)."""
    seen: dict[Any, int] = {}
    repeats = []
    for i, k in enumerate(keys):
        seen[k] = seen.get(k, 0) + 1
        if seen[k] == 2:
            repeats.append(i)
    return repeats


_ABSENT = object()


def _list_map_causes(path: str | None, value: list[Any], map_keys: list[str]) -> list[Cause]:
    for i, item in enumerate(value):
        if item is not None and not isinstance(item, dict):
            return [field_invalid(index(path, i), item, "must be an object for an array of list-type map")]
    entries = [
        {k: item[k] for k in map_keys if k in item} if isinstance(item, dict) else {} for item in value
    ]
    keys = [_set_key(entry) for entry in entries]
    return [field_duplicate(index(path, i), entries[i]) for i in _repeats(keys)]


# -- public API -----------------------------------------------------------------------------


def validate_value(obj: Any, schema: Schema, *, field_prefix: str | None = None) -> list[Cause]:
    """kube-openapi's value validation; `field_prefix` is the field path of `obj`."""
    return _OpenAPIValidator(field_prefix).check(obj, schema, "")


def validate_embedded(obj: Any, schema: Schema, *, field_prefix: str | None = None) -> list[Cause]:
    """apiVersion, kind and metadata of every x-kubernetes-embedded-resource in `obj`."""
    causes: list[Cause] = []
    for path, value, node in _walk(obj, schema, field_prefix):
        if isinstance(value, dict) and node.get(EMBEDDED_RESOURCE):
            causes += _embedded_causes(path, value)
    return causes


def validate_list_types(obj: Any, schema: Schema, *, field_prefix: str | None = None) -> list[Cause]:
    """Uniqueness of items in x-kubernetes-list-type set lists and of keys in map lists."""
    causes: list[Cause] = []
    for path, value, node in _walk(obj, schema, field_prefix):
        if isinstance(value, list):
            causes += _list_causes(path, value, node)
    return causes


def validate(obj: Any, schema: Schema, *, field_prefix: str | None = None) -> list[Cause]:
    """Everything the apiserver checks against a structural schema before storing.

    Value validation first, then embedded resources, then list-type uniqueness, in the
    order the custom resource strategy reports them. `field_prefix` is the field path of
    `obj` (none for a whole object).
    """
    return [
        *validate_value(obj, schema, field_prefix=field_prefix),
        *validate_embedded(obj, schema, field_prefix=field_prefix),
        *validate_list_types(obj, schema, field_prefix=field_prefix),
    ]


def apply_defaults(obj: Any, schema: Schema | None) -> None:
    """Fill in `default`s of missing (or null but non-nullable) fields, recursively.

    Defaults of nested fields apply only where their parent exists (or was just
    defaulted); array items and additionalProperties values are defaulted too.
    """
    if schema is None:
        return
    if isinstance(obj, dict):
        _default_object(obj, schema)
    elif isinstance(obj, list):
        items = _items(schema)
        for i, item in enumerate(obj):
            if item is None and items is not None and not items.get("nullable"):
                obj[i] = copy.deepcopy(items.get("default"))
            apply_defaults(obj[i], items)


def _default_object(obj: Obj, schema: Schema) -> None:
    props, extra = _properties(schema), _additional_schema(schema)
    for name, prop in props.items():
        if prop.get("default") is not None and (
            name not in obj or (obj[name] is None and not prop.get("nullable"))
        ):
            obj[name] = copy.deepcopy(prop["default"])
    for name in list(obj):
        if name in props:
            apply_defaults(obj[name], props[name])
        elif extra is not None:
            if obj[name] is None and not extra.get("nullable"):
                obj[name] = copy.deepcopy(extra.get("default"))
            apply_defaults(obj[name], extra)


def prune_unknown(value: Any, schema: Schema | None, *, resource_root: bool) -> None:
    """Drop object fields the schema does not specify, honouring preserve-unknown-fields.

    A resource root (and every embedded resource) keeps apiVersion, kind and metadata.
    """
    if resource_root:
        schema = {**(schema or {}), EMBEDDED_RESOURCE: True}
    _prune(value, schema)


def _prune(value: Any, schema: Schema | None) -> None:
    if schema is not None and schema.get(PRESERVE_UNKNOWN):
        _prune_known(value, schema)
    elif isinstance(value, dict):
        _prune_object(value, schema)
    elif isinstance(value, list):
        items = _items(schema) if schema is not None else None
        for item in value:
            _prune(item, items)


def _prune_object(value: Obj, schema: Schema | None) -> None:
    if schema is None:
        value.clear()
        return
    props, extra = _properties(schema), schema.get("additionalProperties")
    for name in list(value):
        if schema.get(EMBEDDED_RESOURCE) and name in RESOURCE_META_FIELDS:
            continue
        if name in props:
            _prune(value[name], props[name])
        elif extra is not None:
            _prune(value[name], extra if isinstance(extra, Mapping) else None)
        else:
            del value[name]


def _prune_known(value: Any, schema: Schema) -> None:
    """Below preserve-unknown-fields: unknown fields stay, known ones are pruned as usual."""
    if isinstance(value, dict):
        props, extra = _properties(schema), schema.get("additionalProperties")
        for name, item in value.items():
            if schema.get(EMBEDDED_RESOURCE) and name in RESOURCE_META_FIELDS:
                continue
            if name in props:
                _prune(item, props[name])
            elif extra is not None:
                _prune(item, extra if isinstance(extra, Mapping) else None)
    elif isinstance(value, list):
        items = _items(schema)
        if items is not None:
            for item in value:
                _prune_known(item, items)


def _drop_nulls(value: Any, schema: Schema | None) -> None:
    """Remove nulls a field cannot hold and no default will replace."""
    if isinstance(value, dict):
        for name in list(value):
            field_schema = _field_schema(name, schema)
            item = value[name]
            if (
                item is None
                and field_schema is not None
                and not field_schema.get("nullable")
                and "default" not in field_schema
            ):
                del value[name]
            else:
                _drop_nulls(item, field_schema)
    elif isinstance(value, list):
        items = _items(schema) if schema is not None else None
        for item in value:
            _drop_nulls(item, items)


def _field_schema(name: str, schema: Schema | None) -> Schema | None:
    if schema is None:
        return None
    props = _properties(schema)
    return props[name] if name in props else _additional_schema(schema)


def _coerce_metadata(obj: Any, schema: Schema | None) -> None:
    """metadata of the root and of every embedded resource keeps ObjectMeta's fields only."""
    targets = [obj] + [
        v for _, v, node in _walk(obj, schema, None) if node.get(EMBEDDED_RESOURCE) and v is not obj
    ]
    for target in targets:
        meta = target.get("metadata") if isinstance(target, dict) else None
        if isinstance(meta, dict):
            for name in list(meta):
                if name not in OBJECT_META_FIELDS or meta[name] is None:
                    del meta[name]


def prune(obj: Obj, schema: Schema | None) -> None:
    """What decoding does to a custom resource before defaulting.

    Unknown fields go (unless x-kubernetes-preserve-unknown-fields), non-nullable nulls
    without a default go, and metadata (at the root and in embedded resources) keeps
    only ObjectMeta's fields. apiVersion, kind and metadata always stay at the root.
    """
    prune_unknown(obj, schema, resource_root=True)
    _drop_nulls(obj, schema)
    _coerce_metadata(obj, schema)


def go_print(value: Any) -> str:
    """fmt's %v of a value decoded from JSON into interface{} (maps print with sorted keys)."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_print(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_print(item) for item in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    return str(value)


def go_json_type(value: Any) -> str:
    """How encoding/json names a JSON value's type in "cannot unmarshal X" errors."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else "null"
