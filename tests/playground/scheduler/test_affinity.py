"""Label selectors, node selectors and node affinity as the scheduler evaluates them, with apimachinery's semantics.

Node affinity is `runtime.api.selectors`' (shared with the DaemonSet controller); label selectors
are read through pod affinity terms, where one that cannot be evaluated selects nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from playground.scheduler.affinity import PodAffinityTerm, required_pod_affinity_terms
from runtime.api.objects import JSON
from runtime.api.selectors import (
    label_selector,
    preferred_node_affinity_weight,
    required_node_affinity_matches,
)

from .builders import node, pod

LABELS = {"app": "web", "tier": "front"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (None, False),
        ({}, True),
        ({"matchLabels": {"app": "web"}}, True),
        ({"matchLabels": {"app": "db"}}, False),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["db", "web"]}]}, True),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, False),
        ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, False),
        ({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}, True),
        ({"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}, False),
        (
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["back"]}],
            },
            False,
        ),
    ],
    ids=[
        "none-selects-nothing",
        "empty-selects-everything",
        "match-labels",
        "match-labels-differ",
        "in",
        "not-in",
        "not-in-absent",
        "exists",
        "does-not-exist-present",
        "does-not-exist-absent",
        "gt-is-not-a-label-selector-operator",
        "labels-and-expressions-are-anded",
    ],
)
def test_label_selector(selector: dict[str, Any] | None, expected: bool) -> None:
    term = PodAffinityTerm.of({"labelSelector": selector, "topologyKey": "zone"}, namespace="mine")
    assert term.matches("mine", LABELS, namespace_labels={}) is expected


NODE = node("n1", labels={"disk": "ssd", "cores": "16"})


def required(*terms: JSON) -> JSON:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


@pytest.mark.parametrize(
    ("term", "expected"),
    [
        ({}, False),
        ({"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}, True),
        ({"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["8"]}]}, True),
        ({"matchExpressions": [{"key": "cores", "operator": "Lt", "values": ["8"]}]}, False),
        ({"matchExpressions": [{"key": "disk", "operator": "Gt", "values": ["8"]}]}, False),
        ({"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["x"]}]}, False),
        ({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}, True),
        ({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}, True),
        ({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}, False),
        ({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}]}, False),
        ({"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["n1"]}]}, False),
        ({"matchFields": [{"key": "metadata.name", "operator": "Exists"}]}, False),
        (
            {
                "matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}],
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}],
            },
            False,
        ),
    ],
    ids=[
        "empty-term-matches-nothing",
        "in",
        "gt",
        "lt",
        "gt-on-a-non-number",
        "gt-with-a-non-number",
        "does-not-exist",
        "field-in",
        "field-not-in",
        "field-needs-one-value",
        "unknown-field",
        "field-exists-is-invalid",
        "expressions-and-fields-are-anded",
    ],
)
def test_node_selector_term(term: JSON, expected: bool) -> None:
    assert required_node_affinity_matches({"affinity": required(term)}, NODE) is expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, True),
        ({"nodeSelector": {"disk": "ssd"}}, True),
        ({"nodeSelector": {"disk": "ssd", "gpu": "yes"}}, False),
        ({"affinity": required()}, False),
        (
            {
                "affinity": required(
                    {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["hdd"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
                )
            },
            True,
        ),
        (
            {
                "nodeSelector": {"disk": "hdd"},
                "affinity": required(
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                ),
            },
            False,
        ),
    ],
    ids=[
        "nothing",
        "node-selector",
        "node-selector-all-keys",
        "no-terms",
        "terms-are-ored",
        "both-must-hold",
    ],
)
def test_fits_node_selector(spec: JSON, expected: bool) -> None:
    assert required_node_affinity_matches(pod("p", **spec)["spec"], NODE) is expected


def test_preferred_node_weight_sums_matching_terms() -> None:
    preferred = [
        {
            "weight": 10,
            "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
        },
        {
            "weight": 5,
            "preference": {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4"]}]},
        },
        {"weight": 50, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}},
        {"weight": 70, "preference": {}},
        {
            "weight": 90,
            "preference": {"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["n1"]}]},
        },
    ]
    body = pod("p", affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}})
    assert preferred_node_affinity_weight(body["spec"], NODE) == 15
    assert preferred_node_affinity_weight(pod("plain")["spec"], NODE) == 0


def test_pod_affinity_terms_default_to_their_pods_namespace() -> None:
    terms = [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"},
        {"labelSelector": {}, "namespaces": ["other"], "topologyKey": "zone"},
        {"labelSelector": {}, "namespaceSelector": {}, "topologyKey": "zone"},
    ]
    body = pod(
        "p",
        namespace="mine",
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}},
    )
    own, listed, everywhere = required_pod_affinity_terms(body, "podAntiAffinity")
    assert own == PodAffinityTerm(
        label_selector({"matchLabels": {"app": "db"}}), frozenset({"mine"}), None, "kubernetes.io/hostname"
    )
    assert own.matches("mine", {"app": "db"}, namespace_labels={})
    assert not own.matches("elsewhere", {"app": "db"}, namespace_labels={})
    assert not own.matches("mine", {"app": "web"}, namespace_labels={})
    assert listed.matches("other", {}, namespace_labels={}) and not listed.matches(
        "mine", {}, namespace_labels={}
    )
    assert everywhere.matches("anything", {"x": "y"}, namespace_labels={})
    assert required_pod_affinity_terms(body, "podAffinity") == ()


def test_pod_affinity_term_namespace_selector_reads_namespace_labels() -> None:
    term = PodAffinityTerm.of(
        {"labelSelector": {}, "namespaceSelector": {"matchLabels": {"team": "a"}}, "topologyKey": "zone"},
        namespace="mine",
    )
    assert term.matches("x", {}, namespace_labels={"team": "a"})
    assert not term.matches("mine", {}, namespace_labels={"team": "b"})
