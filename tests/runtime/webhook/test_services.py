"""Services in twin namespaces, as a hostile consumer writes them: narrowed to what the provider allows,
and never claiming external IPs."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import pytest

from runtime.api.objects import JSON
from runtime.forge.services import ServiceType, converted
from runtime.webhook.review import response
from runtime.webhook.services import service_mutator


def service(**spec: Any) -> JSON:
    return {
        "metadata": {"name": "web", "namespace": "shop-rome"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}], **spec},
    }


def review(obj: JSON, operation: str = "CREATE") -> JSON:
    return {
        "uid": str(uuid.uuid4()),
        "kind": {"group": "", "version": "v1", "kind": "Service"},
        "operation": operation,
        "namespace": obj["metadata"]["namespace"],
        "object": obj,
    }


def patched_spec(widest: ServiceType, obj: JSON) -> JSON:
    mutation = service_mutator(widest)(review(obj))
    assert not mutation.problems
    spec = dict(obj["spec"])
    for operation in mutation.patch:
        assert operation["path"] == "/spec"
        spec = operation["value"]
    return spec


@pytest.mark.parametrize(
    ("widest", "asked", "kept"),
    [
        ("ClusterIP", "LoadBalancer", "ClusterIP"),
        ("ClusterIP", "NodePort", "ClusterIP"),
        ("ClusterIP", "ClusterIP", "ClusterIP"),
        ("NodePort", "LoadBalancer", "NodePort"),
        ("NodePort", "NodePort", "NodePort"),
        ("LoadBalancer", "LoadBalancer", "LoadBalancer"),
    ],
    ids=[
        "load-balancer-to-cluster-ip",
        "node-port-to-cluster-ip",
        "cluster-ip-kept",
        "load-balancer-to-node-port",
        "node-port-allowed",
        "load-balancer-allowed",
    ],
)
def test_a_service_is_narrowed_to_the_widest_type_the_provider_allows(
    widest: ServiceType, asked: str, kept: str
) -> None:
    obj = service(
        type=asked,
        ports=[{"port": 80, "targetPort": 8080, "nodePort": 30080}],
        externalTrafficPolicy="Local",
        loadBalancerSourceRanges=["0.0.0.0/0"],
    )
    spec = patched_spec(widest, obj)
    assert spec["type"] == kept and spec["selector"] == {"app": "web"}
    if asked == kept:
        assert spec == obj["spec"]
        return
    assert "loadBalancerSourceRanges" not in spec
    if kept == "ClusterIP":
        assert [port.get("nodePort") for port in spec["ports"]] == [None]
        assert "externalTrafficPolicy" not in spec


def test_narrow_enough_services_are_left_as_they_are() -> None:
    spec = {"type": "ExternalName", "externalName": "db.example.com"}
    assert converted(spec, widest="ClusterIP") is spec
    assert service_mutator("ClusterIP")(review(service())).patch == []


@pytest.mark.parametrize("kind", ["ClusterIP", "NodePort", "LoadBalancer"])
def test_a_service_claiming_external_ips_is_refused(kind: str) -> None:
    obj = service(type=kind, externalIPs=["10.96.0.1"])
    mutation = service_mutator("LoadBalancer")(review(obj, "UPDATE"))
    assert mutation.patch == [] and len(mutation.problems) == 1
    answer = response(review(obj), mutation.problems)["response"]
    assert answer["allowed"] is False
    assert "spec.externalIPs: Forbidden" in answer["status"]["message"]
    assert "CVE-2020-8554" in answer["status"]["message"]


def test_the_narrowed_spec_travels_as_one_json_patch() -> None:
    obj = service(type="NodePort")
    answer = response(review(obj), [], patch=service_mutator("ClusterIP")(review(obj)).patch)["response"]
    assert answer["patchType"] == "JSONPatch"
    (operation,) = json.loads(base64.b64decode(answer["patch"]))
    assert operation["op"] == "add" and operation["value"]["type"] == "ClusterIP"
