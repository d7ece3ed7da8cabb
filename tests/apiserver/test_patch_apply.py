"""PATCH in all four flavours: JSON patch, merge patch, strategic merge patch, server-side apply."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from kubernetes import client

from .conftest import Cluster

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def _patch(
    cluster: Cluster, path: str, body: Any, content_type: str, *, query: list[tuple[str, str]] | None = None
) -> tuple[int, Any]:
    return cluster.json("PATCH", path, body, headers={"Content-Type": content_type}, query=query)


def _apply(cluster: Cluster, path: str, body: Any, manager: str, *, force: bool = False) -> tuple[int, Any]:
    query = [("fieldManager", manager)] + ([("force", "true")] if force else [])
    return _patch(cluster, path, body, APPLY, query=query)


def _configmap(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def _owned_data_keys(obj: dict[str, Any], manager: str) -> set[str]:
    """The `data` keys a manager owns, read from its managedFields entries."""
    keys: set[str] = set()
    for entry in obj["metadata"].get("managedFields") or []:
        if entry["manager"] == manager:
            data = entry["fieldsV1"].get("f:data", {})
            keys |= {k.removeprefix("f:") for k in data if k != "."}
    return keys


def _deployment(name: str) -> dict[str, Any]:
    container_a = {
        "name": "a",
        "image": "nginx:1.25",
        "env": [{"name": "E1", "value": "1"}, {"name": "E2", "value": "2"}],
        "ports": [{"containerPort": 80}, {"containerPort": 443}],
    }
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [container_a, {"name": "b", "image": "busybox:1.36"}]},
            },
        },
    }


@pytest.fixture
def apps(cluster: Cluster) -> client.AppsV1Api:
    return client.AppsV1Api(cluster.api)


# --- JSON patch ---------------------------------------------------------------------------------------


def test_json_patch_adds_and_removes(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "jp"}, "data": {"a": "1", "b": "2"}})
    patched = core.patch_namespaced_config_map(
        "jp",
        namespace,
        [
            {"op": "add", "path": "/data/c", "value": "3"},
            {"op": "remove", "path": "/data/a"},
            {"op": "test", "path": "/data/b", "value": "2"},
        ],
    )
    assert patched.data == {"b": "2", "c": "3"}


def test_json_patch_failed_test_is_unprocessable_and_changes_nothing(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    cm = core.create_namespaced_config_map(namespace, {"metadata": {"name": "jt"}, "data": {"a": "1"}})
    ops = [
        {"op": "replace", "path": "/data/a", "value": "2"},
        {"op": "test", "path": "/data/a", "value": "1"},
    ]
    status, body = _patch(cluster, f"/api/v1/namespaces/{namespace}/configmaps/jt", ops, JSON_PATCH)
    assert status == 422
    assert body["reason"] == "Invalid"
    assert body["message"] == "the server rejected our request due to an error in our request"
    again = core.read_namespaced_config_map("jt", namespace)
    assert again.data == {"a": "1"}
    assert again.metadata.resource_version == cm.metadata.resource_version


def test_json_patch_removing_a_missing_path_is_unprocessable(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "jm"}})
    ops = [{"op": "remove", "path": "/data/nothing"}]
    status, _ = _patch(cluster, f"/api/v1/namespaces/{namespace}/configmaps/jm", ops, JSON_PATCH)
    assert status == 422


def test_json_patch_that_is_not_a_list_is_bad_request(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "jl"}})
    status, body = _patch(cluster, f"/api/v1/namespaces/{namespace}/configmaps/jl", {"op": "add"}, JSON_PATCH)
    assert status == 400
    assert body["reason"] == "BadRequest"


# --- merge patch --------------------------------------------------------------------------------------


def test_merge_patch_null_deletes_a_key(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "mp", "labels": {"x": "1", "y": "2"}}, "data": {"a": "1", "b": "2"}}
    )
    patched = core.patch_namespaced_config_map(
        "mp",
        namespace,
        {"metadata": {"labels": {"x": None}}, "data": {"a": None, "c": "3"}},
        _content_type=MERGE_PATCH,
    )
    assert patched.data == {"b": "2", "c": "3"}
    assert patched.metadata.labels == {"y": "2"}


def test_merge_patch_replaces_lists_whole(apps: client.AppsV1Api, namespace: str) -> None:
    apps.create_namespaced_deployment(namespace, _deployment("mpl"))
    patched = apps.patch_namespaced_deployment(
        "mpl",
        namespace,
        {"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "nginx:1.26"}]}}}},
        _content_type=MERGE_PATCH,
    )
    assert [c.name for c in patched.spec.template.spec.containers] == ["only"]


# --- strategic merge patch ----------------------------------------------------------------------------


def test_strategic_merge_patch_merges_containers_env_and_ports_by_key(
    apps: client.AppsV1Api, namespace: str
) -> None:
    apps.create_namespaced_deployment(namespace, _deployment("smp"))
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "a",
                            "image": "nginx:1.26",
                            "env": [{"name": "E2", "value": "20"}, {"name": "E3", "value": "3"}],
                            "ports": [{"containerPort": 8080}],
                        }
                    ]
                }
            }
        }
    }
    patched = apps.patch_namespaced_deployment("smp", namespace, patch)
    containers = {c.name: c for c in patched.spec.template.spec.containers}
    assert set(containers) == {"a", "b"}
    assert containers["a"].image == "nginx:1.26"
    assert containers["b"].image == "busybox:1.36"
    assert {e.name: e.value for e in containers["a"].env} == {"E1": "1", "E2": "20", "E3": "3"}
    assert sorted(p.container_port for p in containers["a"].ports) == [80, 443, 8080]


def test_strategic_merge_patch_delete_directive_removes_a_container(
    apps: client.AppsV1Api, namespace: str
) -> None:
    apps.create_namespaced_deployment(namespace, _deployment("smd"))
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "b", "$patch": "delete"}]}}}}
    patched = apps.patch_namespaced_deployment("smd", namespace, patch)
    assert [c.name for c in patched.spec.template.spec.containers] == ["a"]


def test_strategic_merge_patch_null_removes_a_map_key(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "smn"}, "data": {"a": "1", "b": "2"}})
    patched = core.patch_namespaced_config_map("smn", namespace, {"data": {"a": None}})
    assert patched.data == {"b": "2"}


def test_strategic_merge_patch_on_a_custom_resource_is_unsupported_media_type(
    cluster: Cluster, gadget_crd: str, namespace: str
) -> None:
    base = f"/apis/{gadget_crd}/v1/namespaces/{namespace}/gadgets"
    status, _ = cluster.json(
        "POST", base, {"apiVersion": f"{gadget_crd}/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    )
    assert status == 201
    status, body = _patch(cluster, f"{base}/g", {"spec": {"x": 1}}, STRATEGIC)
    assert status == 415
    assert body["reason"] == "UnsupportedMediaType"
    assert MERGE_PATCH in body["message"]
    assert STRATEGIC not in body["message"]
    status, body = _patch(cluster, f"{base}/g", {"spec": {"x": 1}}, MERGE_PATCH)
    assert status == 200
    assert body["spec"] == {"x": 1}


# --- server-side apply --------------------------------------------------------------------------------


def test_apply_creates_with_an_apply_managed_fields_entry(cluster: Cluster, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/ssa"
    status, body = _apply(cluster, path, _configmap("ssa", {"a": "1"}), "mgr-a")
    assert status == 201
    assert body["data"] == {"a": "1"}
    entries = body["metadata"]["managedFields"]
    assert [(e["manager"], e["operation"]) for e in entries] == [("mgr-a", "Apply")]
    assert entries[0]["fieldsV1"] == {"f:data": {"f:a": {}}}


def test_reapply_without_a_field_removes_it(cluster: Cluster, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/rm"
    _apply(cluster, path, _configmap("rm", {"a": "1", "b": "2"}), "mgr-a")
    status, body = _apply(cluster, path, _configmap("rm", {"a": "1"}), "mgr-a")
    assert status == 200
    assert body["data"] == {"a": "1"}
    assert _owned_data_keys(body, "mgr-a") == {"a"}


def test_conflicting_apply_of_another_manager_is_conflict(cluster: Cluster, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/cf"
    _apply(cluster, path, _configmap("cf", {"key": "a"}), "mgr-a")
    status, body = _apply(cluster, path, _configmap("cf", {"key": "b"}), "mgr-b")
    assert status == 409
    assert body["reason"] == "Conflict"
    assert body["message"].startswith("Apply failed with 1 conflict: ")
    causes = body["details"]["causes"]
    assert causes == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "mgr-a"', "field": ".data.key"}
    ]
    _, current = cluster.json("GET", path)
    assert current["data"] == {"key": "a"}


def test_applying_the_same_value_as_another_manager_shares_ownership(
    cluster: Cluster, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/sh"
    _apply(cluster, path, _configmap("sh", {"key": "a"}), "mgr-a")
    status, body = _apply(cluster, path, _configmap("sh", {"key": "a"}), "mgr-b")
    assert status == 200
    assert _owned_data_keys(body, "mgr-a") == _owned_data_keys(body, "mgr-b") == {"key"}


def test_forced_apply_takes_ownership(cluster: Cluster, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/fo"
    _apply(cluster, path, _configmap("fo", {"key": "a", "other": "x"}), "mgr-a")
    status, body = _apply(cluster, path, _configmap("fo", {"key": "b"}), "mgr-b", force=True)
    assert status == 200
    assert body["data"] == {"key": "b", "other": "x"}
    assert _owned_data_keys(body, "mgr-a") == {"other"}
    assert _owned_data_keys(body, "mgr-b") == {"key"}


def test_apply_without_field_manager_is_invalid(cluster: Cluster, namespace: str) -> None:
    status, body = _patch(
        cluster, f"/api/v1/namespaces/{namespace}/configmaps/nf", _configmap("nf", {}), APPLY
    )
    assert status == 422
    assert body["reason"] == "Invalid"
    assert body["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )


def test_force_on_a_non_apply_patch_is_invalid(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "fn"}})
    status, body = _patch(
        cluster,
        f"/api/v1/namespaces/{namespace}/configmaps/fn",
        {"data": {"a": "1"}},
        MERGE_PATCH,
        query=[("force", "true")],
    )
    assert status == 422
    assert body["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch'
    )


def test_apply_after_an_update_by_another_manager_conflicts(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "up"}, "data": {"key": "a"}}, field_manager="editor"
    )
    path = f"/api/v1/namespaces/{namespace}/configmaps/up"
    status, body = _apply(cluster, path, _configmap("up", {"key": "b"}), "applier")
    assert status == 409
    [cause] = body["details"]["causes"]
    assert cause["field"] == ".data.key"
    assert cause["message"].startswith('conflict with "editor" using v1')


def test_kubectl_edit_then_server_side_apply_conflicts(
    cluster: Cluster, namespace: str, kubectl_available: None
) -> None:
    manifest = json.dumps(
        _configmap("kc", {"key": "a"}) | {"metadata": {"name": "kc", "namespace": namespace}}
    )
    cluster.kubectl("create", "-f", "-", input=manifest)
    cluster.kubectl("patch", "configmap", "kc", "-n", namespace, "-p", '{"data":{"key":"edited"}}')
    changed = json.dumps(
        _configmap("kc", {"key": "b"}) | {"metadata": {"name": "kc", "namespace": namespace}}
    )
    result = cluster.kubectl("apply", "--server-side", "-f", "-", input=changed, check=False)
    assert result.returncode != 0
    assert "conflict" in result.stderr
    assert ".data.key" in result.stderr
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=changed)
    _, current = cluster.json("GET", f"/api/v1/namespaces/{namespace}/configmaps/kc")
    assert current["data"] == {"key": "b"}
    assert _owned_data_keys(current, "kubectl") == {"key"}


def test_apply_with_wrong_api_version_in_body_is_bad_request(cluster: Cluster, namespace: str) -> None:
    body = {"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "wv"}}
    status, answer = _apply(cluster, f"/api/v1/namespaces/{namespace}/configmaps/wv", body, "mgr")
    assert status == 400
    assert answer["reason"] == "BadRequest"


def test_apply_to_status_owns_only_status(cluster: Cluster, apps: client.AppsV1Api, namespace: str) -> None:
    apps.create_namespaced_deployment(namespace, _deployment("st"))
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/st/status"
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "st"},
        "status": {"replicas": 2},
    }
    status, answer = _apply(cluster, path, body, "status-writer")
    assert status == 200
    assert answer["status"]["replicas"] == 2
    entries = [e for e in answer["metadata"]["managedFields"] if e["manager"] == "status-writer"]
    assert len(entries) == 1
    assert entries[0]["operation"] == "Apply"
    assert entries[0]["subresource"] == "status"
    assert set(entries[0]["fieldsV1"]) == {"f:status"}
    assert apps.read_namespaced_deployment("st", namespace).status.replicas == 2


def test_apply_to_status_of_a_missing_object_is_not_found(cluster: Cluster, namespace: str) -> None:
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/none/status"
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "none"},
        "status": {"replicas": 2},
    }
    status, answer = _apply(cluster, path, body, "status-writer")
    assert status == 404
    assert answer["reason"] == "NotFound"


def test_apply_dry_run_stores_nothing(cluster: Cluster, core: client.CoreV1Api, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/dr"
    status, body = _patch(
        cluster, path, _configmap("dr", {"a": "1"}), APPLY, query=[("fieldManager", "m"), ("dryRun", "All")]
    )
    assert status == 201
    assert body["data"] == {"a": "1"}
    with pytest.raises(client.ApiException) as err:
        core.read_namespaced_config_map("dr", namespace)
    assert err.value.status == 404


# --- managedFields ------------------------------------------------------------------------------------


def _assert_well_formed(entries: list[dict[str, Any]]) -> None:
    assert entries, "every written object carries managedFields"
    seen = set()
    for entry in entries:
        assert entry["manager"]
        assert entry["operation"] in ("Apply", "Update")
        assert entry["apiVersion"]
        assert RFC3339.match(entry["time"]), entry["time"]
        assert entry["fieldsType"] == "FieldsV1"
        assert isinstance(entry["fieldsV1"], dict) and entry["fieldsV1"]
        key = (entry["manager"], entry["operation"], entry.get("subresource", ""))
        assert key not in seen, f"duplicate managedFields entry {key}"
        seen.add(key)


def test_managed_fields_are_well_formed_after_each_kind_of_write(
    cluster: Cluster, apps: client.AppsV1Api, namespace: str
) -> None:
    dep = apps.create_namespaced_deployment(namespace, _deployment("mf"), field_manager="creator")
    apps.patch_namespaced_deployment("mf", namespace, {"spec": {"replicas": 2}}, field_manager="scaler")
    apps.patch_namespaced_deployment("mf", namespace, {"spec": {"replicas": 3}}, field_manager="scaler")
    apps.patch_namespaced_deployment_status(
        "mf", namespace, {"status": {"replicas": 1}}, field_manager="status"
    )
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/mf"
    labels = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "mf", "labels": {"x": "y"}}}
    _apply(cluster, path, labels, "labeller")
    _, body = cluster.json("GET", path)
    entries = body["metadata"]["managedFields"]
    _assert_well_formed(entries)
    # a real cluster's deployment controller writes the status too (as kube-controller-manager)
    ours = ("creator", "scaler", "status", "labeller")
    by_manager = {
        (e["manager"], e["operation"], e.get("subresource", "")) for e in entries if e["manager"] in ours
    }
    assert by_manager == {
        ("creator", "Update", ""),
        ("scaler", "Update", ""),
        ("status", "Update", "status"),
        ("labeller", "Apply", ""),
    }
    scaler = next(e for e in entries if e["manager"] == "scaler")
    assert scaler["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    creator = next(e for e in entries if e["manager"] == "creator")
    assert "f:replicas" not in creator["fieldsV1"]["f:spec"]
    assert int(body["metadata"]["resourceVersion"]) > int(dep.metadata.resource_version)
