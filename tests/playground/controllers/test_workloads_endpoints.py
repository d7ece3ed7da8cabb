"""Endpoint shapes: ports from targetPort, conditions, slices that keep their endpoints, legacy subsets."""

from __future__ import annotations

import pytest

from playground.controllers.workloads import endpoints
from runtime.api.objects import JSON

SERVICE: JSON = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web", "namespace": "ns", "uid": "svc-uid", "labels": {"team": "a"}},
    "spec": {
        "selector": {"app": "web"},
        "ipFamilies": ["IPv4"],
        "ports": [
            {"name": "http", "port": 80, "targetPort": "http"},
            {"name": "metrics", "port": 9090, "targetPort": 9100},
        ],
    },
}
NODES = {"n1": {"metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z1"}}}}


def pod(name: str, ip: str | None, *, ready: bool = True, deleting: bool = False, node: str = "n1") -> JSON:
    meta: JSON = {"name": name, "namespace": "ns", "uid": f"{name}-uid", "labels": {"app": "web"}}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    status: JSON = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    if ip:
        status["podIP"] = ip
        status["podIPs"] = [{"ip": ip}]
    return {
        "metadata": meta,
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "c",
                    "image": "x",
                    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                }
            ],
        },
        "status": status,
    }


@pytest.mark.parametrize(
    ("service_port", "expected"),
    [
        ({"port": 80, "targetPort": 8000}, 8000),
        ({"port": 80, "targetPort": "http"}, 8080),
        ({"port": 80, "targetPort": "http", "protocol": "UDP"}, None),
        ({"port": 80, "targetPort": "grpc"}, None),
        ({"port": 80}, 80),
    ],
)
def test_find_port(service_port: JSON, expected: int | None) -> None:
    assert endpoints.find_port(pod("p", "10.0.0.1"), service_port) == expected


def test_endpoint_conditions() -> None:
    def conditions(p: JSON, service: JSON = SERVICE) -> tuple[bool, bool, bool]:
        c = endpoints.slice_endpoint(p, service, "IPv4", node=NODES["n1"])["conditions"]
        return c["ready"], c["serving"], c["terminating"]

    assert conditions(pod("a", "10.0.0.1")) == (True, True, False)
    assert conditions(pod("a", "10.0.0.1", ready=False)) == (False, False, False)
    assert conditions(pod("a", "10.0.0.1", deleting=True)) == (False, True, True)
    publishing = {**SERVICE, "spec": {**SERVICE["spec"], "publishNotReadyAddresses": True}}
    assert conditions(pod("a", "10.0.0.1", ready=False), publishing) == (True, False, False)


def test_desired_endpoints_skip_pods_without_ip_or_node_and_group_by_ports() -> None:
    pods = [pod("a", "10.0.0.1"), pod("b", None), pod("c", "10.0.0.3", node="gone"), pod("d", "fd00::4")]
    desired = endpoints.desired_endpoints(SERVICE, pods, nodes=NODES)
    [(key, group)] = desired.items()
    assert key == ("IPv4", (("http", 8080, "TCP", ""), ("metrics", 9100, "TCP", "")))
    [(endpoint, ports)] = group.values()
    assert endpoint["addresses"] == ["10.0.0.1"] and endpoint["zone"] == "z1" and endpoint["nodeName"] == "n1"
    assert ports == [
        {"name": "http", "port": 8080, "protocol": "TCP"},
        {"name": "metrics", "port": 9100, "protocol": "TCP"},
    ]


def existing(name: str, *pod_names: str) -> JSON:
    desired = endpoints.desired_endpoints(
        SERVICE, [pod(p, f"10.0.0.{int(p[1:]) + 1}") for p in pod_names], nodes=NODES
    )
    [group] = desired.values()
    body = endpoints.new_slice(SERVICE, "IPv4", next(iter(group.values()))[1], [e for e, _ in group.values()])
    body["metadata"] = {**body["metadata"], "name": name, "resourceVersion": "1"}
    return body


def names_in(slice_: JSON) -> list[str]:
    return [e["targetRef"]["name"] for e in slice_["endpoints"]]


def test_plan_keeps_endpoints_where_they_are_and_fills_free_room() -> None:
    current = [existing("web-a", "p0", "p1"), existing("web-b", "p2")]
    pods = [pod(p, f"10.0.0.{i + 1}") for i, p in enumerate(["p0", "p1", "p2", "p3", "p4", "p5"])]
    plan = endpoints.plan_slices(
        SERVICE, endpoints.desired_endpoints(SERVICE, pods, nodes=NODES), current, max_per_slice=3
    )
    assert [(s["metadata"]["name"], names_in(s)) for s in plan.update] == [
        ("web-a", ["p0", "p1", "p3"]),
        ("web-b", ["p2", "p4", "p5"]),
    ]
    assert not plan.create and not plan.delete
    unchanged = endpoints.plan_slices(
        SERVICE, endpoints.desired_endpoints(SERVICE, pods[:3], nodes=NODES), current, max_per_slice=3
    )
    assert not unchanged.update and not unchanged.create and not unchanged.delete


def test_plan_creates_chunks_deletes_empty_slices_and_keeps_one_placeholder() -> None:
    pods = [pod(f"p{i}", f"10.0.0.{i + 1}") for i in range(5)]
    plan = endpoints.plan_slices(
        SERVICE, endpoints.desired_endpoints(SERVICE, pods, nodes=NODES), [], max_per_slice=2
    )
    assert [len(s["endpoints"]) for s in plan.create] == [2, 2, 1]
    assert plan.create[0]["metadata"]["generateName"] == "web-"
    assert plan.create[0]["metadata"]["ownerReferences"][0]["uid"] == "svc-uid"
    empty = endpoints.plan_slices(
        SERVICE, {}, [existing("web-a", "p0"), existing("web-b", "p1")], max_per_slice=2
    )
    assert [s["metadata"]["name"] for s in empty.delete] == ["web-a", "web-b"]
    [placeholder] = empty.create
    assert (placeholder["addressType"], placeholder["endpoints"], placeholder["ports"]) == ("IPv4", [], [])
    kept = endpoints.plan_slices(
        SERVICE,
        {},
        [{**placeholder, "metadata": {**placeholder["metadata"], "name": "web-p"}}],
        max_per_slice=2,
    )
    assert not kept.create and not kept.delete and not kept.update


def test_legacy_subsets_split_ready_and_not_ready_and_drop_terminating() -> None:
    pods = [pod("b", "10.0.0.2", ready=False), pod("a", "10.0.0.1"), pod("gone", "10.0.0.3", deleting=True)]
    [subset] = endpoints.endpoint_subsets(SERVICE, pods)
    assert [a["ip"] for a in subset["addresses"]] == ["10.0.0.1"]
    assert [a["ip"] for a in subset["notReadyAddresses"]] == ["10.0.0.2"]
    assert subset["ports"] == [
        {"name": "http", "port": 8080, "protocol": "TCP"},
        {"name": "metrics", "port": 9100, "protocol": "TCP"},
    ]
    assert subset["addresses"][0] == {
        "ip": "10.0.0.1",
        "nodeName": "n1",
        "targetRef": {"kind": "Pod", "namespace": "ns", "name": "a", "uid": "a-uid"},
    }


def test_legacy_subsets_group_addresses_by_the_ports_they_serve() -> None:
    other = pod("other", "10.0.0.9")
    other["spec"]["containers"][0]["ports"] = []
    subsets = endpoints.endpoint_subsets(SERVICE, [pod("a", "10.0.0.1"), other])
    assert [([a["ip"] for a in s["addresses"]], [p["port"] for p in s["ports"]]) for s in subsets] == [
        (["10.0.0.1"], [8080]),
        (["10.0.0.1", "10.0.0.9"], [9100]),
    ]
    headless = {**SERVICE, "spec": {"selector": {"app": "web"}, "clusterIP": "None"}}
    assert endpoints.endpoint_subsets(headless, [pod("a", "10.0.0.1")]) == [
        {
            "addresses": [
                {
                    "ip": "10.0.0.1",
                    "nodeName": "n1",
                    "targetRef": {"kind": "Pod", "namespace": "ns", "name": "a", "uid": "a-uid"},
                }
            ]
        }
    ]
    assert endpoints.endpoints_labels(headless) == {
        "team": "a",
        "endpointslice.kubernetes.io/skip-mirror": "true",
        "service.kubernetes.io/headless": "",
    }
