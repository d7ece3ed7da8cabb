"""The validators and the AdmissionReview responses, as pure functions."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from runtime.webhook import foreignclusters, resourceslices
from runtime.webhook.review import ReviewError, parse_review, response

NAMESPACE = "liqo"
CLUSTER_ID = "5f0d3a0e-4c5e-4a57-9d7c-0b6f3c1d2e4a"


def review(
    operation: str, spec: dict[str, Any], old: dict[str, Any] | None = None, *, kind: str
) -> dict[str, Any]:
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": "core.liqo.io", "version": "v1beta1", "kind": kind},
        "operation": operation,
        "name": "milan",
        "object": {"kind": kind, "metadata": {"name": "milan"}, "spec": spec},
    }
    if old is not None:
        request["oldObject"] = {"kind": kind, "metadata": {"name": "milan"}, "spec": old}
    return request


def fc(spec: dict[str, Any], old: dict[str, Any] | None = None, operation: str = "CREATE") -> list[str]:
    request = review(operation, spec, old, kind="ForeignCluster")
    return list(foreignclusters.validate(request, namespace=NAMESPACE))


GOOD = {
    "clusterID": CLUSTER_ID,
    "clusterName": "milan",
    "authURL": "https://10.0.0.1:8443",
    "tokenSecretRef": {"name": "liqo-token-milan", "namespace": NAMESPACE},
}


def test_a_well_formed_foreign_cluster_is_allowed() -> None:
    assert fc(GOOD) == []
    assert fc({"clusterID": CLUSTER_ID}) == []
    assert fc({**GOOD, "tokenSecretRef": {"name": "t"}}) == []


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("clusterID", "milan", 'spec.clusterID: Invalid value: "milan": must be a UUID'),
        ("clusterID", CLUSTER_ID.replace("-", ""), "must be a UUID"),
        ("clusterID", None, "spec.clusterID: Invalid value: null: must be a UUID"),
        (
            "clusterName",
            "Milan",
            'spec.clusterName: Invalid value: "Milan": must be a DNS label of at most 58',
        ),
        ("clusterName", "m" * 59, "because the virtual node is called liqo-<clusterName>"),
        (
            "authURL",
            "http://10.0.0.1:8443",
            'spec.authURL: Invalid value: "http://10.0.0.1:8443": must be an https://',
        ),
        ("authURL", "https://", "must be an https:// URL"),
        (
            "tokenSecretRef",
            {"name": "t", "namespace": "default"},
            "spec.tokenSecretRef.namespace: Forbidden: the token Secret must be in the runtime's namespace 'liqo'",
        ),
    ],
)
def test_each_bad_field_is_named(field: str, value: Any, expected: str) -> None:
    problems = fc({**GOOD, field: value})
    assert len(problems) == 1
    assert expected in problems[0]


def test_every_problem_is_reported_at_once() -> None:
    assert len(fc({"clusterID": "x", "clusterName": "X", "authURL": "ftp://a"})) == 3


def test_the_cluster_id_is_immutable() -> None:
    other = str(uuid.uuid4())
    assert fc(GOOD, GOOD, "UPDATE") == []
    [problem] = fc({**GOOD, "clusterID": other}, GOOD, "UPDATE")
    assert problem == (
        f'spec.clusterID: Invalid value: "{other}": clusterID is immutable (it was {CLUSTER_ID}); '
        "delete the ForeignCluster and create it again to peer with another cluster"
    )


def rs(spec: dict[str, Any], old: dict[str, Any] | None = None, operation: str = "CREATE") -> list[str]:
    return list(resourceslices.validate(review(operation, spec, old, kind="ResourceSlice")))


def test_resource_slice_quantities() -> None:
    assert (
        rs({"consumerClusterID": CLUSTER_ID, "resources": {"cpu": "2", "memory": "4Gi", "pods": 110}}) == []
    )
    assert rs({"consumerClusterID": CLUSTER_ID}) == []
    cpu, memory = rs({"resources": {"cpu": "two", "memory": "-1Gi"}})
    assert cpu.startswith("spec.resources[cpu]: Invalid value: \"two\": not a quantity (quantity 'two'")
    assert memory == 'spec.resources[memory]: Invalid value: "-1Gi": must not be negative'
    assert rs({"resources": ["cpu"]}) == [
        'spec.resources: Invalid value: ["cpu"]: must map resource names to quantities'
    ]


def test_the_consumer_cluster_id_is_immutable() -> None:
    old = {"consumerClusterID": CLUSTER_ID}
    assert rs(old, old, "UPDATE") == []
    [problem] = rs({"consumerClusterID": "other"}, old, "UPDATE")
    assert f"consumerClusterID is immutable (it was {CLUSTER_ID})" in problem


def test_responses_echo_the_uid_and_carry_every_problem() -> None:
    request = review("CREATE", {}, kind="ForeignCluster")
    assert response(request, []) == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": request["uid"], "allowed": True},
    }
    denied = response(request, ["a: bad", "b: worse"])["response"]
    assert denied["allowed"] is False
    assert denied["status"] == {
        "status": "Failure",
        "code": 422,
        "reason": "Invalid",
        "message": "ForeignCluster milan is invalid: a: bad; b: worse",
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "not a JSON object"),
        (
            {"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"},
            "expected an admission.k8s.io/v1",
        ),
        (
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}},
            "no request with a uid",
        ),
        (
            {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "request": {"uid": "u", "object": []},
            },
            "request.object is not a JSON object",
        ),
        (
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": 7}},
            "no request with a uid",
        ),
        (b"{", "not JSON"),
        (b"[" * 200 + b"]" * 200, "nests deeper than 100 levels"),
        (b"[" * 100_000 + b"]" * 100_000, "nests deeper than 100 levels"),
    ],
    ids=["list", "v1beta1", "no-uid", "object-list", "uid-number", "not-json", "deep", "very-deep"],
)
def test_bodies_that_are_not_reviews_are_refused(body: Any, message: str) -> None:
    with pytest.raises(ReviewError, match=message):
        parse_review(body if isinstance(body, bytes) else json.dumps(body).encode())
