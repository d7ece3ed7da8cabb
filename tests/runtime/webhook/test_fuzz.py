"""The webhook's AdmissionReview handling under any input: never a 500, never a crash.

Hypothesis throws arbitrary JSON, malformed reviews, reviews of the right shape with
objects of any shape (the wrong kinds, lists where objects go, huge numbers), deep nesting
and bodies that are not JSON at every route, over HTTP as the API server would. Every
answer is a well-formed AdmissionReview response carrying the request's uid (allowed, or
denied with a message), or a 400 naming what is wrong with the body.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import aiohttp
from aiohttp.test_utils import TestServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.core import Store
from runtime.forge import podsecurity
from runtime.webhook.app import ReviewMetrics, application, mutators, validators
from runtime.webhook.shadowpods import ShadowPodAdmission

TWIN = "shop-rome"

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
#: any JSON value, objects and lists nested a few levels
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=30,
)
#: the field names the handlers read, so that generated objects reach the checks instead of stopping early
KEYS = [
    "metadata",
    "name",
    "namespace",
    "labels",
    "annotations",
    "deletionTimestamp",
    "ownerReferences",
    "spec",
    "pod",
    "containers",
    "initContainers",
    "ephemeralContainers",
    "securityContext",
    "resources",
    "requests",
    "limits",
    "cpu",
    "memory",
    "pods",
    "volumes",
    "hostPath",
    "hostNetwork",
    "capabilities",
    "add",
    "drop",
    "sysctls",
    "ports",
    "hostPort",
    "seccompProfile",
    "type",
    "clusterID",
    "clusterName",
    "authURL",
    "tokenSecretRef",
    "consumerClusterID",
    "namespaceMappingStrategy",
    "remoteNamespaceName",
    "clusterSelector",
    "nodeSelectorTerms",
    "matchExpressions",
    "key",
    "operator",
    "values",
    "tolerations",
    "affinity",
    "livenessProbe",
    "httpGet",
    "host",
    "overhead",
]
shaped = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=6),
    max_leaves=40,
)
operations = st.sampled_from(["CREATE", "UPDATE", "DELETE", "CONNECT"]) | values
#: objects as the API server sends them (metadata and spec objects), with anything inside
objects = st.fixed_dictionaries(
    {},
    optional={
        "metadata": st.dictionaries(st.sampled_from(KEYS), shaped, max_size=4),
        "spec": st.dictionaries(st.sampled_from(KEYS), shaped, max_size=6),
    },
)


@st.composite
def reviews(draw: st.DrawFn) -> JSON:
    """AdmissionReviews of the right envelope with a request of any content."""
    request: JSON = {"uid": draw(st.text(min_size=1, max_size=36) | st.uuids().map(str))}
    for key, strategy in (
        ("operation", operations),
        ("namespace", st.sampled_from([TWIN, "default", "liqo-tenant-rome"]) | values),
        ("name", st.text(max_size=20) | values),
        ("object", objects | shaped | values),
        ("oldObject", objects | shaped | values),
        ("dryRun", st.booleans() | values),
        ("kind", st.fixed_dictionaries({"kind": st.text(max_size=12)}) | values),
    ):
        if draw(st.booleans()):
            request[key] = draw(strategy)
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def nested(depth: int) -> JSON:
    """A review whose object nests `depth` levels (lists inside maps inside lists...)."""
    review: JSON = json.loads(_deep(depth))
    return review


def app() -> aiohttp.web.Application:
    """The webhook's routes, with the ShadowPod admission over caches of one consumer's twin namespace."""
    namespaces, quotas = Store(), Store()
    namespaces.upsert(
        {
            "metadata": {
                "name": TWIN,
                "labels": {c.LABEL_ORIGIN_CLUSTER_ID: "rome", **podsecurity.namespace_labels("baseline")},
                "annotations": {c.ANNOTATION_NAMESPACE_MAP: "liqo-tenant-rome/milan"},
            }
        }
    )
    quotas.upsert(
        {
            "metadata": {"name": "rome", "namespace": "liqo-tenant-rome"},
            "spec": {"limits": {"cpu": "2", "pods": "9"}},
        }
    )
    offloading = {"metadata": {"name": "offloading", "namespace": TWIN}, "spec": {}}
    admission = ShadowPodAdmission(namespaces=namespaces, quotas=quotas)
    return application(
        validators(namespace="liqo", shadow_pods=admission),
        mutating=mutators(offloadings=lambda namespace: offloading, widest_service="ClusterIP"),
        metrics=ReviewMetrics(CollectorRegistry()),
    )


ROUTES = [
    "/validate/foreignclusters",
    "/validate/resourceslices",
    "/validate/namespaceoffloadings",
    "/validate/shadowpods",
    "/validate/gatewayservers",
    "/mutate/pods",
    "/mutate/services",
]


async def _post_everywhere(body: bytes) -> list[tuple[str, int, Any]]:
    server = TestServer(app())
    await server.start_server()
    try:
        async with aiohttp.ClientSession() as http:
            answers = []
            for route in ROUTES:
                async with http.post(server.make_url(route), data=body) as answer:
                    text = await answer.text()
                    answers.append((route, answer.status, json.loads(text) if text else None))
            return answers
    finally:
        await server.close()


def answered_well(body: bytes, uid: Any = None) -> None:
    for route, status, answer in asyncio.run(_post_everywhere(body)):
        assert status in (200, 400), f"{route} answered {status}: {answer}"
        if status == 400:
            assert isinstance(answer, dict) and answer.get("error", "").startswith(route), answer
            continue
        assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview", answer
        response = answer["response"]
        assert response["uid"] == uid and isinstance(response["allowed"], bool), (route, response)
        if not response["allowed"]:
            assert response["status"]["code"] == 422 and response["status"]["message"], (route, response)


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(values)
def test_any_json_body_is_a_review_or_a_400(body: Any) -> None:
    answered_well(json.dumps(body).encode(), uid=_uid(body))


@FUZZ
@given(reviews())
def test_reviews_holding_anything_are_answered(review: JSON) -> None:
    answered_well(json.dumps(review).encode(), uid=review["request"]["uid"])


@FUZZ
@given(st.binary(max_size=200))
def test_bodies_that_are_not_json_get_a_400(body: bytes) -> None:
    answered_well(body, uid=_uid_of_bytes(body))


def test_deep_nesting_huge_numbers_and_odd_floats_are_answered() -> None:
    for depth in (50, 500, 5000, 100_000):
        answered_well(_deep(depth), uid="u")
    huge = nested(1)
    huge["request"]["object"] = {
        "spec": {"pod": {"containers": [{"resources": {"requests": {"cpu": 10**4000}}}]}}
    }
    answered_well(json.dumps(huge).encode(), uid="u")
    answered_well(
        b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u", "object": {"spec": NaN}}}',
        uid="u",
    )
    answered_well(
        b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u", "operation": "CREATE", "object": 1e400}}',
        uid="u",
    )


def _deep(depth: int) -> bytes:
    """A review nesting `depth` levels, written without recursion (json.dumps would hit the recursion limit)."""
    opening = "".join("[" if level % 2 else '{"spec": ' for level in range(depth))
    closing = "".join("]" if level % 2 else "}" for level in reversed(range(depth)))
    return (
        '{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u", '
        f'"operation": "CREATE", "namespace": "{TWIN}", "object": {opening}"x"{closing}}}}}'
    ).encode()


def _uid(body: Any) -> Any:
    if isinstance(body, dict) and isinstance(body.get("request"), dict):
        return body["request"].get("uid")
    return None


def _uid_of_bytes(body: bytes) -> Any:
    try:
        return _uid(json.loads(body))
    except ValueError:
        return None


def test_a_review_id_is_kept_whatever_it_is() -> None:
    uid = str(uuid.uuid4())
    answered_well(
        json.dumps(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": uid}}
        ).encode(),
        uid=uid,
    )
