"""Requests a server must refuse cleanly: malformed bodies, wrong methods, mismatched identities.

kube-apiserver answers each with a `Status` of a precise code and reason, and none of
them may change the stored object or hurt the server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from .conftest import Cluster

MIB = 1024 * 1024


@pytest.fixture
def kept(core: client.CoreV1Api, namespace: str) -> Iterator[client.V1ConfigMap]:
    """A configmap `keep` that the bad requests aim at and must leave alone."""
    cm = core.create_namespaced_config_map(namespace, {"metadata": {"name": "keep"}, "data": {"k": "v"}})
    yield cm
    again = core.read_namespaced_config_map("keep", namespace)
    assert again.data == {"k": "v"}
    assert again.metadata.resource_version == cm.metadata.resource_version


def _status(body: Any, code: int, reason: str) -> None:
    assert body["kind"] == "Status"
    assert body["status"] == "Failure"
    assert body["code"] == code
    assert body["reason"] == reason


def test_malformed_json_is_bad_request(cluster: Cluster, namespace: str) -> None:
    status, body = cluster.json(
        "POST", f"/api/v1/namespaces/{namespace}/configmaps", data=b'{"metadata": {bad'
    )
    assert status == 400
    _status(body, 400, "BadRequest")
    assert "couldn't get version/kind; json parse error" in body["message"]


def test_body_over_three_mebibytes_is_request_entity_too_large(cluster: Cluster, namespace: str) -> None:
    big = {"metadata": {"name": "big"}, "data": {"k": "x" * (3 * MIB)}}
    status, body = cluster.json("POST", f"/api/v1/namespaces/{namespace}/configmaps", big)
    assert status == 413
    _status(body, 413, "RequestEntityTooLarge")
    assert body["message"] == f"Request entity too large: limit is {3 * MIB}"


def test_unknown_content_type_is_unsupported_media_type(cluster: Cluster, namespace: str) -> None:
    status, body = cluster.json(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        {"metadata": {"name": "t"}},
        headers={"Content-Type": "text/plain"},
    )
    assert status == 415
    _status(body, 415, "UnsupportedMediaType")
    assert body["message"].startswith(
        "the body of the request was in an unknown format - accepted media types include: application/json, "
    )


@pytest.mark.parametrize(
    ("method", "suffix"),
    [("PUT", ""), ("PATCH", ""), ("POST", "/keep")],
    ids=["put-collection", "patch-collection", "post-named"],
)
def test_method_the_path_does_not_serve_is_method_not_allowed(
    cluster: Cluster, namespace: str, kept: client.V1ConfigMap, method: str, suffix: str
) -> None:
    status, body = cluster.json(
        method,
        f"/api/v1/namespaces/{namespace}/configmaps{suffix}",
        {"metadata": {"name": "keep"}, "data": {"k": "changed"}},
        headers={"Content-Type": "application/merge-patch+json" if method == "PATCH" else "application/json"},
    )
    assert status == 405
    _status(body, 405, "MethodNotAllowed")
    assert body["message"] == "the server does not allow this method on the requested resource"


def test_unknown_resource_is_not_found(cluster: Cluster, namespace: str) -> None:
    status, body = cluster.json("GET", f"/api/v1/namespaces/{namespace}/gizmos")
    assert status == 404
    _status(body, 404, "NotFound")
    assert body["message"] == "the server could not find the requested resource"
    assert cluster.raw("GET", "/apis/no-such-group.example.com/v1/gizmos").status == 404


@pytest.mark.parametrize(
    "identity",
    [{"apiVersion": "apps/v1", "kind": "ConfigMap"}, {"apiVersion": "v1", "kind": "Secret"}],
    ids=["api-version", "kind"],
)
def test_api_version_or_kind_not_matching_the_url_is_bad_request(
    cluster: Cluster, namespace: str, identity: dict[str, str]
) -> None:
    body = {**identity, "metadata": {"name": "mismatch"}}
    status, answer = cluster.json("POST", f"/api/v1/namespaces/{namespace}/configmaps", body)
    assert status == 400
    _status(answer, 400, "BadRequest")
    assert cluster.json("GET", f"/api/v1/namespaces/{namespace}/configmaps/mismatch")[0] == 404


def test_namespace_in_body_not_matching_the_url_is_bad_request(
    cluster: Cluster, namespace: str, kept: client.V1ConfigMap
) -> None:
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    status, body = cluster.json("POST", base, {"metadata": {"name": "n", "namespace": "elsewhere"}})
    assert status == 400
    _status(body, 400, "BadRequest")
    assert (
        body["message"]
        == "the namespace of the provided object does not match the namespace sent on the request"
    )
    status, body = cluster.json(
        "PUT", f"{base}/keep", {"metadata": {"name": "keep", "namespace": "elsewhere"}}
    )
    assert status == 400
    assert body["message"] == (
        f"the namespace of the object (elsewhere) does not match the namespace on the request ({namespace})"
    )


def test_name_in_body_not_matching_the_url_on_put_is_bad_request(
    cluster: Cluster, namespace: str, kept: client.V1ConfigMap
) -> None:
    status, body = cluster.json(
        "PUT", f"/api/v1/namespaces/{namespace}/configmaps/keep", {"metadata": {"name": "other"}}
    )
    assert status == 400
    _status(body, 400, "BadRequest")
    assert body["message"] == "the name of the object (other) does not match the name on the URL (keep)"


_DEPLOYMENT_SPEC = {
    "selector": {"matchLabels": {"a": "b"}},
    "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
}


@pytest.mark.parametrize(
    ("path", "body", "words"),
    [
        (
            "pods",
            {"metadata": {"name": "p"}, "spec": "not-a-spec"},
            "cannot unmarshal string into Go struct field",
        ),
        (
            "pods",
            {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x", "ports": "80"}]}},
            "cannot unmarshal string into Go struct field",
        ),
        (
            "configmaps",
            {"metadata": {"name": "c", "labels": ["x"]}},
            "cannot unmarshal array into Go struct field",
        ),
        (
            "configmaps",
            {"metadata": {"name": "c"}, "data": {"k": 1}},
            "cannot unmarshal number into Go struct field",
        ),
        (
            "configmaps",
            {"metadata": {"name": "c", "finalizers": {}}},
            "cannot unmarshal object into Go struct field",
        ),
        (
            "deployments",
            {"metadata": {"name": "d"}, "spec": {**_DEPLOYMENT_SPEC, "replicas": 1.5}},
            "cannot unmarshal number 1.5 into Go struct field",
        ),
        (
            "deployments",
            {"metadata": {"name": "d"}, "spec": {**_DEPLOYMENT_SPEC, "replicas": 2**40}},
            f"cannot unmarshal number {2**40} into Go struct field",
        ),
        ("deployments", {"metadata": {"name": "d"}, "spec": {"template": "x"}}, "cannot unmarshal string"),
    ],
    ids=["pod-spec", "ports", "labels", "data-value", "finalizers", "fraction", "int32-overflow", "template"],
)
def test_value_of_the_wrong_json_type_is_bad_request(
    cluster: Cluster, namespace: str, path: str, body: dict[str, Any], words: str
) -> None:
    group = "/apis/apps/v1" if path == "deployments" else "/api/v1"
    status, answer = cluster.json("POST", f"{group}/namespaces/{namespace}/{path}", body)
    assert status == 400
    _status(answer, 400, "BadRequest")
    kind = {"pods": "Pod", "configmaps": "ConfigMap", "deployments": "Deployment"}[path]
    assert answer["message"].startswith(f'{kind} in version "v1" cannot be handled as a {kind}: json: ')
    assert words in answer["message"]


def test_patch_producing_the_wrong_json_type_is_invalid(
    cluster: Cluster, namespace: str, kept: client.V1ConfigMap
) -> None:
    status, body = cluster.json(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/configmaps/keep",
        {"metadata": "not-metadata"},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert status == 422
    _status(body, 422, "Invalid")
    assert "cannot unmarshal string into Go struct field" in body["message"]


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


PATHOLOGICAL = {
    "deeply-nested": b'{"metadata":{"name":"keep"},"data":{"k":' + _nested(20000) + b"}}",
    "nan": b'{"metadata":{"name":"keep"},"data":{"k":NaN}}',
    "infinity": b'{"metadata":{"name":"keep"},"data":{"k":-Infinity}}',
    "huge-float": b'{"metadata":{"name":"keep"},"data":{"k":1e999}}',
    "huge-integer": b'{"metadata":{"name":"keep"},"data":{"k":' + b"9" * 5000 + b"}}",
    "list": b'[{"metadata":{"name":"keep"},"data":{"k":"other"}}]',
    "string": b'"keep"',
    "null": b"null",
    "empty": b"",
    "non-utf8-outside-strings": b'{"metadata":{"name":"keep"},\xff\xfe:1}',
    "utf16": json.dumps({"metadata": {"name": "keep"}, "data": {"k": "other"}}).encode("utf-16"),
    "byte-order-mark": b'\xef\xbb\xbf{"metadata":{"name":"keep"},"data":{"k":"other"}}',
    "truncated": b'{"metadata":{"name":"keep"},"data":{"k":"oth',
}


@pytest.mark.parametrize("payload", list(PATHOLOGICAL.values()), ids=list(PATHOLOGICAL))
def test_pathological_bodies_are_refused_and_change_nothing(
    cluster: Cluster, namespace: str, kept: client.V1ConfigMap, payload: bytes
) -> None:
    status, body = cluster.json("PUT", f"/api/v1/namespaces/{namespace}/configmaps/keep", data=payload)
    assert status == 400
    _status(body, 400, "BadRequest")
    status, body = cluster.json(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/configmaps/keep",
        data=payload,
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert 400 <= status < 500
    assert cluster.raw("GET", "/readyz").status == 200


def test_invalid_utf8_inside_a_string_becomes_the_replacement_character(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    status, body = cluster.json(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        data=b'{"metadata":{"name":"u"},"data":{"k":"a\xffb"}}',
    )
    assert status == 201
    assert body["data"] == {"k": "a\ufffdb"}
    assert core.read_namespaced_config_map("u", namespace).data == {"k": "a\ufffdb"}


def test_yaml_body_keeps_timestamp_like_values_as_strings(cluster: Cluster, namespace: str) -> None:
    manifest = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n  annotations:\n    day: 2024-01-01\ndata:\n  at: 2024-01-01T10:00:00Z\n"
    status, body = cluster.json(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        data=manifest,
        headers={"Content-Type": "application/yaml"},
    )
    assert status == 201
    assert body["metadata"]["annotations"] == {"day": "2024-01-01"}
    assert body["data"] == {"at": "2024-01-01T10:00:00Z"}


def test_yaml_alias_bomb_is_refused(cluster: Cluster, namespace: str) -> None:
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for n in range(1, 9):
        previous = f"*l{n - 1}" if n > 1 else "*a"
        levels.append(f"l{n}: &l{n} [{', '.join([previous] * 9)}]")
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\nextra:\n" + "".join(
        f"  {line}\n" for line in levels
    )
    status, body = cluster.json(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        data=manifest.encode(),
        headers={"Content-Type": "application/yaml"},
        timeout=20,
    )
    assert status == 400
    _status(body, 400, "BadRequest")
    assert cluster.raw("GET", "/readyz").status == 200
