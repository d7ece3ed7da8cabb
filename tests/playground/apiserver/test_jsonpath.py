"""The JSONPath subset that CRD printer columns use, checked against client-go's behaviour."""

from __future__ import annotations

from typing import Any

import pytest

from playground.apiserver.jsonpath import evaluate, parse

POD: dict[str, Any] = {
    "metadata": {"name": "web-0", "labels": {"app.kubernetes.io/name": "web", "tier": "front"}},
    "spec": {
        "replicas": 3,
        "containers": [
            {"name": "app", "image": "nginx", "ports": [{"containerPort": 80}, {"containerPort": 443}]},
            {"name": "sidecar", "image": "envoy", "ports": []},
        ],
    },
    "status": {
        "ready": True,
        "score": 1.5,
        "nothing": None,
        "conditions": [
            {"type": "Initialized", "status": "True", "count": 1},
            {"type": "Ready", "status": "False", "count": 3, "lastTransitionTime": "2024-01-01T00:00:00Z"},
        ],
    },
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".metadata.name", ["web-0"]),
        ("{.metadata.name}", ["web-0"]),
        ("$.metadata.name", ["web-0"]),
        (" { .spec.replicas } ", [3]),
        (".spec.containers[0].image", ["nginx"]),
        (".spec.containers[-1].name", ["sidecar"]),
        (".spec.containers[0:2].name", ["app", "sidecar"]),
        (".spec.containers[1:].name", ["sidecar"]),
        (".spec.containers[*].name", ["app", "sidecar"]),
        (".spec.containers[*].ports[*].containerPort", [80, 443]),
        (".metadata.labels.*", ["web", "front"]),
        (r".metadata.labels.app\.kubernetes\.io/name", ["web"]),
        (".metadata.labels['app.kubernetes.io/name']", ["web"]),
        ('.status.conditions[?(@.type=="Ready")].status', ["False"]),
        (".status.conditions[?(@.type == 'Ready')].status", ["False"]),
        ('.status.conditions[?(@.type!="Ready")].type', ["Initialized"]),
        (".status.conditions[?(@.count>1)].type", ["Ready"]),
        (".status.conditions[?(@.count<=1)].type", ["Initialized"]),
        (".status.conditions[?(@.lastTransitionTime)].type", ["Ready"]),
        (".status.conditions[?(@.status!=@.type)].type", ["Initialized", "Ready"]),
        (".spec.containers[?(@.name=='app')].ports[1].containerPort", [443]),
        (".status.ready", [True]),
        (".status.nothing", [None]),
        (".status", [POD["status"]]),
    ],
    ids=[
        "nested-field",
        "braces",
        "dollar-root",
        "whitespace-around-braces",
        "index",
        "negative-index",
        "slice",
        "open-ended-slice",
        "list-wildcard",
        "nested-wildcards",
        "map-wildcard",
        "escaped-dots-in-field",
        "quoted-key",
        "filter-equal",
        "filter-single-quotes-and-spaces",
        "filter-not-equal",
        "filter-number-greater",
        "filter-number-less-equal",
        "filter-exists",
        "filter-two-paths",
        "filter-then-index",
        "boolean-value",
        "null-value-is-a-result",
        "whole-subtree",
    ],
)
def test_evaluate_finds_what_client_go_finds(path: str, expected: list[Any]) -> None:
    assert evaluate(POD, path) == expected


@pytest.mark.parametrize(
    "path",
    [
        ".metadata.missing",
        ".status.nothing.deeper",
        ".spec.containers[5].name",
        ".spec.containers[-3].name",
        ".metadata[0]",
        ".metadata.name[0]",
        '.status.conditions[?(@.count=="3")].type',
        ".status.conditions[?(@.count==3.0)].type",
        '.status.conditions[?(@.lastTransitionTime=="x")].type',
        ".status.conditions[?(@.status<true)].type",
        '.metadata[?(@.name=="web-0")]',
        ".status.nothing[?(@.a)]",
    ],
    ids=[
        "missing-key",
        "through-null",
        "index-out-of-range",
        "negative-index-out-of-range",
        "index-into-map",
        "index-into-string",
        "number-compared-with-string",
        "integer-compared-with-float",
        "operand-missing-on-some-elements",
        "ordering-booleans",
        "filter-on-map",
        "filter-on-null",
    ],
)
def test_evaluate_yields_nothing_where_client_go_finds_nothing_or_fails(path: str) -> None:
    assert evaluate(POD, path) == []


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("", "empty expression"),
        ("{}", "empty expression"),
        ("{.a", "unclosed action"),
        ("x{.a}", "text outside"),
        ("a.b", "unexpected character 'a'"),
        (".a..b", "recursive descent"),
        (".a[0,1]", "union"),
        (".a[0:4:2]", "slice step"),
        (".a[x]", "invalid array index"),
        (".a[]", "invalid array index"),
        (".a[0", "unterminated array"),
        ('.a[?(@.b=="c")', "not closed"),
        ('.a[?(@.b=="c]', "unterminated filter"),
        ('.a[?(@.b=!"c")]', "unrecognized filter operator"),
        ('.a[?(@.b=="c\\q")]', "invalid escape"),
        (".a[?(@.b==)]", "unrecognized filter operator"),
    ],
    ids=[
        "empty",
        "empty-braces",
        "unclosed-brace",
        "text-outside-braces",
        "no-leading-dot",
        "recursive-descent",
        "union",
        "slice-step",
        "non-numeric-index",
        "empty-index",
        "unterminated-index",
        "filter-without-bracket",
        "unterminated-quote-in-filter",
        "bad-operator",
        "bad-escape",
        "missing-right-operand",
    ],
)
def test_parse_rejects_invalid_paths_with_a_clear_message(path: str, message: str) -> None:
    with pytest.raises(ValueError, match="invalid JSONPath") as excinfo:
        parse(path)
    assert message in str(excinfo.value)
