"""Server-side apply and managedFields: ownership, pruning, conflicts, force, updates and subresources."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from playground.apiserver.apply import (
    BEFORE_FIRST_APPLY,
    FieldSet,
    apply,
    fields_of,
    path_string,
    record_update,
)
from playground.apiserver.errors import APIError
from playground.apiserver.listtypes import builtin_list_types, crd_list_types

CM_TYPES = builtin_list_types("", "ConfigMap")
DEPLOY_TYPES = builtin_list_types("apps", "Deployment")
T0, T1, T2, T3 = (f"2024-05-01T00:00:0{i}Z" for i in range(4))


def configmap(data: dict[str, str], **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "ns", **metadata},
        "data": data,
    }


def stored(obj: dict[str, Any]) -> dict[str, Any]:
    """What the registry would store: the object plus the fields the server sets."""
    out = copy.deepcopy(obj)
    out["metadata"] |= {"uid": "u-1", "resourceVersion": "7", "creationTimestamp": T0}
    return out


def entries(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e for e in obj["metadata"].get("managedFields", [])}


def apply_cm(
    live: dict[str, Any] | None, data: dict[str, str], manager: str = "kubectl", **kw: Any
) -> dict[str, Any]:
    return apply(
        live,
        configmap(data),
        manager=manager,
        force=kw.pop("force", False),
        list_types=CM_TYPES,
        now=kw.pop("now", T1),
        **kw,
    )


def conflict_of(call: Any) -> APIError:
    with pytest.raises(APIError) as caught:
        call()
    assert (caught.value.code, caught.value.reason) == (409, "Conflict")
    return caught.value


# --- create and re-apply -------------------------------------------------------------------------------


def test_apply_create_records_one_apply_entry() -> None:
    created = apply_cm(None, {"a": "1", "b": "2"}, now=T0)
    assert created["data"] == {"a": "1", "b": "2"}
    assert created["metadata"]["managedFields"] == [
        {
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "v1",
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:a": {}, "f:b": {}}},
        }
    ]


def test_apply_never_tracks_server_managed_metadata() -> None:
    obj = configmap({"a": "1"}, labels={"app": "x"}, uid="u", resourceVersion="3", generation=2)
    created = apply(None, obj, manager="m", force=False, list_types=CM_TYPES, now=T0)
    assert created["metadata"]["managedFields"][0]["fieldsV1"] == {
        "f:data": {"f:a": {}},
        "f:metadata": {"f:labels": {"f:app": {}}},
    }


def test_reapply_without_a_field_removes_it() -> None:
    live = stored(apply_cm(None, {"a": "1", "b": "2"}, now=T0))
    snapshot = copy.deepcopy(live)
    again = apply_cm(live, {"a": "1"}, now=T1)
    assert live == snapshot
    assert again["data"] == {"a": "1"}
    assert entries(again)["kubectl", "Apply"]["fieldsV1"] == {"f:data": {"f:a": {}}}
    assert again["metadata"]["uid"] == "u-1"


def test_reapply_without_any_data_removes_the_whole_map() -> None:
    live = stored(apply_cm(None, {"a": "1"}, now=T0))
    bare = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns"}}
    again = apply(live, bare, manager="kubectl", force=False, list_types=CM_TYPES, now=T1)
    assert "data" not in again
    assert again["metadata"]["name"] == "cm"
    assert "managedFields" not in again["metadata"]


def test_identical_reapply_keeps_the_entry_time() -> None:
    live = stored(apply_cm(None, {"a": "1"}, now=T0))
    again = apply_cm(live, {"a": "1"}, now=T2)
    assert entries(again)["kubectl", "Apply"]["time"] == T0


def test_applied_managed_fields_are_rejected() -> None:
    obj = configmap({"a": "1"}, managedFields=[])
    with pytest.raises(APIError) as caught:
        apply(None, obj, manager="m", force=False, list_types=CM_TYPES, now=T0)
    assert (caught.value.code, caught.value.message) == (400, "metadata.managedFields must be nil")


# --- several managers -----------------------------------------------------------------------------------


def test_two_appliers_share_a_field_and_it_survives_one_letting_go() -> None:
    live = stored(apply_cm(None, {"a": "1", "b": "2"}, manager="one", now=T0))
    shared = stored(apply_cm(live, {"a": "1"}, manager="two", now=T1))
    assert entries(shared)["two", "Apply"]["fieldsV1"] == {"f:data": {"f:a": {}}}
    assert entries(shared)["one", "Apply"]["fieldsV1"] == {"f:data": {"f:a": {}, "f:b": {}}}
    released = apply_cm(shared, {"b": "2"}, manager="one", now=T2)
    assert released["data"] == {"a": "1", "b": "2"}
    assert entries(released)["one", "Apply"]["fieldsV1"] == {"f:data": {"f:b": {}}}


def test_changing_another_appliers_field_conflicts() -> None:
    live = stored(apply_cm(None, {"a": "1"}, manager="one", now=T0))
    error = conflict_of(lambda: apply_cm(live, {"a": "2"}, manager="two"))
    assert error.message == 'Apply failed with 1 conflict: conflict with "one": .data.a'
    assert error.details == {
        "causes": [{"reason": "FieldManagerConflict", "message": 'conflict with "one"', "field": ".data.a"}]
    }


def test_several_conflicts_are_grouped_by_manager() -> None:
    live = stored(apply_cm(None, {"a": "1", "b": "1"}, manager="one", now=T0))
    edited = copy.deepcopy(live)
    edited["data"]["c"] = "1"
    live = stored(record_update(live, edited, manager="editor", list_types=CM_TYPES, now=T1))
    error = conflict_of(lambda: apply_cm(live, {"a": "2", "b": "2", "c": "2"}, manager="two"))
    assert error.message == (
        'Apply failed with 3 conflicts: conflicts with "editor" using v1:\n- .data.c\n'
        'conflicts with "one":\n- .data.a\n- .data.b'
    )
    assert [c["field"] for c in error.details["causes"]] == [".data.c", ".data.a", ".data.b"]


def test_force_moves_ownership_to_the_applier() -> None:
    live = stored(apply_cm(None, {"a": "1", "b": "1"}, manager="one", now=T0))
    forced = apply_cm(live, {"a": "2"}, manager="two", force=True, now=T1)
    assert forced["data"] == {"a": "2", "b": "1"}
    assert entries(forced)["one", "Apply"]["fieldsV1"] == {"f:data": {"f:b": {}}}
    assert entries(forced)["two", "Apply"]["fieldsV1"] == {"f:data": {"f:a": {}}}


def test_apply_after_an_update_managers_edit_conflicts() -> None:
    created = stored(
        record_update(None, configmap({"a": "1"}), manager="kubectl-create", list_types=CM_TYPES, now=T0)
    )
    assert entries(created)["kubectl-create", "Update"]["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
    applied = stored(apply_cm(created, {"a": "1"}, now=T1))
    edited = copy.deepcopy(applied)
    edited["data"]["a"] = "edited"
    edited = stored(record_update(applied, edited, manager="kubectl-edit", list_types=CM_TYPES, now=T2))
    assert ("kubectl", "Apply") not in entries(edited)
    error = conflict_of(lambda: apply_cm(edited, {"a": "1"}, now=T3))
    assert error.message == 'Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.a'


def test_an_object_nobody_owns_is_owned_by_before_first_apply() -> None:
    live = stored(configmap({"a": "1"}))
    error = conflict_of(lambda: apply_cm(live, {"a": "2"}))
    assert f'conflict with "{BEFORE_FIRST_APPLY}" using v1: .data.a' in error.message
    same = apply_cm(live, {"a": "1", "b": "2"})
    assert entries(same)[BEFORE_FIRST_APPLY, "Update"]["fieldsV1"]["f:data"]["f:a"] == {}


# --- lists ----------------------------------------------------------------------------------------------


def deployment(*containers: dict[str, Any], replicas: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": list(containers)}},
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": spec,
    }


def containers_of(obj: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = obj["spec"]["template"]["spec"]["containers"]
    return found


def apply_deploy(live: dict[str, Any] | None, obj: dict[str, Any], manager: str, **kw: Any) -> dict[str, Any]:
    return apply(live, obj, manager=manager, force=kw.get("force", False), list_types=DEPLOY_TYPES, now=T1)


def test_containers_merge_by_name_between_appliers() -> None:
    app = {"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]}
    live = stored(apply_deploy(None, deployment(app), "team-a"))
    sidecar = {"name": "side", "image": "side:1"}
    both = apply_deploy(live, deployment({"name": "app", "image": "app:1"}, sidecar), "team-b")
    assert [c["name"] for c in containers_of(both)] == ["app", "side"]
    assert containers_of(both)[0]["ports"] == [{"containerPort": 80}]
    fields = entries(both)["team-b", "Apply"]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert fields == {
        'k:{"name":"app"}': {".": {}, "f:image": {}, "f:name": {}},
        'k:{"name":"side"}': {".": {}, "f:image": {}, "f:name": {}},
    }


def test_reapply_drops_a_container_only_its_applier_owned() -> None:
    live = stored(
        apply_deploy(None, deployment({"name": "app", "image": "a"}, {"name": "old", "image": "o"}), "m")
    )
    again = apply_deploy(live, deployment({"name": "app", "image": "a"}), "m")
    assert [c["name"] for c in containers_of(again)] == ["app"]


def test_container_port_keys_use_the_protocol_default() -> None:
    created = apply_deploy(None, deployment({"name": "app", "ports": [{"containerPort": 80}]}), "m")
    container = created["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:template"]["f:spec"][
        "f:containers"
    ]
    assert 'k:{"containerPort":80,"protocol":"TCP"}' in container['k:{"name":"app"}']["f:ports"]
    live = stored(created)
    live["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] = "TCP"
    again = apply_deploy(
        live, deployment({"name": "app", "ports": [{"containerPort": 80, "name": "http"}]}), "m"
    )
    assert containers_of(again)[0]["ports"] == [{"containerPort": 80, "protocol": "TCP", "name": "http"}]


def test_atomic_selector_is_owned_and_replaced_whole() -> None:
    created = apply_deploy(None, deployment(), "m")
    assert created["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:selector"] == {}
    live = stored(created)
    changed = deployment()
    changed["spec"]["selector"] = {"matchLabels": {"tier": "x"}}
    error = conflict_of(lambda: apply_deploy(live, changed, "other"))
    assert error.details["causes"][0]["field"] == ".spec.selector"


def test_finalizers_merge_as_a_set_owned_by_value() -> None:
    live = stored(apply_cm(None, {"a": "1"}, now=T0))
    obj = configmap({"a": "1"}, finalizers=["x/y"])
    merged = apply(live, obj, manager="f", force=False, list_types=CM_TYPES, now=T1)
    assert merged["metadata"]["finalizers"] == ["x/y"]
    assert entries(merged)["f", "Apply"]["fieldsV1"]["f:metadata"] == {"f:finalizers": {'v:"x/y"': {}}}


@pytest.mark.parametrize(
    ("containers", "message"),
    [
        (
            [{"image": "x"}],
            ".spec.template.spec.containers: element 0: associative list with keys has an element that omits "
            'key field "name"',
        ),
        (
            [{"name": "a"}, {"name": "a"}],
            '.spec.template.spec.containers: duplicate entries for key [name="a"]',
        ),
    ],
    ids=["missing-key", "duplicate-key"],
)
def test_applied_lists_that_break_their_keys_fail_like_kube(
    containers: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(APIError) as caught:
        apply_deploy(None, deployment(*containers), "m")
    assert caught.value.code == 500
    assert caught.value.message.startswith(
        "failed to create typed patch object (ns/web; apps/v1, Kind=Deployment): " + message
    )


# --- updates --------------------------------------------------------------------------------------------


def test_update_takes_changed_fields_and_drops_emptied_entries() -> None:
    live = stored(
        record_update(None, configmap({"a": "1", "b": "2"}), manager="one", list_types=CM_TYPES, now=T0)
    )
    new = copy.deepcopy(live)
    new["data"] = {"a": "1", "b": "3"}
    updated = stored(record_update(live, new, manager="two", list_types=CM_TYPES, now=T1))
    assert entries(updated)["one", "Update"]["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
    assert entries(updated)["two", "Update"] | {"time": None} == {
        "manager": "two",
        "operation": "Update",
        "apiVersion": "v1",
        "time": None,
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:b": {}}},
    }
    removed = copy.deepcopy(updated)
    del removed["data"]["b"]
    snapshot = copy.deepcopy(removed)
    final = record_update(updated, removed, manager="three", list_types=CM_TYPES, now=T2)
    assert removed == snapshot
    assert set(entries(final)) == {("one", "Update")}


def test_update_without_changes_records_nothing() -> None:
    live = stored(record_update(None, configmap({"a": "1"}), manager="one", list_types=CM_TYPES, now=T0))
    same = record_update(live, copy.deepcopy(live), manager="two", list_types=CM_TYPES, now=T1)
    assert set(entries(same)) == {("one", "Update")}
    assert entries(same)["one", "Update"]["time"] == T0


@pytest.mark.parametrize("reset", [[], [{}]], ids=["empty-list", "one-empty-entry"])
def test_update_can_reset_managed_fields(reset: list[dict[str, Any]]) -> None:
    live = stored(record_update(None, configmap({"a": "1"}), manager="one", list_types=CM_TYPES, now=T0))
    new = copy.deepcopy(live)
    new["metadata"]["managedFields"] = reset
    cleared = record_update(live, new, manager="two", list_types=CM_TYPES, now=T1)
    assert "managedFields" not in cleared["metadata"]


def test_update_keeps_stored_managed_fields_when_the_body_omits_them() -> None:
    live = stored(record_update(None, configmap({"a": "1"}), manager="one", list_types=CM_TYPES, now=T0))
    new = copy.deepcopy(live)
    del new["metadata"]["managedFields"]
    new["data"]["b"] = "2"
    updated = record_update(live, new, manager="two", list_types=CM_TYPES, now=T1)
    assert set(entries(updated)) == {("one", "Update"), ("two", "Update")}
    assert [e["manager"] for e in updated["metadata"]["managedFields"]] == ["one", "two"]


def test_status_subresource_writes_own_only_status() -> None:
    types = builtin_list_types("apps", "Deployment")
    live = stored(apply(None, deployment(replicas=1), manager="m", force=False, list_types=types, now=T0))
    new = copy.deepcopy(live)
    new["status"] = {"replicas": 1, "conditions": [{"type": "Available", "status": "True"}]}
    updated = record_update(live, new, manager="ctrl", list_types=types, now=T1, subresource="status")
    entry = entries(updated)["ctrl", "Update"]
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"] == {
        "f:status": {
            ".": {},
            "f:conditions": {".": {}, 'k:{"type":"Available"}': {".": {}, "f:status": {}, "f:type": {}}},
            "f:replicas": {},
        }
    }


def test_main_resource_apply_does_not_own_status_when_it_has_a_subresource() -> None:
    obj = configmap({"a": "1"}) | {"status": {"phase": "x"}}
    created = apply(None, obj, manager="m", force=False, list_types=CM_TYPES, now=T0, status_subresource=True)
    assert created["metadata"]["managedFields"][0]["fieldsV1"] == {"f:data": {"f:a": {}}}


def test_status_apply_conflicts_are_named_with_their_subresource() -> None:
    obj = configmap({}) | {"status": {"phase": "ok"}}
    live = stored(
        apply(None, obj, manager="ctl", force=False, list_types=CM_TYPES, now=T0, subresource="status")
    )
    assert entries(live)["ctl", "Apply"]["subresource"] == "status"
    other = configmap({}) | {"status": {"phase": "bad"}}
    error = conflict_of(
        lambda: apply(
            live, other, manager="x", force=False, list_types=CM_TYPES, now=T1, subresource="status"
        )
    )
    assert (
        error.message
        == 'Apply failed with 1 conflict: conflict with "ctl" with subresource "status": .status.phase'
    )


# --- field sets -----------------------------------------------------------------------------------------


def test_field_set_round_trips_fields_v1() -> None:
    fields_v1 = {
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {"f:ports": {'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}}}},
    }
    parsed = FieldSet.from_fields_v1(fields_v1)
    assert ("f:metadata", "f:labels") in parsed
    assert ("f:metadata",) not in parsed
    assert parsed.to_fields_v1() == fields_v1


def test_field_set_reads_key_objects_in_any_key_order() -> None:
    parsed = FieldSet.from_fields_v1({"f:ports": {'k:{"protocol": "TCP", "port": 80}': {}}})
    assert parsed.paths == {("f:ports", 'k:{"port":80,"protocol":"TCP"}')}


def test_field_set_rejects_malformed_fields_v1() -> None:
    with pytest.raises(ValueError, match="unknown fieldsV1 path element"):
        FieldSet.from_fields_v1({"spec": {}})


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (("f:data", "f:a.b"), ".data.a.b"),
        (("f:spec", "f:containers", 'k:{"name":"x"}', "f:image"), '.spec.containers[name="x"].image'),
        (("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}'), '.spec.ports[port=80,protocol="TCP"]'),
        (("f:metadata", "f:finalizers", 'v:"a/b"'), '.metadata.finalizers[="a/b"]'),
    ],
    ids=["field", "keyed-item", "multi-key-item", "set-item"],
)
def test_paths_print_like_structured_merge_diff(path: tuple[str, ...], text: str) -> None:
    assert path_string(path) == text


def test_fields_of_lists_every_owned_path_of_an_object() -> None:
    fields = fields_of(deployment({"name": "app", "image": "a"}), list_types=DEPLOY_TYPES)
    assert ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"app"}', "f:image") in fields
    assert ("f:spec", "f:selector") in fields
    assert ("f:spec", "f:selector", "f:matchLabels") not in fields
    assert ("f:metadata", "f:name") in fields


# --- custom resources -----------------------------------------------------------------------------------


CR_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "peers": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["id"],
                    "items": {
                        "type": "object",
                        "properties": {"id": {"type": "string"}, "w": {"type": "integer"}},
                    },
                },
                "opaque": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        }
    },
}


def test_custom_resources_merge_by_their_schema_list_keys() -> None:
    types = crd_list_types(CR_SCHEMA)
    cr = {
        "apiVersion": "x.io/v1",
        "kind": "Mesh",
        "metadata": {"name": "m"},
        "spec": {"peers": [{"id": "a", "w": 1}]},
    }
    live = stored(apply(None, cr, manager="one", force=False, list_types=types, now=T0))
    mine = copy.deepcopy(cr)
    mine["spec"] = {"peers": [{"id": "b", "w": 2}], "opaque": {"deep": {"x": 1}}}
    both = apply(live, mine, manager="two", force=False, list_types=types, now=T1)
    assert both["spec"]["peers"] == [{"id": "a", "w": 1}, {"id": "b", "w": 2}]
    assert entries(both)["two", "Apply"]["fieldsV1"] == {
        "f:spec": {
            "f:opaque": {"f:deep": {".": {}, "f:x": {}}},
            "f:peers": {'k:{"id":"b"}': {".": {}, "f:id": {}, "f:w": {}}},
        }
    }
