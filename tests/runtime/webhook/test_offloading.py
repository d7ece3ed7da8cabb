"""The NamespaceOffloading validator and the pod mutator, as pure functions."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import pytest

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.forge.namespaceoffloading import namespace_offloading
from runtime.webhook import namespaceoffloadings, namespaceoffloadingsets
from runtime.webhook.pods import VIRTUAL_NODE_TOLERATION, merged_node_selector, offloadable_spec, pod_mutator
from runtime.webhook.review import response


def nso_review(spec: JSON, old: JSON | None = None, *, name: str = "offloading") -> JSON:
    request: JSON = {
        "uid": str(uuid.uuid4()),
        "operation": "UPDATE" if old is not None else "CREATE",
        "object": {
            "kind": "NamespaceOffloading",
            "metadata": {"name": name, "namespace": "demo"},
            "spec": spec,
        },
    }
    if old is not None:
        request["oldObject"] = {"metadata": {"name": name, "namespace": "demo"}, "spec": old}
    return request


def requirement(operator: str, *values: str, key: str = "region") -> JSON:
    return {"key": key, "operator": operator, "values": list(values)}


def selector(*requirements: JSON) -> JSON:
    return {"nodeSelectorTerms": [{"matchExpressions": list(requirements)}]}


@pytest.mark.parametrize(
    ("spec", "old", "name", "problem"),
    [
        ({}, None, "offloading", ""),
        ({}, None, "other", 'metadata.name: Invalid value: "other": a namespace is offloaded by one'),
        ({"namespaceMappingStrategy": "SelectedName"}, None, "offloading", "needs the twin namespaces' name"),
        (
            {"namespaceMappingStrategy": "SelectedName", "remoteNamespaceName": "Not_A_Name"},
            None,
            "offloading",
            "is not a valid namespace name",
        ),
        (
            {"namespaceMappingStrategy": "SelectedName", "remoteNamespaceName": "kube-system"},
            None,
            "offloading",
            "a cluster's own namespace",
        ),
        (
            {"namespaceMappingStrategy": "SelectedName", "remoteNamespaceName": "there"},
            None,
            "offloading",
            "",
        ),
        (
            {"namespaceMappingStrategy": "EnforceSameName"},
            {"namespaceMappingStrategy": "DefaultName"},
            "offloading",
            "spec.namespaceMappingStrategy: Forbidden: the mapping strategy is immutable (it was DefaultName)",
        ),
        (
            {"namespaceMappingStrategy": "SelectedName", "remoteNamespaceName": "b"},
            {"namespaceMappingStrategy": "SelectedName", "remoteNamespaceName": "a"},
            "offloading",
            "the twin namespace's name is immutable",
        ),
        ({"podOffloadingStrategy": "Remote"}, {"podOffloadingStrategy": "Local"}, "offloading", ""),
        (
            {"clusterSelector": selector(requirement("In"))},
            None,
            "offloading",
            "needs at least one value",
        ),
        ({"clusterSelector": selector(requirement("Exists", "x"))}, None, "offloading", "takes no values"),
        ({"clusterSelector": selector(requirement("Gt", "many"))}, None, "offloading", "exactly one integer"),
        ({"clusterSelector": selector(requirement("Near", "x"))}, None, "offloading", "is not an operator"),
        (
            {"clusterSelector": selector(requirement("In", "a"), requirement("Gt", "3"))},
            None,
            "offloading",
            "",
        ),
    ],
    ids=[
        "defaults",
        "other-name",
        "selected-without-name",
        "selected-bad-name",
        "selected-reserved",
        "selected",
        "strategy-changed",
        "selected-name-changed",
        "pod-strategy-may-change",
        "in-without-values",
        "exists-with-values",
        "gt-not-integer",
        "unknown-operator",
        "good-selector",
    ],
)
def test_namespace_offloadings_are_validated(spec: JSON, old: JSON | None, name: str, problem: str) -> None:
    problems = list(namespaceoffloadings.validate(nso_review(spec, old, name=name)))
    if problem:
        assert any(problem in found for found in problems), problems
    else:
        assert problems == []


def pod(**spec: Any) -> JSON:
    return {"metadata": {"name": "p", "namespace": "demo"}, "spec": {"containers": [{"name": "c"}], **spec}}


TYPE_IN = {"key": c.LABEL_TYPE, "operator": "In", "values": [c.TYPE_VIRTUAL_NODE]}
TYPE_NOT_IN = {"key": c.LABEL_TYPE, "operator": "NotIn", "values": [c.TYPE_VIRTUAL_NODE]}
SOUTH = requirement("In", "south")


def required(spec: JSON) -> list[JSON] | None:
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    return None if affinity is None else list(affinity["nodeSelectorTerms"])


@pytest.mark.parametrize(
    ("strategy", "terms", "tolerates", "expected"),
    [
        ("Local", [], False, None),
        ("Local", [{"matchExpressions": [SOUTH]}], False, None),
        ("LocalAndRemote", [], True, None),
        (
            "LocalAndRemote",
            [{"matchExpressions": [SOUTH]}],
            True,
            [{"matchExpressions": [SOUTH]}, {"matchExpressions": [TYPE_NOT_IN]}],
        ),
        ("Remote", [], True, [{"matchExpressions": [TYPE_IN]}]),
        ("Remote", [{"matchExpressions": [SOUTH]}], True, [{"matchExpressions": [SOUTH, TYPE_IN]}]),
    ],
    ids=["local", "local-selector", "both", "both-selector", "remote", "remote-selector"],
)
def test_the_pod_offloading_strategy_sets_tolerations_and_affinity(
    strategy: str, terms: list[JSON], tolerates: bool, expected: list[JSON] | None
) -> None:
    offloading = namespace_offloading("demo", pod_offloading_strategy=strategy, cluster_selector_terms=terms)
    spec = offloadable_spec(pod(), offloading)
    assert (VIRTUAL_NODE_TOLERATION in (spec.get("tolerations") or [])) is tolerates
    assert required(spec) == expected


def test_the_selector_is_merged_with_the_pods_own_affinity() -> None:
    own = {
        "nodeSelectorTerms": [
            {"matchExpressions": [requirement("In", "ssd", key="disk")]},
            {"matchFields": [requirement("In", "n1", key="metadata.name")]},
        ]
    }
    imposed = {"nodeSelectorTerms": [{"matchExpressions": [SOUTH, TYPE_IN]}]}
    assert merged_node_selector(own, imposed) == {
        "nodeSelectorTerms": [
            {"matchExpressions": [requirement("In", "ssd", key="disk"), SOUTH, TYPE_IN]},
            {
                "matchExpressions": [SOUTH, TYPE_IN],
                "matchFields": [requirement("In", "n1", key="metadata.name")],
            },
        ]
    }


def test_daemon_set_pods_are_never_offloaded() -> None:
    offloading = namespace_offloading("demo", pod_offloading_strategy="Remote")
    daemon = pod()
    daemon["metadata"]["ownerReferences"] = [
        {"kind": "DaemonSet", "name": "d", "controller": True, "uid": "u"}
    ]
    assert offloadable_spec(daemon, offloading) == daemon["spec"]


def admission(obj: JSON) -> JSON:
    return {"uid": "u1", "operation": "CREATE", "namespace": "demo", "object": obj}


def test_the_mutator_patches_pods_refuses_them_without_offloading_and_ignores_a_terminating_one() -> None:
    offloading = namespace_offloading("demo", pod_offloading_strategy="Remote")
    found: dict[str, JSON | None] = {"demo": offloading}
    mutate = pod_mutator(found.get)
    mutation = mutate(admission(pod(tolerations=[{"key": "x", "operator": "Exists"}])))
    assert mutation.problems == ()
    answer = response(admission(pod()), mutation.problems, patch=mutation.patch)["response"]
    assert answer["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(answer["patch"]))
    assert {op["path"] for op in patch} == {"/spec/tolerations", "/spec/affinity"}
    tolerations = next(op["value"] for op in patch if op["path"] == "/spec/tolerations")
    assert tolerations == [{"key": "x", "operator": "Exists"}, VIRTUAL_NODE_TOLERATION]

    found["demo"] = None
    refused = mutate(admission(pod()))
    assert refused.problems and "has no NamespaceOffloading 'offloading' yet" in refused.problems[0]

    found["demo"] = {
        **offloading,
        "metadata": {**offloading["metadata"], "deletionTimestamp": "2024-01-01T00:00:00Z"},
    }
    assert mutate(admission(pod())).patch == []


def set_review(namespace_selector: Any, cluster_selector: JSON | None = None) -> JSON:
    template = {"clusterSelector": cluster_selector} if cluster_selector is not None else {}
    return {
        "uid": str(uuid.uuid4()),
        "operation": "CREATE",
        "object": {
            "kind": "NamespaceOffloadingSet",
            "metadata": {"name": "blue"},
            "spec": {"namespaceSelector": namespace_selector, "template": template},
        },
    }


@pytest.mark.parametrize(
    ("namespace_selector", "cluster_selector", "problem"),
    [
        ({"matchLabels": {"team": "blue"}}, selector(requirement("In", "north")), None),
        ({}, None, None),
        ({"matchLabels": {"bad key!": "x"}}, None, "spec.namespaceSelector.matchLabels: Invalid value"),
        (
            {"matchExpressions": [{"key": "team", "operator": "In"}]},
            None,
            "spec.namespaceSelector.matchExpressions[0]: Invalid value",
        ),
        (
            {"matchExpressions": [{"key": "team", "operator": "Exists", "values": ["x"]}]},
            None,
            "operator Exists takes no values",
        ),
        (
            {"matchLabels": {"team": "blue"}},
            selector(requirement("In")),
            "spec.template.clusterSelector.nodeSelectorTerms[0].matchExpressions[0]",
        ),
    ],
)
def test_a_namespace_offloading_set_s_selectors_are_checked(
    namespace_selector: Any, cluster_selector: JSON | None, problem: str | None
) -> None:
    problems = namespaceoffloadingsets.validate(set_review(namespace_selector, cluster_selector))
    if problem is None:
        assert problems == []
    else:
        assert any(problem in found for found in problems), problems
