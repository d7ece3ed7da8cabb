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
    # an update is held to the same rule, worded the same, and before the name is looked at
    for name in ("keep", "other"):
        status, body = cluster.json(
            "PUT", f"{base}/keep", {"metadata": {"name": name, "namespace": "elsewhere"}}
        )
        assert (status, body["message"]) == (
            400,
            "the namespace of the provided object does not match the namespace sent on the request",
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
    manifest = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dates\n  annotations:\n    day: 2024-01-01\ndata:\n  at: 2024-01-01T10:00:00Z\n"
    status, body = cluster.json(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        data=manifest,
        headers={"Content-Type": "application/yaml"},
    )
    assert status == 201
    assert body["metadata"]["annotations"] == {"day": "2024-01-01"}
    assert body["data"] == {"at": "2024-01-01T10:00:00Z"}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "metadata:\n  name: y",
            "cannot unmarshal bool into Go struct field ObjectMeta.metadata.name of type string",
        ),
        (
            "metadata:\n  name: yaml-on\ndata:\n  a: on",
            "cannot unmarshal bool into Go struct field ConfigMap.data of type string",
        ),
        (
            "metadata:\n  name: yaml-09\ndata:\n  a: 09",
            "cannot unmarshal number into Go struct field ConfigMap.data of type string",
        ),
    ],
    ids=["y-is-true", "on-is-true", "09-is-a-number"],
)
def test_yaml_body_resolves_scalars_as_yaml_1_1(
    cluster: Cluster, namespace: str, line: str, message: str
) -> None:
    """go-yaml v2 reads `y`, `n`, `on`, `off`, `yes`, `no` as booleans and `09` as a number, so a string field refuses them."""
    status, body = cluster.json(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        data=f"apiVersion: v1\nkind: ConfigMap\n{line}\n".encode(),
        headers={"Content-Type": "application/yaml"},
    )
    assert (status, body["reason"], body["message"]) == (
        400,
        "BadRequest",
        f'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: {message}',
    )


def test_yaml_body_with_a_null_key_is_unrecognized(cluster: Cluster, namespace: str) -> None:
    manifest = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nk\ndata:\n  ~: x\n"
    status, body = cluster.json(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        data=manifest,
        headers={"Content-Type": "application/yaml"},
    )
    assert (status, body["reason"], body["message"]) == (
        400,
        "BadRequest",
        "the object provided is unrecognized (must be of type ConfigMap): unsupported map key of type: "
        f'%!s(<nil>), key: <nil>, value: "x" ({manifest[:30].hex()} ...)',
    )


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


def test_yaml_scalars_of_an_unstructured_body_resolve_as_go_yaml_v2(
    cluster: Cluster, gadget_crd: str, namespace: str
) -> None:
    """A custom resource keeps what the YAML resolved to, so go-yaml v2's rules show as they are."""
    manifest = (
        f"apiVersion: {gadget_crd}/v1\nkind: Gadget\nmetadata:\n  name: scalars\n"
        "v:\n  a: y\n  b: N\n  c: 0o17\n  d: 017\n  e: 09\n  f: 1e3\n  g: 1:30\n  h: 0x1F\n  i: 0b101\n"
        "  j: 1_000\n  k: .5\n  l: 2024-01-01\n  m: +12\n  q: 1e400\n  r: -0b11\n  s: ~\n  t: 'y'\n"
        "  u: 12e\n  w: 3.\n  x: 1_0.5\n  bb: Off\n  n: key\n"
        "y: 1\n1.5: a\n1e3: b\n7: c\n"
    )
    status, body = cluster.json(
        "POST",
        f"/apis/{gadget_crd}/v1/namespaces/{namespace}/gadgets",
        data=manifest.encode(),
        headers={"Content-Type": "application/yaml"},
    )
    assert status == 201, body
    assert body["v"] == {
        "a": True,
        "b": False,
        "c": 15,
        "d": 15,
        "e": 9,
        "f": 1000,
        "g": "1:30",
        "h": 31,
        "i": 5,
        "j": 1000,
        "k": 0.5,
        "l": "2024-01-01",
        "m": 12,
        "q": "1e400",
        "r": -3,
        "s": None,
        "t": "y",
        "u": "12e",
        "w": 3,
        "x": 10.5,
        "bb": False,
        "false": "key",
    }
    assert {key: body[key] for key in ("true", "1.5", "1000", "7")} == {
        "true": 1,
        "1.5": "a",
        "1000": "b",
        "7": "c",
    }
