"""CustomResourceDefinitions: registration, validation, defaults, subresources, deletion."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from runtime.api.crds import crds

from .conftest import Cluster
from .waiting import eventually


def widget_crd(group: str, *, scope: str = "Namespaced") -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["size"],
                "properties": {
                    "size": {"type": "integer", "minimum": 1},
                    "mode": {"type": "string", "enum": ["fast", "safe"], "default": "safe"},
                    "replicas": {"type": "integer"},
                },
            },
            "status": {
                "type": "object",
                "properties": {"phase": {"type": "string"}, "replicas": {"type": "integer"}},
            },
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": False,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                        },
                    },
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}
                    ],
                },
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                        },
                    },
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}
                    ],
                },
            ],
        },
    }


def as_json(value: object) -> dict[str, Any]:
    """A custom object the client returned (its methods are annotated as returning `object`)."""
    assert isinstance(value, dict), value
    return value


def wait_established(ext: client.ApiextensionsV1Api, name: str) -> dict[str, Any]:
    def established() -> dict[str, Any] | None:
        crd = ext.read_custom_resource_definition(name)
        conditions = {c.type: c.status for c in (crd.status.conditions or [])}
        return crd.to_dict() if conditions.get("Established") == "True" else None

    return eventually(established, f"CRD {name} Established", within=20)


def wait_served(cluster: Cluster, path: str) -> None:
    eventually(lambda: cluster.raw("GET", path).status == 200, f"{path} served", within=20)


@pytest.fixture
def widgets(cluster: Cluster) -> Iterator[str]:
    group = f"t{uuid.uuid4().hex[:8]}.example.com"
    ext = client.ApiextensionsV1Api(cluster.api)
    ext.create_custom_resource_definition(widget_crd(group))
    wait_established(ext, f"widgets.{group}")
    wait_served(cluster, f"/apis/{group}/v1/widgets")
    yield group
    try:
        ext.delete_custom_resource_definition(f"widgets.{group}")
    except client.ApiException as exc:
        if exc.status != 404:
            raise


def test_crd_becomes_established_and_discoverable(cluster: Cluster, widgets: str) -> None:
    status, group = cluster.json("GET", f"/apis/{widgets}")
    assert status == 200
    assert group["preferredVersion"]["version"] == "v1"
    status, resources = cluster.json("GET", f"/apis/{widgets}/v1")
    names = {r["name"]: r for r in resources["resources"]}
    assert names["widgets"]["kind"] == "Widget"
    assert names["widgets"]["shortNames"] == ["wd"]
    assert "widgets/status" in names and "widgets/scale" in names


def test_custom_resource_crud_with_defaults(cluster: Cluster, widgets: str, namespace: str) -> None:
    api = client.CustomObjectsApi(cluster.api)
    body = {
        "apiVersion": f"{widgets}/v1",
        "kind": "Widget",
        "metadata": {"name": "w1"},
        "spec": {"size": 3},
        "extra": "dropped",
    }
    obj = as_json(api.create_namespaced_custom_object(widgets, "v1", namespace, "widgets", body))
    assert obj["spec"] == {"size": 3, "mode": "safe"}
    assert "extra" not in obj
    assert obj["metadata"]["generation"] == 1
    got = as_json(api.get_namespaced_custom_object(widgets, "v1alpha1", namespace, "widgets", "w1"))
    assert got["apiVersion"] == f"{widgets}/v1alpha1"
    assert got["spec"]["size"] == 3


def test_custom_resource_schema_violations_are_invalid(
    cluster: Cluster, widgets: str, namespace: str
) -> None:
    body = {
        "apiVersion": f"{widgets}/v1",
        "kind": "Widget",
        "metadata": {"name": "bad"},
        "spec": {"size": "big", "mode": "slow"},
    }
    status, reply = cluster.json("POST", f"/apis/{widgets}/v1/namespaces/{namespace}/widgets", body)
    assert status == 422
    fields = {c["field"] for c in reply["details"]["causes"]}
    assert {"spec.size", "spec.mode"} <= fields
    status, reply = cluster.json(
        "POST", f"/apis/{widgets}/v1/namespaces/{namespace}/widgets", {**body, "spec": {}}
    )
    assert status == 422
    assert reply["details"]["causes"][0]["field"] == "spec.size"
    assert "Required value" in reply["details"]["causes"][0]["message"]


def test_custom_resource_status_and_scale_subresources(
    cluster: Cluster, widgets: str, namespace: str
) -> None:
    api = client.CustomObjectsApi(cluster.api)
    body = {
        "apiVersion": f"{widgets}/v1",
        "kind": "Widget",
        "metadata": {"name": "s"},
        "spec": {"size": 1, "replicas": 1},
        "status": {"phase": "Ignored"},
    }
    obj = as_json(api.create_namespaced_custom_object(widgets, "v1", namespace, "widgets", body))
    assert "status" not in obj
    patched = as_json(
        api.patch_namespaced_custom_object_status(
            widgets, "v1", namespace, "widgets", "s", {"status": {"phase": "Ready", "replicas": 1}}
        )
    )
    assert patched["status"]["phase"] == "Ready"
    assert patched["metadata"]["generation"] == 1
    scale = as_json(api.get_namespaced_custom_object_scale(widgets, "v1", namespace, "widgets", "s"))
    assert scale["spec"]["replicas"] == 1
    api.patch_namespaced_custom_object_scale(
        widgets, "v1", namespace, "widgets", "s", {"spec": {"replicas": 4}}
    )
    obj = as_json(api.get_namespaced_custom_object(widgets, "v1", namespace, "widgets", "s"))
    assert obj["spec"]["replicas"] == 4
    assert obj["metadata"]["generation"] == 2


def test_custom_resource_table_uses_printer_columns(cluster: Cluster, widgets: str, namespace: str) -> None:
    api = client.CustomObjectsApi(cluster.api)
    api.create_namespaced_custom_object(
        widgets,
        "v1",
        namespace,
        "widgets",
        {"apiVersion": f"{widgets}/v1", "kind": "Widget", "metadata": {"name": "t"}, "spec": {"size": 5}},
    )
    status, table = cluster.json(
        "GET",
        f"/apis/{widgets}/v1/namespaces/{namespace}/widgets",
        headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
    )
    assert status == 200
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size"]
    assert table["rows"][0]["cells"] == ["t", 5]


def test_invalid_crd_is_rejected(cluster: Cluster) -> None:
    body = widget_crd("bad.example.com")
    body["metadata"]["name"] = "wrong.example.com"
    status, reply = cluster.json("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body)
    assert status == 422
    assert any(c["field"] == "metadata.name" for c in reply["details"]["causes"])


def test_deleting_crd_removes_its_objects(cluster: Cluster, namespace: str) -> None:
    group = f"d{uuid.uuid4().hex[:8]}.example.com"
    ext = client.ApiextensionsV1Api(cluster.api)
    ext.create_custom_resource_definition(widget_crd(group))
    wait_established(ext, f"widgets.{group}")
    wait_served(cluster, f"/apis/{group}/v1/widgets")
    api = client.CustomObjectsApi(cluster.api)
    api.create_namespaced_custom_object(
        group,
        "v1",
        namespace,
        "widgets",
        {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "x"}, "spec": {"size": 1}},
    )
    ext.delete_custom_resource_definition(f"widgets.{group}")
    eventually(
        lambda: cluster.raw("GET", f"/apis/{group}/v1/widgets").status == 404,
        "the custom resource no longer served after its CRD was deleted",
    )
    with pytest.raises(client.ApiException) as err:
        ext.read_custom_resource_definition(f"widgets.{group}")
    assert err.value.status == 404


CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


def test_deleting_crd_waits_for_finalizers_of_its_objects(cluster: Cluster, namespace: str) -> None:
    """The CRD turns Terminating, its objects are deleted (kept while finalizers remain), then it goes."""
    group = f"f{uuid.uuid4().hex[:8]}.example.com"
    name = f"widgets.{group}"
    crd_path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
    widgets = f"/apis/{group}/v1/namespaces/{namespace}/widgets"
    ext = client.ApiextensionsV1Api(cluster.api)
    ext.create_custom_resource_definition(widget_crd(group))
    wait_established(ext, name)
    wait_served(cluster, f"/apis/{group}/v1/widgets")
    held = {
        "apiVersion": f"{group}/v1",
        "kind": "Widget",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]},
        "spec": {"size": 1},
    }
    status, _ = cluster.json("POST", widgets, held)
    assert status == 201
    try:
        ext.delete_custom_resource_definition(name)

        def terminating() -> dict[str, Any] | None:
            status, crd = cluster.json("GET", crd_path)
            assert status == 200, f"the CRD went ({status}) while one of its widgets has a finalizer"
            conditions = {c["type"]: c for c in crd["status"].get("conditions") or []}
            return crd if conditions.get("Terminating", {}).get("status") == "True" else None

        crd = eventually(terminating, "the deleted CRD Terminating=True", within=60)
        assert crd["metadata"]["deletionTimestamp"]
        assert crd["metadata"]["finalizers"] == [CLEANUP_FINALIZER]

        def deleting() -> dict[str, Any] | None:
            status, widget = cluster.json("GET", f"{widgets}/held")
            assert status == 200, f"the widget with a finalizer went ({status}) before its finalizer did"
            return widget if widget["metadata"].get("deletionTimestamp") else None

        widget = eventually(deleting, "the widget of the deleted CRD with a deletionTimestamp", within=60)
        assert widget["metadata"]["finalizers"] == ["example.com/hold"]
        fresh = {**held, "metadata": {"name": "fresh"}}
        status, reply = cluster.json("POST", widgets, fresh)
        assert (status, reply["reason"], reply["message"], reply["details"]) == (
            403,
            "Forbidden",
            f'widgets.{group} "fresh" is forbidden: create not allowed while custom resource definition '
            "is terminating",
            {"name": "fresh", "group": group, "kind": "widgets"},
        )
        _, crd = cluster.json("GET", crd_path)
        assert crd["metadata"]["finalizers"] == [CLEANUP_FINALIZER]
    finally:
        cluster.json(
            "PATCH",
            f"{widgets}/held",
            {"metadata": {"finalizers": None}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
    eventually(
        lambda: cluster.raw("GET", crd_path).status == 404, "the CRD gone after its objects", within=60
    )
    assert cluster.raw("GET", f"/apis/{group}/v1/widgets").status == 404


def test_a_schema_stored_as_the_real_server_keeps_it(cluster: Cluster) -> None:
    # kube-apiserver stores a CRD through its Go types: an empty `properties` map is omitted
    # (omitempty), so a client comparing what it sent with what it reads sees a diff forever
    group = f"t{uuid.uuid4().hex[:8]}.example.com"
    crd = widget_crd(group)
    for version in crd["spec"]["versions"]:
        version["schema"]["openAPIV3Schema"]["properties"]["status"] = {"type": "object", "properties": {}}
    status, created = cluster.json("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert status == 201, created
    try:
        stored = created["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["status"]
        assert stored == {"type": "object"}
    finally:
        cluster.raw("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}")


def test_the_runtimes_crds_read_back_as_they_are_applied(cluster: Cluster) -> None:
    # what the front ends compare on refresh: a field the server drops or adds is a diff for ever
    names = []
    try:
        for crd in crds():
            status, stored = cluster.json(
                "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd
            )
            assert status == 201, stored
            names.append(crd["metadata"]["name"])
            assert stored["spec"]["versions"] == crd["spec"]["versions"], crd["metadata"]["name"]
    finally:
        for name in names:
            cluster.raw("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
