"""Strict decoding checks: unknown and repeated fields, worded and ordered as kube-apiserver reports them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from playground.apiserver.errors import APIError
from playground.apiserver.fieldvalidation import (
    IGNORE,
    STRICT,
    WARN,
    FieldValidator,
    load_json,
    load_yaml,
    unsupported,
)
from playground.apiserver.listtypes import builtin_list_types
from playground.apiserver.resources.base import ResourceType
from playground.apiserver.schema import go_print

CONFIGMAP = ResourceType("", "v1", "ConfigMap", "configmaps", True)
DEPLOYMENT = ResourceType("apps", "v1", "Deployment", "deployments", True)
REVISION = ResourceType("apps", "v1", "ControllerRevision", "controllerrevisions", True)
SERVICE = ResourceType("", "v1", "Service", "services", True)
CRD = ResourceType(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False
)

#: the body kube-apiserver's own field validation integration test posts (test/integration/apiserver)
KUBE_TEST_BODY = """{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {"name": "dupename", "name": "web", "labels": {"app": "nginx"}, "unknownMeta": "metaVal"},
  "spec": {
    "unknown1": "val1",
    "unknownDupe": "valDupe",
    "unknownDupe": "valDupe2",
    "paused": true,
    "paused": false,
    "selector": {"matchLabels": {"app": "nginx"}},
    "template": {
      "metadata": {"labels": {"app": "nginx"}},
      "spec": {
        "containers": [{
          "name": "nginx",
          "image": "nginx:latest",
          "unknownNested": "val1",
          "imagePullPolicy": "Always",
          "imagePullPolicy": "Never"
        }]
      }
    }
  }
}"""
KUBE_TEST_YAML = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: dupename
  name: web
  unknownMeta: metaVal
  labels:
    app: nginx
spec:
  unknown1: val1
  unknownDupe: valDupe
  unknownDupe: valDupe2
  paused: true
  paused: false
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:latest
        unknownNested: val1
        imagePullPolicy: Always
        imagePullPolicy: Never
"""


@pytest.fixture(scope="module")
def fields() -> FieldValidator:
    return FieldValidator()


def body_errors(
    fields: FieldValidator, rt: ResourceType, body: Any, content_type: str = "application/json"
) -> str:
    raw = body if isinstance(body, str) else json.dumps(body)
    with pytest.raises(APIError) as caught:
        fields.check_body(rt, raw.encode(), content_type, directive=STRICT, warnings=[])
    assert caught.value.code == 400
    assert caught.value.reason == "BadRequest"
    return caught.value.message.split("strict decoding error: ", 1)[1]


def body_warnings(fields: FieldValidator, rt: ResourceType, body: Any, directive: str = WARN) -> list[str]:
    warnings: list[str] = []
    fields.check_body(
        rt, json.dumps(body).encode(), "application/json", directive=directive, warnings=warnings
    )
    return warnings


def pod_template(**container: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx", **container}]}}},
    }


# --- create and update bodies of built-in kinds -----------------------------------------------------------------


def test_strict_rejects_an_unknown_top_level_field_like_kube(fields: FieldValidator) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "bogus": 1}
    with pytest.raises(APIError) as caught:
        fields.check_body(
            CONFIGMAP, json.dumps(body).encode(), "application/json", directive=STRICT, warnings=[]
        )
    assert caught.value.message == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "bogus"'
    )


def test_unknown_fields_in_list_items_are_named_by_index(fields: FieldValidator) -> None:
    body = pod_template(imagePullPolicyy="Always")
    body["spec"]["template"]["spec"]["containers"].append(
        {"name": "d", "ports": [{"containerPort": 1, "x": 2}]}
    )
    assert body_errors(fields, DEPLOYMENT, body) == (
        'unknown field "spec.template.spec.containers[0].imagePullPolicyy", '
        'unknown field "spec.template.spec.containers[1].ports[0].x"'
    )


def test_known_documents_pass_and_warn_nothing(fields: FieldValidator) -> None:
    body = pod_template(imagePullPolicy="Always", ports=[{"containerPort": 80, "protocol": "TCP"}])
    body["metadata"]["labels"] = {"any.key/at-all": "ok"}
    assert body_warnings(fields, DEPLOYMENT, body) == []


def test_map_values_are_checked_against_the_value_schema(fields: FieldValidator) -> None:
    body = pod_template(resources={"limits": {"cpu": "1", "memory": 5}})
    body["spec"]["template"]["spec"]["overhead"] = {"cpu": "1"}
    body["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    assert body_warnings(fields, DEPLOYMENT, body) == []


def test_int_or_string_takes_numbers_and_names_alike(fields: FieldValidator) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 81, "targetPort": "http", "bogus": 1}]},
    }
    assert body_errors(fields, SERVICE, body) == 'unknown field "spec.ports[1].bogus"'


def test_embedded_raw_extension_stays_open(fields: FieldValidator) -> None:
    body = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": "r"},
        "revision": 1,
        "data": {"anything": {"goes": ["here"]}, "spec": {"whatever": True}},
    }
    assert body_warnings(fields, REVISION, body) == []


def test_managed_fields_and_crd_schemas_are_opaque(fields: FieldValidator) -> None:
    managed = [{"manager": "m", "operation": "Update", "fieldsV1": {"f:data": {"f:a": {}}}}]
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "managedFields": managed}}
    assert body_warnings(fields, CONFIGMAP, cm) == []
    schema = {"type": "object", "properties": {"spec": {"type": "object", "x-custom": 1}}}
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "ws.example.com"},
        "spec": {
            "versions": [
                {"name": "v1", "schema": {"openAPIV3Schema": schema}, "subresources": {"status": {}}}
            ]
        },
    }
    assert body_warnings(fields, CRD, crd) == []


def test_an_empty_struct_knows_no_fields(fields: FieldValidator) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "ws.example.com"},
        "spec": {"versions": [{"name": "v1", "subresources": {"status": {"on": True}}}]},
    }
    assert body_warnings(fields, CRD, crd) == ['unknown field "spec.versions[0].subresources.status.on"']


def test_json_problems_come_in_document_order_with_repeats_once(fields: FieldValidator) -> None:
    assert body_errors(fields, DEPLOYMENT, KUBE_TEST_BODY) == (
        'duplicate field "metadata.name", unknown field "metadata.unknownMeta", unknown field "spec.unknown1", '
        'unknown field "spec.unknownDupe", duplicate field "spec.paused", '
        'unknown field "spec.template.spec.containers[0].unknownNested", '
        'duplicate field "spec.template.spec.containers[0].imagePullPolicy"'
    )


def test_yaml_bodies_report_repeated_keys_by_line_then_unknown_fields_sorted(fields: FieldValidator) -> None:
    assert body_errors(fields, DEPLOYMENT, KUBE_TEST_YAML, "application/yaml") == (
        "yaml: unmarshal errors:\n"
        '  line 5: key "name" already set in map\n'
        '  line 12: key "unknownDupe" already set in map\n'
        '  line 14: key "paused" already set in map\n'
        '  line 28: key "imagePullPolicy" already set in map, '
        'unknown field "metadata.unknownMeta", unknown field "spec.template.spec.containers[0].unknownNested", '
        'unknown field "spec.unknown1", unknown field "spec.unknownDupe"'
    )


def test_warn_gives_one_warning_per_problem_and_yaml_lines_apart(fields: FieldValidator) -> None:
    warnings: list[str] = []
    fields.check_body(
        DEPLOYMENT, KUBE_TEST_YAML.encode(), "application/yaml", directive=WARN, warnings=warnings
    )
    assert warnings[:2] == [
        'line 5: key "name" already set in map',
        'line 12: key "unknownDupe" already set in map',
    ]
    assert len(warnings) == 8


def test_ignore_checks_nothing(fields: FieldValidator) -> None:
    assert body_warnings(fields, DEPLOYMENT, pod_template(bogus=1), directive=IGNORE) == []


def test_bodies_of_another_kind_are_left_to_the_registry(fields: FieldValidator) -> None:
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}, "bogus": 1}
    assert body_warnings(fields, CONFIGMAP, body) == []


def test_type_errors_trump_unknown_fields(fields: FieldValidator) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": [], "bogus": 1}
    assert body_warnings(fields, CONFIGMAP, body) == []


def test_updates_answer_only_for_unknown_fields_the_stored_object_lacks(fields: FieldValidator) -> None:
    stored = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "kept": 1}
    body = json.dumps({**stored, "added": 2}).encode()
    with pytest.raises(APIError) as caught:
        fields.check_body(CONFIGMAP, body, "application/json", directive=STRICT, warnings=[], stored=stored)
    assert caught.value.message.endswith('strict decoding error: unknown field "added"')


# --- custom resources ------------------------------------------------------------------------------------------

PORTS = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "containerPort": {"type": "integer"},
            "hostPort": {"type": "integer"},
            "name": {"type": "string"},
        },
    },
}
EMBEDDED = {
    "type": "object",
    "x-kubernetes-embedded-resource": True,
    "x-kubernetes-preserve-unknown-fields": True,
}
CR_BODY = """{
  "apiVersion": "example.com/v1", "kind": "Widget",
  "metadata": {"name": "dupename", "name": "w", "unknownMeta": "metaVal"},
  "spec": {
    "unknown1": "val1", "unknownDupe": "valDupe", "unknownDupe": "valDupe2",
    "knownField1": "val1", "knownField1": "val2",
    "ports": [{"name": "p", "containerPort": 8080, "hostPort": 8081, "hostPort": 8082, "unknownNested": "val"}],
    "embeddedObj": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "unknownEmbeddedMeta": "foo"}}
  }
}"""


def widgets(spec: dict[str, Any]) -> ResourceType:
    schema = {"type": "object", "properties": {"spec": spec}}
    return ResourceType(
        "example.com", "v1", "Widget", "widgets", True, crd="widgets.example.com", schema=schema
    )


def test_custom_resources_report_repeats_then_metadata_then_pruned_then_embedded_metadata(
    fields: FieldValidator,
) -> None:
    spec = {
        "type": "object",
        "properties": {"knownField1": {"type": "string"}, "ports": PORTS, "embeddedObj": EMBEDDED},
    }
    assert body_errors(fields, widgets(spec), CR_BODY) == (
        'duplicate field "metadata.name", duplicate field "spec.unknownDupe", duplicate field "spec.knownField1", '
        'duplicate field "spec.ports[0].hostPort", unknown field "metadata.unknownMeta", '
        'unknown field "spec.ports[0].unknownNested", unknown field "spec.unknown1", unknown field "spec.unknownDupe", '
        'unknown field "spec.embeddedObj.metadata.unknownEmbeddedMeta"'
    )


def test_preserve_unknown_fields_subtrees_keep_unknown_fields_but_check_known_ones(
    fields: FieldValidator,
) -> None:
    spec = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {"knownField1": {"type": "string"}, "ports": PORTS, "embeddedObj": EMBEDDED},
    }
    assert body_errors(fields, widgets(spec), CR_BODY).endswith(
        'unknown field "metadata.unknownMeta", unknown field "spec.ports[0].unknownNested", '
        'unknown field "spec.embeddedObj.metadata.unknownEmbeddedMeta"'
    )


def test_custom_resource_message_names_the_kind_and_version(fields: FieldValidator) -> None:
    body = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"bogus": 1}}
    with pytest.raises(APIError) as caught:
        fields.check_body(
            widgets({"type": "object"}), json.dumps(body).encode(), "", directive=STRICT, warnings=[]
        )
    assert caught.value.message == (
        'Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.bogus"'
    )


# --- patches ---------------------------------------------------------------------------------------------------

LIVE = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "x", "namespace": "ns"},
    "data": {"a": "1"},
}


def patch_error(
    fields: FieldValidator, content_type: str, patch: str, patched: dict[str, Any], old: Any = None
) -> APIError:
    with pytest.raises(APIError) as caught:
        fields.check_patched(
            CONFIGMAP, content_type, patch.encode(), patched, old or LIVE, directive=STRICT, warnings=[]
        )
    assert caught.value.code == 422
    assert caught.value.details["causes"][0]["field"] == "patch"
    return caught.value


def test_merge_patch_reports_its_repeats_then_the_unknown_fields_it_introduced(
    fields: FieldValidator,
) -> None:
    patched = {**LIVE, "data": {"a": "2"}, "zeta": 1, "alpha": 2}
    error = patch_error(
        fields,
        "application/merge-patch+json",
        '{"data": {"a": "1", "a": "2"}, "zeta": 1, "alpha": 2}',
        patched,
    )
    assert error.message.startswith(' "" is invalid: patch: Invalid value: "{\\"alpha\\":2,')
    assert error.message.endswith(
        'strict decoding error: duplicate field "data.a", unknown field "alpha", unknown field "zeta"'
    )


def test_strategic_merge_patch_shows_the_patch_as_go_prints_it(fields: FieldValidator) -> None:
    error = patch_error(
        fields,
        "application/strategic-merge-patch+json",
        '{"bogus": {"b": [1, null]}}',
        {**LIVE, "bogus": {"b": [1, None]}},
    )
    assert error.message == (
        ' "" is invalid: patch: Invalid value: "map[bogus:map[b:[1 <nil>]]]": '
        'strict decoding error: unknown field "bogus"'
    )


def test_json_patch_operations_are_decoded_strictly(fields: FieldValidator) -> None:
    ops = '[{"op": "add", "path": "/a", "value": 1, "foo": "bar"}, {"op": "add", "path": "/b", "path": "/c", "value": 1}]'
    error = patch_error(fields, "application/json-patch+json", ops, {**LIVE, "a": 1, "c": 1})
    assert error.message.endswith(
        'strict decoding error: json patch unknown field "[0].foo", json patch duplicate field "[1].path", '
        'unknown field "a", unknown field "c"'
    )


def test_patches_answer_only_for_unknown_fields_they_introduce(fields: FieldValidator) -> None:
    old = {**LIVE, "kept": True}
    warnings: list[str] = []
    fields.check_patched(
        CONFIGMAP,
        "application/merge-patch+json",
        b'{"data": {"b": "2"}}',
        {**old, "data": {"b": "2"}},
        old,
        directive=WARN,
        warnings=warnings,
    )
    assert warnings == []


# --- server-side apply -----------------------------------------------------------------------------------------


def applied_error(fields: FieldValidator, config: dict[str, Any]) -> APIError:
    with pytest.raises(APIError) as caught:
        fields.check_applied(
            DEPLOYMENT, config, builtin_list_types("apps", "Deployment"), directive=STRICT, warnings=[]
        )
    assert caught.value.code == 500
    return caught.value


def test_applied_configurations_fail_typed_conversion_with_list_keys_in_the_path(
    fields: FieldValidator,
) -> None:
    config = pod_template(imagePullPolicyy="Always")
    config["metadata"]["namespace"] = "ns"
    assert applied_error(fields, config).message == (
        "failed to create typed patch object (ns/web; apps/v1, Kind=Deployment): "
        '.spec.template.spec.containers[name="c"].imagePullPolicyy: field not declared in schema'
    )


def test_typed_conversion_stops_at_the_first_undeclared_field_of_each_object(fields: FieldValidator) -> None:
    config = pod_template(b=1, a=1)
    config["spec"]["zzz"] = 1
    config["spec"]["template"]["spec"]["tolerations"] = [{"key": "k", "x": 1}]
    assert applied_error(fields, config).message.endswith(
        "errors:\n"
        '  .spec.template.spec.containers[name="c"].a: field not declared in schema\n'
        "  .spec.template.spec.tolerations[0].x: field not declared in schema\n"
        "  .spec.zzz: field not declared in schema"
    )
    config["spec"]["bogus"] = 1
    assert applied_error(fields, config).message.endswith(": .spec.bogus: field not declared in schema")


def test_repeated_apply_keys_fail_after_the_apply(fields: FieldValidator) -> None:
    body = b'{\n  "apiVersion": "v1",\n  "kind": "ConfigMap",\n  "kind": "ConfigMap"\n}'
    with pytest.raises(APIError) as caught:
        fields.check_apply_yaml(body, directive=STRICT, warnings=[])
    assert caught.value.message == (
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n"
        '  line 4: key "kind" already set in map'
    )
    warnings: list[str] = []
    fields.check_apply_yaml(body, directive=WARN, warnings=warnings)
    assert warnings == ['line 4: key "kind" already set in map']


# --- pieces ----------------------------------------------------------------------------------------------------


def test_json_decoding_keeps_every_member_of_objects_that_repeat_keys() -> None:
    decoded = load_json(b'{"a": {"b": 1, "b": 2}, "c": 3}')
    assert decoded.value == {"a": {"b": 2}, "c": 3}
    assert decoded.repeats == {id(decoded.value["a"]): [("b", 1), ("b", 2)]}


def test_yaml_decoding_notes_repeated_keys_in_document_order() -> None:
    decoded = load_yaml("a:\n  x: 1\n  x: 2\nb: 1\nb: 2\n")
    assert decoded.value == {"a": {"x": 2}, "b": 2}
    assert decoded.yaml_lines == ['line 3: key "x" already set in map', 'line 5: key "b" already set in map']


def test_go_print_renders_maps_sorted_like_fmt() -> None:
    assert (
        go_print({"b": [1, 2.5, None], "a": {"t": True, "s": "x"}})
        == "map[a:map[s:x t:true] b:[1 2.5 <nil>]]"
    )


def test_unsupported_directives_list_what_kube_accepts() -> None:
    assert unsupported("strict").message == (
        'Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn"'
    )
