"""Generate `playground/apiserver/data/protobuf-schemas.json.gz`: how to read protobuf bodies.

`playground.apiserver.protobuf` decodes the Kubernetes protobuf bodies kubectl sends into
the JSON-shaped objects the emulator works on. For that it needs, per message, each field's
number, type and JSON name, and whether a zero value shows in JSON.

Source: every Go program built with k8s.io/api carries the gzipped FileDescriptorProto of
each `generated.proto` (gogo-protobuf's generated.pb.go registers it). Read from kubectl
1.32, these are exactly the schemas kubectl encodes with, and unlike the published
generated.proto files they keep gogoproto's `nullable` option: a pointer field keeps a zero
value in JSON, while a value field tagged `omitempty` drops it (gogo writes both). kubectl
does not link apiextensions-apiserver; the Google Cloud SDK's anthoscli does, at 1.26, so
the fields apiextensions.k8s.io/v1 gained up to 1.32 are listed in `APIEXTENSIONS_ADDITIONS`
(numbers from apiextensions-apiserver's generated.proto, pointers from its types).

JSON names: go-to-protobuf names a proto field after its json tag, made an identifier
(`$ref` -> `ref`, `x-kubernetes-list-type` -> `xKubernetesListType`). The OpenAPI
definitions in `data/builtin-definitions.json.gz` give the real names, the `required`
fields (no `omitempty`: their zero values show too), the group/version/kind of each
message, and reveal `json:",inline"` embeddings (a field with no property of its own).

Run by hand, not in tests:

    .venv/bin/python tools/gen_protobuf_schemas.py /usr/bin/kubectl /usr/lib/google-cloud-sdk/bin/anthoscli
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playground.apiserver.protobuf import LENGTH, SPECIALS, fields
from playground.apiserver.resources.builtin import builtin_types

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "playground" / "apiserver" / "data"
OUTPUT = DATA / "protobuf-schemas.json.gz"
DEFINITIONS = DATA / "builtin-definitions.json.gz"

GZIP_HEADER = re.compile(rb"\x1f\x8b\x08\x00\x00\x00\x00\x00")
DESCRIPTOR_NAME = re.compile(r"(?:.*/vendor/)?(k8s\.io/[\w./-]+/generated\.proto)$")
NULLABLE_OPTION = 65001  # gogoproto.nullable
MAP_ENTRY_OPTION = 7  # MessageOptions.map_entry
REPEATED_LABEL = 3
MESSAGE_TYPE = 11
SCALAR_TYPES = {1: "double", 3: "int64", 5: "int32", 8: "bool", 9: "string", 12: "bytes"}
GVK = "x-kubernetes-group-version-kind"

# Kinds sent in request bodies that are not resources of their own.
EXTRA_KINDS = [
    ("autoscaling", "v1", "Scale"),
    ("policy", "v1", "Eviction"),
    ("authentication.k8s.io", "v1", "TokenRequest"),
]
# DeleteOptions is registered in every group version.
SHARED_KINDS = ["DeleteOptions"]

APIEXTENSIONS = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1."

# The layouts `playground.apiserver.protobuf` relies on for the types it decodes itself.
SPECIAL_LAYOUTS: dict[str, dict[int, tuple[str, str]]] = {
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time": {1: ("seconds", "int64"), 2: ("nanos", "int32")},
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime": {1: ("seconds", "int64"), 2: ("nanos", "int32")},
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1": {1: ("Raw", "bytes")},
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": {
        1: ("type", "int64"),
        2: ("intVal", "int32"),
        3: ("strVal", "string"),
    },
    "k8s.io.apimachinery.pkg.api.resource.Quantity": {1: ("string", "string")},
    "k8s.io.apimachinery.pkg.runtime.RawExtension": {1: ("raw", "bytes")},
    APIEXTENSIONS + "JSON": {1: ("raw", "bytes")},
    APIEXTENSIONS + "JSONSchemaPropsOrArray": {
        1: ("schema", APIEXTENSIONS + "JSONSchemaProps"),
        2: ("jSONSchemas", APIEXTENSIONS + "JSONSchemaProps"),
    },
    APIEXTENSIONS + "JSONSchemaPropsOrBool": {
        1: ("allows", "bool"),
        2: ("schema", APIEXTENSIONS + "JSONSchemaProps"),
    },
    APIEXTENSIONS + "JSONSchemaPropsOrStringArray": {
        1: ("schema", APIEXTENSIONS + "JSONSchemaProps"),
        2: ("property", "string"),
    },
}


@dataclass(frozen=True)
class ProtoField:
    name: str
    number: int
    type: str  # a scalar type, or a message's full name
    repeated: bool = False
    nullable: bool = True


@dataclass
class ProtoMessage:
    fields: list[ProtoField] = field(default_factory=list)
    map_entry: bool = False


APIEXTENSIONS_ADDITIONS: dict[str, list[ProtoField]] = {
    APIEXTENSIONS + "ValidationRule": [
        ProtoField("messageExpression", 3, "string", nullable=False),
        ProtoField("reason", 4, "string"),
        ProtoField("fieldPath", 5, "string", nullable=False),
        ProtoField("optionalOldSelf", 6, "bool"),
    ],
    APIEXTENSIONS + "CustomResourceDefinitionVersion": [
        ProtoField("selectableFields", 9, APIEXTENSIONS + "SelectableField", repeated=True, nullable=False),
    ],
    APIEXTENSIONS + "SelectableField": [ProtoField("jsonPath", 1, "string", nullable=False)],
}


def read_descriptors(binary: Path) -> dict[str, bytes]:
    """generated.proto file name -> serialized FileDescriptorProto, found in a Go binary."""
    data = memoryview(binary.read_bytes())
    found: dict[str, bytes] = {}
    for match in GZIP_HEADER.finditer(data):
        try:
            descriptor = zlib.decompressobj(wbits=31).decompress(data[match.start() :])
        except zlib.error:
            continue
        name = descriptor_name(descriptor)
        if name is not None:
            found.setdefault(name, descriptor)
    return found


def descriptor_name(descriptor: bytes) -> str | None:
    try:
        number, wire, value = next(fields(descriptor))
    except (ValueError, StopIteration):
        return None
    if number != 1 or wire != LENGTH or not isinstance(value, bytes):
        return None
    match = DESCRIPTOR_NAME.match(value.decode(errors="replace"))
    return match.group(1) if match else None


def values(data: bytes) -> Iterator[tuple[int, Any]]:
    for number, _, value in fields(data):
        yield number, value


def parse_file(descriptor: bytes) -> dict[str, ProtoMessage]:
    """Full message name -> message, for one FileDescriptorProto."""
    package = next(value.decode() for number, value in values(descriptor) if number == 2)
    messages: dict[str, ProtoMessage] = {}
    for number, value in values(descriptor):
        if number == 4:
            parse_message(value, package, messages)
    return messages


def parse_message(data: bytes, scope: str, messages: dict[str, ProtoMessage]) -> None:
    parts = list(values(data))
    name = f"{scope}.{next(value.decode() for number, value in parts if number == 1)}"
    message = messages.setdefault(name, ProtoMessage())
    for number, value in parts:
        if number == 2:
            message.fields.append(parse_field(value))
        elif number == 3:
            parse_message(value, name, messages)
        elif number == 7:
            message.map_entry = any(n == MAP_ENTRY_OPTION and v == 1 for n, v in values(value))


def parse_field(data: bytes) -> ProtoField:
    parts = dict(values(data))
    kind = parts[5]
    type_ = parts[6].decode().lstrip(".") if kind == MESSAGE_TYPE else SCALAR_TYPES.get(kind, f"type {kind}")
    options = dict(values(parts.get(8, b"")))
    return ProtoField(
        name=parts[1].decode(),
        number=parts[3],
        type=type_,
        repeated=parts.get(4) == REPEATED_LABEL,
        nullable=options.get(NULLABLE_OPTION, 1) != 0,
    )


def load_messages(binaries: Iterable[Path]) -> dict[str, ProtoMessage]:
    """All messages of all generated.proto files; the first binary given wins for each file."""
    files: dict[str, bytes] = {}
    for binary in binaries:
        for name, descriptor in read_descriptors(binary).items():
            files.setdefault(name, descriptor)
    messages: dict[str, ProtoMessage] = {}
    for descriptor in files.values():
        messages.update(parse_file(descriptor))
    for name, additions in APIEXTENSIONS_ADDITIONS.items():
        message = messages.setdefault(name, ProtoMessage())
        known = {f.number for f in message.fields}
        message.fields.extend(f for f in additions if f.number not in known)
    return messages


def definition_name(message: str) -> str:
    return "io.k8s." + message.removeprefix("k8s.io.").replace(
        "apiextensions_apiserver", "apiextensions-apiserver"
    )


def message_name(definition: str) -> str:
    return "k8s.io." + definition.removeprefix("io.k8s.").replace(
        "apiextensions-apiserver", "apiextensions_apiserver"
    )


def wanted_kinds() -> list[tuple[str, str, str]]:
    served = [(t.group, t.version, t.kind) for t in builtin_types(service_cidr="10.96.0.0/12", services=list)]
    versions = sorted({(group, version) for group, version, _ in served})
    shared = [(group, version, kind) for group, version in versions for kind in SHARED_KINDS]
    return served + EXTRA_KINDS + shared


def kinds_table(definitions: dict[str, Any]) -> dict[str, dict[str, str]]:
    """apiVersion -> kind -> message, found through the definitions' group-version-kind."""
    by_gvk = {
        (gvk["group"], gvk["version"], gvk["kind"]): message_name(name)
        for name, definition in definitions.items()
        for gvk in definition.get(GVK, [])
    }
    table: dict[str, dict[str, str]] = {}
    for group, version, kind in wanted_kinds():
        api_version = f"{group}/{version}" if group else version
        table.setdefault(api_version, {})[kind] = by_gvk[(group, version, kind)]
    return table


def normalized(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


class TableBuilder:
    """Walks the messages reachable from the kinds and writes each one's field table."""

    def __init__(self, messages: dict[str, ProtoMessage], definitions: dict[str, Any]) -> None:
        self.messages = messages
        self.definitions = definitions
        self.table: dict[str, dict[str, list[str]]] = {}
        self.specials: set[str] = set()

    def visit(self, name: str) -> None:
        if name in self.table or name in self.specials:
            return
        if name in SPECIALS:
            self.specials.add(name)
            self.check_special(name)
            return
        if name not in self.messages:
            raise SystemExit(f"message {name} is in none of the binaries' descriptors")
        entries: dict[str, list[str]] = {}
        self.table[name] = entries
        properties = self.properties(name)
        required = set(self.definitions.get(definition_name(name), {}).get("required", []))
        covered: set[str] = set()
        for proto_field in self.messages[name].fields:
            entry = self.entry(name, proto_field, properties, required)
            entries[str(proto_field.number)] = entry
            covered |= self.json_names(entry[1]) if "i" in entry[2] else {entry[0]}
        missing = properties - covered - {"apiVersion", "kind"}
        if missing:
            raise SystemExit(
                f"{name}: no protobuf field for {sorted(missing)}: descriptor older than definitions?"
            )

    def properties(self, name: str) -> set[str]:
        return set(self.definitions.get(definition_name(name), {}).get("properties", {}))

    def json_names(self, name: str) -> set[str]:
        """The JSON names of a message's fields: its definition's, or the proto names if it has none."""
        return self.properties(name) or {f.name for f in self.messages[name].fields}

    def entry(
        self, parent: str, proto_field: ProtoField, properties: set[str], required: set[str]
    ) -> list[str]:
        json_name, type_, flags = proto_field.name, proto_field.type, "r" if proto_field.repeated else ""
        target = self.messages.get(type_)
        if target is not None and target.map_entry:
            json_name, type_, flags = self.map_entry(proto_field, target)
        elif (item := self.list_wrapper(type_)) is not None:
            type_, flags = item, flags + "l"
        if properties:
            by_normal = {normalized(p): p for p in properties}
            if normalized(json_name) in by_normal:
                json_name = by_normal[normalized(json_name)]
            elif type_ in self.messages and self.json_names(type_) <= properties:
                flags += "i"
            else:
                raise SystemExit(f"{parent}.{proto_field.name}: no JSON property matches")
        if type_ in SCALAR_TYPES.values():
            if not flags and ((proto_field.nullable and type_ != "bytes") or json_name in required):
                flags = "k"
        elif "." in type_:
            self.visit(type_)
        else:
            raise SystemExit(f"{parent}.{proto_field.name}: unsupported {type_}")
        return [json_name, type_, flags]

    def map_entry(self, proto_field: ProtoField, entry: ProtoMessage) -> tuple[str, str, str]:
        key, value = sorted(entry.fields, key=lambda f: f.number)
        if key.type != "string":
            raise SystemExit(f"map {proto_field.name}: key type {key.type} is not string")
        wrapped = self.list_wrapper(value.type)
        return proto_field.name, wrapped or value.type, "ml" if wrapped else "m"

    def list_wrapper(self, name: str) -> str | None:
        """The item type of a named slice sent as `message X { repeated T items = 1; }`."""
        message = self.messages.get(name)
        if message is None or message.map_entry or name in SPECIALS or self.properties(name):
            return None
        if [(f.name, f.number, f.repeated) for f in message.fields] == [("items", 1, True)]:
            return message.fields[0].type
        return None

    def check_special(self, name: str) -> None:
        layout = {f.number: (f.name, f.type) for f in self.messages[name].fields}
        if layout != SPECIAL_LAYOUTS[name]:
            raise SystemExit(f"{name}: layout {layout} is not the one the decoder reads")
        for proto_field in self.messages[name].fields:
            if "." in proto_field.type:
                self.visit(proto_field.type)


def build(binaries: list[Path]) -> dict[str, Any]:
    definitions: dict[str, Any] = json.loads(gzip.decompress(DEFINITIONS.read_bytes()))
    kinds = kinds_table(definitions)
    builder = TableBuilder(load_messages(binaries), definitions)
    for by_kind in kinds.values():
        for message in by_kind.values():
            builder.visit(message)
    unused = set(SPECIALS) - builder.specials
    if unused:
        raise SystemExit(f"the decoder handles types no kind uses: {sorted(unused)}")
    return {"kinds": kinds, "messages": builder.table}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "binaries", nargs="+", type=Path, help="Go binaries carrying the descriptors, kubectl first"
    )
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    table = build(args.binaries)
    text = json.dumps(table, sort_keys=True, separators=(",", ":")).encode()
    args.output.write_bytes(gzip.compress(text, compresslevel=9, mtime=0))
    print(f"{args.output}: {len(table['messages'])} messages, {len(text)} bytes of JSON")


if __name__ == "__main__":
    main()
