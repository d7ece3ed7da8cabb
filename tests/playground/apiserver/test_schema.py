"""Structural schema validation, defaulting and pruning of custom resources."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from playground.apiserver import schema
from playground.apiserver.errors import Cause

DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def spec_of(**props: Any) -> dict[str, Any]:
    """A root schema whose `spec` object has the given properties."""
    return {"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}


def invalid(field: str, message: str) -> Cause:
    return Cause(field, message, "FieldValueInvalid")


def type_invalid(field: str, message: str) -> Cause:
    return Cause(field, message, "FieldValueTypeInvalid")


# -- validate --------------------------------------------------------------------------------

VALIDATION_CASES: list[tuple[str, dict[str, Any], dict[str, Any], list[Cause]]] = [
    (
        "integer-given-string",
        spec_of(replicas={"type": "integer"}),
        {"spec": {"replicas": "string"}},
        [
            type_invalid(
                "spec.replicas",
                'Invalid value: "string": spec.replicas in body must be of type integer: "string"',
            )
        ],
    ),
    ("integral-float-is-an-integer", spec_of(replicas={"type": "integer"}), {"spec": {"replicas": 3.0}}, []),
    ("integer-is-a-number", spec_of(ratio={"type": "number"}), {"spec": {"ratio": 3}}, []),
    (
        "boolean-is-not-an-integer",
        spec_of(replicas={"type": "integer"}),
        {"spec": {"replicas": True}},
        [
            type_invalid(
                "spec.replicas",
                'Invalid value: "boolean": spec.replicas in body must be of type integer: "boolean"',
            )
        ],
    ),
    (
        "object-given-array",
        spec_of(template={"type": "object"}),
        {"spec": {"template": []}},
        [
            type_invalid(
                "spec.template",
                'Invalid value: "array": spec.template in body must be of type object: "array"',
            )
        ],
    ),
    (
        "null-in-non-nullable",
        spec_of(name={"type": "string"}),
        {"spec": {"name": None}},
        [
            type_invalid(
                "spec.name", 'Invalid value: "null": spec.name in body must be of type string: "null"'
            )
        ],
    ),
    ("null-in-nullable", spec_of(name={"type": "string", "nullable": True}), {"spec": {"name": None}}, []),
    (
        "required-missing",
        {
            "type": "object",
            "required": ["spec"],
            "properties": {"spec": {"type": "object", "required": ["image"]}},
        },
        {"spec": {}},
        [Cause("spec.image", "Required value", "FieldValueRequired")],
    ),
    (
        "required-at-root",
        {"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object"}}},
        {},
        [Cause("spec", "Required value", "FieldValueRequired")],
    ),
    (
        "required-inside-array-items",
        spec_of(
            containers={
                "type": "array",
                "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
            }
        ),
        {"spec": {"containers": [{"name": "a"}, {}]}},
        [Cause("spec.containers[1].name", "Required value", "FieldValueRequired")],
    ),
    (
        "enum-of-strings",
        spec_of(mode={"type": "string", "enum": ["Always", "Never"]}),
        {"spec": {"mode": "Sometimes"}},
        [
            Cause(
                "spec.mode",
                'Unsupported value: "Sometimes": supported values: "Always", "Never"',
                "FieldValueNotSupported",
            )
        ],
    ),
    (
        "enum-of-numbers",
        spec_of(size={"type": "integer", "enum": [1, 2]}),
        {"spec": {"size": 3}},
        [Cause("spec.size", 'Unsupported value: 3: supported values: "1", "2"', "FieldValueNotSupported")],
    ),
    (
        "pattern",
        spec_of(name={"type": "string", "pattern": "^[a-z]+$"}),
        {"spec": {"name": "Abc"}},
        [invalid("spec.name", "Invalid value: \"Abc\": spec.name in body should match '^[a-z]+$'")],
    ),
    (
        "max-length",
        spec_of(name={"type": "string", "maxLength": 3}),
        {"spec": {"name": "abcd"}},
        [Cause("spec.name", "Too long: may not be more than 3 bytes", "FieldValueTooLong")],
    ),
    (
        "min-length",
        spec_of(name={"type": "string", "minLength": 2}),
        {"spec": {"name": "a"}},
        [invalid("spec.name", 'Invalid value: "a": spec.name in body should be at least 2 chars long')],
    ),
    (
        "maximum",
        spec_of(replicas={"type": "integer", "maximum": 10}),
        {"spec": {"replicas": 11}},
        [
            invalid(
                "spec.replicas", "Invalid value: 11: spec.replicas in body should be less than or equal to 10"
            )
        ],
    ),
    (
        "exclusive-minimum",
        spec_of(replicas={"type": "integer", "minimum": 1, "exclusiveMinimum": True}),
        {"spec": {"replicas": 1}},
        [invalid("spec.replicas", "Invalid value: 1: spec.replicas in body should be greater than 1")],
    ),
    (
        "float-bounds",
        spec_of(ratio={"type": "number", "minimum": 0.5, "maximum": 1.5}),
        {"spec": {"ratio": 2.25}},
        [
            invalid(
                "spec.ratio", "Invalid value: 2.25: spec.ratio in body should be less than or equal to 1.5"
            )
        ],
    ),
    (
        "multiple-of-integer",
        spec_of(count={"type": "integer", "multipleOf": 2}),
        {"spec": {"count": 7}},
        [invalid("spec.count", "Invalid value: 7: spec.count in body should be a multiple of 2")],
    ),
    (
        "multiple-of-fraction",
        spec_of(ratio={"type": "number", "multipleOf": 0.25}),
        {"spec": {"ratio": 1.75}},
        [],
    ),
    (
        "min-and-max-items",
        spec_of(
            few={"type": "array", "items": {"type": "string"}, "minItems": 2},
            many={"type": "array", "items": {"type": "string"}, "maxItems": 1},
        ),
        {"spec": {"few": ["a"], "many": ["a", "b", "c"]}},
        [
            invalid("spec.few", "Invalid value: 1: spec.few in body should have at least 2 items"),
            Cause("spec.many", "Too many: 3: must have at most 1 items", "FieldValueTooMany"),
        ],
    ),
    (
        "unique-items",
        spec_of(tags={"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
        {"spec": {"tags": ["a", "a"]}},
        [invalid("spec.tags", 'Invalid value: "": spec.tags in body shouldn\'t contain duplicates')],
    ),
    (
        "min-and-max-properties",
        spec_of(
            few={"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 2},
            many={"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 1},
        ),
        {"spec": {"few": {"a": "x"}, "many": {"a": "x", "b": "y"}}},
        [
            invalid("spec.few", "Invalid value: 1: spec.few in body should have at least 2 properties"),
            Cause("spec.many", "Too many: 2: must have at most 1 items", "FieldValueTooMany"),
        ],
    ),
    (
        "additional-properties-schema",
        spec_of(labels={"type": "object", "additionalProperties": {"type": "string"}}),
        {"spec": {"labels": {"ok": "yes", "bad": 1}}},
        [
            type_invalid(
                "spec.labels.bad",
                'Invalid value: "integer": spec.labels.bad in body must be of type string: "integer"',
            )
        ],
    ),
    (
        "additional-properties-false",
        spec_of(strict={"type": "object", "additionalProperties": False}),
        {"spec": {"strict": {"extra": 1}}},
        [invalid("spec.strict", 'Invalid value: "extra": spec.strict.extra in body is a forbidden property')],
    ),
    (
        "int-or-string-takes-integer",
        spec_of(port={"x-kubernetes-int-or-string": True}),
        {"spec": {"port": 80}},
        [],
    ),
    (
        "int-or-string-takes-string",
        spec_of(port={"x-kubernetes-int-or-string": True}),
        {"spec": {"port": "http"}},
        [],
    ),
    (
        "int-or-string-rejects-boolean",
        spec_of(port={"x-kubernetes-int-or-string": True}),
        {"spec": {"port": False}},
        [
            type_invalid(
                "spec.port",
                'Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"',
            )
        ],
    ),
    (
        "int-or-string-any-of-rejects-fraction",
        spec_of(
            cpu={"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
        ),
        {"spec": {"cpu": 0.5}},
        [
            type_invalid(
                "spec.cpu",
                'Invalid value: "number": spec.cpu in body must be of type integer,string: "number"',
            ),
            invalid("<nil>", 'Invalid value: "": "spec.cpu" must validate at least one schema (anyOf)'),
            type_invalid(
                "spec.cpu", 'Invalid value: "number": spec.cpu in body must be of type integer: "number"'
            ),
        ],
    ),
    (
        "one-of-none-valid",
        spec_of(size={"type": "integer", "oneOf": [{"minimum": 10}, {"maximum": 1}]}),
        {"spec": {"size": 5}},
        [
            invalid(
                "<nil>",
                'Invalid value: "": "spec.size" must validate one and only one schema (oneOf). '
                "Found none valid",
            ),
            invalid("spec.size", "Invalid value: 5: spec.size in body should be greater than or equal to 10"),
        ],
    ),
    (
        "one-of-two-valid",
        spec_of(size={"type": "integer", "oneOf": [{"minimum": 1}, {"maximum": 10}]}),
        {"spec": {"size": 5}},
        [
            invalid(
                "<nil>",
                'Invalid value: "": "spec.size" must validate one and only one schema (oneOf). '
                "Found 2 valid alternatives",
            )
        ],
    ),
    (
        "all-of",
        spec_of(size={"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 3}]}),
        {"spec": {"size": 5}},
        [
            invalid("spec.size", "Invalid value: 5: spec.size in body should be less than or equal to 3"),
            invalid("<nil>", 'Invalid value: "": "spec.size" must validate all the schemas (allOf)'),
        ],
    ),
    (
        "not",
        spec_of(name={"type": "string", "not": {"enum": ["admin"]}}),
        {"spec": {"name": "admin"}},
        [invalid("<nil>", 'Invalid value: "": "spec.name" must not validate the schema (not)')],
    ),
    (
        "date-time-format",
        spec_of(when={"type": "string", "format": "date-time"}),
        {"spec": {"when": "yesterday"}},
        [
            type_invalid(
                "spec.when",
                'Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"',
            )
        ],
    ),
    (
        "good-formats",
        spec_of(
            when={"type": "string", "format": "date-time"},
            day={"type": "string", "format": "date"},
            blob={"type": "string", "format": "byte"},
        ),
        {"spec": {"when": "2024-05-01T10:20:30Z", "day": "2024-05-01", "blob": "aGVsbG8="}},
        [],
    ),
    (
        "byte-format",
        spec_of(blob={"type": "string", "format": "byte"}),
        {"spec": {"blob": "not base64!"}},
        [
            type_invalid(
                "spec.blob",
                'Invalid value: "not base64!": spec.blob in body must be of type byte: "not base64!"',
            )
        ],
    ),
    (
        "int32-format-is-not-range-checked",
        spec_of(n={"type": "integer", "format": "int32"}),
        {"spec": {"n": 2**40}},
        [],
    ),
    (
        "preserve-unknown-fields-without-type-takes-anything",
        spec_of(raw={"x-kubernetes-preserve-unknown-fields": True}),
        {"spec": {"raw": [1, {"a": None}]}},
        [],
    ),
    (
        "cel-rules-are-not-evaluated",
        spec_of(size={"type": "integer", "x-kubernetes-validations": [{"rule": "self > 100"}]}),
        {"spec": {"size": 1}},
        [],
    ),
    (
        "embedded-resource-needs-api-version-and-kind",
        spec_of(
            template={
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "x-kubernetes-preserve-unknown-fields": True,
            }
        ),
        {"spec": {"template": {"kind": "Bad_Kind", "metadata": {"name": "a/b"}}}},
        [
            Cause("spec.template.apiVersion", "Required value", "FieldValueRequired"),
            invalid(
                "spec.template.kind",
                f'Invalid value: "Bad_Kind": may have mixed case, but should otherwise match: {DNS1035}',
            ),
            invalid("spec.template.metadata.name", "Invalid value: \"a/b\": may not contain '/'"),
        ],
    ),
    (
        "list-type-set-duplicates",
        spec_of(tags={"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}),
        {"spec": {"tags": ["a", "b", "a", "a"]}},
        [Cause("spec.tags[2]", 'Duplicate value: "a"', "FieldValueDuplicate")],
    ),
    (
        "list-type-map-duplicate-key",
        spec_of(
            ports={
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                },
            }
        ),
        {"spec": {"ports": [{"name": "http", "port": 80}, {"name": "http", "port": 8080}]}},
        [
            Cause(
                "spec.ports[1]",
                'Duplicate value: map[string]interface {}{"name":"http"}',
                "FieldValueDuplicate",
            )
        ],
    ),
    (
        "list-type-map-with-two-keys",
        spec_of(
            ports={
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["port", "protocol"],
                "items": {
                    "type": "object",
                    "properties": {"port": {"type": "integer"}, "protocol": {"type": "string"}},
                },
            }
        ),
        {
            "spec": {
                "ports": [
                    {"port": 53, "protocol": "UDP"},
                    {"port": 53, "protocol": "TCP"},
                    {"port": 53, "protocol": "UDP"},
                ]
            }
        },
        [
            Cause(
                "spec.ports[2]",
                'Duplicate value: map[string]interface {}{"port":53, "protocol":"UDP"}',
                "FieldValueDuplicate",
            )
        ],
    ),
]


@pytest.mark.parametrize(
    ("doc", "obj", "expected"), [c[1:] for c in VALIDATION_CASES], ids=[c[0] for c in VALIDATION_CASES]
)
def test_validate_reports_causes_worded_like_kube_apiserver(
    doc: dict[str, Any], obj: dict[str, Any], expected: list[Cause]
) -> None:
    assert schema.validate(obj, doc) == expected


def test_validate_accepts_a_valid_object() -> None:
    doc = spec_of(
        replicas={"type": "integer", "minimum": 1},
        image={"type": "string"},
        ports={"type": "array", "items": {"type": "integer"}},
    )
    assert (
        schema.validate({"apiVersion": "x/v1", "spec": {"replicas": 2, "image": "nginx", "ports": [80]}}, doc)
        == []
    )


def test_validate_prefixes_fields_with_the_given_path() -> None:
    causes = schema.validate(
        {"replicas": "x"},
        {"type": "object", "properties": {"replicas": {"type": "integer"}}},
        field_prefix="spec.default",
    )
    assert causes == [
        type_invalid(
            "spec.default.replicas",
            'Invalid value: "string": replicas in body must be of type integer: "string"',
        )
    ]


# -- apply_defaults ------------------------------------------------------------------------

DEFAULTING_CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    (
        "missing-field",
        spec_of(replicas={"type": "integer", "default": 1}),
        {"spec": {}},
        {"spec": {"replicas": 1}},
    ),
    (
        "present-field-kept",
        spec_of(replicas={"type": "integer", "default": 1}),
        {"spec": {"replicas": 3}},
        {"spec": {"replicas": 3}},
    ),
    (
        "nested-default-needs-its-parent",
        spec_of(
            strategy={"type": "object", "properties": {"type": {"type": "string", "default": "Rolling"}}}
        ),
        {"spec": {}},
        {"spec": {}},
    ),
    (
        "nested-default-inside-existing-parent",
        spec_of(
            strategy={"type": "object", "properties": {"type": {"type": "string", "default": "Rolling"}}}
        ),
        {"spec": {"strategy": {}}},
        {"spec": {"strategy": {"type": "Rolling"}}},
    ),
    (
        "defaulted-parent-gets-nested-defaults",
        spec_of(
            strategy={
                "type": "object",
                "default": {},
                "properties": {"type": {"type": "string", "default": "Rolling"}},
            }
        ),
        {"spec": {}},
        {"spec": {"strategy": {"type": "Rolling"}}},
    ),
    (
        "array-items",
        spec_of(
            ports={
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "protocol": {"type": "string", "default": "TCP"},
                        "port": {"type": "integer"},
                    },
                },
            }
        ),
        {"spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}},
        {"spec": {"ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}},
    ),
    (
        "additional-properties-values",
        spec_of(
            limits={
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "properties": {"unit": {"type": "string", "default": "Mi"}},
                },
            }
        ),
        {"spec": {"limits": {"memory": {}}}},
        {"spec": {"limits": {"memory": {"unit": "Mi"}}}},
    ),
    (
        "null-in-non-nullable-field-is-defaulted",
        spec_of(replicas={"type": "integer", "default": 1}),
        {"spec": {"replicas": None}},
        {"spec": {"replicas": 1}},
    ),
    (
        "null-in-nullable-field-is-kept",
        spec_of(replicas={"type": "integer", "default": 1, "nullable": True}),
        {"spec": {"replicas": None}},
        {"spec": {"replicas": None}},
    ),
]


@pytest.mark.parametrize(
    ("doc", "obj", "expected"), [c[1:] for c in DEFAULTING_CASES], ids=[c[0] for c in DEFAULTING_CASES]
)
def test_apply_defaults_fills_missing_fields(
    doc: dict[str, Any], obj: dict[str, Any], expected: dict[str, Any]
) -> None:
    schema.apply_defaults(obj, doc)
    assert obj == expected


def test_apply_defaults_copies_default_values() -> None:
    doc = spec_of(tags={"type": "array", "items": {"type": "string"}, "default": ["a"]})
    first: dict[str, Any] = {"spec": {}}
    schema.apply_defaults(first, doc)
    first["spec"]["tags"].append("b")
    second: dict[str, Any] = {"spec": {}}
    schema.apply_defaults(second, doc)
    assert second == {"spec": {"tags": ["a"]}}


# -- prune ---------------------------------------------------------------------------------

PRUNING_CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    (
        "unknown-fields-go",
        spec_of(replicas={"type": "integer"}),
        {"apiVersion": "x/v1", "kind": "X", "spec": {"replicas": 1, "extra": True}, "junk": 1},
        {"apiVersion": "x/v1", "kind": "X", "spec": {"replicas": 1}},
    ),
    (
        "metadata-keeps-object-meta-fields",
        spec_of(),
        {"metadata": {"name": "a", "labels": {"x": "y"}, "bogus": 1, "creationTimestamp": None}, "spec": {}},
        {"metadata": {"name": "a", "labels": {"x": "y"}}, "spec": {}},
    ),
    (
        "preserve-unknown-fields-subtree-stays",
        spec_of(config={"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
        {"spec": {"config": {"anything": {"deep": [1, 2]}}}},
        {"spec": {"config": {"anything": {"deep": [1, 2]}}}},
    ),
    (
        "known-fields-below-preserve-unknown-fields-are-pruned",
        spec_of(
            config={
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"strict": {"type": "object", "properties": {"a": {"type": "string"}}}},
            }
        ),
        {"spec": {"config": {"free": 1, "strict": {"a": "x", "b": "y"}}}},
        {"spec": {"config": {"free": 1, "strict": {"a": "x"}}}},
    ),
    (
        "root-preserve-unknown-fields",
        {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        {"spec": {"a": 1}, "status": {"b": 2}},
        {"spec": {"a": 1}, "status": {"b": 2}},
    ),
    (
        "array-items-are-pruned",
        spec_of(
            ports={"type": "array", "items": {"type": "object", "properties": {"port": {"type": "integer"}}}},
        ),
        {"spec": {"ports": [{"port": 1, "x": 2}, {"y": 3}]}},
        {"spec": {"ports": [{"port": 1}, {}]}},
    ),
    (
        "additional-properties-values-are-pruned",
        spec_of(
            limits={
                "type": "object",
                "additionalProperties": {"type": "object", "properties": {"value": {"type": "string"}}},
            }
        ),
        {"spec": {"limits": {"cpu": {"value": "1", "extra": 2}}}},
        {"spec": {"limits": {"cpu": {"value": "1"}}}},
    ),
    (
        "embedded-resource-keeps-type-and-object-meta",
        spec_of(
            template={
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}},
            }
        ),
        {
            "spec": {
                "template": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "p", "bogus": 1},
                    "spec": {"a": "x", "b": "y"},
                    "other": 1,
                }
            }
        },
        {
            "spec": {
                "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"a": "x"}}
            }
        },
    ),
    (
        "non-nullable-nulls-without-default-go",
        spec_of(
            name={"type": "string"},
            size={"type": "integer", "default": 1},
            note={"type": "string", "nullable": True},
        ),
        {"spec": {"name": None, "size": None, "note": None}},
        {"spec": {"size": None, "note": None}},
    ),
]


@pytest.mark.parametrize(
    ("doc", "obj", "expected"), [c[1:] for c in PRUNING_CASES], ids=[c[0] for c in PRUNING_CASES]
)
def test_prune_drops_what_the_schema_does_not_know(
    doc: dict[str, Any], obj: dict[str, Any], expected: dict[str, Any]
) -> None:
    schema.prune(obj, doc)
    assert obj == expected


def test_prune_then_default_is_what_decoding_does() -> None:
    doc = spec_of(replicas={"type": "integer", "default": 1})
    obj = {
        "apiVersion": "x/v1",
        "kind": "X",
        "metadata": {"name": "a"},
        "spec": {"replicas": None, "junk": 1},
    }
    schema.prune(obj, doc)
    schema.apply_defaults(obj, doc)
    assert obj == {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"}, "spec": {"replicas": 1}}


def test_prune_leaves_the_schema_untouched() -> None:
    doc = spec_of(replicas={"type": "integer"})
    before = copy.deepcopy(doc)
    schema.prune({"spec": {"replicas": 1}}, doc)
    assert doc == before


# -- Go value printing ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        (2.0, "2"),
        (2.25, "2.25"),
        (1e6, "1e+06"),
        (123456.0, "123456"),
        (1234567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-3.5, "-3.5"),
    ],
    ids=["integral", "fraction", "million", "below-exponent", "above-exponent", "small", "tiny", "negative"],
)
def test_go_float_prints_like_fmt_v(value: float, printed: str) -> None:
    assert schema.go_float(value) == printed


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        (None, '"null"'),
        ('a"b\n', '"a\\"b\\n"'),
        (True, "true"),
        (7, "7"),
        (
            {"b": 1, "a": [None, "x"]},
            'map[string]interface {}{"a":[]interface {}{interface {}(nil), "x"}, "b":1}',
        ),
    ],
    ids=["null", "string", "bool", "int", "map"],
)
def test_go_value_prints_bad_values_like_field_errors(value: Any, printed: str) -> None:
    assert schema.go_value(value) == printed
