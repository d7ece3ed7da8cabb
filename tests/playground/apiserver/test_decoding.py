"""Request bodies decoded as kube-apiserver's Go decoders would: values, limits, typed checks."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from playground.apiserver.decoding import (
    MAX_DEPTH,
    TypeMismatch,
    UnsupportedKeyError,
    go_yaml_scalar,
    loads_json,
    loads_yaml,
    typed,
)


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"1" + b"]" * depth


def test_json_keeps_ordinary_values() -> None:
    assert loads_json(b'{"a": [1, 2.5, true, null, "x"]}') == {"a": [1, 2.5, True, None, "x"]}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"a": NaN}', "invalid character 'N' looking for beginning of value"),
        (b'{"a": -Infinity}', "invalid character 'I' in numeric literal"),
        (b'{"a": 1e999}', "json: cannot unmarshal number 1e999 into Go value of type float64"),
        (_nested(MAX_DEPTH + 1), "invalid character '[' exceeded max depth"),
        (_nested(50_000), "invalid character '[' exceeded max depth"),
    ],
    ids=["nan", "infinity", "float-overflow", "just-too-deep", "far-too-deep"],
)
def test_json_go_refuses_is_refused(body: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        loads_json(body)


def test_json_nesting_up_to_the_limit_is_accepted() -> None:
    assert loads_json(_nested(MAX_DEPTH)) is not None


def test_json_invalid_utf8_in_strings_becomes_the_replacement_character() -> None:
    assert loads_json(b'{"k": "a\xffb"}') == {"k": "a\ufffdb"}


def test_yaml_timestamps_stay_strings_and_keys_become_strings() -> None:
    loaded = loads_yaml(b"day: 2024-01-01\nat: 2024-01-01T10:00:00Z\n1: one\n2.5: half\ny: yes\n1e3: k\n")
    assert loaded == {
        "day": "2024-01-01",
        "at": "2024-01-01T10:00:00Z",
        "1": "one",
        "2.5": "half",
        "true": True,
        "1000": "k",
    }


def test_a_null_yaml_key_is_refused_as_sigs_k8s_io_yaml_refuses_it() -> None:
    with pytest.raises(UnsupportedKeyError) as err:
        loads_yaml(b"~: {b: 2}\n")
    assert str(err.value) == (
        'unsupported map key of type: %!s(<nil>), key: <nil>, value: map[interface {}]interface {}{"b":2}'
    )


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("y", True),
        ("Y", True),
        ("yes", True),
        ("on", True),
        ("n", False),
        ("NO", False),
        ("Off", False),
        ("~", None),
        ("null", None),
        ("0o17", 15),
        ("017", 15),
        ("0x1F", 31),
        ("0b101", 5),
        ("-0b11", -3),
        ("+12", 12),
        ("1_000", 1000),
        ("09", 9.0),
        ("1e3", 1000.0),
        (".5", 0.5),
        ("3.", 3.0),
        ("1_0.5", 10.5),
        ("1:30", "1:30"),
        ("2024-01-01", "2024-01-01"),
        ("1e400", "1e400"),
        ("12e", "12e"),
        ("O", "O"),
        ("yes please", "yes please"),
        ("18446744073709551615", 18446744073709551615),
    ],
)
def test_plain_scalars_resolve_as_go_yaml_v2_resolves_them(text: str, value: object) -> None:
    resolved = go_yaml_scalar(text)
    assert (resolved, type(resolved)) == (value, type(value))


@pytest.mark.parametrize(
    ("key", "text"),
    [
        (1.5, "1.5"),
        (1000.0, "1000"),
        (1e6, "1e+06"),
        (1.2345678, "1.2345678"),
        (0.0001, "0.0001"),
        (1e-5, "1e-05"),
        (1e39, ".inf"),
    ],
)
def test_float_keys_are_written_as_sigs_k8s_io_yaml_writes_them(key: float, text: str) -> None:
    assert loads_yaml(f"{key!r}: x\n".encode()) == {text: "x"}


@pytest.mark.parametrize(
    "body",
    [b"a: .inf\n", b"a: .nan\n", b"a: &x [*x]\n", b"a: !!timestamp 2024-01-01\n", b"a: !!binary aGk=\n"],
    ids=["inf", "nan", "cycle", "explicit-timestamp", "binary"],
)
def test_yaml_without_a_json_form_is_refused(body: bytes) -> None:
    with pytest.raises(ValueError):
        loads_yaml(body)


def test_yaml_alias_bomb_is_refused_quickly() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}' if n > 1 else '*a'] * 9)}]" for n in range(1, 10)]
    with pytest.raises(ValueError, match="excessive aliasing"):
        loads_yaml("\n".join(lines).encode())


def test_yaml_syntax_errors_stay_yaml_errors() -> None:
    with pytest.raises(yaml.YAMLError):
        loads_yaml(b"a: [1, 2\n")


# --- typed decoding -----------------------------------------------------------------------------------


def _deployment(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": spec}


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            _deployment(replicas=1.5),
            "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            _deployment(replicas=2**31),
            f"json: cannot unmarshal number {2**31} into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            _deployment(replicas="3"),
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            _deployment(template={"spec": {"containers": {"name": "c"}}}),
            "json: cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers "
            "of type []v1.Container",
        ),
        (
            _deployment(template={"spec": {"containers": [7]}}),
            "json: cannot unmarshal number into Go struct field PodSpec.spec.template.spec.containers "
            "of type v1.Container",
        ),
        (
            {"kind": "Deployment", "metadata": {"labels": {"a": True}}},
            "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string",
        ),
        (
            {"kind": "Deployment", "metadata": {"creationTimestamp": 5}},
            "json: cannot unmarshal number into Go value of type string",
        ),
        (
            _deployment(strategy={"rollingUpdate": {"maxSurge": {"x": 1}}}),
            "json: cannot unmarshal object into Go value of type int32",
        ),
        (
            _deployment(strategy={"rollingUpdate": {"maxSurge": 1.5}}),
            "json: cannot unmarshal number 1.5 into Go value of type int32",
        ),
        (
            _deployment(template={"spec": {"containers": [{"resources": {"limits": {"cpu": []}}}]}}),
            "quantities must match the regular expression",
        ),
    ],
    ids=[
        "fraction",
        "overflow",
        "string-for-int",
        "object-for-list",
        "number-for-item",
        "bool-for-map-value",
        "time",
        "int-or-string-object",
        "int-or-string-fraction",
        "quantity",
    ],
)
def test_values_of_the_wrong_type_give_encoding_json_errors(obj: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeMismatch) as err:
        typed("apps", "v1", "Deployment", obj)
    assert str(err.value).startswith(message)


def test_first_mismatch_in_document_order_is_reported() -> None:
    obj = _deployment(paused="yes", replicas="no")
    with pytest.raises(TypeMismatch, match=r"DeploymentSpec\.spec\.paused of type bool"):
        typed("apps", "v1", "Deployment", obj)


def test_well_typed_values_pass_and_unknown_fields_are_kept() -> None:
    obj = _deployment(
        replicas=2,
        strategy={"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
        template={
            "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": 1.5, "memory": "1Gi"}}}]}
        },
        futureField={"anything": [1, "x"]},
    )
    assert typed("apps", "v1", "Deployment", obj) == obj


def test_nulls_decode_as_go_leaves_them() -> None:
    obj = {
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"a": None}, "annotations": None},
        "data": None,
        "immutable": None,
    }
    assert typed("", "v1", "ConfigMap", obj) == {
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"a": ""}},
    }
    pod = {"spec": {"containers": [None], "tolerations": None}}
    assert typed("", "v1", "Pod", pod) == {"spec": {"containers": [{}]}}


def test_raw_json_fields_take_any_value() -> None:
    crd_schema = {
        "type": "object",
        "default": [1, {"x": None}],
        "additionalProperties": False,
        "enum": [1, "a"],
    }
    crd = {"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": crd_schema}}]}}
    assert typed("apiextensions.k8s.io", "v1", "CustomResourceDefinition", crd) == crd


def test_kinds_without_a_definition_pass_unchanged() -> None:
    obj = {"spec": {"size": "not-checked"}}
    assert typed("example.com", "v1", "Widget", obj) is obj
