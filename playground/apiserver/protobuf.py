"""Decode `application/vnd.kubernetes.protobuf` request bodies into JSON-shaped objects.

kubectl's typed clients (`auth can-i`, `create configmap`, `create token`, ...) send their
bodies as Kubernetes protobuf. The emulator works on JSON-shaped dicts, so this module turns
such a body into exactly the dict the same object would give as JSON.

A body is the magic `k8s\\x00` followed by a `runtime.Unknown` message: `typeMeta`
(apiVersion, kind), `raw` (the object's own message), `contentEncoding` and `contentType`.
`raw` is decoded with the table in `data/protobuf-schemas.json.gz`, made by
`tools/gen_protobuf_schemas.py` from the descriptors compiled into kubectl 1.32. Each field
there is `[jsonName, type, flags]`: `type` is a scalar type or a message's full name, and
`flags` holds `r` (repeated), `m` (map with string keys), `l` (each value is a named slice
such as `ExtraValue`, sent as a message wrapping `repeated items = 1`), `i` (embedded with
`json:",inline"`) and `k` (keep a zero value).

gogo-protobuf writes every non-pointer scalar, zero or not, while Go's `encoding/json` drops
the zero ones tagged `omitempty`; so a zero scalar is dropped unless the field is a pointer
or required (`k`). Types with their own JSON form (Time, Quantity, IntOrString, raw JSON,
the CRD schema unions) are decoded by the functions in `SPECIALS`.
"""

from __future__ import annotations

import base64
import functools
import gzip
import json
import struct
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Any

from . import errors

MAGIC = b"k8s\x00"
DATA_FILE = "protobuf-schemas.json.gz"
PROTOBUF_CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
SCALAR_WIRE_TYPES = {
    "bool": VARINT,
    "int32": VARINT,
    "int64": VARINT,
    "double": FIXED64,
    "string": LENGTH,
    "bytes": LENGTH,
}
ZERO: dict[str, Any] = {"bool": False, "int32": 0, "int64": 0, "double": 0.0, "string": "", "bytes": b""}

META = "k8s.io.apimachinery.pkg.apis.meta.v1."
APIEXTENSIONS = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1."
JSON_SCHEMA_PROPS = APIEXTENSIONS + "JSONSchemaProps"
TIME_RANGE = (-62135596800, 253402300799)  # 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z

Field = tuple[str, str, str]


class WireError(ValueError):
    """The bytes are not well-formed protobuf."""


class Absent:
    """What a special type decodes to where Go's JSON has `null`: the field is left out."""


ABSENT = Absent()


@functools.cache
def schemas() -> tuple[dict[str, dict[str, str]], dict[str, dict[int, Field]]]:
    """(apiVersion -> kind -> message, message -> field number -> field), read once."""
    raw = resources.files(__package__ or __name__).joinpath("data", DATA_FILE).read_bytes()
    table = json.loads(gzip.decompress(raw))
    messages = {
        name: {int(number): (field[0], field[1], field[2]) for number, field in fields.items()}
        for name, fields in table["messages"].items()
    }
    return table["kinds"], messages


def decode(body: bytes) -> dict[str, Any]:
    """The JSON-shaped object a protobuf request body holds; a 400 error if it cannot be read."""
    if not body.startswith(MAGIC):
        raise errors.bad_request("the protobuf body does not start with the Kubernetes magic number k8s\\x00")
    try:
        api_version, kind, raw = _envelope(body[len(MAGIC) :])
        message = _object_message(api_version, kind)
        obj = _message(message, raw)
    except WireError as exc:
        raise errors.bad_request(f"error decoding the protobuf body: {exc}") from None
    return {"apiVersion": api_version, "kind": kind, **obj}


def _envelope(data: bytes) -> tuple[str, str, bytes]:
    """apiVersion, kind and raw bytes of a `runtime.Unknown`."""
    parts = _last_values(data)
    type_meta = _last_values(_bytes(parts, 1, "runtime.Unknown.typeMeta"))
    encoding = _text(parts, 3, "runtime.Unknown.contentEncoding")
    content_type = _text(parts, 4, "runtime.Unknown.contentType")
    if encoding:
        raise WireError(f'unsupported content encoding "{encoding}"')
    if content_type not in ("", PROTOBUF_CONTENT_TYPE):
        raise WireError(f'unsupported content type "{content_type}" inside the protobuf envelope')
    api_version = _text(type_meta, 1, "runtime.TypeMeta.apiVersion")
    kind = _text(type_meta, 2, "runtime.TypeMeta.kind")
    return api_version, kind, _bytes(parts, 2, "runtime.Unknown.raw")


def _object_message(api_version: str, kind: str) -> str:
    if not api_version or not kind:
        raise errors.bad_request("the protobuf body does not name its apiVersion and kind")
    message = schemas()[0].get(api_version, {}).get(kind)
    if message is None:
        raise errors.bad_request(
            f'protobuf is not supported for kind "{kind}" in version "{api_version}"; '
            "send the body as application/json"
        )
    return message


def fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of each field; varints are ints, the rest bytes."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError("invalid field number 0")
        value: int | bytes
        if wire == VARINT:
            value, pos = _varint(data, pos)
        elif wire == LENGTH:
            size, pos = _varint(data, pos)
            value, pos = _take(data, pos, size)
        elif wire == FIXED64:
            value, pos = _take(data, pos, 8)
        elif wire == FIXED32:
            value, pos = _take(data, pos, 4)
        else:
            raise WireError(f"unsupported wire type {wire} for field {number}")
        yield number, wire, value


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while shift < 70:
        if pos >= len(data):
            raise WireError("truncated data: a varint runs past the end")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
    raise WireError("a varint is longer than 10 bytes")


def _take(data: bytes, pos: int, size: int) -> tuple[bytes, int]:
    if pos + size > len(data):
        raise WireError(f"truncated data: a field of {size} bytes runs past the end")
    return data[pos : pos + size], pos + size


def _last_values(data: bytes) -> dict[int, tuple[int, int | bytes]]:
    """Field number -> (wire type, value) of a message whose fields are all singular."""
    return {number: (wire, value) for number, wire, value in fields(data)}


def _bytes(parts: dict[int, tuple[int, int | bytes]], number: int, where: str) -> bytes:
    wire, value = parts.get(number, (LENGTH, b""))
    if wire != LENGTH or not isinstance(value, bytes):
        raise WireError(f"{where} has wire type {wire}, expected {LENGTH}")
    return value


def _text(parts: dict[int, tuple[int, int | bytes]], number: int, where: str) -> str:
    return _utf8(_bytes(parts, number, where), where)


def _int(parts: dict[int, tuple[int, int | bytes]], number: int, where: str) -> int:
    wire, value = parts.get(number, (VARINT, 0))
    if wire != VARINT or not isinstance(value, int):
        raise WireError(f"{where} has wire type {wire}, expected {VARINT}")
    return _signed(value)


def _utf8(value: bytes, where: str) -> str:
    try:
        return value.decode()
    except UnicodeDecodeError:
        raise WireError(f"{where} is not valid UTF-8") from None


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _message(name: str, data: bytes) -> Any:
    """A message as Go's encoding/json shows it: a dict, or the special types' own forms."""
    special = SPECIALS.get(name)
    if special is not None:
        return special(data)
    schema = schemas()[1][name]
    out: dict[str, Any] = {}
    for number, wire, value in fields(data):
        field = schema.get(number)
        if field is not None:
            _set(out, field, wire, value, f"{name} field {number}")
    return out


def _set(out: dict[str, Any], field: Field, wire: int, value: int | bytes, where: str) -> None:
    json_name, type_, flags = field
    if "m" in flags:
        key, item = _map_entry(field, _length(wire, value, where), where)
        out.setdefault(json_name, {})[key] = item
    elif "r" in flags:
        out.setdefault(json_name, []).extend(_repeated(field, wire, value, where))
    elif "." in type_:
        decoded = _message(type_, _length(wire, value, where))
        if "i" in flags:
            out.update(decoded)
        elif decoded is not ABSENT:
            out[json_name] = decoded
    else:
        scalar = _scalar(type_, wire, value, where)
        if "k" in flags or scalar != ZERO[type_]:
            out[json_name] = _json_scalar(type_, scalar)


def _length(wire: int, value: int | bytes, where: str) -> bytes:
    if wire != LENGTH or not isinstance(value, bytes):
        raise WireError(f"{where} has wire type {wire}, expected {LENGTH}")
    return value


def _map_entry(field: Field, data: bytes, where: str) -> tuple[str, Any]:
    key, item = "", _missing(field, where)
    for number, wire, value in fields(data):
        if number == 1:
            key = _scalar("string", wire, value, where)
        elif number == 2:
            item = _element(field, wire, value, where)
    return key, item


def _missing(field: Field, where: str) -> Any:
    """The value of a map entry that leaves its value out: the type's zero value."""
    if "l" in field[2] or "." in field[1]:
        return _element(field, LENGTH, b"", where)
    return _json_scalar(field[1], ZERO[field[1]])


def _element(field: Field, wire: int, value: int | bytes, where: str) -> Any:
    """One value of a repeated or map field: list wrappers unwrapped, `null` kept as None."""
    type_, flags = field[1], field[2]
    if "l" in flags:
        items: list[Any] = []
        for number, item_wire, item in fields(_length(wire, value, where)):
            if number == 1:
                items.extend(_repeated((field[0], type_, "r"), item_wire, item, where))
        return items
    if "." in type_:
        decoded = _message(type_, _length(wire, value, where))
        return None if decoded is ABSENT else decoded
    return _json_scalar(type_, _scalar(type_, wire, value, where))


def _repeated(field: Field, wire: int, value: int | bytes, where: str) -> list[Any]:
    type_ = field[1]
    if wire == LENGTH and SCALAR_WIRE_TYPES.get(type_, LENGTH) != LENGTH:
        return [_element(field, w, v, where) for w, v in _packed(type_, _length(wire, value, where))]
    return [_element(field, wire, value, where)]


def _packed(type_: str, data: bytes) -> Iterator[tuple[int, int | bytes]]:
    wire = SCALAR_WIRE_TYPES[type_]
    pos = 0
    while pos < len(data):
        value: int | bytes
        if wire == VARINT:
            value, pos = _varint(data, pos)
        else:
            value, pos = _take(data, pos, 8)
        yield wire, value


def _scalar(type_: str, wire: int, value: int | bytes, where: str) -> Any:
    expected = SCALAR_WIRE_TYPES[type_]
    if wire != expected:
        raise WireError(f"{where} has wire type {wire}, expected {expected}")
    if type_ == "bool":
        return value != 0
    if isinstance(value, int):
        return _signed(value)
    if type_ == "double":
        number: float = struct.unpack("<d", value)[0]
        return number
    if type_ == "string":
        return _utf8(value, where)
    return value


def _json_scalar(type_: str, value: Any) -> Any:
    """bytes as base64 and whole doubles as ints, as Go's encoding/json writes them."""
    if type_ == "bytes":
        return base64.b64encode(value).decode()
    if type_ == "double" and value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


def _timestamp(data: bytes, where: str) -> datetime | Absent:
    parts = _last_values(data)
    if not parts:
        return ABSENT
    seconds = _int(parts, 1, where + ".seconds")
    nanos = _int(parts, 2, where + ".nanos")
    if not TIME_RANGE[0] <= seconds <= TIME_RANGE[1] or not 0 <= nanos < 1_000_000_000:
        raise WireError(f"{where} is out of range: {seconds}s {nanos}ns")
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds, microseconds=nanos // 1000)


def _time(data: bytes) -> str | Absent:
    """metav1.Time: RFC 3339 in UTC to the second."""
    moment = _timestamp(data, "Time")
    if isinstance(moment, Absent):
        return moment
    return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}Z"


def _micro_time(data: bytes) -> str | Absent:
    """metav1.MicroTime: RFC 3339 in UTC to the microsecond."""
    moment = _timestamp(data, "MicroTime")
    if isinstance(moment, Absent):
        return moment
    return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}.{moment.microsecond:06d}Z"


def _int_or_string(data: bytes) -> int | str:
    """intstr.IntOrString: type 0 is intVal, type 1 strVal."""
    parts = _last_values(data)
    if _int(parts, 1, "IntOrString.type") == 1:
        return _text(parts, 3, "IntOrString.strVal")
    return _int(parts, 2, "IntOrString.intVal")


def _quantity(data: bytes) -> str:
    """resource.Quantity: its canonical string; the zero quantity is "0"."""
    return _text(_last_values(data), 1, "Quantity.string") or "0"


def _raw_json(data: bytes) -> Any:
    """RawExtension, FieldsV1 and apiextensions JSON: `raw` holds JSON, or an embedded object."""
    raw = _bytes(_last_values(data), 1, "raw")
    if not raw:
        return ABSENT
    if raw.startswith(MAGIC):
        return decode(raw)
    try:
        return json.loads(raw)
    except ValueError:
        raise WireError("a raw JSON field does not hold JSON") from None


def _union(data: bytes) -> dict[int, list[tuple[int, int | bytes]]]:
    """The fields of a JSONSchemaProps union, all occurrences kept, by number."""
    parts: dict[int, list[tuple[int, int | bytes]]] = {}
    for number, wire, value in fields(data):
        parts.setdefault(number, []).append((wire, value))
    return parts


def _schema(parts: dict[int, list[tuple[int, int | bytes]]], number: int, where: str) -> Any:
    if number not in parts:
        return ABSENT
    wire, value = parts[number][-1]
    return _message(JSON_SCHEMA_PROPS, _length(wire, value, where))


def _schema_or_array(data: bytes) -> Any:
    """JSONSchemaPropsOrArray (schema = 1, jSONSchemas = 2): the array if it has items, else the schema."""
    where = "JSONSchemaPropsOrArray"
    parts = _union(data)
    if 2 in parts:
        return [_message(JSON_SCHEMA_PROPS, _length(wire, value, where)) for wire, value in parts[2]]
    return _schema(parts, 1, where)


def _schema_or_bool(data: bytes) -> Any:
    """JSONSchemaPropsOrBool (allows = 1, schema = 2): the schema if set, else the boolean."""
    where = "JSONSchemaPropsOrBool"
    parts = _union(data)
    if 2 in parts:
        return _schema(parts, 2, where)
    wire, value = parts.get(1, [(VARINT, 0)])[-1]
    return _scalar("bool", wire, value, where)


def _schema_or_strings(data: bytes) -> Any:
    """JSONSchemaPropsOrStringArray (schema = 1, property = 2): the strings if any, else the schema."""
    where = "JSONSchemaPropsOrStringArray"
    parts = _union(data)
    if 2 in parts:
        return [_scalar("string", wire, value, where) for wire, value in parts[2]]
    return _schema(parts, 1, where)


SPECIALS: dict[str, Callable[[bytes], Any]] = {
    META + "Time": _time,
    META + "MicroTime": _micro_time,
    META + "FieldsV1": _raw_json,
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": _int_or_string,
    "k8s.io.apimachinery.pkg.api.resource.Quantity": _quantity,
    "k8s.io.apimachinery.pkg.runtime.RawExtension": _raw_json,
    APIEXTENSIONS + "JSON": _raw_json,
    APIEXTENSIONS + "JSONSchemaPropsOrArray": _schema_or_array,
    APIEXTENSIONS + "JSONSchemaPropsOrBool": _schema_or_bool,
    APIEXTENSIONS + "JSONSchemaPropsOrStringArray": _schema_or_strings,
}
