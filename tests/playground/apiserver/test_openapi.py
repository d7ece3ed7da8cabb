"""OpenAPI documents: built-in and CRD definitions, v3 index and group docs, negotiation, real kubectl."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from asyncio.subprocess import PIPE
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from playground.apiserver.openapi import (
    APPLICATION_JSON,
    V2_PROTOBUF,
    V2_PROTOBUF_DOTTED,
    OpenAPI,
    Reply,
    document_hash,
    load_builtin_definitions,
    parse_accept,
    v2_structural,
)
from playground.apiserver.resources.base import ResourceType

Obj = dict[str, Any]
POD = "io.k8s.api.core.v1.Pod"
FOREIGN_CLUSTER = "io.liqo.core.v1beta1.ForeignCluster"
CRD_SCHEMA: Obj = {
    "type": "object",
    "description": "ForeignCluster is the Schema for the foreignclusters API.",
    "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 63}}},
        "spec": {
            "type": "object",
            "properties": {
                "clusterID": {"type": "string", "description": "Foreign cluster ID."},
                "port": {
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "x-kubernetes-int-or-string": True,
                },
                "proxy": {"type": "object", "nullable": True, "properties": {"url": {"type": "string"}}},
            },
            "required": ["clusterID", "proxy"],
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}


def builtin_types() -> list[ResourceType]:
    return [
        ResourceType("", "v1", "Pod", "pods", True, subresources=("status", "eviction", "exec")),
        ResourceType("", "v1", "ConfigMap", "configmaps", True),
        ResourceType("", "v1", "Namespace", "namespaces", False, subresources=("status", "finalize")),
        ResourceType("apps", "v1", "Deployment", "deployments", True, subresources=("status", "scale")),
        ResourceType(
            "authorization.k8s.io",
            "v1",
            "SubjectAccessReview",
            "subjectaccessreviews",
            False,
            verbs=("create",),
        ),
    ]


def foreign_cluster(schema: Obj | None = None) -> ResourceType:
    return ResourceType(
        "core.liqo.io",
        "v1beta1",
        "ForeignCluster",
        "foreignclusters",
        False,
        crd="foreignclusters.core.liqo.io",
        subresources=("status",),
        schema=schema or CRD_SCHEMA,
    )


@pytest.fixture(scope="module")
def api() -> OpenAPI:
    return OpenAPI.load()


@pytest.fixture
def types() -> list[ResourceType]:
    return [*builtin_types(), foreign_cluster()]


def serve(api: OpenAPI, types: list[ResourceType], path: str, **kw: Any) -> Reply:
    query = kw.pop("query", {})
    return api.serve(types, path=path, query=query, accept=kw.pop("accept", None), **kw)


def operations(document: Obj) -> Iterator[tuple[str, str, Obj]]:
    for path, item in document["paths"].items():
        for method in ("get", "put", "post", "patch", "delete"):
            if method in item:
                yield path, method, item[method]


def explain_schema(document: Obj, prefix: str, plural: str) -> Obj:
    """What `kubectl explain` does: the GVK of the resource's operations, then the schema carrying it."""
    candidates = [f"{prefix}/{plural}", f"{prefix}/namespaces/{{namespace}}/{plural}"]
    gvk = next(
        item[m]["x-kubernetes-group-version-kind"]
        for path in candidates
        if (item := document["paths"].get(path))
        for m in ("get", "post")
        if m in item
    )
    return next(
        schema
        for schema in document["components"]["schemas"].values()
        if gvk in schema.get("x-kubernetes-group-version-kind", [])
    )


# ---------------------------------------------------------------------------- built-in definitions


def test_shipped_definitions_are_swagger_not_json_schema() -> None:
    definitions = load_builtin_definitions()
    pod = definitions[POD]
    assert pod["type"] == "object"
    assert pod["properties"]["kind"] == {
        "description": pod["properties"]["kind"]["description"],
        "type": "string",
    }
    assert definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"] == "int-or-string"
    assert all(ref.startswith("#/definitions/") for ref in _refs(definitions))


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from [value] if key == "$ref" and isinstance(value, str) else _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def test_pod_spec_containers_is_a_described_merge_list_of_container(
    api: OpenAPI, types: list[ResourceType]
) -> None:
    definitions = api.v2(types)["definitions"]
    containers = definitions["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["type"] == "array"
    assert containers["items"] == {"$ref": "#/definitions/io.k8s.api.core.v1.Container"}
    assert "containers belonging to the pod" in containers["description"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert "name" in definitions["io.k8s.api.core.v1.Container"]["required"]
    assert definitions[POD]["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Pod", "version": "v1"}
    ]


def test_v2_definitions_hold_only_what_served_kinds_reach(api: OpenAPI, types: list[ResourceType]) -> None:
    definitions = api.v2(types)["definitions"]
    assert "io.k8s.api.apps.v1.DeploymentList" in definitions
    assert "io.k8s.api.autoscaling.v1.Scale" in definitions
    assert "io.k8s.api.policy.v1.Eviction" in definitions
    assert "io.k8s.api.batch.v1.Job" not in definitions
    assert set(_refs(definitions)) <= {"#/definitions/" + name for name in definitions}


# ---------------------------------------------------------------------------- custom resources


def test_crd_schema_becomes_a_definition_named_and_tagged_like_apiextensions(
    api: OpenAPI, types: list[ResourceType]
) -> None:
    definition = api.v2(types)["definitions"][FOREIGN_CLUSTER]
    assert definition["x-kubernetes-group-version-kind"] == [
        {"group": "core.liqo.io", "kind": "ForeignCluster", "version": "v1beta1"}
    ]
    props = definition["properties"]
    assert props["metadata"]["$ref"] == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    assert "properties" not in props["metadata"]
    assert props["apiVersion"]["type"] == props["kind"]["type"] == "string"
    assert props["spec"]["properties"]["clusterID"]["description"] == "Foreign cluster ID."


def test_crd_list_definition_lists_the_kind(api: OpenAPI, types: list[ResourceType]) -> None:
    listing = api.v2(types)["definitions"][FOREIGN_CLUSTER + "List"]
    assert listing["properties"]["items"]["items"] == {"$ref": "#/definitions/" + FOREIGN_CLUSTER}
    assert listing["x-kubernetes-group-version-kind"][0]["kind"] == "ForeignClusterList"


def test_crd_v2_form_drops_what_swagger_cannot_say(api: OpenAPI, types: list[ResourceType]) -> None:
    spec = api.v2(types)["definitions"][FOREIGN_CLUSTER]["properties"]["spec"]
    assert spec["properties"]["port"] == {"x-kubernetes-int-or-string": True}
    assert spec["properties"]["proxy"] == {}
    assert spec["required"] == ["clusterID"]


def test_v2_structural_keeps_preserved_objects_typed_but_empty() -> None:
    schema = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {"a": {"type": "string"}},
    }
    assert v2_structural(schema) == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert v2_structural({"type": "array", "items": {"type": "string", "nullable": True}}) == {
        "type": "array",
        "items": {},
    }


def test_crd_v3_form_keeps_the_schema_and_refs_object_meta(api: OpenAPI, types: list[ResourceType]) -> None:
    schemas = api.v3_group(types, "core.liqo.io", "v1beta1")["components"]["schemas"]  # type: ignore[index]
    definition = schemas[FOREIGN_CLUSTER]
    assert definition["properties"]["spec"]["properties"]["port"]["anyOf"] == [
        {"type": "integer"},
        {"type": "string"},
    ]
    assert definition["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas


def test_crd_without_schema_is_published_as_open_object(api: OpenAPI) -> None:
    rt = foreign_cluster({"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    definition = api.v2([rt])["definitions"][FOREIGN_CLUSTER]
    assert definition["x-kubernetes-preserve-unknown-fields"] is True
    assert set(definition["properties"]) == {"apiVersion", "kind", "metadata"}


def test_kind_unknown_to_1_32_is_published_as_open_object_explain_can_find(api: OpenAPI) -> None:
    rt = ResourceType("", "v1", "Gadget", "gadgets", True)
    document = api.v3_group([rt], "", "v1")
    assert document is not None
    gadget = explain_schema(document, "/api/v1", "gadgets")
    assert gadget["x-kubernetes-preserve-unknown-fields"] is True
    assert "io.k8s.api.core.v1.Gadget" in document["components"]["schemas"]


# ---------------------------------------------------------------------------- v3 documents


def test_v3_root_lists_each_group_version_with_the_hash_of_its_document(
    api: OpenAPI, types: list[ResourceType]
) -> None:
    paths = api.v3_root(types)["paths"]
    assert set(paths) == {
        "api/v1",
        "apis/apps/v1",
        "apis/authorization.k8s.io/v1",
        "apis/core.liqo.io/v1beta1",
    }
    url = paths["apis/apps/v1"]["serverRelativeURL"]
    path, _, query = url.partition("?hash=")
    assert path == "/openapi/v3/apis/apps/v1"
    reply = serve(api, types, path, query={"hash": query}, accept=APPLICATION_JSON)
    assert reply.status == 200
    assert document_hash(reply.body) == query
    assert reply.headers["Etag"] == f'"{query}"'


def test_write_operations_advertise_field_validation(api: OpenAPI, types: list[ResourceType]) -> None:
    for group, version in [("", "v1"), ("apps", "v1"), ("core.liqo.io", "v1beta1")]:
        document = api.v3_group(types, group, version)
        assert document is not None
        writes = [op for _, method, op in operations(document) if method in ("put", "post", "patch")]
        assert writes
        for op in writes:
            names = {(p["name"], p["in"]) for p in op["parameters"]}
            assert {("fieldValidation", "query"), ("dryRun", "query"), ("fieldManager", "query")} <= names


def test_patch_operations_carry_their_kind_and_patch_types(api: OpenAPI, types: list[ResourceType]) -> None:
    apps = api.v3_group(types, "apps", "v1")
    crd = api.v3_group(types, "core.liqo.io", "v1beta1")
    assert apps is not None and crd is not None
    deployment = apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert deployment["x-kubernetes-group-version-kind"] == {
        "group": "apps",
        "kind": "Deployment",
        "version": "v1",
    }
    assert "application/strategic-merge-patch+json" in deployment["requestBody"]["content"]
    scale = apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["patch"]
    assert scale["x-kubernetes-group-version-kind"]["kind"] == "Scale"
    foreign = crd["paths"]["/apis/core.liqo.io/v1beta1/foreignclusters/{name}"]["patch"]
    assert "application/merge-patch+json" in foreign["requestBody"]["content"]
    assert "application/strategic-merge-patch+json" not in foreign["requestBody"]["content"]


def test_explain_finds_builtin_and_custom_kinds_through_gvk(api: OpenAPI, types: list[ResourceType]) -> None:
    core = api.v3_group(types, "", "v1")
    crd = api.v3_group(types, "core.liqo.io", "v1beta1")
    assert core is not None and crd is not None
    pod = explain_schema(core, "/api/v1", "pods")
    assert pod["properties"]["spec"]["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}]
    review = api.v3_group(types, "authorization.k8s.io", "v1")
    assert review is not None
    assert explain_schema(review, "/apis/authorization.k8s.io/v1", "subjectaccessreviews")["required"] == [
        "spec"
    ]
    assert explain_schema(crd, "/apis/core.liqo.io/v1beta1", "foreignclusters")["description"].startswith(
        "ForeignCluster is"
    )


def test_v3_spells_int_or_string_as_one_of(api: OpenAPI, types: list[ResourceType]) -> None:
    schemas = api.v3_group(types, "apps", "v1")["components"]["schemas"]  # type: ignore[index]
    int_or_string = schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert int_or_string["oneOf"] == [{"type": "integer"}, {"type": "string"}]
    assert "type" not in int_or_string


def test_unserved_group_version_has_no_document(api: OpenAPI, types: list[ResourceType]) -> None:
    assert api.v3_group(types, "batch", "v1") is None
    assert serve(api, types, "/openapi/v3/apis/batch/v1").status == 404


def test_documents_are_rebuilt_when_a_crd_changes(api: OpenAPI, types: list[ResourceType]) -> None:
    before = api.v3_root(types)["paths"]
    changed = foreign_cluster({**CRD_SCHEMA, "description": "changed"})
    after = api.v3_root([*builtin_types(), changed])["paths"]
    assert after["apis/core.liqo.io/v1beta1"] != before["apis/core.liqo.io/v1beta1"]
    assert after["api/v1"] == before["api/v1"]
    assert "apis/core.liqo.io/v1beta1" not in api.v3_root(builtin_types())["paths"]


def test_same_types_reuse_the_built_documents(api: OpenAPI, types: list[ResourceType]) -> None:
    assert api.v2(types) is api.v2(list(reversed(types)))


# ---------------------------------------------------------------------------- HTTP behaviour


def test_v2_protobuf_is_answered_under_the_dotted_media_type(api: OpenAPI, types: list[ResourceType]) -> None:
    reply = serve(api, types, "/openapi/v2", accept=V2_PROTOBUF)
    assert reply.status == 200
    assert reply.headers["Content-Type"] == V2_PROTOBUF_DOTTED
    document = _fields(reply.body)
    assert document[1] == [b"2.0"]
    (definitions,) = document[9]
    names = {_fields(named)[1][0].decode() for named in _fields(definitions)[1]}
    assert {POD, FOREIGN_CLUSTER} <= names


def _fields(data: bytes) -> dict[int, list[bytes]]:
    """Length-delimited fields of a protobuf message, by number (enough to walk the document)."""
    out: dict[int, list[bytes]] = {}
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 2:
            size, pos = _varint(data, pos)
            out.setdefault(number, []).append(data[pos : pos + size])
            pos += size
        elif wire == 0:
            _, pos = _varint(data, pos)
        else:
            pos += 8
    return out


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def test_v2_json_is_the_swagger_document(api: OpenAPI, types: list[ResourceType]) -> None:
    reply = serve(api, types, "/openapi/v2", accept="application/json")
    assert reply.headers["Content-Type"] == APPLICATION_JSON
    assert json.loads(reply.body) == api.v2(types)


def test_v2_refuses_media_types_it_cannot_produce(api: OpenAPI, types: list[ResourceType]) -> None:
    assert serve(api, types, "/openapi/v2", accept="text/html").status == 406


def test_v3_answers_json_when_protobuf_is_preferred_but_json_accepted(
    api: OpenAPI, types: list[ResourceType]
) -> None:
    accept = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf, application/json;q=0.9"
    assert serve(api, types, "/openapi/v3/api/v1", accept=accept).status == 200
    only_protobuf = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"
    assert serve(api, types, "/openapi/v3/api/v1", accept=only_protobuf).status == 406


def test_stale_hash_redirects_to_the_current_document(api: OpenAPI, types: list[ResourceType]) -> None:
    reply = serve(api, types, "/openapi/v3/apis/apps/v1", query={"hash": "0BSOLETE"})
    assert reply.status == 301
    assert reply.headers["Location"] == api.v3_root(types)["paths"]["apis/apps/v1"]["serverRelativeURL"]


def test_current_hash_makes_the_document_immutable(api: OpenAPI, types: list[ResourceType]) -> None:
    current = api.v3_hash(types, "apps", "v1")
    assert current is not None
    cached = serve(api, types, "/openapi/v3/apis/apps/v1", query={"hash": current})
    assert cached.headers["Cache-Control"] == "public, immutable"
    plain = serve(api, types, "/openapi/v3/apis/apps/v1")
    assert "Cache-Control" not in plain.headers


def test_matching_etag_answers_not_modified(api: OpenAPI, types: list[ResourceType]) -> None:
    first = serve(api, types, "/openapi/v2", accept=V2_PROTOBUF)
    again = serve(api, types, "/openapi/v2", accept=V2_PROTOBUF, if_none_match=first.headers["Etag"])
    assert (again.status, again.body) == (304, b"")


def test_v3_index_is_json(api: OpenAPI, types: list[ResourceType]) -> None:
    reply = serve(api, types, "/openapi/v3/", accept="application/json, */*")
    assert reply.headers["Content-Type"] == APPLICATION_JSON
    assert json.loads(reply.body) == api.v3_root(types)


def test_accept_clauses_sort_by_quality_then_specificity() -> None:
    ranges = parse_accept("*/*;q=0.5, application/*, application/json, text/html;q=0")
    assert [(r.type, r.subtype) for r in ranges] == [
        ("application", "json"),
        ("application", "*"),
        ("*", "*"),
    ]


# ---------------------------------------------------------------------------- real kubectl


class DiscoveryStub:
    """Just enough of an API server for kubectl to discover two kinds and create objects."""

    def __init__(self, api: OpenAPI, types: list[ResourceType]) -> None:
        self.api = api
        self.types = types
        self.requests: list[str] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(f"{request.method} {request.path_qs}")
        parts = request.path.strip("/").split("/")
        if parts[0] == "openapi":
            reply = self.api.serve(
                self.types, path=request.path, query=request.query, accept=request.headers.get("Accept")
            )
            return web.Response(status=reply.status, headers=reply.headers, body=reply.body)
        if request.path == "/api":
            return web.json_response({"kind": "APIVersions", "versions": ["v1"]})
        if request.path == "/apis":
            version = {"groupVersion": "core.liqo.io/v1beta1", "version": "v1beta1"}
            group = {"name": "core.liqo.io", "versions": [version], "preferredVersion": version}
            return web.json_response({"kind": "APIGroupList", "apiVersion": "v1", "groups": [group]})
        if len(parts) in (2, 3) and parts[0] in ("api", "apis"):
            return web.json_response(self.resource_list(parts))
        if request.method == "POST":
            return web.json_response(await request.json(), status=201)
        return web.json_response({"kind": "Status", "reason": "NotFound", "code": 404}, status=404)

    def resource_list(self, parts: list[str]) -> Obj:
        group_version = "/".join(parts[1:])
        served = [t for t in self.types if t.api_version == group_version]
        resources = [
            {
                "name": t.plural,
                "singularName": t.singular_name,
                "namespaced": t.namespaced,
                "kind": t.kind,
                "verbs": list(t.verbs),
            }
            for t in served
        ]
        return {"kind": "APIResourceList", "groupVersion": group_version, "resources": resources}


@pytest.fixture
async def kubectl_env(api: OpenAPI, tmp_path: Path) -> AsyncIterator[tuple[DiscoveryStub, dict[str, str]]]:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    stub = DiscoveryStub(api, [builtin_types()[1], foreign_cluster()])
    runner = web.AppRunner(web.Application())
    runner.app.router.add_route("*", "/{tail:.*}", stub.handle)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "s", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [{"name": "c", "context": {"cluster": "s", "user": "u", "namespace": "default"}}],
            }
        )
    )
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)}
    yield stub, env
    await runner.cleanup()


async def kubectl(env: dict[str, str], *args: str, stdin: str = "") -> str:
    process = await asyncio.create_subprocess_exec(
        "kubectl", *args, env=env, stdin=PIPE, stdout=PIPE, stderr=PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(stdin.encode()), timeout=60)
    assert process.returncode == 0, err.decode()
    return out.decode()


@pytest.mark.kubectl
async def test_kubectl_apply_leaves_field_validation_to_the_server(
    kubectl_env: tuple[DiscoveryStub, dict[str, str]],
) -> None:
    stub, env = kubectl_env
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: demo}\ndata: {a: '1'}\n"
    assert "configmap/demo created" in await kubectl(env, "apply", "-f", "-", stdin=manifest)
    post = next(r for r in stub.requests if r.startswith("POST /api/v1/namespaces/default/configmaps"))
    assert "fieldValidation=Strict" in post


@pytest.mark.kubectl
async def test_kubectl_explain_describes_builtin_and_custom_fields(
    kubectl_env: tuple[DiscoveryStub, dict[str, str]],
) -> None:
    _, env = kubectl_env
    assert "Data contains the configuration data" in await kubectl(env, "explain", "configmaps.data")
    custom = await kubectl(env, "explain", "foreignclusters.spec")
    assert "clusterID\t<string> -required-" in custom
    assert "Foreign cluster ID." in custom


@pytest.mark.kubectl
async def test_kubectl_reads_the_v2_protobuf_document(
    kubectl_env: tuple[DiscoveryStub, dict[str, str]],
) -> None:
    stub, env = kubectl_env
    described = await kubectl(env, "explain", "configmaps.data", "--output", "plaintext-openapiv2")
    assert "FIELD:    data <map[string]string>" in described
    assert any(r.startswith("GET /openapi/v2") for r in stub.requests)
