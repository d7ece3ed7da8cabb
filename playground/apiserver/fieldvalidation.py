"""Server-side field validation: `?fieldValidation=Strict|Warn|Ignore` on create, update, patch and apply.

kube-apiserver decodes write bodies strictly unless told to `Ignore`: a field the schema
does not know (`unknown field "spec.foo"`) or a key repeated in one JSON object
(`duplicate field "metadata.name"`) fails the request under `Strict` and comes back as a
`Warning: 299 - "..."` header under `Warn`, the default. kubectl 1.32 sends `Strict`
because our OpenAPI v3 advertises the parameter, so typos in manifests must fail here
with the messages kube-apiserver words:

- create / update: 400 `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict
  decoding error: unknown field "bogus"`; JSON bodies report problems in document order
  (sigs.k8s.io/json), YAML bodies first go-yaml's duplicate keys, then unknown fields in
  key order (the YAML is re-encoded as JSON with sorted keys before decoding);
- JSON, merge and strategic merge patch: 422 `patch: Invalid value: "...": strict decoding
  error: ...`, the patch document's own problems first, then the unknown fields of the
  patched object;
- apply: repeated YAML keys are a 400 `error strict decoding YAML: ...`, and an applied
  configuration with undeclared fields fails as structured-merge-diff fails it (500
  `failed to create typed patch object (...): .spec.foo: field not declared in schema`).

Custom resources follow apiextensions-apiserver: repeated keys anywhere, then unknown
root metadata fields, then what pruning would drop (sorted), then unknown fields in the
metadata of embedded resources. Warn and Ignore let pruning drop them as before.

Deliberate deviation (product decision): built-in kinds keep unknown fields under Warn and
Ignore instead of dropping them. Since stored objects may therefore hold unknown fields,
an update or patch is only blamed for unknown fields the stored object does not have, so
an object read back from the server can be written back as read. `RawExtension`, `JSON`,
`FieldsV1` and CRD `JSONSchemaProps` are opaque: nothing inside them is checked.
"""

from __future__ import annotations

import functools
import json
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import yaml

from . import decoding, errors
from .decoding import GoYAMLLoader, json_key
from .errors import APIError, Cause
from .listtypes import ListTypes, Path
from .openapi import GVK_EXTENSION, OBJECT_META, V2_REF, load_builtin_definitions
from .patch import unexpected
from .resources.base import Obj, ResourceType
from .schema import (
    EMBEDDED_RESOURCE,
    INT_OR_STRING,
    PRESERVE_UNKNOWN,
    RESOURCE_META_FIELDS,
    go_json,
    go_print,
    go_quote,
    go_syntax,
)

IGNORE, WARN, STRICT = "Ignore", "Warn", "Strict"
#: what `?fieldValidation=` accepts ("" means the default, Warn), in kube's sorted order
ACCEPTED = ("", IGNORE, STRICT, WARN)
#: sigs.k8s.io/json stops collecting strict errors here
MAX_ERRORS = 100

JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_TYPES = (
    "application/json",
    "",
    "*/*",
    JSON_PATCH,
    "application/merge-patch+json",
    STRATEGIC_MERGE_PATCH,
)

#: definitions whose Go types unmarshal themselves: nothing inside them is a field
OPAQUE_DEFINITIONS = frozenset(
    {
        "io.k8s.apimachinery.pkg.runtime.RawExtension",
        "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
    }
)
OBJECT_META_REF = {"$ref": V2_REF + OBJECT_META}
#: a value decoded into Go's interface{}: any key is fine, repeated keys are not
ANY: Obj = {}
#: the Go struct kube-apiserver decodes JSON patch operations into
JSON_PATCH_OPS: Obj = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "op": {"type": "string"},
            "path": {"type": "string"},
            "from": {"type": "string"},
            "value": ANY,
        },
    },
}


def unsupported(value: str) -> Cause:
    """The field error of an invalid `?fieldValidation=` value."""
    supported = ", ".join(f'"{v}"' for v in ACCEPTED)
    return Cause(
        "fieldValidation",
        f'Unsupported value: "{value}": supported values: {supported}',
        "FieldValueNotSupported",
    )


# --- decoding with the repeated keys kept -------------------------------------------------------------------


@dataclass
class Decoded:
    """A request document and what plain decoding loses: repeated keys.

    `repeats` maps `id()` of every object that repeats a key to all its members in document
    order (discarded values included); `yaml_lines` are go-yaml's complaints about repeated
    YAML keys. A YAML document was re-encoded as JSON by kube, so its keys count as sorted.
    The handlers decode bodies on their own; this second reading only serves the checks.
    """

    value: Any
    repeats: dict[int, list[tuple[str, Any]]] = field(default_factory=dict)
    yaml_lines: list[str] = field(default_factory=list)
    from_yaml: bool = False


def load_json(body: bytes | str) -> Decoded:
    """`json.loads`, remembering the members of objects that repeat a key; raises ValueError like it."""
    repeats: dict[int, list[tuple[str, Any]]] = {}

    def build(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) < len(pairs):
            repeats[id(obj)] = pairs
        return obj

    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    return Decoded(json.loads(text, object_pairs_hook=build), repeats)


class _RepeatTrackingLoader(GoYAMLLoader):
    """The request decoder's YAML loader, also noting keys a mapping repeats the way go-yaml words them."""

    def __init__(self, stream: bytes | str) -> None:
        super().__init__(stream)
        self.repeated: list[tuple[int, int, str]] = []

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        mapping = super().construct_mapping(node, deep=deep)
        seen: set[str] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str | int | float | bool):
                continue
            if json_key(key, None) in seen:
                mark = key_node.start_mark
                text = f"line {mark.line + 1}: key {go_syntax(key)} already set in map"
                self.repeated.append((mark.line, mark.column, text))
            seen.add(json_key(key, None))
        return mapping


def load_yaml(body: bytes | str) -> Decoded:
    """The body as the request decoder loads it, noting repeated keys; raises yaml.YAMLError like it."""
    loader = _RepeatTrackingLoader(body)
    try:
        value = loader.get_single_data()
    finally:
        loader.dispose()
    return Decoded(value, yaml_lines=[text for *_, text in sorted(loader.repeated)], from_yaml=True)


def read(body: bytes, content_type: str) -> Decoded | None:
    """A write body as the strict decoders see it; None when it is not JSON or YAML (or does not parse)."""
    ctype = content_type.split(";")[0].strip().lower()
    try:
        if ctype in ("application/yaml", "application/apply-patch+yaml"):
            return load_yaml(body)
        if ctype in JSON_TYPES:
            return load_json(body)
    except (ValueError, yaml.YAMLError):
        return None
    return None


# --- what a strict decode reports -----------------------------------------------------------------------------


@dataclass
class StrictErrors:
    """The strict decoding errors of one document: go-yaml's repeated keys, then field errors."""

    yaml_lines: list[str] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.yaml_lines or self.fields)

    def message(self) -> str:
        """runtime.StrictDecodingError's text."""
        parts = [yaml_errors(self.yaml_lines)] if self.yaml_lines else []
        return "strict decoding error: " + ", ".join([*parts, *self.fields])

    def warnings(self) -> list[str]:
        """One warning per problem, go-yaml's lines split apart, as kube's addStrictDecodingWarnings does."""
        return [*self.yaml_lines, *self.fields]


def yaml_errors(lines: list[str]) -> str:
    """go-yaml's TypeError text for repeated keys."""
    return "yaml: unmarshal errors:\n" + "\n".join(f"  {line}" for line in lines)


def settle(
    problems: StrictErrors, directive: str, warnings: list[str], reject: Callable[[StrictErrors], APIError]
) -> None:
    """Fail (Strict), warn (Warn) or let pass (Ignore) a document with strict decoding problems."""
    if not problems or directive == IGNORE:
        return
    if directive == WARN:
        warnings.extend(problems.warnings())
        return
    raise reject(problems)


# --- schema shapes ----------------------------------------------------------------------------------------------


class Kind(Enum):
    STRUCT = "struct"  # known fields only (or, preserving unknown fields, known fields typed)
    MAP = "map"  # free-form keys, one value schema
    LIST = "list"
    ANY = "any"  # Go interface{}: anything, but objects may not repeat keys
    OPAQUE = "opaque"  # unmarshals itself: nothing inside is checked
    LEAF = "leaf"


@dataclass(frozen=True)
class Shape:
    kind: Kind
    fields: Mapping[str, Obj] = field(default_factory=dict)
    element: Obj | None = None
    open: bool = False


LEAF = Shape(Kind.LEAF)
OPAQUE = Shape(Kind.OPAQUE)
ANY_SHAPE = Shape(Kind.ANY)
SCALAR_TYPES = frozenset({"string", "integer", "number", "boolean"})
EMBEDDED_FIELDS: Mapping[str, Obj] = {
    "apiVersion": {"type": "string"},
    "kind": {"type": "string"},
    "metadata": OBJECT_META_REF,
}


class Schemas:
    """Shapes of schema nodes: swagger 2 definitions (following `$ref`) and CRD structural schemas alike."""

    def __init__(self, definitions: Mapping[str, Obj]) -> None:
        self.definitions = definitions
        self.by_gvk: dict[tuple[str, str, str], str] = {}
        for name, schema in definitions.items():
            kinds = schema.get(GVK_EXTENSION, [])
            if len(kinds) == 1:
                self.by_gvk[(kinds[0]["group"], kinds[0]["version"], kinds[0]["kind"])] = name
        self._named: dict[str, Shape] = {}

    def shape(self, schema: Obj | None) -> Shape:
        """What a node admits; a named definition's shape is worked out once and kept."""
        ref = schema.get("$ref") if schema is not None else None
        if not isinstance(ref, str):
            return _shape(schema)
        name = ref.removeprefix(V2_REF)
        found = self._named.get(name)
        if found is None:
            definition = self.definitions.get(name)
            found = self._named[name] = OPAQUE if name in OPAQUE_DEFINITIONS else _shape(definition)
        return found


def _shape(schema: Obj | None) -> Shape:
    if schema is None:
        return ANY_SHAPE
    node_type = schema.get("type")
    if node_type in SCALAR_TYPES or schema.get(INT_OR_STRING):
        return LEAF
    props: Mapping[str, Obj] = schema.get("properties") or {}
    if schema.get(EMBEDDED_RESOURCE):
        props = {**props, **EMBEDDED_FIELDS}
    extra = schema.get("additionalProperties")
    preserve = bool(schema.get(PRESERVE_UNKNOWN))
    if extra is not None and extra is not False and not props:
        return Shape(Kind.MAP, element=extra if isinstance(extra, dict) else ANY)
    if props or node_type == "object":
        return Shape(Kind.STRUCT, props, open=preserve)
    if preserve:
        return OPAQUE
    if node_type == "array":
        return Shape(Kind.LIST, element=schema.get("items") or ANY)
    return ANY_SHAPE


def child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# --- sigs.k8s.io/json's strict decode -----------------------------------------------------------------------------


class StrictDecode:
    """Replays a strict decode of a document into a schema: unknown and repeated fields, in decode order.

    Members are visited in document order (or sorted, for documents kube re-encoded);
    an unknown field is reported once and not looked into; a repeated known field (or map
    key, or any key under interface{}) is reported where it repeats.
    """

    def __init__(self, schemas: Schemas, decoded: Decoded | None = None, *, sort_keys: bool = False) -> None:
        self.schemas = schemas
        self.repeats = decoded.repeats if decoded else {}
        self.sort_keys = sort_keys
        self.errors: list[str] = []

    def run(self, value: Any, schema: Obj | None, path: str = "") -> list[str]:
        self._value(value, schema, path)
        return self.errors

    def _report(self, text: str) -> None:
        if len(self.errors) < MAX_ERRORS and text not in self.errors:
            self.errors.append(text)

    def _value(self, value: Any, schema: Obj | None, path: str) -> None:
        if not isinstance(value, dict | list):
            return
        shape = self.schemas.shape(schema)
        if isinstance(value, dict) and shape.kind in (Kind.STRUCT, Kind.MAP, Kind.ANY):
            self._object(value, shape, path)
        elif isinstance(value, list) and shape.kind in (Kind.LIST, Kind.ANY):
            element = shape.element if shape.kind is Kind.LIST else ANY
            for index, item in enumerate(value):
                self._value(item, element, f"{path}[{index}]")

    def _members(self, value: dict[str, Any]) -> Iterable[tuple[str, Any]]:
        repeated = self.repeats.get(id(value))
        if repeated is not None:
            return repeated
        return sorted(value.items()) if self.sort_keys else value.items()

    def _object(self, value: dict[str, Any], shape: Shape, path: str) -> None:
        seen: set[str] = set()
        for key, item in self._members(value):
            where = child(path, key)
            if shape.kind is Kind.STRUCT and key not in shape.fields and not shape.open:
                self._report(f'unknown field "{where}"')
                continue
            if key in seen:
                self._report(f'duplicate field "{where}"')
            seen.add(key)
            self._value(item, _member_schema(shape, key), where)


def _member_schema(shape: Shape, key: str) -> Obj | None:
    if shape.kind is Kind.STRUCT:
        return shape.fields.get(key, ANY)
    return shape.element if shape.kind is Kind.MAP else ANY


# --- custom resources: what pruning and metadata coercion drop -------------------------------------------------


@dataclass
class _Pruned:
    """Unknown field paths of a custom resource, grouped as apiextensions-apiserver reports them."""

    schemas: Schemas
    pruned: list[str] = field(default_factory=list)
    #: the errors (not paths) of unknown fields in embedded resources' metadata
    embedded_meta: list[str] = field(default_factory=list)

    def walk(self, value: Any, schema: Obj | None, path: str, *, embedded: bool = False) -> None:
        if schema is not None and schema.get(PRESERVE_UNKNOWN):
            self._known(value, schema, path)
        elif isinstance(value, dict):
            self._object(value, schema, path, embedded=embedded)
        elif isinstance(value, list):
            items = schema.get("items") if schema is not None else None
            for index, item in enumerate(value):
                self.walk(item, items, f"{path}[{index}]")

    def _object(self, value: Obj, schema: Obj | None, path: str, *, embedded: bool) -> None:
        if schema is None:
            self.pruned.extend(child(path, key) for key in value)
            return
        props, extra = schema.get("properties") or {}, schema.get("additionalProperties")
        for key, item in value.items():
            if (embedded or schema.get(EMBEDDED_RESOURCE)) and key in RESOURCE_META_FIELDS:
                self._embedded_meta(key, item, path, root=embedded)
            elif key in props:
                self.walk(item, props[key], child(path, key))
            elif extra is not None and extra is not False:
                self.walk(item, extra if isinstance(extra, dict) else None, child(path, key))
            else:
                self.pruned.append(child(path, key))

    def _known(self, value: Any, schema: Obj, path: str) -> None:
        """Below preserve-unknown-fields only the declared fields are pruned."""
        if isinstance(value, dict):
            props, extra = schema.get("properties") or {}, schema.get("additionalProperties")
            for key, item in value.items():
                if schema.get(EMBEDDED_RESOURCE) and key in RESOURCE_META_FIELDS:
                    self._embedded_meta(key, item, path, root=False)
                elif key in props:
                    self.walk(item, props[key], child(path, key))
                elif isinstance(extra, dict):
                    self.walk(item, extra, child(path, key))
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            for index, item in enumerate(value):
                self._known(item, schema["items"], f"{path}[{index}]")

    def _embedded_meta(self, key: str, value: Any, path: str, *, root: bool) -> None:
        if key == "metadata" and not root:
            self.embedded_meta.extend(object_meta_unknowns(self.schemas, value, child(path, "metadata")))


def object_meta_unknowns(schemas: Schemas, meta: Any, path: str) -> list[str]:
    """`unknown field` errors of an ObjectMeta, found as kube finds them: re-encoded (sorted keys), decoded strictly."""
    return StrictDecode(schemas, sort_keys=True).run(meta, OBJECT_META_REF, path)


def custom_resource_unknowns(schemas: Schemas, obj: Obj, schema: Obj | None) -> list[str]:
    """`unknown field` errors of a custom resource: root metadata, pruned fields, embedded metadata."""
    pruned = _Pruned(schemas)
    pruned.walk(obj, schema or {PRESERVE_UNKNOWN: True}, "", embedded=True)
    return [
        *object_meta_unknowns(schemas, obj.get("metadata"), "metadata"),
        *(f'unknown field "{path}"' for path in sorted(pruned.pruned)),
        *sorted(pruned.embedded_meta),
    ]


# --- structured-merge-diff's typed conversion of an applied configuration ----------------------------------------


@dataclass
class _Undeclared:
    """Fields structured-merge-diff finds undeclared: per object the first one (it stops there), SMD paths."""

    schemas: Schemas
    list_types: ListTypes
    errors: list[str] = field(default_factory=list)

    def walk(self, value: Any, schema: Obj | None, path: str, names: Path) -> None:
        shape = self.schemas.shape(schema)
        if isinstance(value, dict) and shape.kind in (Kind.STRUCT, Kind.MAP):
            for key in sorted(value):
                if shape.kind is Kind.STRUCT and key not in shape.fields and not shape.open:
                    self.errors.append(f"{path}.{key}: field not declared in schema")
                    return
                self.walk(value[key], _member_schema(shape, key), f"{path}.{key}", (*names, key))
        elif isinstance(value, list) and shape.kind is Kind.LIST:
            for index, item in enumerate(value):
                self.walk(item, shape.element, path + self._element(names, index, item), names)

    def _element(self, names: Path, index: int, item: Any) -> str:
        list_type = self.list_types.list_type(names)
        if list_type.kind == "set" and not isinstance(item, dict | list):
            return f"[={_dump(item)}]"
        if list_type.kind == "map" and isinstance(item, dict) and all(k in item for k in list_type.keys):
            return "[" + ",".join(f"{k}={_dump(item[k])}" for k in list_type.keys) + "]"
        return f"[{index}]"


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --- the validator the registry and handlers use ----------------------------------------------------------------


class FieldValidator:
    """Strict decoding checks for one server; built-in schemas are loaded on first use, then kept."""

    def __init__(self, definitions: Callable[[], Mapping[str, Obj]] = load_builtin_definitions) -> None:
        self._load = definitions
        self._roots: weakref.WeakKeyDictionary[ResourceType, Obj] = weakref.WeakKeyDictionary()

    @functools.cached_property
    def schemas(self) -> Schemas:
        return Schemas(self._load())

    def root(self, rt: ResourceType) -> Obj:
        """The schema a kind's objects decode into: its built-in definition, or its CRD schema as published."""
        if rt not in self._roots:
            self._roots[rt] = self._find_root(rt)
        return self._roots[rt]

    def _find_root(self, rt: ResourceType) -> Obj:
        if rt.crd:
            schema = rt.schema or {"type": "object", PRESERVE_UNKNOWN: True}
            return {**schema, EMBEDDED_RESOURCE: True}
        name = self.schemas.by_gvk.get((rt.group, rt.version, rt.kind))
        return ANY if name is None else {"$ref": V2_REF + name}

    # -- create and update

    def check_body(
        self,
        rt: ResourceType,
        body: bytes,
        content_type: str,
        *,
        directive: str,
        warnings: list[str],
        stored: Obj | None = None,
    ) -> None:
        """A create or update body: 400 under Strict, warnings under Warn.

        An update is not blamed for unknown fields the `stored` object already has: a
        built-in object read back from the server must be writable as it was read.
        """
        decoded = None if directive == IGNORE else read(body, content_type)
        if decoded is None or not _addressed_to(rt, decoded.value):
            return
        found = self._body_errors(rt, decoded)
        if found and stored is not None:
            kept = set(self.unknown_fields(rt, stored))
            found = [e for e in found if e not in kept]
        problems = StrictErrors(list(decoded.yaml_lines), found)
        if problems and not _decodes(rt, decoded.value):
            return
        version = str(decoded.value.get("apiVersion") or rt.api_version).rpartition("/")[2]
        settle(
            problems,
            directive,
            warnings,
            lambda found: errors.bad_request(
                f'{rt.kind} in version "{version}" cannot be handled as a {rt.kind}: {found.message()}'
            ),
        )

    def _body_errors(self, rt: ResourceType, decoded: Decoded) -> list[str]:
        if rt.crd:
            repeated = StrictDecode(self.schemas, decoded).run(decoded.value, ANY)
            return [*repeated, *custom_resource_unknowns(self.schemas, decoded.value, rt.schema)]
        return StrictDecode(self.schemas, decoded, sort_keys=decoded.from_yaml).run(
            decoded.value, self.root(rt)
        )

    # -- patches

    def check_patched(
        self,
        rt: ResourceType,
        content_type: str,
        body: bytes,
        patched: Obj,
        old: Obj,
        *,
        directive: str,
        warnings: list[str],
    ) -> None:
        """A JSON, merge or strategic merge patch: its own problems, then the unknown fields it introduced (422)."""
        patch = None if directive == IGNORE else read(body, content_type)
        if patch is None:
            return
        problems = StrictErrors(fields=self._patch_errors(content_type, patch))
        introduced = self.unknown_fields(rt, patched)
        if introduced:
            before = set(self.unknown_fields(rt, old))
            problems.fields += [f for f in introduced if f not in before]

        def reject(found: StrictErrors) -> APIError:
            shown = go_print(patch.value) if content_type == STRATEGIC_MERGE_PATCH else go_json(patched)
            cause = Cause("patch", f"Invalid value: {go_quote(shown)}: {found.message()}")
            return APIError(
                422, "Invalid", f' "" is invalid: patch: {cause.message}', {"causes": [cause.as_dict()]}
            )

        settle(problems, directive, warnings, reject)

    def _patch_errors(self, content_type: str, patch: Decoded) -> list[str]:
        if content_type == JSON_PATCH:
            return [
                f"json patch {e}" for e in StrictDecode(self.schemas, patch).run(patch.value, JSON_PATCH_OPS)
            ]
        return StrictDecode(self.schemas, patch).run(patch.value, ANY)

    def unknown_fields(self, rt: ResourceType, obj: Obj) -> list[str]:
        """`unknown field` errors of a whole object decoded from kube's JSON encoding (sorted keys)."""
        if rt.crd:
            return custom_resource_unknowns(self.schemas, obj, rt.schema)
        return StrictDecode(self.schemas, sort_keys=True).run(obj, self.root(rt))

    # -- server-side apply

    def check_applied(
        self, rt: ResourceType, config: Obj, list_types: ListTypes, *, directive: str, warnings: list[str]
    ) -> None:
        """An applied configuration: undeclared fields fail its typed conversion under Strict (500)."""
        if directive == IGNORE:
            return
        if directive == WARN:
            warnings.extend(self.unknown_fields(rt, config))
            return
        walker = _Undeclared(self.schemas, list_types)
        walker.walk(config, self.root(rt), "", ())
        if walker.errors:
            raise unexpected(
                f"failed to create typed patch object ({_typed_name(config)}): {_smd_errors(walker.errors)}"
            )

    def check_apply_yaml(self, body: bytes, *, directive: str, warnings: list[str]) -> None:
        """Repeated keys of an apply patch, checked after the apply itself succeeded."""
        patch = None if directive == IGNORE else read(body, "application/apply-patch+yaml")
        if patch is None:
            return
        problems = StrictErrors(list(patch.yaml_lines))
        settle(
            problems,
            directive,
            warnings,
            lambda found: errors.bad_request(
                "error strict decoding YAML: error converting YAML to JSON: " + yaml_errors(found.yaml_lines)
            ),
        )


def _addressed_to(rt: ResourceType, body: Any) -> bool:
    """Whether a body is a `rt` object; anything else fails decoding before field validation matters."""
    return (
        isinstance(body, dict)
        and body.get("apiVersion") in (None, "", rt.api_version)
        and body.get("kind") in (None, "", rt.kind)
    )


def _decodes(rt: ResourceType, body: Obj) -> bool:
    """Whether a built-in body fits its Go types: a type error trumps strict errors, kube reports it alone."""
    if rt.crd:
        return True
    try:
        decoding.typed(rt.group, rt.version, rt.kind, body)
    except decoding.TypeMismatch:
        return False
    return True


def _typed_name(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    return (
        f"{meta.get('namespace', '')}/{meta.get('name', '')}; {group}/{version}, Kind={obj.get('kind', '')}"
    )


def _smd_errors(found: list[str]) -> str:
    """structured-merge-diff's ValidationErrors text."""
    if len(found) == 1:
        return found[0]
    return "\n".join(["errors:", *(f"  {e}" for e in found)])
