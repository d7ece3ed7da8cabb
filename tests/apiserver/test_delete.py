"""Deletion: finalizers, deletionTimestamp, propagation, preconditions, namespaces."""

from __future__ import annotations

import time

import pytest
from kubernetes import client

from .conftest import Cluster


def test_delete_without_finalizers_removes_at_once(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    created = core.create_namespaced_config_map(namespace, {"metadata": {"name": "gone"}})
    code, status = cluster.json("DELETE", f"/api/v1/namespaces/{namespace}/configmaps/gone")
    assert code == 200
    assert status["kind"] == "Status"
    assert status["status"] == "Success"
    assert status["details"] == {"name": "gone", "kind": "configmaps", "uid": created.metadata.uid}
    with pytest.raises(client.ApiException) as err:
        core.read_namespaced_config_map("gone", namespace)
    assert err.value.status == 404


def test_delete_missing_object_is_not_found(cluster: Cluster, namespace: str) -> None:
    status, body = cluster.json("DELETE", f"/api/v1/namespaces/{namespace}/configmaps/nothing")
    assert status == 404
    assert body["message"] == 'configmaps "nothing" not found'


def test_finalizers_hold_the_object_until_removed(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    )
    response = cluster.raw("DELETE", f"/api/v1/namespaces/{namespace}/configmaps/held")
    assert response.status == 200
    held = core.read_namespaced_config_map("held", namespace)
    assert held.metadata.deletion_timestamp is not None
    assert held.metadata.finalizers == ["example.com/hold"]
    with pytest.raises(client.ApiException) as err:
        core.patch_namespaced_config_map(
            "held", namespace, {"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}}
        )
    assert err.value.status in (403, 422)
    core.patch_namespaced_config_map("held", namespace, {"metadata": {"finalizers": None}})
    with pytest.raises(client.ApiException) as err:
        core.read_namespaced_config_map("held", namespace)
    assert err.value.status == 404


def test_delete_held_by_a_finalizer_is_accepted_only_for_orphan_dependents_false(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    """kube-apiserver answers 202 for an object that stays only when the client set orphanDependents=false."""
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    )
    status, body = cluster.json(
        "DELETE",
        f"/api/v1/namespaces/{namespace}/configmaps/held",
        {"kind": "DeleteOptions", "apiVersion": "v1", "orphanDependents": False},
    )
    assert (status, body["kind"], bool(body["metadata"]["deletionTimestamp"])) == (202, "ConfigMap", True)
    core.patch_namespaced_config_map("held", namespace, {"metadata": {"finalizers": None}})


def test_orphan_propagation_adds_orphan_finalizer(cluster: Cluster, namespace: str) -> None:
    apps = client.AppsV1Api(cluster.api)
    body = {
        "metadata": {"name": "orph"},
        "spec": {
            "selector": {"matchLabels": {"app": "o"}},
            "template": {
                "metadata": {"labels": {"app": "o"}},
                "spec": {"containers": [{"name": "c", "image": "x:1"}]},
            },
        },
    }
    apps.create_namespaced_replica_set(namespace, body)
    status, deleting = cluster.json(
        "DELETE",
        f"/apis/apps/v1/namespaces/{namespace}/replicasets/orph",
        {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan"},
    )
    # The answer is the object as the delete left it. What happens next is the garbage
    # collector's: a real one removes the finalizer (and the ReplicaSet) almost at once.
    assert (status, deleting["kind"], deleting["metadata"]["finalizers"]) == (200, "ReplicaSet", ["orphan"])
    assert deleting["metadata"]["deletionTimestamp"]


def test_delete_precondition_on_uid(cluster: Cluster, core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "pre"}})
    status, body = cluster.json(
        "DELETE",
        f"/api/v1/namespaces/{namespace}/configmaps/pre",
        {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "not-the-uid"}},
    )
    assert status == 409
    uid = core.read_namespaced_config_map("pre", namespace).metadata.uid
    assert (body["reason"], body["message"], body["details"]) == (
        "Conflict",
        f'Operation cannot be fulfilled on ConfigMap "pre": the UID in the precondition (not-the-uid) does not '
        f"match the UID in record ({uid}). The object might have been deleted and then recreated",
        {"name": "pre", "kind": "ConfigMap"},
    )


def test_delete_precondition_on_resource_version(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    current = core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "pre"}}
    ).metadata.resource_version
    status, body = cluster.json(
        "DELETE",
        f"/api/v1/namespaces/{namespace}/configmaps/pre",
        {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": "1"}},
    )
    assert (status, body["reason"], body["message"]) == (
        409,
        "Conflict",
        'Operation cannot be fulfilled on ConfigMap "pre": the ResourceVersion in the precondition (1) does not '
        f"match the ResourceVersion in record ({current}). The object might have been modified",
    )


def test_delete_collection_with_label_selector(core: client.CoreV1Api, namespace: str) -> None:
    # Secrets: a real cluster's namespaces start with the kube-root-ca.crt ConfigMap, but no Secret
    for name, labels in [("x1", {"del": "yes"}), ("x2", {"del": "yes"}), ("x3", {})]:
        core.create_namespaced_secret(namespace, {"metadata": {"name": name, "labels": labels}})
    core.delete_collection_namespaced_secret(namespace, label_selector="del=yes")
    assert [i.metadata.name for i in core.list_namespaced_secret(namespace).items] == ["x3"]


def test_pod_on_a_node_deletes_gracefully(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_pod(
        namespace, {"metadata": {"name": "g"}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}}
    )
    core.create_namespaced_pod_binding(
        "g",
        namespace,
        {"metadata": {"name": "g"}, "target": {"kind": "Node", "name": "n"}},
        _preload_content=False,
    )
    core.delete_namespaced_pod("g", namespace)
    pod = core.read_namespaced_pod("g", namespace)
    assert pod.metadata.deletion_timestamp is not None
    assert pod.metadata.deletion_grace_period_seconds == 30
    core.delete_namespaced_pod("g", namespace, grace_period_seconds=0)
    with pytest.raises(client.ApiException) as err:
        core.read_namespaced_pod("g", namespace)
    assert err.value.status == 404


def test_unscheduled_pod_deletes_at_once(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_pod(
        namespace, {"metadata": {"name": "u"}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}}
    )
    core.delete_namespaced_pod("u", namespace)
    with pytest.raises(client.ApiException) as err:
        core.read_namespaced_pod("u", namespace)
    assert err.value.status == 404


def test_deleting_namespace_marks_it_terminating_and_blocks_new_content(
    cluster: Cluster, core: client.CoreV1Api
) -> None:
    name = f"term-{int(time.time() * 1000) % 100000}"
    core.create_namespace({"metadata": {"name": name}})
    core.create_namespaced_config_map(
        name, {"metadata": {"name": "inside", "finalizers": ["example.com/hold"]}}
    )
    core.delete_namespace(name)
    ns = core.read_namespace(name)
    assert ns.status.phase == "Terminating"
    assert ns.metadata.deletion_timestamp is not None
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_config_map(name, {"metadata": {"name": "late"}})
    assert err.value.status == 403
    assert "because it is being terminated" in str(err.value.body)
    core.patch_namespaced_config_map("inside", name, {"metadata": {"finalizers": None}})


def test_namespace_finalize_subresource_completes_deletion(core: client.CoreV1Api) -> None:
    """Emptying spec.finalizers through /finalize lets the namespace go (a namespace controller does it too)."""
    name = f"finalize-{int(time.time() * 1000) % 100000}"
    core.create_namespace({"metadata": {"name": name}})
    core.delete_namespace(name)
    try:
        ns = core.read_namespace(name)
        ns.spec.finalizers = []
        core.replace_namespace_finalize(name, ns)
    except client.ApiException as exc:
        if exc.status not in (404, 409):
            raise
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            core.read_namespace(name)
        except client.ApiException as exc:
            assert exc.status == 404
            return
        time.sleep(0.2)
    pytest.fail(f"namespace {name} still exists 30 s after finalize")


def test_system_namespaces_cannot_be_deleted(cluster: Cluster) -> None:
    status, body = cluster.json("DELETE", "/api/v1/namespaces/kube-system")
    assert status == 403
    assert "this namespace may not be deleted" in body["message"]
