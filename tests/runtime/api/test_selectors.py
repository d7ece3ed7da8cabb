"""Label and node selectors: apimachinery's matching rules, the string form and its rendering."""

from __future__ import annotations

import pytest

from runtime.api.objects import JSON
from runtime.api.selectors import (
    NOTHING,
    SelectorError,
    as_label_selector,
    label_selector,
    label_selector_matches,
    node_selector_matches,
    node_selector_term_matches,
    parse_selector,
    selector_string,
    set_selector,
)


@pytest.mark.parametrize(
    ("text", "labels", "matches"),
    [
        ("", {}, True),
        ("a=b", {"a": "b"}, True),
        ("a==b", {"a": "b"}, True),
        ("a=b", {"a": "c"}, False),
        ("a!=b", {}, True),
        ("a!=b", {"a": "b"}, False),
        ("a in (x,y)", {"a": "y"}, True),
        ("a in (x, y)", {"a": "z"}, False),
        ("a notin (x)", {}, True),
        ("a notin (x)", {"a": "x"}, False),
        ("a", {"a": ""}, True),
        ("!a", {"a": ""}, False),
        ("!a", {"b": "c"}, True),
        ("n>3", {"n": "4"}, True),
        ("n<3", {"n": "4"}, False),
        ("n>3", {"n": "x"}, False),
        ("a=b,c!=d,e in (x,y),!f", {"a": "b", "e": "x"}, True),
        ("a=b,c!=d,e in (x,y),!f", {"a": "b", "e": "x", "f": "1"}, False),
        ("a=", {"a": ""}, True),
        ("a in ()", {"a": ""}, True),
    ],
    ids=lambda value: repr(value),
)
def test_the_string_form_matches_like_kube(text: str, labels: dict[str, str], matches: bool) -> None:
    assert parse_selector(text).matches(labels) is matches


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        ("b=2,a=1", "a=1,b=2"),
        ("x in (z,y)", "x in (y,z)"),
        ("  here ,  !gone ", "!gone,here"),
        ("k notin (a)", "k notin (a)"),
        ("n > 7", "n>7"),
    ],
)
def test_the_string_form_renders_sorted_by_key(text: str, rendered: str) -> None:
    assert str(parse_selector(text)) == rendered


@pytest.mark.parametrize("text", ["a=b,", ",a", "a b", "a in x", "a in (x", "=b", "a=(", "n>x", "a,,b"])
def test_bad_strings_are_refused(text: str) -> None:
    with pytest.raises(SelectorError):
        parse_selector(text)


def test_label_selector_objects_combine_labels_and_expressions() -> None:
    selector = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["front", "edge"]},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "zone", "operator": "NotIn", "values": ["b"]},
            {"key": "team", "operator": "Exists"},
        ],
    }
    assert label_selector_matches(selector, {"app": "web", "tier": "edge", "team": "x"})
    assert not label_selector_matches(selector, {"app": "web", "tier": "edge", "team": "x", "canary": "1"})
    assert not label_selector_matches(selector, {"app": "web", "tier": "back", "team": "x"})
    assert not label_selector_matches(selector, {"app": "web", "tier": "edge", "team": "x", "zone": "b"})
    assert selector_string(selector) == "app=web,!canary,team,tier in (edge,front),zone notin (b)"


def test_a_missing_selector_selects_nothing_and_an_empty_one_everything() -> None:
    assert label_selector(None) is NOTHING
    assert not label_selector_matches(None, {"a": "b"})
    assert label_selector_matches({}, {"a": "b"})
    assert label_selector({}).empty()
    with pytest.raises(SelectorError):
        selector_string(None)


@pytest.mark.parametrize(
    "selector",
    [
        {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
        {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
        {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
    ],
    ids=["gt-is-not-a-label-operator", "in-without-values", "exists-with-values"],
)
def test_invalid_label_selector_objects_are_errors(selector: JSON) -> None:
    with pytest.raises(SelectorError):
        label_selector(selector)


def test_set_selectors_need_every_pair() -> None:
    assert set_selector({"app": "web", "tier": "a"}).matches({"app": "web", "tier": "a", "x": "y"})
    assert not set_selector({"app": "web"}).matches({"app": "db"})
    assert set_selector(None).matches({})


NODE = {"metadata": {"name": "worker-1", "labels": {"disk": "ssd", "cpus": "8"}}}


@pytest.mark.parametrize(
    ("term", "matches"),
    [
        ({"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}, True),
        ({"matchExpressions": [{"key": "cpus", "operator": "Gt", "values": ["4"]}]}, True),
        ({"matchExpressions": [{"key": "cpus", "operator": "Lt", "values": ["4"]}]}, False),
        ({"matchExpressions": [{"key": "gpu", "operator": "NotIn", "values": ["x"]}]}, True),
        ({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker-1"]}]}, True),
        ({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["worker-1"]}]}, False),
        (
            {
                "matchExpressions": [{"key": "disk", "operator": "Exists"}],
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["other"]}],
            },
            False,
        ),
        ({}, False),
    ],
    ids=["in", "gt", "lt", "notin-missing", "field-in", "field-notin", "and-of-both", "empty-term"],
)
def test_node_selector_terms(term: JSON, matches: bool) -> None:
    assert node_selector_term_matches(term, NODE) is matches


def test_node_selector_terms_are_ored_and_bad_terms_skipped() -> None:
    bad = {"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["x"]}]}
    good = {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
    assert node_selector_matches({"nodeSelectorTerms": [bad, good]}, NODE)
    assert not node_selector_matches({"nodeSelectorTerms": [bad]}, NODE)
    assert not node_selector_matches({"nodeSelectorTerms": []}, NODE)
    assert node_selector_matches(None, NODE)


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("team=blue", {"matchLabels": {"team": "blue"}}),
        (
            "team==blue,tier",
            {"matchLabels": {"team": "blue"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
        ),
        ("team!=red", {"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["red"]}]}),
        (
            "env in (a,b),!legacy",
            {
                "matchExpressions": [
                    {"key": "env", "operator": "In", "values": ["a", "b"]},
                    {"key": "legacy", "operator": "DoesNotExist"},
                ]
            },
        ),
        ("", {}),
    ],
)
def test_a_string_selector_becomes_the_label_selector_that_selects_alike(
    text: str, wanted: dict[str, object]
) -> None:
    converted = as_label_selector(parse_selector(text))
    assert converted == wanted
    for labels in (
        {"team": "blue"},
        {"team": "red", "tier": "x"},
        {"env": "a"},
        {"env": "a", "legacy": "y"},
        {},
    ):
        assert label_selector(converted).matches(labels) == parse_selector(text).matches(labels)


def test_a_numeric_comparison_has_no_label_selector_form() -> None:
    with pytest.raises(SelectorError, match="without '>' or '<'"):
        as_label_selector(parse_selector("replicas>1"))
