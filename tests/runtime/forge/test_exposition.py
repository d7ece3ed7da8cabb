"""Reflected Services, EndpointSlices and Ingresses as pure functions."""

from __future__ import annotations

import copy

import pytest

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.forge import endpointslices, ingresses, services
from runtime.forge.cidrs import Network

ORIGIN = "rome-id"


def service(kind: str = "NodePort", **annotations: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "demo", "annotations": dict(annotations)},
        "spec": {
            "type": kind,
            "selector": {"app": "web"},
            "clusterIP": "10.96.0.10",
            "clusterIPs": ["10.96.0.10"],
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "sessionAffinity": "None",
            "externalTrafficPolicy": "Cluster",
            "internalTrafficPolicy": "Cluster",
            "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080, "nodePort": 30080}],
        },
    }


def test_a_service_copy_leaves_addresses_and_node_ports_to_the_provider() -> None:
    spec = services.remote_service(service(), namespace="demo-rome", origin_cluster_id=ORIGIN)["spec"]
    assert spec == {
        "type": "NodePort",
        "selector": {"app": "web"},
        "ipFamilyPolicy": "SingleStack",
        "sessionAffinity": "None",
        "externalTrafficPolicy": "Cluster",
        "internalTrafficPolicy": "Cluster",
        "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080}],
    }


def test_force_remote_node_port_carries_the_node_ports() -> None:
    local = service(**{c.ANNOTATION_FORCE_REMOTE_NODE_PORT: "true"})
    spec = services.remote_service(local, namespace="demo-rome", origin_cluster_id=ORIGIN)["spec"]
    assert spec["ports"][0]["nodePort"] == 30080


def test_a_headless_service_stays_headless() -> None:
    local = service("ClusterIP")
    local["spec"]["clusterIP"] = "None"
    assert (
        services.remote_service(local, namespace="n", origin_cluster_id=ORIGIN)["spec"]["clusterIP"] == "None"
    )


def provider_copy(desired: JSON) -> JSON:
    """The copy as the provider stores it: its own addresses and node ports allocated."""
    current = copy.deepcopy(desired)
    current["metadata"].update(uid="r1", resourceVersion="5")
    current["spec"].update(clusterIP="10.100.0.7", clusterIPs=["10.100.0.7"], ipFamilies=["IPv4"])
    for port in current["spec"]["ports"]:
        port.setdefault("nodePort", 31999)
    return current


def test_what_the_provider_allocated_is_no_difference_and_is_kept_on_update() -> None:
    desired = services.remote_service(service(), namespace="demo-rome", origin_cluster_id=ORIGIN)
    current = provider_copy(desired)
    assert not services.service_differs(current, desired)
    current["spec"]["selector"] = {"app": "other"}
    assert services.service_differs(current, desired)
    body = services.service_update(current, desired)
    assert body["spec"]["selector"] == {"app": "web"}
    assert (body["spec"]["clusterIP"], body["spec"]["ports"][0]["nodePort"]) == ("10.100.0.7", 31999)
    assert body["metadata"]["resourceVersion"] == "5"


def test_a_service_turned_cluster_ip_drops_the_node_ports_it_had() -> None:
    desired = services.remote_service(service("ClusterIP"), namespace="n", origin_cluster_id=ORIGIN)
    del desired["spec"]["externalTrafficPolicy"]
    current = provider_copy(services.remote_service(service(), namespace="n", origin_cluster_id=ORIGIN))
    assert services.service_differs(current, desired)
    assert "nodePort" not in services.service_update(current, desired)["spec"]["ports"][0]


def endpoint_slice(address_type: str = "IPv4") -> JSON:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": "web-abc12",
            "namespace": "demo",
            "labels": {
                c.LABEL_SERVICE_NAME: "web",
                c.LABEL_ENDPOINTSLICE_MANAGED_BY: "endpointslice-controller.k8s.io",
            },
        },
        "addressType": address_type,
        "endpoints": [
            {
                "addresses": ["10.244.0.5"],
                "conditions": {"ready": True, "serving": True, "terminating": False},
                "nodeName": "rome-worker",
                "targetRef": {"kind": "Pod", "name": "web-1", "namespace": "demo", "uid": "p1"},
                "zone": "a",
            },
            {"addresses": ["10.244.9.9"], "conditions": {"ready": True}, "nodeName": "liqo-milan"},
            {"addresses": ["10.250.0.3"], "conditions": {"ready": False}, "nodeName": "liqo-naples"},
        ],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }


def test_a_shadow_endpoint_slice_carries_what_the_provider_cannot_see_translated() -> None:
    shadow = endpointslices.shadow_endpoint_slice(
        endpoint_slice(),
        namespace="demo-rome",
        origin_cluster_id=ORIGIN,
        excluded_nodes={"liqo-milan"},
        translate=lambda address: "192.168." + address.split(".", 2)[2],
    )
    assert shadow["kind"] == "ShadowEndpointSlice"
    assert (
        shadow["metadata"]["labels"][c.LABEL_ENDPOINTSLICE_MANAGED_BY]
        == c.ENDPOINTSLICE_MANAGED_BY_REFLECTION
    )
    assert shadow["metadata"]["labels"][c.LABEL_SERVICE_NAME] == "web"
    assert shadow["spec"]["template"] == {
        "addressType": "IPv4",
        "endpoints": [
            {
                "addresses": ["192.168.0.5"],
                "conditions": {"ready": True, "serving": True, "terminating": False},
                "zone": "a",
            },
            {"addresses": ["192.168.0.3"], "conditions": {"ready": False}},
        ],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }


def test_fqdn_endpoints_are_not_translated() -> None:
    local = endpoint_slice("FQDN")
    local["endpoints"] = [{"addresses": ["db.example.com"]}]
    shadow = endpointslices.shadow_endpoint_slice(
        local, namespace="n", origin_cluster_id=ORIGIN, excluded_nodes=(), translate=lambda a: "changed"
    )
    assert shadow["spec"]["template"]["endpoints"] == [{"addresses": ["db.example.com"]}]


def test_the_providers_endpoint_slice_is_owned_by_its_shadow_and_managed_by_reflection() -> None:
    shadow = endpointslices.shadow_endpoint_slice(
        endpoint_slice(), namespace="demo-rome", origin_cluster_id=ORIGIN, excluded_nodes=(), translate=str
    )
    # whatever a consumer writes, the managed-by labels are the provider's
    shadow["metadata"]["labels"][c.LABEL_ENDPOINTSLICE_MANAGED_BY] = "endpointslice-controller.k8s.io"
    shadow["metadata"].update(uid="s1")
    made = endpointslices.endpoint_slice(shadow, allowed=[Network("10.244.0.0/16"), Network("10.250.0.0/16")])
    assert (
        made["metadata"]["labels"][c.LABEL_ENDPOINTSLICE_MANAGED_BY] == c.ENDPOINTSLICE_MANAGED_BY_REFLECTION
    )
    assert made["metadata"]["labels"][c.LABEL_REFLECTION_MANAGED_BY] == c.MANAGED_BY_SHADOWENDPOINTSLICE
    assert made["metadata"]["labels"][c.LABEL_SERVICE_NAME] == "web"
    assert made["metadata"]["ownerReferences"][0]["uid"] == "s1"
    assert [e["addresses"] for e in made["endpoints"]] == [["10.244.0.5"], ["10.244.9.9"], ["10.250.0.3"]]
    edited = copy.deepcopy(made)
    assert not endpointslices.endpoint_slice_differs(edited, made)
    edited["endpoints"].pop()
    assert endpointslices.endpoint_slice_differs(edited, made)


def hostile_shadow(address_type: str, *addresses: object) -> JSON:
    return {
        "metadata": {"name": "hostile", "namespace": "demo-rome", "uid": "s1"},
        "spec": {
            "template": {
                "addressType": address_type,
                "endpoints": [{"addresses": [a], "conditions": {"ready": True}} for a in addresses],
            }
        },
    }


def test_the_providers_endpoint_slice_keeps_only_the_addresses_of_the_consumers_networks() -> None:
    """CVE-2021-25740: a consumer's ShadowEndpointSlice naming the provider's API server, a node, a metadata service,
    loopback, another tenant's pod or garbage leaves each of those out; its own pods' addresses stay."""
    allowed = [Network("10.0.0.0/16")]
    foreign = [
        "10.96.0.1",  # the provider's API server Service
        "172.18.0.2",  # a node
        "169.254.169.254",
        "127.0.0.1",
        "10.1.0.7",  # another tenant's network
        "10.0.0.07",
        "10.0.0.7 ",
        "fd00::1",
        12,
    ]
    shadow = hostile_shadow("IPv4", "10.0.0.7", *foreign, "10.0.255.254")
    made = endpointslices.endpoint_slice(shadow, allowed=allowed)
    assert [e["addresses"] for e in made["endpoints"]] == [["10.0.0.7"], ["10.0.255.254"]]
    assert endpointslices.foreign_addresses(shadow, allowed=allowed) == [str(a) for a in foreign]


@pytest.mark.parametrize("address_type", ["IPv6", "FQDN"])
def test_a_shadow_slice_that_is_not_ipv4_lists_nothing_on_the_provider(address_type: str) -> None:
    shadow = hostile_shadow(address_type, "10.0.0.7", "kubernetes.default.svc")
    allowed = [Network("10.0.0.0/16")]
    assert endpointslices.endpoint_slice(shadow, allowed=allowed)["endpoints"] == []
    assert endpointslices.foreign_addresses(shadow, allowed=allowed) == ["10.0.0.7", "kubernetes.default.svc"]


def test_without_networks_given_no_address_is_listed() -> None:
    shadow = hostile_shadow("IPv4", "10.0.0.7")
    assert endpointslices.endpoint_slice(shadow, allowed=[])["endpoints"] == []


def ingress(class_name: str | None, annotation: str | None = None) -> JSON:
    spec: JSON = {"rules": [{"host": "web.example", "http": {"paths": []}}]}
    if class_name:
        spec["ingressClassName"] = class_name
    annotations = {"kubernetes.io/ingress.class": annotation} if annotation else {}
    return {"metadata": {"name": "web", "namespace": "demo", "annotations": annotations}, "spec": spec}


@pytest.mark.parametrize(
    ("local", "wanted_class", "wanted_annotation"),
    [
        (ingress("nginx"), "haproxy", None),
        (ingress("traefik"), None, None),
        (ingress(None, annotation="nginx"), None, "haproxy"),
        (ingress(None, annotation="other"), None, None),
    ],
    ids=["mapped", "cleared", "legacy-mapped", "legacy-cleared"],
)
def test_an_ingress_class_is_mapped_or_cleared(
    local: JSON, wanted_class: str | None, wanted_annotation: str | None
) -> None:
    copy_ = ingresses.remote_ingress(
        local, namespace="n", origin_cluster_id=ORIGIN, classes={"nginx": "haproxy"}
    )
    assert copy_["spec"].get("ingressClassName") == wanted_class
    assert copy_["metadata"]["annotations"].get("kubernetes.io/ingress.class") == wanted_annotation
    assert copy_["spec"]["rules"] == local["spec"]["rules"]
