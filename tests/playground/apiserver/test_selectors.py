"""Label/field selector strings, selector objects and node selectors behave like apimachinery's."""

from __future__ import annotations

from typing import Any

import pytest

from playground.apiserver.errors import APIError
from playground.apiserver.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    format_label_selector,
    label_key_errors,
    label_selector_matches,
    label_value_errors,
    node_selector_matches,
    node_selector_term_matches,
    validate_label_selector,
)

NAME_REGEX_HINT = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_REGEX_HINT = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
SUBDOMAIN_REGEX_HINT = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABELS = {"app": "web", "tier": "frontend", "example.com/team": "a", "replicas": "3", "empty": ""}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", True),
        ("   ", True),
        ("app=web", True),
        ("app==web", True),
        ("app=db", False),
        ("app!=db", True),
        ("app!=web", False),
        ("missing!=x", True),
        ("app in (web,db)", True),
        ("app in (db)", False),
        ("app notin (db)", True),
        ("app notin (web)", False),
        ("missing notin (web)", True),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("app=web,tier=frontend", True),
        ("app=web,tier=backend", False),
        (" app = web , tier in ( frontend ) ", True),
        ("example.com/team=a", True),
        ("empty=", True),
        ("empty in ()", True),
        ("app in (,web)", True),
        ("replicas>2", True),
        ("replicas<3", False),
        ("app>1", False),
        ("missing<10", False),
    ],
    ids=lambda v: repr(v) if isinstance(v, str) else None,
)
def test_label_selector_string_matches_like_apimachinery(text: str, expected: bool) -> None:
    assert LabelSelector.parse(text).matches(LABELS) is expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a in", "unable to parse requirement: found '' expected: '('"),
        ("a in (x", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a in (x y)", "unable to parse requirement: found 'y', expected: ',' or ')'"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("a=!b", "unable to parse requirement: found '!', expected: identifier"),
        ("a,", "found '', expected: identifier after ','"),
        ("a=b=c", "found '=', expected: ',' or 'end of string'"),
        ("=a", "found '=', expected: !, identifier, or 'end of string'"),
        (
            "app:web",
            f'unable to parse requirement: <nil>: Invalid value: "app:web": name part {NAME_REGEX_HINT}',
        ),
        (
            "a=b@",
            f'unable to parse requirement: values[0][a]: Invalid value: "b@": {VALUE_REGEX_HINT}',
        ),
        (
            "a/b/c",
            f'unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name {NAME_REGEX_HINT} '
            "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        ),
        (
            "n>x",
            "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, "
            "the value must be an integer",
        ),
    ],
    ids=[
        "no-operator",
        "in-without-set",
        "unclosed-set",
        "set-missing-comma",
        "bare-not",
        "not-as-value",
        "trailing-comma",
        "double-equals-sign",
        "leading-operator",
        "invalid-key",
        "invalid-value",
        "two-slashes",
        "gt-non-integer",
    ],
)
def test_bad_label_selector_is_a_400_with_kube_apiserver_message(text: str, message: str) -> None:
    with pytest.raises(APIError) as caught:
        LabelSelector.parse(text)
    assert (caught.value.code, caught.value.reason, caught.value.message) == (400, "BadRequest", message)


def test_label_selector_prints_sorted_canonical_form() -> None:
    parsed = LabelSelector.parse("z notin (b,a),!y, x in (foo,,baz),w==1,v")
    assert str(parsed) == "v,w==1,x in (,baz,foo),!y,z notin (a,b)"
    assert not parsed.empty
    assert LabelSelector.parse("").empty


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        ("a=1,b=2", "b", "2"),
        ("a in (1)", "a", "1"),
        ("a in (1,2)", "a", None),
        ("a!=1", "a", None),
        ("", "a", None),
    ],
    ids=["equals", "single-in", "multi-in", "not-equals", "empty"],
)
def test_label_selector_reports_exact_match(text: str, key: str, expected: str | None) -> None:
    assert LabelSelector.parse(text).requires_exact_match(key) == expected


@pytest.mark.parametrize(
    ("text", "fields", "expected"),
    [
        ("", {}, True),
        ("metadata.name=web", {"metadata.name": "web"}, True),
        ("metadata.name==web", {"metadata.name": "web"}, True),
        ("metadata.name=web", {"metadata.name": "db"}, False),
        ("metadata.name!=web", {"metadata.name": "db"}, True),
        ("spec.nodeName=", {"spec.nodeName": ""}, True),
        ("spec.nodeName=", {}, True),
        ("spec.nodeName!=", {}, False),
        ("status.phase=Running,spec.nodeName=n1", {"status.phase": "Running", "spec.nodeName": "n1"}, True),
        ("status.phase=Running,spec.nodeName=n1", {"status.phase": "Running", "spec.nodeName": "n2"}, False),
        (r"metadata.name=a\,b", {"metadata.name": "a,b"}, True),
        (r"metadata.name=a\=b\\c", {"metadata.name": "a=b\\c"}, True),
    ],
    ids=[
        "empty",
        "equals",
        "double-equals",
        "mismatch",
        "not-equals",
        "empty-value",
        "missing-is-empty",
        "missing-not-empty",
        "and-both",
        "and-one-fails",
        "escaped-comma",
        "escaped-equals-backslash",
    ],
)
def test_field_selector_matches(text: str, fields: dict[str, str], expected: bool) -> None:
    assert FieldSelector.parse(text).matches(fields) is expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
        ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
        ("a=b=c", "invalid field selector: unescaped character in value: 61"),
        (r"a=b\x", "invalid field selector: invalid escape sequence: \\x"),
        ("a=b\\", "invalid field selector: invalid escape sequence: \\"),
    ],
    ids=["no-operator", "second-term-bad", "unescaped-equals", "bad-escape", "trailing-backslash"],
)
def test_bad_field_selector_is_a_400(text: str, message: str) -> None:
    with pytest.raises(APIError) as caught:
        FieldSelector.parse(text)
    assert (caught.value.code, caught.value.message) == (400, message)


def test_field_selector_exposes_keys_and_exact_values() -> None:
    parsed = FieldSelector.parse("metadata.name=web,status.phase!=Failed,metadata.namespace==prod")
    assert parsed.keys() == {"metadata.name", "status.phase", "metadata.namespace"}
    assert parsed.requires_exact_match("metadata.name") == "web"
    assert parsed.requires_exact_match("metadata.namespace") == "prod"
    assert parsed.requires_exact_match("status.phase") is None
    assert FieldSelector.parse("").empty


@pytest.mark.parametrize(
    ("generic", "message"),
    [
        (False, "field label not supported: spec.foo"),
        (True, '"spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    ],
    ids=["kind-with-field-labels", "kind-without-field-labels"],
)
def test_unsupported_field_is_rejected(generic: bool, message: str) -> None:
    parsed = FieldSelector.parse("metadata.name=a,spec.foo=b")
    with pytest.raises(APIError) as caught:
        parsed.check_supported({"metadata.name", "metadata.namespace"}, generic=generic)
    assert (caught.value.code, caught.value.message) == (400, message)
    parsed.check_supported({"metadata.name", "spec.foo"})


@pytest.mark.parametrize(
    ("selector", "none_matches", "expected"),
    [
        (None, True, True),
        (None, False, False),
        ({}, False, True),
        ({"matchLabels": {"app": "web"}}, False, True),
        ({"matchLabels": {"app": "web", "tier": "backend"}}, False, False),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["frontend", "x"]}]}, False, True),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["frontend"]}]}, False, False),
        ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, False, True),
        ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, False, False),
        (
            {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]},
            False,
            True,
        ),
        ({"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}, False, False),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}, False, False),
    ],
    ids=[
        "none-everything",
        "none-nothing",
        "empty-everything",
        "match-labels",
        "match-labels-partial",
        "in",
        "notin",
        "exists",
        "does-not-exist",
        "labels-and-expressions",
        "unknown-operator",
        "in-without-values",
    ],
)
def test_label_selector_object_matches(
    selector: dict[str, Any] | None, none_matches: bool, expected: bool
) -> None:
    assert label_selector_matches(selector, LABELS, none_matches=none_matches) is expected


def test_format_label_selector_gives_scale_status_selector() -> None:
    selector = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["b", "a"]},
            {"key": "x", "operator": "Exists"},
        ],
    }
    assert format_label_selector(selector) == "app=web,tier in (a,b),x"
    assert format_label_selector({}) == ""
    with pytest.raises(SelectorError):
        format_label_selector({"matchExpressions": [{"key": "a", "operator": "Bogus"}]})


def test_validate_label_selector_reports_each_bad_field() -> None:
    selector = {
        "matchLabels": {"bad key": "ok", "app": "bad value!"},
        "matchExpressions": [
            {"key": "a", "operator": "In"},
            {"key": "b", "operator": "Exists", "values": ["x"]},
            {"key": "c", "operator": "Near", "values": ["y"]},
        ],
    }
    causes = [(c.field, c.reason, c.message) for c in validate_label_selector(selector, "spec.selector")]
    assert causes == [
        (
            "spec.selector.matchLabels",
            "FieldValueInvalid",
            f'Invalid value: "bad value!": {VALUE_REGEX_HINT}',
        ),
        (
            "spec.selector.matchLabels",
            "FieldValueInvalid",
            f'Invalid value: "bad key": name part {NAME_REGEX_HINT}',
        ),
        (
            "spec.selector.matchExpressions[0].values",
            "FieldValueRequired",
            "Required value: must be specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            "spec.selector.matchExpressions[1].values",
            "FieldValueForbidden",
            "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        ),
        (
            "spec.selector.matchExpressions[2].operator",
            "FieldValueInvalid",
            'Invalid value: "Near": not a valid selector operator',
        ),
    ]
    assert validate_label_selector({"matchLabels": {"app": "web"}}, "spec.selector") == []
    assert validate_label_selector(None, "spec.selector") == []


@pytest.mark.parametrize(
    ("key", "errors"),
    [
        ("app", []),
        ("example.com/app", []),
        ("/app", ["prefix part must be non-empty"]),
        ("example.com/", ["name part must be non-empty", f"name part {NAME_REGEX_HINT}"]),
        ("a" * 64, ["name part must be no more than 63 characters"]),
        (
            "Example.com/app",
            [f"prefix part {SUBDOMAIN_REGEX_HINT}"],
        ),
    ],
    ids=["plain", "prefixed", "empty-prefix", "empty-name", "too-long", "uppercase-prefix"],
)
def test_label_key_errors(key: str, errors: list[str]) -> None:
    assert label_key_errors(key) == errors


@pytest.mark.parametrize(
    ("value", "valid"),
    [("", True), ("a.b_c-d", True), ("-a", False), ("a" * 63, True), ("a" * 64, False)],
    ids=["empty", "punctuated", "leading-dash", "max-length", "too-long"],
)
def test_label_value_errors(value: str, valid: bool) -> None:
    assert (label_value_errors(value) == []) is valid


NODE = {"metadata": {"name": "node-1", "labels": {"zone": "a", "cpus": "8", "gpu": "true"}}}


def _term(
    expressions: list[dict[str, Any]] | None = None, fields: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    term: dict[str, Any] = {}
    if expressions is not None:
        term["matchExpressions"] = expressions
    if fields is not None:
        term["matchFields"] = fields
    return term


@pytest.mark.parametrize(
    ("terms", "expected"),
    [
        ([_term([{"key": "zone", "operator": "In", "values": ["a", "b"]}])], True),
        ([_term([{"key": "zone", "operator": "NotIn", "values": ["a"]}])], False),
        ([_term([{"key": "gpu", "operator": "Exists"}])], True),
        ([_term([{"key": "gpu", "operator": "DoesNotExist"}])], False),
        ([_term([{"key": "cpus", "operator": "Gt", "values": ["4"]}])], True),
        ([_term([{"key": "cpus", "operator": "Lt", "values": ["4"]}])], False),
        ([_term([{"key": "zone", "operator": "Gt", "values": ["4"]}])], False),
        ([_term(fields=[{"key": "metadata.name", "operator": "In", "values": ["node-1"]}])], True),
        ([_term(fields=[{"key": "metadata.name", "operator": "NotIn", "values": ["node-1"]}])], False),
        ([_term(fields=[{"key": "metadata.name", "operator": "In", "values": ["node-1", "node-2"]}])], False),
        ([_term(fields=[{"key": "metadata.uid", "operator": "In", "values": ["x"]}])], False),
        (
            [
                _term(
                    [{"key": "zone", "operator": "In", "values": ["a"]}],
                    [{"key": "metadata.name", "operator": "In", "values": ["node-2"]}],
                )
            ],
            False,
        ),
        (
            [
                _term([{"key": "zone", "operator": "In", "values": ["b"]}]),
                _term([{"key": "gpu", "operator": "Exists"}]),
            ],
            True,
        ),
        ([_term()], False),
        ([], False),
        (
            [
                _term([{"key": "zone", "operator": "Near", "values": ["a"]}]),
                _term([{"key": "gpu", "operator": "Exists"}]),
            ],
            True,
        ),
    ],
    ids=[
        "in",
        "notin",
        "exists",
        "does-not-exist",
        "gt",
        "lt",
        "gt-non-numeric-label",
        "field-in",
        "field-notin",
        "field-in-two-values",
        "field-unsupported-key",
        "expressions-and-fields",
        "terms-ored",
        "empty-term",
        "no-terms",
        "invalid-term-skipped",
    ],
)
def test_node_selector_matches(terms: list[dict[str, Any]], expected: bool) -> None:
    assert node_selector_matches({"nodeSelectorTerms": terms}, NODE) is expected


def test_node_selector_term_on_node_without_labels() -> None:
    bare = {"metadata": {"name": "n"}}
    assert node_selector_term_matches(_term([{"key": "zone", "operator": "DoesNotExist"}]), bare)
    assert not node_selector_term_matches(_term([{"key": "zone", "operator": "Exists"}]), bare)
