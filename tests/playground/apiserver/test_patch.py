"""JSON patch, merge patch and strategic merge patch, including SMP directives and kube-apiserver's errors."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from playground.apiserver.errors import APIError
from playground.apiserver.listtypes import builtin_list_types, crd_list_types
from playground.apiserver.patch import (
    MAX_JSON_PATCH_OPERATIONS,
    REJECTED,
    json_equal,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "labels": {"app": "web"}, "finalizers": ["a", "b"]},
    "spec": {
        "containers": [
            {
                "name": "app",
                "image": "app:1",
                "env": [{"name": "A", "value": "1"}],
                "ports": [{"containerPort": 80}],
            },
            {"name": "side", "image": "side:1"},
        ],
        "tolerations": [{"key": "k", "operator": "Exists"}],
    },
}
POD_TYPES = builtin_list_types("", "Pod")


# --- JSON patch ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        ([{"op": "add", "path": "/a/c", "value": 3}], {"a": {"b": 1, "c": 3}, "l": [1, 2, 3]}),
        ([{"op": "add", "path": "/l/1", "value": 9}], {"a": {"b": 1}, "l": [1, 9, 2, 3]}),
        ([{"op": "add", "path": "/l/-", "value": 9}], {"a": {"b": 1}, "l": [1, 2, 3, 9]}),
        ([{"op": "add", "path": "/l/3", "value": 9}], {"a": {"b": 1}, "l": [1, 2, 3, 9]}),
        ([{"op": "remove", "path": "/a/b"}], {"a": {}, "l": [1, 2, 3]}),
        ([{"op": "remove", "path": "/l/0"}], {"a": {"b": 1}, "l": [2, 3]}),
        ([{"op": "replace", "path": "/l/2", "value": "x"}], {"a": {"b": 1}, "l": [1, 2, "x"]}),
        ([{"op": "move", "from": "/a/b", "path": "/m"}], {"a": {}, "l": [1, 2, 3], "m": 1}),
        ([{"op": "copy", "from": "/l", "path": "/a/l"}], {"a": {"b": 1, "l": [1, 2, 3]}, "l": [1, 2, 3]}),
        ([{"op": "test", "path": "/l", "value": [1, 2, 3]}], {"a": {"b": 1}, "l": [1, 2, 3]}),
        ([{"op": "test", "path": "/missing", "value": None}], {"a": {"b": 1}, "l": [1, 2, 3]}),
        ([{"op": "replace", "path": "", "value": {"z": 1}}], {"z": 1}),
        (
            [{"op": "add", "path": "/a/x~1y", "value": 1}, {"op": "add", "path": "/a/t~0", "value": 2}],
            {"a": {"b": 1, "x/y": 1, "t~": 2}, "l": [1, 2, 3]},
        ),
    ],
    ids=[
        "add-member",
        "add-at-index",
        "append-with-dash",
        "add-at-end-index",
        "remove-member",
        "remove-item",
        "replace-item",
        "move",
        "copy",
        "test-passes",
        "test-null-on-missing-passes",
        "replace-root",
        "pointer-escapes",
    ],
)
def test_json_patch_applies_operations(ops: list[dict[str, Any]], expected: dict[str, Any]) -> None:
    doc = {"a": {"b": 1}, "l": [1, 2, 3]}
    before = copy.deepcopy(doc)
    assert json_patch(doc, ops) == expected
    assert doc == before


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "remove", "path": "/nope"}],
        [{"op": "replace", "path": "/nope", "value": 1}],
        [{"op": "test", "path": "/a/b", "value": 2}],
        [{"op": "test", "path": "/a/b", "value": True}],
        [{"op": "frobnicate", "path": "/a"}],
        [{"op": "add", "path": "/l/7", "value": 1}],
        [{"op": "add", "path": "/x/y", "value": 1}],
        [{"op": "add", "value": 1}],
        [{"op": "move", "from": "/a", "path": "/a/b"}],
        [{"op": "add", "path": "/c", "value": 1}, {"op": "remove", "path": "/zz"}],
    ],
    ids=[
        "remove-missing",
        "replace-missing",
        "test-fails",
        "test-bool-is-not-number",
        "unknown-op",
        "index-out-of-range",
        "missing-parent",
        "missing-path",
        "move-into-child",
        "later-op-fails",
    ],
)
def test_json_patch_failing_operation_is_422_like_kube_apiserver(ops: list[dict[str, Any]]) -> None:
    doc = {"a": {"b": 1}, "l": [1, 2, 3]}
    with pytest.raises(APIError) as caught:
        json_patch(doc, ops)
    assert (caught.value.code, caught.value.reason, caught.value.message) == (422, "Invalid", REJECTED)
    assert doc == {"a": {"b": 1}, "l": [1, 2, 3]}


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ({"op": "add"}, "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
        (["add"], "json: cannot unmarshal string into Go value of type jsonpatch.Operation"),
    ],
    ids=["not-a-list", "op-not-an-object"],
)
def test_json_patch_that_does_not_decode_is_400(ops: Any, message: str) -> None:
    with pytest.raises(APIError) as caught:
        json_patch({}, ops)
    assert (caught.value.code, caught.value.reason, caught.value.message) == (400, "BadRequest", message)


def test_json_patch_with_too_many_operations_is_413() -> None:
    ops = [{"op": "test", "path": "", "value": {}}] * (MAX_JSON_PATCH_OPERATIONS + 1)
    with pytest.raises(APIError) as caught:
        json_patch({}, ops)
    assert caught.value.code == 413
    assert caught.value.message.endswith(
        f"is {MAX_JSON_PATCH_OPERATIONS}, got {MAX_JSON_PATCH_OPERATIONS + 1}"
    )


def test_json_patch_leaving_a_non_object_is_422_invalid_patch() -> None:
    with pytest.raises(APIError) as caught:
        json_patch({"a": 1}, [{"op": "replace", "path": "", "value": [1]}])
    assert (caught.value.code, caught.value.reason) == (422, "Invalid")
    assert caught.value.details["causes"][0]["field"] == "patch"


# --- merge patch ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        ({"b": 2}, {"a": {"x": 1, "y": [1, 2]}, "b": 2}),
        ({"a": {"x": 5}}, {"a": {"x": 5, "y": [1, 2]}}),
        ({"a": {"x": None}}, {"a": {"y": [1, 2]}}),
        ({"a": {"y": [3]}}, {"a": {"x": 1, "y": [3]}}),
        ({"a": None}, {}),
        ({"n": {"k": None, "v": 1}}, {"a": {"x": 1, "y": [1, 2]}, "n": {"v": 1}}),
        ({"a": 7}, {"a": 7}),
        ({}, {"a": {"x": 1, "y": [1, 2]}}),
    ],
    ids=[
        "add-key",
        "merge-nested",
        "null-deletes",
        "lists-replace",
        "null-deletes-subtree",
        "nulls-in-new-object-dropped",
        "scalar-replaces-object",
        "empty-patch",
    ],
)
def test_merge_patch_follows_rfc7386(patch: dict[str, Any], expected: dict[str, Any]) -> None:
    doc = {"a": {"x": 1, "y": [1, 2]}}
    assert merge_patch(doc, patch) == expected
    assert doc == {"a": {"x": 1, "y": [1, 2]}}


@pytest.mark.parametrize(
    ("patch", "code"),
    [("text", 400), (None, 400), (3, 400), ([1], 422)],
    ids=["string", "null", "number", "array-replaces-object"],
)
def test_merge_patch_that_is_not_an_object_is_rejected(patch: Any, code: int) -> None:
    with pytest.raises(APIError) as caught:
        merge_patch({"a": 1}, patch)
    assert caught.value.code == code
    if code == 400:
        assert caught.value.message == "Invalid JSON Patch"


# --- strategic merge patch -----------------------------------------------------------------------------


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    containers: list[dict[str, Any]] = obj["spec"]["containers"]
    return containers


@pytest.mark.parametrize(
    ("patch", "check"),
    [
        (
            {"spec": {"containers": [{"name": "new", "image": "n:1"}, {"name": "app", "image": "app:2"}]}},
            lambda o: (
                [(c["name"], c["image"]) for c in _containers(o)]
                == [("new", "n:1"), ("app", "app:2"), ("side", "side:1")]
            ),
        ),
        (
            {"spec": {"containers": [{"name": "app", "env": [{"name": "B", "value": "2"}]}]}},
            lambda o: (
                _containers(o)[0]["env"] == [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]
                and _containers(o)[0]["image"] == "app:1"
            ),
        ),
        (
            {"spec": {"containers": [{"name": "app", "ports": [{"containerPort": 80, "name": "http"}]}]}},
            lambda o: _containers(o)[0]["ports"] == [{"containerPort": 80, "name": "http"}],
        ),
        (
            {"metadata": {"finalizers": ["c", "a"]}},
            lambda o: o["metadata"]["finalizers"] == ["c", "a", "b"],
        ),
        (
            {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}},
            lambda o: o["metadata"]["finalizers"] == ["b"],
        ),
        (
            {"spec": {"containers": [{"name": "side", "$patch": "delete"}]}},
            lambda o: [c["name"] for c in _containers(o)] == ["app"],
        ),
        (
            {"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "o:1"}]}},
            lambda o: _containers(o) == [{"name": "only", "image": "o:1"}],
        ),
        (
            {"metadata": {"labels": {"$patch": "replace", "tier": "db"}}},
            lambda o: o["metadata"]["labels"] == {"tier": "db"},
        ),
        (
            {"metadata": {"labels": {"$patch": "delete"}}},
            lambda o: o["metadata"]["labels"] == {},
        ),
        (
            {"metadata": {"labels": {"app": None, "tier": "db"}}},
            lambda o: o["metadata"]["labels"] == {"tier": "db"},
        ),
        (
            {"spec": {"tolerations": [{"key": "other", "operator": "Exists"}]}},
            lambda o: o["spec"]["tolerations"] == [{"key": "other", "operator": "Exists"}],
        ),
        (
            {
                "spec": {
                    "$setElementOrder/containers": [{"name": "side"}, {"name": "app"}],
                    "containers": [{"name": "app", "image": "app:3"}],
                }
            },
            lambda o: (
                [(c["name"], c["image"]) for c in _containers(o)] == [("side", "side:1"), ("app", "app:3")]
            ),
        ),
        (
            {"metadata": {"$setElementOrder/finalizers": ["b", "a"]}},
            lambda o: o["metadata"]["finalizers"] == ["b", "a"],
        ),
        (
            {"spec": {"volumes": [{"name": "v", "emptyDir": {}, "$patch": "delete"}]}},
            lambda o: o["spec"]["volumes"] == [],
        ),
        (
            {"spec": {"nodeName": "n1", "containers": None}},
            lambda o: o["spec"] == {"nodeName": "n1", "tolerations": [{"key": "k", "operator": "Exists"}]},
        ),
    ],
    ids=[
        "containers-merge-by-name-in-patch-order",
        "env-merges-inside-container-new-items-first",
        "ports-merge-by-container-port",
        "finalizers-merge-as-set",
        "delete-from-primitive-list",
        "patch-delete-list-item",
        "patch-replace-list",
        "patch-replace-map",
        "patch-delete-map-empties-it",
        "null-deletes-key",
        "atomic-list-replaced",
        "set-element-order-for-maps",
        "set-element-order-for-primitives",
        "directives-apply-in-new-lists",
        "null-deletes-list",
    ],
)
def test_strategic_merge_patch_on_pods(patch: dict[str, Any], check: Any) -> None:
    before = copy.deepcopy(POD)
    patched = strategic_merge_patch(POD, patch, list_types=POD_TYPES)
    assert check(patched), patched
    assert before == POD


def test_strategic_merge_patch_retain_keys_clears_unlisted_fields() -> None:
    deployment = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    patched = strategic_merge_patch(deployment, patch, list_types=builtin_list_types("apps", "Deployment"))
    assert patched == {"spec": {"strategy": {"type": "Recreate"}}}


def test_strategic_merge_patch_merges_service_ports_by_port() -> None:
    service = {"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}}
    patch = {"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}
    patched = strategic_merge_patch(service, patch, list_types=builtin_list_types("", "Service"))
    assert patched["spec"]["ports"] == [{"port": 80, "targetPort": 9090}, {"port": 443}]


def test_strategic_merge_patch_replaces_lists_without_patch_strategy() -> None:
    role = {"rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]}
    patch = {"rules": [{"verbs": ["watch"]}]}
    patched = strategic_merge_patch(
        role, patch, list_types=builtin_list_types("rbac.authorization.k8s.io", "Role")
    )
    assert patched == {"rules": [{"verbs": ["watch"]}]}


def test_strategic_merge_patch_null_body_changes_nothing() -> None:
    assert strategic_merge_patch(POD, None, list_types=POD_TYPES) == POD


@pytest.mark.parametrize(
    ("patch", "code", "message"),
    [
        ([1], 400, "json: cannot unmarshal array into Go value of type map[string]interface {}"),
        (
            {"spec": {"containers": [{"name": "x", "$patch": "merge"}]}},
            500,
            "merging lists cannot yet be specified",
        ),
        (
            {"metadata": {"labels": {"$patch": "merge"}}},
            500,
            "Unknown patch type: merge in map: map[$patch:merge]",
        ),
        ({"spec": {"$retainKeys": "nodeName"}}, 400, "invalid patch format of retainKeys"),
        ({"spec": {"$retainKeys": ["nodeName"], "hostname": "h"}}, 400, "invalid patch format of retainKeys"),
        ({"spec": {"containers": [{"image": "x"}]}}, 500, "does not contain declared merge key: name"),
        ({"spec": {"containers": [{"name": "x", "$patch": "delete"}, ["bad"]]}}, 422, REJECTED),
        (
            {"spec": {"$setElementOrder/containers": "app"}},
            400,
            "invalid patch format of setElementOrder list",
        ),
        (
            {"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}},
            400,
            "invalid patch format of primitive list",
        ),
    ],
    ids=[
        "not-an-object",
        "merge-directive-in-list",
        "merge-directive-in-map",
        "retain-keys-not-a-list",
        "patch-sets-unretained-key",
        "item-without-merge-key",
        "list-of-lists",
        "element-order-not-a-list",
        "delete-list-not-a-list",
    ],
)
def test_strategic_merge_patch_errors_match_kube_apiserver(patch: Any, code: int, message: str) -> None:
    with pytest.raises(APIError) as caught:
        strategic_merge_patch(POD, patch, list_types=POD_TYPES)
    assert caught.value.code == code
    assert message in caught.value.message


# --- list types ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "kind", "path", "kind_keys", "smp"),
    [
        ("", "Pod", ("spec", "containers"), ("map", ("name",)), ("merge", "name")),
        (
            "apps",
            "Deployment",
            ("spec", "template", "spec", "containers", "ports"),
            ("map", ("containerPort", "protocol")),
            ("merge", "containerPort"),
        ),
        (
            "apps",
            "StatefulSet",
            ("spec", "template", "spec", "volumes"),
            ("map", ("name",)),
            ("merge", "name"),
        ),
        (
            "batch",
            "CronJob",
            ("spec", "jobTemplate", "spec", "template", "spec", "initContainers", "env"),
            ("map", ("name",)),
            ("merge", "name"),
        ),
        ("", "Service", ("spec", "ports"), ("map", ("port", "protocol")), ("merge", "port")),
        ("", "Node", ("status", "conditions"), ("map", ("type",)), ("merge", "type")),
        ("", "ConfigMap", ("metadata", "finalizers"), ("set", ()), ("merge", "")),
        ("", "Secret", ("metadata", "ownerReferences"), ("map", ("uid",)), ("merge", "uid")),
        ("", "Pod", ("spec", "tolerations"), ("atomic", ()), ("replace", "")),
        ("", "Pod", ("metadata", "managedFields"), ("atomic", ()), ("replace", "")),
        ("rbac.authorization.k8s.io", "ClusterRole", ("rules",), ("atomic", ()), ("replace", "")),
        (
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            ("spec", "versions"),
            ("atomic", ()),
            ("replace", ""),
        ),
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
            ("webhooks",),
            ("map", ("name",)),
            ("merge", "name"),
        ),
        ("batch", "Job", ("status", "conditions"), ("atomic", ()), ("merge", "type")),
    ],
    ids=[
        "pod-containers",
        "deployment-container-ports",
        "statefulset-volumes",
        "cronjob-init-container-env",
        "service-ports",
        "node-conditions",
        "finalizers-everywhere",
        "owner-references-everywhere",
        "tolerations-atomic",
        "managed-fields-atomic",
        "rbac-rules-atomic",
        "crd-versions-atomic",
        "webhooks",
        "job-conditions",
    ],
)
def test_builtin_list_types_follow_k8s_api_markers(
    group: str, kind: str, path: tuple[str, ...], kind_keys: tuple[str, tuple[str, ...]], smp: tuple[str, str]
) -> None:
    list_type = builtin_list_types(group, kind).list_type(path)
    assert (list_type.kind, list_type.keys) == kind_keys
    assert (list_type.strategy, list_type.merge_key) == smp


def test_builtin_list_types_default_container_port_protocol_and_atomic_maps() -> None:
    types = builtin_list_types("apps", "Deployment")
    assert types.list_type(("spec", "template", "spec", "containers", "ports")).key_defaults == {
        "protocol": "TCP"
    }
    assert types.atomic_map(("spec", "selector"))
    assert types.atomic_map(("spec", "template", "spec", "nodeSelector"))
    assert not types.atomic_map(("spec", "template", "metadata", "labels"))
    assert not types.is_field(("spec", "template", "metadata", "labels", "app"))
    assert types.is_field(("spec", "replicas"))


def test_crd_list_types_read_schema_extensions() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name", "proto"],
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string"},
                                "proto": {"type": "string", "default": "TCP"},
                                "tags": {
                                    "type": "array",
                                    "x-kubernetes-list-type": "set",
                                    "items": {"type": "string"},
                                },
                            },
                        },
                    },
                    "plain": {"type": "array", "items": {"type": "string"}},
                    "selector": {"type": "object", "x-kubernetes-map-type": "atomic"},
                    "extra": {"type": "object", "additionalProperties": {"type": "string"}},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                },
            }
        },
    }
    types = crd_list_types(schema)
    items = types.list_type(("spec", "items"))
    assert (items.kind, items.keys, dict(items.key_defaults)) == ("map", ("name", "proto"), {"proto": "TCP"})
    assert types.list_type(("spec", "items", "tags")).kind == "set"
    assert types.list_type(("spec", "plain")).kind == "atomic"
    assert types.list_type(("spec", "free", "anything")).kind == "atomic"
    assert types.list_type(("metadata", "finalizers")).kind == "set"
    assert types.atomic_map(("spec", "selector"))
    assert types.is_field(("spec", "items"))
    assert not types.is_field(("spec", "extra", "key"))
    assert not types.is_field(("spec", "free", "key"))
    assert types.is_field(("metadata", "labels"))
    assert not types.is_field(("metadata", "labels", "app"))


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [(1, 1.0, True), (True, 1, False), ({"a": [1]}, {"a": [1.0]}, True), ("1", 1, False), (None, None, True)],
    ids=["int-float", "bool-int", "nested", "string-int", "nulls"],
)
def test_json_equal_compares_json_values(a: Any, b: Any, equal: bool) -> None:
    assert json_equal(a, b) is equal
