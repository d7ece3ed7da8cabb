"""Protobuf request bodies decode to the JSON-shaped objects the same requests carry as JSON.

The `KUBECTL_*` bodies were captured from kubectl 1.32 talking to the emulator; the rest
are built with the small encoder below, writing every non-pointer field the way
gogo-protobuf does (zero values included) so the JSON rules for zero values are exercised.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

from playground.apiserver import errors, protobuf
from playground.apiserver.resources.builtin import builtin_types

# kubectl auth can-i create deployments
KUBECTL_SELF_SUBJECT_ACCESS_REVIEW = bytes.fromhex(
    "6b3873000a320a17617574686f72697a6174696f6e2e6b38732e696f2f7631121753656c665375626a656374416363657373"
    "526576696577124a0a100a0012001a0022002a00320038004200122c0a2a0a0764656661756c7412066372656174651a0461"
    "70707322002a0b6465706c6f796d656e747332003a001a08080012001a0020001a002200"
)
# kubectl create configmap x --from-literal=a=b
KUBECTL_CONFIGMAP = bytes.fromhex(
    "6b3873000a0f0a0276311209436f6e6669674d6170121b0a110a017812001a0022002a0032003800420012060a01611201621a002200"
)
# kubectl create token default --duration=10m --audience=api
KUBECTL_TOKEN_REQUEST = bytes.fromhex(
    "6b3873000a280a1861757468656e7469636174696f6e2e6b38732e696f2f7631120c546f6b656e5265717565737412220a10"
    "0a0012001a0022002a0032003800420012080a0361706920d8041a040a0012001a002200"
)
# kubectl create service clusterip svc --tcp=80:8080
KUBECTL_SERVICE = bytes.fromhex(
    "6b3873000a0d0a02763112075365727669636512690a1f0a0373766312001a0022002a003200380042005a0a0a0361707012"
    "0373766312420a1b0a0738302d38303830120354435018502207080010903f1a002800120a0a0361707012037376631a0022"
    "09436c757374657249503a00420052005a00600068001a020a001a002200"
)


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def num(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def text(number: int, value: str | bytes) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def msg(number: int, *parts: bytes) -> bytes:
    return text(number, b"".join(parts))


def double(number: int, value: float) -> bytes:
    return varint(number << 3 | 1) + struct.pack("<d", value)


def entry(number: int, key: str, value: bytes) -> bytes:
    """One map entry: key = 1, value = `value` (already tagged as field 2)."""
    return msg(number, text(1, key), value)


def envelope(api_version: str, kind: str, *parts: bytes) -> bytes:
    type_meta = msg(1, text(1, api_version), text(2, kind))
    return b"k8s\x00" + type_meta + msg(2, *parts) + text(3, "") + text(4, "")


def meta(name: str = "", namespace: str = "", *extra: bytes) -> bytes:
    """ObjectMeta as gogo writes it: every string, generation and creationTimestamp, even if empty."""
    fields = [text(1, name), text(2, ""), text(3, namespace), text(4, ""), text(5, ""), text(6, "")]
    return msg(1, *fields, num(7, 0), msg(8), *extra)


def quantity(value: str) -> bytes:
    return msg(2, text(1, value))


def int_or_string(number: int, value: int | str) -> bytes:
    if isinstance(value, str):
        return msg(number, num(1, 1), num(2, 0), text(3, value))
    return msg(number, num(1, 0), num(2, value), text(3, ""))


def decode_error(body: bytes) -> errors.APIError:
    with pytest.raises(errors.APIError) as caught:
        protobuf.decode(body)
    return caught.value


def test_kubectl_self_subject_access_review_decodes_to_its_json_form() -> None:
    assert protobuf.decode(KUBECTL_SELF_SUBJECT_ACCESS_REVIEW) == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "metadata": {},
        "spec": {
            "resourceAttributes": {
                "namespace": "default",
                "verb": "create",
                "group": "apps",
                "resource": "deployments",
            }
        },
        "status": {"allowed": False},
    }


def test_kubectl_configmap_decodes_to_its_json_form() -> None:
    assert protobuf.decode(KUBECTL_CONFIGMAP) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x"},
        "data": {"a": "b"},
    }


def test_kubectl_token_request_keeps_audiences_and_expiration() -> None:
    assert protobuf.decode(KUBECTL_TOKEN_REQUEST) == {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "metadata": {},
        "spec": {"audiences": ["api"], "expirationSeconds": 600},
        "status": {"token": ""},
    }


def test_kubectl_service_target_port_int_or_string_is_a_number() -> None:
    spec = protobuf.decode(KUBECTL_SERVICE)["spec"]
    assert spec["ports"] == [{"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}]
    assert spec["type"] == "ClusterIP"
    assert "clusterIP" not in spec


def test_configmap_data_binary_data_labels_and_creation_time() -> None:
    body = envelope(
        "v1",
        "ConfigMap",
        msg(
            1,
            text(1, "settings"),
            text(3, "team-a"),
            msg(8, num(1, 1700000000), num(2, 999)),
            entry(11, "app", text(2, "web")),
            entry(11, "tier", text(2, "")),
        ),
        entry(2, "a.conf", text(2, "x=1\n")),
        entry(3, "blob", text(2, b"\x00\x01\xff")),
    )
    assert protobuf.decode(body) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "settings",
            "namespace": "team-a",
            "creationTimestamp": "2023-11-14T22:13:20Z",
            "labels": {"app": "web", "tier": ""},
        },
        "data": {"a.conf": "x=1\n"},
        "binaryData": {"blob": "AAH/"},
    }


def test_pod_containers_ports_resources_env_and_inline_volume() -> None:
    container = msg(
        2,
        text(1, "app"),
        text(2, "nginx:1.27"),
        msg(6, text(1, "http"), num(2, 0), num(3, 8080), text(4, "TCP"), text(5, "")),
        msg(7, text(1, "MODE"), text(2, "fast")),
        msg(7, text(1, "POD"), text(2, ""), msg(3, msg(1, text(1, "v1"), text(2, "metadata.name")))),
        msg(
            8,
            entry(1, "cpu", quantity("500m")),
            entry(1, "memory", quantity("128Mi")),
            entry(2, "cpu", quantity("")),
        ),
        text(13, ""),
        num(16, 0),
    )
    volume = msg(1, text(1, "conf"), msg(2, msg(19, msg(1, text(1, "settings")), num(3, 0o644))))
    security = msg(14, num(2, 1000), text(4, varint(1) + varint(2)), num(4, 3))
    spec = msg(2, volume, container, text(3, "Always"), num(4, 0), num(11, 0), security)
    pod = protobuf.decode(envelope("v1", "Pod", meta("web", "default"), spec, msg(3)))
    assert pod["metadata"] == {"name": "web", "namespace": "default"}
    assert pod["status"] == {}
    assert pod["spec"] == {
        "volumes": [{"name": "conf", "configMap": {"name": "settings", "defaultMode": 420}}],
        "containers": [
            {
                "name": "app",
                "image": "nginx:1.27",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [
                    {"name": "MODE", "value": "fast"},
                    {
                        "name": "POD",
                        "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
                    },
                ],
                "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "0"}},
            }
        ],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 0,
        "securityContext": {"runAsUser": 1000, "supplementalGroups": [1, 2, 3]},
    }


def test_secret_data_is_base64_and_an_explicit_false_pointer_is_kept() -> None:
    body = envelope(
        "v1",
        "Secret",
        meta("creds"),
        entry(2, "password", text(2, b"s3cr3t")),
        text(3, "Opaque"),
        entry(4, "user", text(2, "admin")),
        num(5, 0),
    )
    assert protobuf.decode(body) == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds"},
        "data": {"password": "czNjcjN0"},
        "type": "Opaque",
        "stringData": {"user": "admin"},
        "immutable": False,
    }


def test_deployment_int_or_string_surge_and_zero_replicas() -> None:
    strategy = msg(4, text(1, "RollingUpdate"), msg(2, int_or_string(1, 0), int_or_string(2, "25%")))
    template = msg(3, msg(1, entry(11, "app", text(2, "web"))), msg(2))
    spec = msg(
        2, num(1, 0), msg(2, entry(1, "app", text(2, "web"))), template, strategy, num(5, 0), num(7, 0)
    )
    deployment = protobuf.decode(envelope("apps/v1", "Deployment", meta("web"), spec, msg(3)))
    assert deployment["spec"] == {
        "replicas": 0,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {}},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"}},
    }


@pytest.mark.parametrize("api_version", ["v1", "apps/v1", "rbac.authorization.k8s.io/v1"])
def test_delete_options_decode_in_every_served_group_version(api_version: str) -> None:
    body = envelope(
        api_version,
        "DeleteOptions",
        num(1, 0),
        msg(2, text(1, "uid-1")),
        text(4, "Foreground"),
        text(5, "All"),
    )
    assert protobuf.decode(body) == {
        "apiVersion": api_version,
        "kind": "DeleteOptions",
        "gracePeriodSeconds": 0,
        "preconditions": {"uid": "uid-1"},
        "propagationPolicy": "Foreground",
        "dryRun": ["All"],
    }


def test_negative_integers_are_read_as_twos_complement() -> None:
    body = envelope("v1", "DeleteOptions", num(1, -1))
    assert protobuf.decode(body)["gracePeriodSeconds"] == -1


def test_subject_access_review_extra_values_are_string_lists() -> None:
    extra = entry(5, "scopes", msg(2, text(1, "read"), text(1, "write")))
    spec = msg(
        2, msg(2, text(1, "/healthz"), text(2, "get")), text(3, "alice"), text(4, "devs"), extra, text(6, "")
    )
    review = protobuf.decode(envelope("authorization.k8s.io/v1", "SubjectAccessReview", meta(), spec))
    assert review["spec"] == {
        "nonResourceAttributes": {"path": "/healthz", "verb": "get"},
        "user": "alice",
        "groups": ["devs"],
        "extra": {"scopes": ["read", "write"]},
    }


def test_lease_micro_time_keeps_microseconds() -> None:
    spec = msg(2, text(1, "node-1"), num(2, 40), msg(3, num(1, 1700000000), num(2, 123456789)), num(5, 0))
    lease = protobuf.decode(envelope("coordination.k8s.io/v1", "Lease", meta("node-1"), spec))
    assert lease["spec"] == {
        "holderIdentity": "node-1",
        "leaseDurationSeconds": 40,
        "acquireTime": "2023-11-14T22:13:20.123456Z",
        "leaseTransitions": 0,
    }


def schema_props(*parts: bytes) -> bytes:
    return b"".join(parts)


def test_crd_schema_unions_and_json_values() -> None:
    replicas = schema_props(text(5, "integer"), double(9, 10.0), double(11, 0.5), msg(8, text(1, "1")))
    mode = schema_props(text(5, "string"), msg(20, text(1, '"a"')), msg(20, text(1, '"b"')))
    tags = schema_props(text(5, "array"), msg(24, msg(1, text(5, "string"))))
    pair = schema_props(msg(24, msg(2, text(5, "string")), msg(2, text(5, "integer"))))
    labels = schema_props(text(5, "object"), msg(30, msg(2, text(5, "string"))))
    closed = schema_props(text(5, "object"), msg(30, num(1, 0)), entry(32, "a", msg(2, text(2, "b"))))
    spec_schema = schema_props(
        text(5, "object"),
        entry(29, "replicas", msg(2, replicas)),
        entry(29, "mode", msg(2, mode)),
        entry(29, "tags", msg(2, tags)),
        entry(29, "pair", msg(2, pair)),
        entry(29, "labels", msg(2, labels)),
        entry(29, "closed", msg(2, closed)),
        entry(29, "ref", msg(2, text(3, "#/definitions/x"))),
        msg(44, text(1, "self.replicas >= 0"), text(2, ""), num(6, 1)),
    )
    root = schema_props(text(5, "object"), entry(29, "spec", msg(2, spec_schema)), num(38, 1))
    version = msg(7, text(1, "v1"), num(2, 1), num(3, 1), msg(4, msg(1, root)))
    names = msg(3, text(1, "widgets"), text(2, "widget"), text(4, "Widget"))
    spec = msg(2, text(1, "example.com"), names, text(4, "Namespaced"), version, num(10, 0))
    crd = protobuf.decode(
        envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", meta("widgets.example.com"), spec)
    )
    assert crd["spec"]["names"] == {"plural": "widgets", "singular": "widget", "kind": "Widget"}
    assert "preserveUnknownFields" not in crd["spec"]
    [served] = crd["spec"]["versions"]
    assert (served["name"], served["served"], served["storage"]) == ("v1", True, True)
    schema = served["schema"]["openAPIV3Schema"]
    assert schema["x-kubernetes-preserve-unknown-fields"] is True
    assert schema["properties"]["spec"] == {
        "type": "object",
        "properties": {
            "replicas": {"type": "integer", "maximum": 10, "minimum": 0.5, "default": 1},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "pair": {"items": [{"type": "string"}, {"type": "integer"}]},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "closed": {"type": "object", "additionalProperties": False, "dependencies": {"a": ["b"]}},
            "ref": {"$ref": "#/definitions/x"},
        },
        "x-kubernetes-validations": [{"rule": "self.replicas >= 0", "optionalOldSelf": True}],
    }


def test_empty_raw_extension_and_zero_time_are_left_out() -> None:
    empty = protobuf.decode(envelope("apps/v1", "ControllerRevision", meta("r1"), msg(2), num(3, 0)))
    assert empty == {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": "r1"},
        "revision": 0,
    }
    full = protobuf.decode(
        envelope("apps/v1", "ControllerRevision", meta("r2"), msg(2, text(1, '{"spec":{}}')))
    )
    assert full["data"] == {"spec": {}}


def test_unknown_fields_are_skipped() -> None:
    body = envelope("v1", "ConfigMap", meta("x"), num(99, 7), text(98, "future"), entry(2, "a", text(2, "b")))
    assert protobuf.decode(body)["data"] == {"a": "b"}


def test_body_without_the_magic_number_is_a_bad_request() -> None:
    error = decode_error(b'{"apiVersion":"v1","kind":"ConfigMap"}')
    assert (error.code, error.reason) == (400, "BadRequest")
    assert "k8s\\x00" in error.message


@pytest.mark.parametrize("cut", [1, 3, 20])
def test_truncated_body_is_a_bad_request(cut: int) -> None:
    error = decode_error(KUBECTL_SELF_SUBJECT_ACCESS_REVIEW[:-cut])
    assert (error.code, error.reason) == (400, "BadRequest")
    assert "truncated" in error.message


def test_unknown_kind_is_a_bad_request_naming_the_kind() -> None:
    error = decode_error(envelope("example.com/v1", "Widget", meta("w")))
    assert error.code == 400
    assert '"Widget"' in error.message
    assert "example.com/v1" in error.message
    assert "application/json" in error.message


def test_field_with_the_wrong_wire_type_is_a_bad_request() -> None:
    error = decode_error(envelope("v1", "ConfigMap", num(1, 5)))
    assert error.code == 400
    assert "ConfigMap field 1 has wire type 0" in error.message


def test_invalid_utf8_string_is_a_bad_request() -> None:
    error = decode_error(envelope("v1", "ConfigMap", msg(1, text(1, b"\xff\xfe"))))
    assert error.code == 400
    assert "UTF-8" in error.message


def test_every_served_builtin_kind_has_a_protobuf_schema() -> None:
    kinds = protobuf.schemas()[0]
    missing: list[Any] = []
    for resource in builtin_types(service_cidr="10.96.0.0/12", services=list):
        api_version = f"{resource.group}/{resource.version}" if resource.group else resource.version
        if resource.kind not in kinds.get(api_version, {}):
            missing.append((api_version, resource.kind))
    assert missing == []
    for api_version, kind in [("autoscaling/v1", "Scale"), ("policy/v1", "Eviction"), ("v1", "Binding")]:
        assert kind in kinds[api_version]
