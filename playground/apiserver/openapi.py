"""The OpenAPI documents kube-apiserver publishes, built from the served resource types.

kubectl cannot work without them: `kubectl apply` fetches `/openapi/v2` (protobuf) for
client-side validation, asks the `/openapi/v3` group-version documents whether PATCH
takes the `fieldValidation` query parameter (if so it leaves validation to the server)
and computes its strategic merge patch from the v3 schemas' `x-kubernetes-patch-*`
extensions; `kubectl explain` reads a v3 document, finds the kind through the
`x-kubernetes-group-version-kind` of the resource's operations and then the schema
carrying the same extension.

Built-in kinds use kube-apiserver 1.32's own definitions (`data/`, made by
`tools/gen_builtin_schemas.py`); custom resources are converted from their CRD's
openAPIV3Schema the way apiextensions-apiserver publishes them. Documents are built once
per set of served types (it changes when CRDs come and go) and carry the sha512 hash
that `?hash=` URLs and ETags use, so clients cache them as they would a real server's.
`OpenAPI.serve` does the content negotiation and caching headers of the real handlers.
"""

from __future__ import annotations

import copy
import email.utils
import gzip
import hashlib
import json
import struct
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from aiohttp import web

from .resources.base import Obj, ResourceType
from .resources.catalog import Catalog

APPLICATION_JSON = "application/json"
V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
V2_PROTOBUF_DOTTED = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
OPENAPI_PATH = "/openapi"
V2_PATH = OPENAPI_PATH + "/v2"
V3_PATH = OPENAPI_PATH + "/v3"
KUBERNETES_VERSION = "v1.32.0"
DATA_FILE = "builtin-definitions.json.gz"

V2_REF = "#/definitions/"
V3_REF = "#/components/schemas/"
GVK_EXTENSION = "x-kubernetes-group-version-kind"
META = "io.k8s.apimachinery.pkg.apis.meta.v1."
OBJECT_META = META + "ObjectMeta"
LIST_META = META + "ListMeta"
STATUS = META + "Status"
DELETE_OPTIONS = META + "DeleteOptions"
WATCH_EVENT = META + "WatchEvent"
PATCH = META + "Patch"
#: the definition whose apiVersion/kind/metadata descriptions custom resources borrow
TYPE_META_DONOR = "io.k8s.api.core.v1.ConfigMap"

PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
PRODUCES = (APPLICATION_JSON, "application/yaml")
WATCH_PRODUCES = (*PRODUCES, "application/json;stream=watch")
LIST_QUERY = (
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
)
WRITE_QUERY = ("dryRun", "fieldManager", "fieldValidation")
#: what PUT, POST and PATCH share: the write parameters, any body type, 200 or 201
WRITE: dict[str, Any] = {"query": WRITE_QUERY, "consumes": ("*/*",), "codes": ("200", "201")}
DELETE_QUERY = ("dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy")

QUERY_PARAMETERS: dict[str, tuple[str, str]] = {
    "pretty": ("string", "If 'true', then the output is pretty printed."),
    "dryRun": (
        "string",
        "When present, indicates that modifications should not be persisted. The only valid value is "
        "All: every dry run stage is processed, and nothing is stored.",
    ),
    "fieldManager": (
        "string",
        "A name for the actor or entity making these changes, recorded in managedFields. At most 128 "
        "printable characters.",
    ),
    "fieldValidation": (
        "string",
        "How the server treats fields of the request body that the schema does not know or that appear "
        "twice: Ignore drops them silently, Warn (the default) drops them and answers a warning for each, "
        "Strict fails the request with BadRequest.",
    ),
    "force": ("boolean", "Force an apply request to take over fields owned by other managers."),
    "gracePeriodSeconds": (
        "integer",
        "Seconds before the object is deleted; zero deletes at once, unset takes the kind's default.",
    ),
    "orphanDependents": ("boolean", "Deprecated: use propagationPolicy. Whether dependents are orphaned."),
    "propagationPolicy": (
        "string",
        "Whether and how garbage collection handles dependents: Orphan, Background or Foreground.",
    ),
    "allowWatchBookmarks": ("boolean", "Ask a watch for BOOKMARK events."),
    "continue": ("string", "The continue token of the previous page of a paginated list."),
    "fieldSelector": ("string", "Restrict the objects returned by their fields."),
    "labelSelector": ("string", "Restrict the objects returned by their labels."),
    "limit": ("integer", "The most objects a list answers with; more are reached with continue."),
    "resourceVersion": ("string", "Which version of the collection a list or watch starts from."),
    "resourceVersionMatch": ("string", "How resourceVersion is applied to a list: Exact or NotOlderThan."),
    "sendInitialEvents": ("boolean", "Start a watch with synthetic ADDED events for the existing objects."),
    "timeoutSeconds": ("integer", "Time limit of a list or watch call."),
    "watch": ("boolean", "Watch for changes to the described resources instead of listing them."),
}
PATH_PARAMETERS = {
    "name": "name of the object",
    "namespace": "object name and auth scope, such as for teams and projects",
}

#: subresource -> (methods, group, version, kind of its body; "" takes the resource's own kind)
SUBRESOURCES: dict[str, tuple[tuple[str, ...], str, str, str]] = {
    "status": (("get", "put", "patch"), "", "", ""),
    "approval": (("get", "put", "patch"), "", "", ""),
    "ephemeralcontainers": (("get", "put", "patch"), "", "", ""),
    "finalize": (("put",), "", "", ""),
    "scale": (("get", "put", "patch"), "autoscaling", "v1", "Scale"),
    "binding": (("post",), "", "v1", "Binding"),
    "eviction": (("post",), "policy", "v1", "Eviction"),
    "token": (("post",), "authentication.k8s.io", "v1", "TokenRequest"),
}
ACTION_VERBS = {
    "list": "list",
    "get": "read",
    "post": "create",
    "put": "replace",
    "patch": "patch",
    "delete": "delete",
    "deletecollection": "deleteCollection",
    "watch": "watch",
    "watchlist": "watch",
}
RESPONSE_DESCRIPTIONS = {"200": "OK", "201": "Created", "202": "Accepted"}
CACHED_TYPE_SETS = 8


def load_builtin_definitions() -> dict[str, Obj]:
    """kube-apiserver 1.32's swagger `definitions`, shipped as package data."""
    raw = resources.files(__package__ or __name__).joinpath("data", DATA_FILE).read_bytes()
    definitions: dict[str, Obj] = json.loads(gzip.decompress(raw))
    return definitions


def document_hash(body: bytes) -> str:
    """What kube-openapi puts in `?hash=` and (quoted) in ETag: the upper-case hex sha512."""
    return hashlib.sha512(body).hexdigest().upper()


def group_version_path(group: str, version: str) -> str:
    """`api/v1` or `apis/<group>/<version>`: the key of a group-version in `/openapi/v3`."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def crd_definition_name(group: str, version: str, kind: str) -> str:
    """`io.liqo.core.v1beta1.ForeignCluster` for core.liqo.io/v1beta1 ForeignCluster."""
    prefix = reversed(group.split(".")) if group else ["io", "k8s", "api", "core"]
    return ".".join([*prefix, version, kind])


def gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "kind": kind, "version": version}


@dataclass(frozen=True)
class Reply:
    """What an OpenAPI route answers: status, headers and body, independent of the HTTP framework."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


# ---------------------------------------------------------------------------- schemas


def v3_schema(schema: Obj) -> Obj:
    """A v2 definition as OpenAPI v3 writes it: refs under components, refs with siblings in allOf."""
    out: Obj = {}
    for key, value in schema.items():
        if key == "properties":
            out[key] = {name: v3_schema(prop) for name, prop in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = v3_schema(value)
        elif key != "$ref":
            out[key] = value
    ref = schema.get("$ref")
    if ref is None:
        return out
    target = {"$ref": V3_REF + ref.removeprefix(V2_REF)}
    return {"allOf": [target], **out} if out else target


#: v3 spells these two as oneOf, v2 (which has no oneOf) as a string with a format
V3_PRIMITIVES = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": [{"type": "integer"}, {"type": "string"}],
    "io.k8s.apimachinery.pkg.api.resource.Quantity": [{"type": "string"}, {"type": "number"}],
}


def v3_definition(name: str, schema: Obj) -> Obj:
    one_of = V3_PRIMITIVES.get(name)
    if one_of is None:
        return v3_schema(schema)
    out = {k: v for k, v in schema.items() if k != "type"}
    out["oneOf"] = one_of
    return out


def refs_of(schema: Any, prefix: str = V2_REF) -> Iterator[str]:
    """Names of the definitions a schema (or any JSON under it) refers to."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str):
                yield value.removeprefix(prefix)
            else:
                yield from refs_of(value, prefix)
    elif isinstance(schema, list):
        for item in schema:
            yield from refs_of(item, prefix)


def v2_structural(schema: Obj) -> Obj:
    """A CRD schema cut down to what OpenAPI v2 (and kubectl's v2 reader) can express.

    Follows apiextensions-apiserver: no allOf/anyOf/oneOf/not; a nullable field loses its
    type, items and properties and stops being required; so does the content of a field
    that preserves unknown fields; an array left without items loses its type.
    """
    out = {k: v for k, v in schema.items() if k not in ("allOf", "anyOf", "oneOf", "not", "nullable")}
    if "properties" in out:
        out["properties"] = {name: v2_structural(prop) for name, prop in out["properties"].items()}
        nullable = {name for name, prop in schema["properties"].items() if prop.get("nullable")}
        if nullable and "required" in out:
            out["required"] = [name for name in out["required"] if name not in nullable]
    if isinstance(out.get("items"), dict):
        out["items"] = v2_structural(out["items"])
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = v2_structural(out["additionalProperties"])
    if schema.get("nullable"):
        out.pop("type", None)
    if schema.get("nullable") or schema.get("x-kubernetes-preserve-unknown-fields"):
        out.pop("items", None)
        out.pop("properties", None)
    if out.get("type") == "array" and "items" not in out:
        out.pop("type")
    if out.get("required") == []:
        out.pop("required")
    return out


@dataclass(frozen=True)
class TypeMeta:
    """The apiVersion/kind/metadata property schemas every published kind carries (v2 form)."""

    api_version: Obj
    kind: Obj
    metadata_description: str

    @classmethod
    def borrowed(cls, definitions: Mapping[str, Obj]) -> TypeMeta:
        donor = definitions[TYPE_META_DONOR]["properties"]
        return cls(donor["apiVersion"], donor["kind"], donor["metadata"]["description"])

    def properties(self, metadata_ref: str, *, metadata_description: str = "") -> Obj:
        description = metadata_description or self.metadata_description
        return {
            "apiVersion": dict(self.api_version),
            "kind": dict(self.kind),
            "metadata": {"$ref": V2_REF + metadata_ref, "description": description},
        }


def custom_definitions(rt: ResourceType, type_meta: TypeMeta) -> dict[str, tuple[Obj, Obj]]:
    """The (v2, v3) definitions of a custom resource and of its list, named like apiextensions does."""
    name = crd_definition_name(rt.group, rt.version, rt.kind)
    source = (
        copy.deepcopy(rt.schema)
        if rt.schema
        else {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    )
    v2 = with_type_meta(v2_structural(source), rt, rt.kind, type_meta)
    v3 = with_type_meta(source, rt, rt.kind, type_meta)
    items = {"description": f"List of {rt.plural}.", "items": {"$ref": V2_REF + name}, "type": "array"}
    list_meta = type_meta.properties(LIST_META, metadata_description="Standard list metadata.")
    listing = {
        "description": f"{rt.list_kind} is a list of {rt.kind}",
        "properties": {**list_meta, "items": items},
        "required": ["items"],
        "type": "object",
        GVK_EXTENSION: [gvk(rt.group, rt.version, rt.list_kind)],
    }
    return {
        name: (v2, v3_schema(v3)),
        name + "List": (listing, v3_schema(listing)),
    }


def with_type_meta(schema: Obj, rt: ResourceType, kind: str, type_meta: TypeMeta) -> Obj:
    out = dict(schema)
    out["type"] = "object"
    out["properties"] = {**schema.get("properties", {}), **type_meta.properties(OBJECT_META)}
    out[GVK_EXTENSION] = [gvk(rt.group, rt.version, kind)]
    return out


# ---------------------------------------------------------------------------- operations


@dataclass(frozen=True)
class Operation:
    """One HTTP operation on a resource path, rendered into both v2 and v3 documents."""

    path: str
    method: str
    action: str
    operation_id: str
    description: str
    gvk: tuple[str, str, str]
    query: tuple[str, ...] = ()
    body: str = ""
    response: str = ""
    codes: tuple[str, ...] = ("200",)
    consumes: tuple[str, ...] = ()
    produces: tuple[str, ...] = PRODUCES
    tag: str = ""

    @property
    def path_parameters(self) -> list[str]:
        return [name for name in ("name", "namespace") if "{" + name + "}" in self.path]


def camel_group(group: str) -> str:
    """The group as operation ids spell it: `Core`, `Apps`, `RbacAuthorization`, `CoreLiqoIo`."""
    if not group:
        return "Core"
    parts = group.removesuffix(".k8s.io").replace("-", ".").split(".")
    return "".join(part[:1].upper() + part[1:] for part in parts)


@dataclass(frozen=True)
class ResourceNames:
    """The definitions one resource type's operations refer to."""

    kind: str
    listing: str
    by_gvk: Mapping[tuple[str, str, str], str]


class OperationBuilder:
    """Turns a resource type and its verbs into the operations kube-apiserver would publish."""

    def __init__(self, rt: ResourceType, names: ResourceNames) -> None:
        self.rt = rt
        self.names = names
        self.id_part = camel_group(rt.group) + rt.version[:1].upper() + rt.version[1:]
        self.tag = camel_group(rt.group)[:1].lower() + camel_group(rt.group)[1:] + "_" + rt.version
        base = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
        scope = "/namespaces/{namespace}" if rt.namespaced else ""
        self.base = base
        self.collection = f"{base}{scope}/{rt.plural}"
        self.item = self.collection + "/{name}"
        self.patch_types = PATCH_TYPES if rt.crd else (*PATCH_TYPES, STRATEGIC_MERGE_PATCH)

    def operations(self) -> list[Operation]:
        ops = self.collection_operations() + self.item_operations()
        for sub in self.rt.subresources:
            ops += self.subresource_operations(sub)
        return ops

    def op(self, method: str, action: str, path: str, *, suffix: str = "", **kw: Any) -> Operation:
        namespaced = "Namespaced" if self.rt.namespaced and "{namespace}" in path else ""
        verb = ACTION_VERBS[action]
        gvk_tuple = kw.pop("gvk", (self.rt.group, self.rt.version, self.rt.kind))
        description = kw.pop("description", f"{verb} {self.rt.kind}{suffix and ' ' + suffix}")
        return Operation(
            path=path,
            method=method,
            action=action,
            operation_id=f"{verb}{self.id_part}{namespaced}{self.rt.kind}{suffix}",
            description=description,
            gvk=gvk_tuple,
            tag=self.tag,
            **kw,
        )

    def read(self, path: str, definition: str, **kw: Any) -> Operation:
        return self.op("get", "get", path, response=definition, **kw)

    def write(self, method: str, path: str, definition: str, **kw: Any) -> Operation:
        fields = {**WRITE, "body": definition, "response": definition, **kw}
        return self.op(method, method, path, **fields)

    def create(self, path: str, definition: str, **kw: Any) -> Operation:
        return self.write("post", path, definition, codes=("200", "201", "202"), **kw)

    def replace(self, path: str, definition: str, **kw: Any) -> Operation:
        return self.write("put", path, definition, **kw)

    def patch(self, path: str, definition: str, **kw: Any) -> Operation:
        query = (*WRITE_QUERY, "force")
        return self.write("patch", path, definition, body=PATCH, query=query, consumes=self.patch_types, **kw)

    def remove(self, action: str, path: str, query: tuple[str, ...], **kw: Any) -> Operation:
        return self.op(
            "delete", action, path, query=query, body=DELETE_OPTIONS, response=STATUS, consumes=("*/*",), **kw
        )

    def listing(self, path: str, **kw: Any) -> Operation:
        response = self.names.listing
        return self.op(
            "get", "list", path, query=LIST_QUERY, response=response, produces=WATCH_PRODUCES, **kw
        )

    def collection_operations(self) -> list[Operation]:
        verbs, rt = self.rt.verbs, self.rt
        ops: list[Operation] = []
        if "list" in verbs:
            ops.append(self.listing(self.collection))
            if rt.namespaced:
                ops.append(self.listing(f"{self.base}/{rt.plural}", suffix="ForAllNamespaces"))
        if "watch" in verbs:
            ops += self.watch_operations()
        if "create" in verbs:
            ops.append(self.create(self.collection, self.names.kind))
        if "deletecollection" in verbs:
            ops.append(self.remove("deletecollection", self.collection, LIST_QUERY + DELETE_QUERY))
        return ops

    def watch_operations(self) -> list[Operation]:
        watch_base = self.base + "/watch"
        scope = "/namespaces/{namespace}" if self.rt.namespaced else ""
        collection = f"{watch_base}{scope}/{self.rt.plural}"
        common: dict[str, Any] = {"query": LIST_QUERY, "response": WATCH_EVENT, "produces": WATCH_PRODUCES}
        ops = [
            self.op("get", "watchlist", collection, suffix="List", **common),
            self.op("get", "watch", collection + "/{name}", **common),
        ]
        if self.rt.namespaced:
            all_namespaces = f"{watch_base}/{self.rt.plural}"
            ops.append(self.op("get", "watchlist", all_namespaces, suffix="ListForAllNamespaces", **common))
        return ops

    def item_operations(self) -> list[Operation]:
        kind = self.names.kind
        builders: dict[str, Callable[[], Operation]] = {
            "get": lambda: self.read(self.item, kind),
            "update": lambda: self.replace(self.item, kind),
            "patch": lambda: self.patch(self.item, kind),
            "delete": lambda: self.remove("delete", self.item, DELETE_QUERY, codes=("200", "202")),
        }
        return [build() for verb, build in builders.items() if verb in self.rt.verbs]

    def subresource_operations(self, sub: str) -> list[Operation]:
        known = SUBRESOURCES.get(sub)
        if known is None:
            return []
        methods, group, version, kind = known
        target = (group, version, kind) if kind else (self.rt.group, self.rt.version, self.rt.kind)
        definition = self.names.by_gvk.get(target) if kind else self.names.kind
        if definition is None:
            return []
        builders = {"get": self.read, "put": self.replace, "patch": self.patch, "post": self.create}
        suffix = sub[:1].upper() + sub[1:]
        return [builders[m](f"{self.item}/{sub}", definition, gvk=target, suffix=suffix) for m in methods]


def v2_operation(op: Operation) -> Obj:
    params: list[Obj] = [v2_query_parameter(name) for name in op.query]
    if op.body:
        params.append({"in": "body", "name": "body", "required": True, "schema": {"$ref": V2_REF + op.body}})
    responses: Obj = {code: {"description": RESPONSE_DESCRIPTIONS[code]} for code in op.codes}
    if op.response:
        for code in op.codes:
            responses[code]["schema"] = {"$ref": V2_REF + op.response}
    responses["401"] = {"description": "Unauthorized"}
    out: Obj = {
        "description": op.description,
        "operationId": op.operation_id,
        "produces": list(op.produces),
        "schemes": ["https"],
        "tags": [op.tag],
        "parameters": params,
        "responses": responses,
        "x-kubernetes-action": op.action,
        GVK_EXTENSION: gvk(*op.gvk),
    }
    if op.consumes:
        out["consumes"] = list(op.consumes)
    return out


def v2_query_parameter(name: str) -> Obj:
    kind, description = QUERY_PARAMETERS[name]
    return {"description": description, "in": "query", "name": name, "type": kind, "uniqueItems": True}


def v2_path_parameters(op: Operation) -> list[Obj]:
    params: list[Obj] = [
        {
            "description": PATH_PARAMETERS[name],
            "in": "path",
            "name": name,
            "required": True,
            "type": "string",
            "uniqueItems": True,
        }
        for name in op.path_parameters
    ]
    return [*params, v2_query_parameter("pretty")]


def v3_operation(op: Operation) -> Obj:
    content = {"schema": {"$ref": V3_REF + op.response}} if op.response else {}
    responses: Obj = {
        code: {"description": RESPONSE_DESCRIPTIONS[code], "content": {t: content for t in op.produces}}
        for code in op.codes
    }
    responses["401"] = {"description": "Unauthorized"}
    out: Obj = {
        "tags": [op.tag],
        "description": op.description,
        "operationId": op.operation_id,
        "responses": responses,
        "x-kubernetes-action": op.action,
        GVK_EXTENSION: gvk(*op.gvk),
    }
    if op.query:
        out["parameters"] = [v3_parameter(v2_query_parameter(name)) for name in op.query]
    if op.body:
        body = {"schema": {"$ref": V3_REF + op.body}}
        out["requestBody"] = {"content": {t: body for t in op.consumes}, "required": True}
    return out


def v3_parameter(v2: Obj) -> Obj:
    out = {k: v for k, v in v2.items() if k not in ("type", "uniqueItems")}
    out["schema"] = {"type": v2["type"], "uniqueItems": True}
    return out


def add_operations(
    paths: Obj,
    ops: Iterable[Operation],
    *,
    render: Callable[[Operation], Obj],
    parameters: Callable[[Operation], list[Obj]],
) -> None:
    for op in ops:
        item = paths.setdefault(op.path, {"parameters": parameters(op)})
        item[op.method] = render(op)


# ---------------------------------------------------------------------------- protobuf (v2)


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def pb_bytes(number: int, data: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(data)) + data


def pb_str(number: int, text: str) -> bytes:
    return pb_bytes(number, text.encode()) if text else b""


def pb_bool(number: int, flag: bool) -> bytes:
    return varint(number << 3) + b"\x01" if flag else b""


def pb_int(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def pb_double(number: int, value: float) -> bytes:
    return varint(number << 3 | 1) + struct.pack("<d", value)


def pb_any(number: int, value: Any) -> bytes:
    """gnostic's `Any` keeps a value as YAML text (field 2); JSON is YAML."""
    return pb_bytes(number, pb_str(2, json.dumps(value)))


def pb_extensions(number: int, obj: Obj) -> bytes:
    return b"".join(
        pb_bytes(number, pb_str(1, key) + pb_any(2, value))
        for key, value in obj.items()
        if key.startswith("x-")
    )


# Schema fields of gnostic's openapi_v2.Schema, by JSON name: (number, encoder)
SCHEMA_SCALARS: dict[str, tuple[int, Callable[[int, Any], bytes]]] = {
    "$ref": (1, pb_str),
    "format": (2, pb_str),
    "title": (3, pb_str),
    "description": (4, pb_str),
    "default": (5, pb_any),
    "multipleOf": (6, pb_double),
    "maximum": (7, pb_double),
    "exclusiveMaximum": (8, pb_bool),
    "minimum": (9, pb_double),
    "exclusiveMinimum": (10, pb_bool),
    "maxLength": (11, pb_int),
    "minLength": (12, pb_int),
    "pattern": (13, pb_str),
    "maxItems": (14, pb_int),
    "minItems": (15, pb_int),
    "uniqueItems": (16, pb_bool),
    "maxProperties": (17, pb_int),
    "minProperties": (18, pb_int),
    "discriminator": (26, pb_str),
    "readOnly": (27, pb_bool),
    "example": (30, pb_any),
}


def pb_schema(schema: Obj) -> bytes:
    out = bytearray()
    for key, value in schema.items():
        scalar = SCHEMA_SCALARS.get(key)
        if scalar is not None:
            out += scalar[1](scalar[0], value)
        elif key == "required":
            out += b"".join(pb_str(19, name) for name in value)
        elif key == "enum":
            out += b"".join(pb_any(20, item) for item in value)
        elif key == "additionalProperties":
            out += pb_bytes(
                21, pb_bool(2, value) if isinstance(value, bool) else pb_bytes(1, pb_schema(value))
            )
        elif key == "type":
            out += pb_bytes(
                22, b"".join(pb_str(1, t) for t in ([value] if isinstance(value, str) else value))
            )
        elif key == "items":
            items = value if isinstance(value, list) else [value]
            out += pb_bytes(23, b"".join(pb_bytes(1, pb_schema(item)) for item in items))
        elif key == "allOf":
            out += b"".join(pb_bytes(24, pb_schema(item)) for item in value)
        elif key == "properties":
            out += pb_bytes(25, pb_named(value, pb_schema))
        elif key == "externalDocs":
            out += pb_bytes(29, pb_str(1, value.get("description", "")) + pb_str(2, value.get("url", "")))
    return bytes(out) + pb_extensions(31, schema)


def pb_named(mapping: Mapping[str, Any], encode: Callable[[Any], bytes], number: int = 1) -> bytes:
    """A gnostic `Named*` list: repeated {name = 1, value = 2} pairs, in order."""
    return b"".join(
        pb_bytes(number, pb_str(1, name) + pb_bytes(2, encode(value))) for name, value in mapping.items()
    )


def pb_parameter(param: Obj) -> bytes:
    if param["in"] == "body":
        body = pb_str(2, param["name"]) + pb_str(3, "body") + pb_bool(4, param.get("required", False))
        body = pb_str(1, param.get("description", "")) + body + pb_bytes(5, pb_schema(param["schema"]))
        return pb_bytes(1, pb_bytes(1, body))
    # Query and path sub-schemas share the first fields; type and the rest shift by one
    # because only the query one has allow_empty_value (5).
    shift = 1 if param["in"] == "query" else 0
    sub = (
        pb_bool(1, param.get("required", False))
        + pb_str(2, param["in"])
        + pb_str(3, param.get("description", ""))
        + pb_str(4, param["name"])
        + pb_str(5 + shift, param.get("type", ""))
        + pb_bool(19 + shift, param.get("uniqueItems", False))
    )
    return pb_bytes(1, pb_bytes(2, pb_bytes(3 if shift else 4, sub)))


def pb_response(response: Obj) -> bytes:
    body = pb_str(1, response.get("description", ""))
    if "schema" in response:
        body += pb_bytes(2, pb_bytes(1, pb_schema(response["schema"])))
    return pb_bytes(1, body)


def pb_operation(op: Obj) -> bytes:
    out = b"".join(pb_str(1, tag) for tag in op.get("tags", []))
    out += pb_str(3, op.get("description", "")) + pb_str(5, op.get("operationId", ""))
    out += b"".join(pb_str(6, t) for t in op.get("produces", []))
    out += b"".join(pb_str(7, t) for t in op.get("consumes", []))
    out += b"".join(pb_bytes(8, pb_parameter(p)) for p in op.get("parameters", []))
    out += pb_bytes(9, pb_named(op.get("responses", {}), pb_response))
    out += b"".join(pb_str(10, s) for s in op.get("schemes", []))
    return out + pb_extensions(13, op)


PATH_ITEM_METHODS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def pb_path_item(item: Obj) -> bytes:
    out = b"".join(
        pb_bytes(number, pb_operation(item[m])) for m, number in PATH_ITEM_METHODS.items() if m in item
    )
    return out + b"".join(pb_bytes(9, pb_parameter(p)) for p in item.get("parameters", []))


def v2_protobuf(document: Obj) -> bytes:
    """The swagger document as gnostic's `openapi_v2.Document` protobuf, which kubectl asks for."""
    info = document["info"]
    return (
        pb_str(1, document["swagger"])
        + pb_bytes(2, pb_str(1, info["title"]) + pb_str(2, info["version"]))
        + pb_bytes(8, pb_named(document["paths"], pb_path_item, number=2))
        + pb_bytes(9, pb_named(document["definitions"], pb_schema))
    )


# ---------------------------------------------------------------------------- documents


@dataclass(frozen=True)
class Rendered:
    body: bytes
    hash: str

    @classmethod
    def of(cls, body: bytes) -> Rendered:
        return cls(body, document_hash(body))

    @classmethod
    def json(cls, document: Obj) -> Rendered:
        return cls.of(json.dumps(document, separators=(",", ":")).encode())


class Documents:
    """Every document for one set of served types, built on first use."""

    def __init__(self, api: OpenAPI, types: list[ResourceType]) -> None:
        self.api = api
        self.types = sorted(types, key=lambda t: (t.group, t.version, t.plural))
        self.v2_pool: dict[str, Obj] = {}
        self.v3_pool: dict[str, Obj] = {}
        self.roots: dict[tuple[str, str], list[str]] = {}
        self.ops: dict[tuple[str, str], list[Operation]] = {}
        self._v2: Obj | None = None
        self._v2_json: Rendered | None = None
        self._v2_protobuf: Rendered | None = None
        self._v3: dict[tuple[str, str], tuple[Obj, Rendered]] = {}
        for rt in self.types:
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        names = self.api.names_for(rt)
        if rt.crd or names is None:
            for name, (v2, v3) in custom_definitions(rt, self.api.type_meta).items():
                self.v2_pool[name], self.v3_pool[name] = v2, v3
            names = ResourceNames(
                crd_definition_name(rt.group, rt.version, rt.kind),
                crd_definition_name(rt.group, rt.version, rt.list_kind),
                self.api.by_gvk,
            )
        ops = OperationBuilder(rt, names).operations()
        key = (rt.group, rt.version)
        self.ops.setdefault(key, []).extend(ops)
        roots = self.roots.setdefault(key, [STATUS, DELETE_OPTIONS, WATCH_EVENT, PATCH])
        roots += [d for d in (names.kind, names.listing) if d] + [
            d for op in ops for d in (op.body, op.response) if d
        ]

    def closure(self, roots: Iterable[str]) -> list[str]:
        """The definitions reachable from `roots` (a `$ref` inside a CRD's example or default is ignored)."""
        seen: dict[str, None] = {}
        stack = list(roots)
        while stack:
            name = stack.pop()
            if name in seen or (name not in self.v2_pool and name not in self.api.builtin):
                continue
            seen[name] = None
            stack += refs_of(self.v2_pool[name]) if name in self.v2_pool else self.api.builtin_refs(name)
        return sorted(seen)

    def v2(self) -> Obj:
        if self._v2 is None:
            paths: Obj = {}
            all_ops = [op for ops in self.ops.values() for op in ops]
            add_operations(paths, all_ops, render=v2_operation, parameters=v2_path_parameters)
            roots = [name for names in self.roots.values() for name in names]
            self._v2 = {
                "swagger": "2.0",
                "info": {"title": "Kubernetes", "version": self.api.kubernetes_version},
                "paths": dict(sorted(paths.items())),
                "definitions": {name: self.v2_definition(name) for name in self.closure(roots)},
            }
        return self._v2

    def v2_definition(self, name: str) -> Obj:
        return self.v2_pool[name] if name in self.v2_pool else self.api.builtin[name]

    def v2_json(self) -> Rendered:
        if self._v2_json is None:
            self._v2_json = Rendered.json(self.v2())
        return self._v2_json

    def v2_protobuf(self) -> Rendered:
        if self._v2_protobuf is None:
            self._v2_protobuf = Rendered.of(v2_protobuf(self.v2()))
        return self._v2_protobuf

    def group_versions(self) -> list[tuple[str, str]]:
        return sorted(self.ops)

    def v3(self, group: str, version: str) -> tuple[Obj, Rendered] | None:
        key = (group, version)
        if key not in self.ops:
            return None
        if key not in self._v3:
            document = self.build_v3(key)
            self._v3[key] = (document, Rendered.json(document))
        return self._v3[key]

    def build_v3(self, key: tuple[str, str]) -> Obj:
        paths: Obj = {}
        add_operations(
            paths,
            self.ops[key],
            render=v3_operation,
            parameters=lambda op: [v3_parameter(p) for p in v2_path_parameters(op)],
        )
        schemas = {name: self.v3_definition(name) for name in self.closure(self.roots[key])}
        return {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": self.api.kubernetes_version},
            "paths": dict(sorted(paths.items())),
            "components": {"schemas": schemas},
        }

    def v3_definition(self, name: str) -> Obj:
        return self.v3_pool[name] if name in self.v3_pool else self.api.builtin_v3(name)

    def v3_root(self) -> Obj:
        paths: Obj = {}
        for group, version in self.group_versions():
            rendered = self.v3(group, version)
            if rendered is not None:
                gv = group_version_path(group, version)
                paths[gv] = {"serverRelativeURL": f"{V3_PATH}/{gv}?hash={rendered[1].hash}"}
        return {"paths": paths}


# ---------------------------------------------------------------------------- negotiation


@dataclass(frozen=True)
class MediaRange:
    type: str
    subtype: str
    q: float

    def matches(self, media_type: str) -> bool:
        main, _, sub = media_type.partition("/")
        return self.type in ("*", main) and self.subtype in ("*", sub)


def parse_accept(header: str | None) -> list[MediaRange]:
    """Accept clauses by preference (q, then specific before wildcard), as goautoneg sorts them."""
    ranges: list[MediaRange] = []
    for clause in (header or "*/*").split(","):
        media, *params = (part.strip() for part in clause.split(";"))
        if not media:
            continue
        main, _, sub = media.partition("/")
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        ranges.append(MediaRange(main.lower(), (sub or "*").lower(), q))
    return sorted((r for r in ranges if r.q > 0), key=lambda r: (-r.q, r.type == "*", r.subtype == "*"))


def negotiate(accept: str | None, offered: Iterable[str]) -> str | None:
    """The first offered media type the most preferred Accept clause takes, or None (406)."""
    choices = list(offered)
    for media_range in parse_accept(accept):
        for media_type in choices:
            if media_range.matches(media_type):
                return media_type
    return None


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    if not if_none_match:
        return False
    tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in tags or f'"{etag}"' in tags


def content_reply(
    rendered: Rendered, content_type: str, *, if_none_match: str | None, extra: Mapping[str, str] = {}
) -> Reply:
    headers = {"Content-Type": content_type, "Etag": f'"{rendered.hash}"', "Vary": "Accept", **extra}
    if etag_matches(if_none_match, rendered.hash):
        del headers["Content-Type"]
        return Reply(304, headers)
    return Reply(200, headers, rendered.body)


def not_found() -> Reply:
    headers = {"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff"}
    return Reply(404, headers, b"404 page not found\n")


# ---------------------------------------------------------------------------- entry point


class OpenAPI:
    """The `/openapi/v2` and `/openapi/v3` documents of a server, cached per set of served types."""

    def __init__(
        self, builtin_definitions: dict[str, Obj], *, kubernetes_version: str = KUBERNETES_VERSION
    ) -> None:
        self.builtin = builtin_definitions
        self.kubernetes_version = kubernetes_version
        self.type_meta = TypeMeta.borrowed(builtin_definitions)
        self.by_gvk: dict[tuple[str, str, str], str] = {}
        for name, schema in sorted(builtin_definitions.items()):
            kinds = schema.get(GVK_EXTENSION, [])
            if len(kinds) == 1:
                self.by_gvk[(kinds[0]["group"], kinds[0]["version"], kinds[0]["kind"])] = name
        self._refs: dict[str, list[str]] = {}
        self._v3: dict[str, Obj] = {}
        self._documents: OrderedDict[tuple[Any, ...], Documents] = OrderedDict()
        self._fingerprints: weakref.WeakKeyDictionary[ResourceType, tuple[Any, ...]] = (
            weakref.WeakKeyDictionary()
        )

    @classmethod
    def load(cls) -> OpenAPI:
        """The documents of a 1.32 server, from the shipped built-in definitions."""
        return cls(load_builtin_definitions())

    # -- documents as dicts

    def v2(self, types: list[ResourceType]) -> Obj:
        """The swagger 2.0 document: paths of every resource, definitions they reach."""
        return self.documents(types).v2()

    def v3_root(self, types: list[ResourceType]) -> Obj:
        """`/openapi/v3`: each group-version with the hashed URL of its document."""
        return self.documents(types).v3_root()

    def v3_group(self, types: list[ResourceType], group: str, version: str) -> Obj | None:
        """The OpenAPI 3.0 document of one group-version, or None if nothing is served there."""
        found = self.documents(types).v3(group, version)
        return found[0] if found else None

    def v3_hash(self, types: list[ResourceType], group: str, version: str) -> str | None:
        """The `?hash=` (and ETag) of a group-version's document."""
        found = self.documents(types).v3(group, version)
        return found[1].hash if found else None

    # -- HTTP

    def serve(
        self,
        types: list[ResourceType],
        *,
        path: str,
        query: Mapping[str, str],
        accept: str | None,
        if_none_match: str | None = None,
    ) -> Reply:
        """Answer a GET under /openapi the way kube-apiserver's handlers do.

        `/openapi/v2`: JSON or gnostic protobuf by Accept (406 if neither is acceptable),
        ETag and Vary: Accept, 304 on a matching If-None-Match. `/openapi/v3`: the JSON
        index. `/openapi/v3/<gv>`: JSON (the protobuf form is not produced, so a client
        accepting only that gets 406); a stale `?hash=` is redirected (301) to the current
        one, a current one makes the answer cacheable for a year.
        """
        documents = self.documents(types)
        path = path.rstrip("/")
        if path == V2_PATH:
            return self.serve_v2(documents, accept=accept, if_none_match=if_none_match)
        if path == V3_PATH:
            body = json.dumps(documents.v3_root(), separators=(",", ":")).encode()
            return Reply(200, {"Content-Type": APPLICATION_JSON}, body)
        gv = path.removeprefix(V3_PATH + "/") if path.startswith(V3_PATH + "/") else None
        key = split_group_version(gv) if gv else None
        found = documents.v3(*key) if key else None
        if gv is None or found is None:
            return not_found()
        return serve_v3_group(gv, found[1], query=query, accept=accept, if_none_match=if_none_match)

    def response(self, request: web.Request, parts: list[str], catalog: Catalog) -> web.Response:
        """The aiohttp answer to GET /openapi/<parts...> for the types `catalog` serves now."""
        reply = self.serve(
            catalog.all(),
            path="/".join([OPENAPI_PATH, *parts]),
            query=request.query,
            accept=request.headers.get("Accept"),
            if_none_match=request.headers.get("If-None-Match"),
        )
        return web.Response(status=reply.status, headers=reply.headers, body=reply.body)

    def serve_v2(self, documents: Documents, *, accept: str | None, if_none_match: str | None) -> Reply:
        chosen = negotiate(accept, (APPLICATION_JSON, V2_PROTOBUF, V2_PROTOBUF_DOTTED))
        if chosen is None:
            return Reply(406, {"Vary": "Accept"})
        if chosen == APPLICATION_JSON:
            return content_reply(documents.v2_json(), APPLICATION_JSON, if_none_match=if_none_match)
        # Go's mime parser rejects "@", so kube-openapi labels protobuf with the dotted name.
        return content_reply(documents.v2_protobuf(), V2_PROTOBUF_DOTTED, if_none_match=if_none_match)

    # -- shared pieces

    def documents(self, types: list[ResourceType]) -> Documents:
        key = tuple(sorted(self.fingerprint(t) for t in types))
        documents = self._documents.get(key)
        if documents is None:
            documents = Documents(self, types)
            self._documents[key] = documents
            while len(self._documents) > CACHED_TYPE_SETS:
                self._documents.popitem(last=False)
        self._documents.move_to_end(key)
        return documents

    def fingerprint(self, rt: ResourceType) -> tuple[Any, ...]:
        found = self._fingerprints.get(rt)
        if found is None:
            schema = json.dumps(rt.schema, sort_keys=True) if rt.schema else ""
            found = (
                rt.group,
                rt.version,
                rt.plural,
                rt.kind,
                rt.namespaced,
                rt.verbs,
                rt.subresources,
                rt.crd,
                schema,
            )
            self._fingerprints[rt] = found
        return found

    def names_for(self, rt: ResourceType) -> ResourceNames | None:
        """The built-in definitions of a kind and its list ("" if none), None if 1.32 has no such kind."""
        kind = self.by_gvk.get((rt.group, rt.version, rt.kind))
        if kind is None:
            return None
        return ResourceNames(kind, self.by_gvk.get((rt.group, rt.version, rt.list_kind), ""), self.by_gvk)

    def builtin_refs(self, name: str) -> list[str]:
        found = self._refs.get(name)
        if found is None:
            found = self._refs[name] = sorted(set(refs_of(self.builtin[name])))
        return found

    def builtin_v3(self, name: str) -> Obj:
        found = self._v3.get(name)
        if found is None:
            found = self._v3[name] = v3_definition(name, self.builtin[name])
        return found


def split_group_version(gv: str) -> tuple[str, str] | None:
    parts = gv.split("/")
    if len(parts) == 2 and parts[0] == "api":
        return "", parts[1]
    if len(parts) == 3 and parts[0] == "apis":
        return parts[1], parts[2]
    return None


def serve_v3_group(
    gv: str, rendered: Rendered, *, query: Mapping[str, str], accept: str | None, if_none_match: str | None
) -> Reply:
    if negotiate(accept, (APPLICATION_JSON,)) is None:
        return Reply(406, {"Vary": "Accept"})
    asked = query.get("hash")
    if asked and asked != rendered.hash:
        return Reply(301, {"Location": f"{V3_PATH}/{gv}?hash={rendered.hash}"})
    extra: dict[str, str] = {}
    if asked:
        expires = email.utils.formatdate(time.time() + 365 * 24 * 3600, usegmt=True)
        extra = {"Cache-Control": "public, immutable", "Expires": expires}
    return content_reply(rendered, APPLICATION_JSON, if_none_match=if_none_match, extra=extra)
