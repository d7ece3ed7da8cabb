"""Server-side field validation: `?fieldValidation=Strict|Warn|Ignore` on writes.

Strict fails a body with unknown or repeated fields (400 for create and update, 422 for
patches), Warn (the default) answers with a `Warning` header per problem, Ignore says
nothing. kubectl sends Strict, so a typo in a manifest fails `kubectl apply`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from .conftest import Cluster


def _configmap(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}, **extra}


def _deployment(name: str, **container: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "nginx", **container}]},
            },
        },
    }


def _post(cluster: Cluster, path: str, body: Any, validation: str | None) -> tuple[int, Any, str | None]:
    query = [("fieldValidation", validation)] if validation is not None else None
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = cluster.raw("POST", path, data=data, query=query)
    return response.status, json.loads(response.data), response.headers.get("Warning")


def test_strict_rejects_an_unknown_configmap_field(cluster: Cluster, namespace: str) -> None:
    status, body, _ = _post(
        cluster, f"/api/v1/namespaces/{namespace}/configmaps", _configmap("s", bogus=1), "Strict"
    )
    assert status == 400
    assert body["reason"] == "BadRequest"
    assert body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "bogus"'
    )


def test_strict_rejects_an_unknown_field_in_a_pod_template(cluster: Cluster, namespace: str) -> None:
    status, body, _ = _post(
        cluster,
        f"/apis/apps/v1/namespaces/{namespace}/deployments",
        _deployment("d", imagePullPolicyy="Always"),
        "Strict",
    )
    assert status == 400
    assert body["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        'unknown field "spec.template.spec.containers[0].imagePullPolicyy"'
    )


def test_strict_rejects_a_repeated_field(cluster: Cluster, namespace: str) -> None:
    raw = b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "r", "name": "r"}}'
    status, body, _ = _post(cluster, f"/api/v1/namespaces/{namespace}/configmaps", raw, "Strict")
    assert status == 400
    assert body["message"].endswith('strict decoding error: duplicate field "metadata.name"')


@pytest.mark.parametrize("validation", ["Warn", None], ids=["warn", "default"])
def test_warn_creates_and_names_the_field_in_a_warning(
    cluster: Cluster, namespace: str, validation: str | None
) -> None:
    status, body, warning = _post(
        cluster, f"/api/v1/namespaces/{namespace}/configmaps", _configmap("w", bogus=1), validation
    )
    assert status == 201
    assert body["data"] == {"a": "b"}
    assert warning == '299 - "unknown field \\"bogus\\""'


def test_ignore_creates_without_a_warning(cluster: Cluster, namespace: str) -> None:
    status, _, warning = _post(
        cluster, f"/api/v1/namespaces/{namespace}/configmaps", _configmap("i", bogus=1), "Ignore"
    )
    assert status == 201
    assert warning is None


def test_an_unsupported_directive_is_invalid(cluster: Cluster, namespace: str) -> None:
    status, body, _ = _post(cluster, f"/api/v1/namespaces/{namespace}/configmaps", _configmap("u"), "strict")
    assert status == 422
    assert body["reason"] == "Invalid"
    assert body["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": '
        'supported values: "", "Ignore", "Strict", "Warn"'
    )


def test_strict_update_rejects_an_unknown_field(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_config_map(namespace, _configmap("up"))
    response = cluster.raw(
        "PUT",
        f"/api/v1/namespaces/{namespace}/configmaps/up",
        _configmap("up", dataa={"x": "y"}),
        query=[("fieldValidation", "Strict")],
    )
    assert response.status == 400
    assert json.loads(response.data)["message"].endswith('strict decoding error: unknown field "dataa"')


def test_an_object_written_under_warn_can_be_read_and_replaced_strictly(
    cluster: Cluster, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    assert _post(cluster, path, _configmap("rt", bogus=1), "Warn")[0] == 201
    _, current = cluster.json("GET", f"{path}/rt")
    current["data"] = {"a": "c"}
    status, body = cluster.json("PUT", f"{path}/rt", current, query=[("fieldValidation", "Strict")])
    assert status == 200
    assert body["data"] == {"a": "c"}


def test_strict_merge_patch_introducing_an_unknown_field_is_invalid(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_config_map(namespace, _configmap("p"))
    status, body = cluster.json(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/configmaps/p",
        {"data": {"a": "c"}, "bogus": 1},
        headers={"Content-Type": "application/merge-patch+json"},
        query=[("fieldValidation", "Strict")],
    )
    assert status == 422
    assert body["reason"] == "Invalid"
    [cause] = body["details"]["causes"]
    assert cause["field"] == "patch"
    assert cause["message"].endswith('strict decoding error: unknown field "bogus"')
    assert core.read_namespaced_config_map("p", namespace).data == {"a": "b"}


def test_server_side_apply_with_repeated_keys_is_bad_request(cluster: Cluster, namespace: str) -> None:
    manifest = b'{\n"apiVersion": "v1",\n"kind": "ConfigMap",\n"metadata": {"name": "ay"},\n"data": {"a": "1", "a": "2"}\n}'
    response = cluster.raw(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/configmaps/ay",
        data=manifest,
        headers={"Content-Type": "application/apply-patch+yaml"},
        query=[("fieldManager", "t"), ("fieldValidation", "Strict")],
    )
    assert response.status == 400
    assert json.loads(response.data)["message"] == (
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n"
        '  line 5: key "a" already set in map'
    )


# --- custom resources ------------------------------------------------------------------------------------------


def _wait_served(cluster: Cluster, path: str) -> None:
    deadline = time.monotonic() + 20
    while cluster.raw("GET", path).status != 200:
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} not served within 20 s")
        time.sleep(0.1)


@pytest.fixture
def gadgets(cluster: Cluster) -> Iterator[str]:
    """A namespaced `Gadget` kind whose spec knows only `size`; yields its group."""
    group = f"fv{uuid.uuid4().hex[:8]}.example.com"
    spec = {"type": "object", "properties": {"size": {"type": "integer"}}}
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
                }
            ],
        },
    }
    ext = client.ApiextensionsV1Api(cluster.api)
    ext.create_custom_resource_definition(crd)
    _wait_served(cluster, f"/apis/{group}/v1/gadgets")
    yield group
    ext.delete_custom_resource_definition(f"gadgets.{group}")


def _gadget(group: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec}


def test_strict_rejects_an_unknown_custom_resource_field(
    cluster: Cluster, gadgets: str, namespace: str
) -> None:
    path = f"/apis/{gadgets}/v1/namespaces/{namespace}/gadgets"
    status, body, _ = _post(cluster, path, _gadget(gadgets, "g", {"size": 1, "colour": "red"}), "Strict")
    assert status == 400
    assert body["message"] == (
        'Gadget in version "v1" cannot be handled as a Gadget: strict decoding error: unknown field "spec.colour"'
    )


def test_warn_prunes_an_unknown_custom_resource_field_and_says_so(
    cluster: Cluster, gadgets: str, namespace: str
) -> None:
    path = f"/apis/{gadgets}/v1/namespaces/{namespace}/gadgets"
    status, body, warning = _post(cluster, path, _gadget(gadgets, "g", {"size": 1, "colour": "red"}), "Warn")
    assert status == 201
    assert body["spec"] == {"size": 1}
    assert warning == '299 - "unknown field \\"spec.colour\\""'


# --- kubectl ---------------------------------------------------------------------------------------------------


def test_kubectl_apply_fails_on_a_typo_and_applies_the_corrected_manifest(
    cluster: Cluster, namespace: str, kubectl_available: None
) -> None:
    typo = json.dumps(_configmap("typo", dta={"x": "y"}))
    result = cluster.kubectl("apply", "-n", namespace, "-f", "-", input=typo, check=False)
    assert result.returncode != 0
    assert (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "dta"'
        in result.stderr
    )
    result = cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(_configmap("typo")))
    assert "configmap/typo created" in result.stdout


def test_kubectl_server_side_apply_fails_on_a_typo(
    cluster: Cluster, namespace: str, kubectl_available: None
) -> None:
    typo = json.dumps(_deployment("ssa", imagePullPolicyy="Always"))
    result = cluster.kubectl("apply", "--server-side", "-n", namespace, "-f", "-", input=typo, check=False)
    assert result.returncode != 0
    assert (
        f"failed to create typed patch object ({namespace}/ssa; apps/v1, Kind=Deployment): "
        '.spec.template.spec.containers[name="web"].imagePullPolicyy: field not declared in schema'
    ) in result.stderr
