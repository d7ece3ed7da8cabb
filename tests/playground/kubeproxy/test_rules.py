"""kube-proxy's ruleset, rendered from Services and EndpointSlices (pure)."""

from __future__ import annotations

from typing import Any

from playground.kubeproxy.rules import ruleset, service_ports, udp_endpoints
from runtime.api.objects import JSON


def service(
    name: str, ip: str, *, kind: str = "ClusterIP", node_port: int | None = None, **spec: Any
) -> JSON:
    port: JSON = {"name": "http", "port": 80, "protocol": "TCP"}
    if node_port:
        port["nodePort"] = node_port
    return {
        "metadata": {"namespace": "ns", "name": name},
        "spec": {"type": kind, "clusterIP": ip, "ports": [port], **spec},
    }


def endpoint_slice(service_name: str, *endpoints: tuple[str, str, bool | None]) -> JSON:
    return {
        "metadata": {
            "namespace": "ns",
            "name": f"{service_name}-x",
            "labels": {"kubernetes.io/service-name": service_name},
        },
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": [
            {
                "addresses": [address],
                "nodeName": node,
                **({} if ready is None else {"conditions": {"ready": ready}}),
            }
            for address, node, ready in endpoints
        ],
    }


def test_ready_endpoints_of_the_port_are_the_services_backends() -> None:
    (port,) = service_ports(
        [service("web", "10.96.0.50")],
        [
            endpoint_slice(
                "web", ("10.244.1.5", "n1", True), ("10.244.2.5", "n2", None), ("10.244.2.6", "n2", False)
            )
        ],
    )
    assert port.key == "ns/web/tcp/http"
    assert [(e.address, e.port) for e in port.endpoints] == [("10.244.1.5", 8080), ("10.244.2.5", 8080)]


def test_headless_and_external_name_services_are_not_proxied() -> None:
    services = [service("headless", "None"), service("ext", "", kind="ExternalName")]
    assert service_ports(services, []) == []


def test_cluster_ip_and_node_port_lead_to_a_random_endpoint_with_masquerade_where_kube_proxy_does() -> None:
    script = ruleset(
        [service("web", "10.96.0.50", kind="NodePort", node_port=30080)],
        [endpoint_slice("web", ("10.244.1.5", "n1", True), ("10.244.2.5", "n2", True))],
        node="n1",
        cluster_cidr="10.244.0.0/16",
    )
    assert script.startswith("table ip kube-proxy\ndelete table ip kube-proxy\n")
    assert "10.96.0.50 . tcp . 80 : goto service-" in script
    assert "tcp . 30080 : goto external-" in script
    assert "numgen random mod 2 vmap" in script
    assert "ip saddr != 10.244.0.0/16 jump mark-for-masquerade" in script
    assert "meta l4proto tcp dnat to 10.244.1.5:8080" in script
    assert "ip saddr 10.244.2.5 jump mark-for-masquerade" in script  # hairpin


def test_a_service_without_endpoints_is_rejected() -> None:
    script = ruleset(
        [service("empty", "10.96.0.51", kind="NodePort", node_port=30081)],
        [],
        node="n1",
        cluster_cidr="10.244.0.0/16",
    )
    assert "10.96.0.51 . tcp . 80 : goto reject-chain" in script
    assert "tcp . 30081 : goto reject-chain" in script
    assert "goto service-" not in script


def test_local_traffic_policies_keep_to_this_nodes_endpoints() -> None:
    slices = [endpoint_slice("web", ("10.244.1.5", "n1", True), ("10.244.2.5", "n2", True))]
    local = service(
        "web",
        "10.96.0.50",
        kind="NodePort",
        node_port=30080,
        externalTrafficPolicy="Local",
        internalTrafficPolicy="Local",
    )
    on_n1 = ruleset([local], slices, node="n1", cluster_cidr="10.244.0.0/16")
    assert "numgen" not in on_n1 and "dnat to 10.244.1.5:8080" in on_n1
    on_n3 = ruleset([local], slices, node="n3", cluster_cidr="10.244.0.0/16")
    assert "tcp . 30080 : goto reject-chain" in on_n3 and "10.96.0.50 . tcp . 80 : goto reject-chain" in on_n3


def test_the_nodes_own_traffic_to_a_cluster_ip_is_checked_after_it_is_translated() -> None:
    """Host-network clients (a fabric agent, say) reach ClusterIPs: as kube-proxy does, the check that refuses
    unknown ClusterIPs runs on the output hook after DNAT (`filter-output-post-dnat`), never before it."""
    script = ruleset([], [], node="n1", cluster_cidr="10.244.0.0/16")
    chains = script.split("chain ")
    output = next(chain for chain in chains if chain.startswith("filter-output {"))
    post_dnat = next(chain for chain in chains if chain.startswith("filter-output-post-dnat {"))
    assert "cluster-ips-check" not in output
    assert "priority -90;" in post_dnat and "jump cluster-ips-check" in post_dnat


def test_the_addresses_behind_udp_ports_are_known_so_their_flows_can_be_forgotten_when_they_go() -> None:
    udp = service("wg", "10.96.0.60", kind="NodePort", node_port=31000)
    udp["spec"]["ports"][0]["protocol"] = "UDP"
    udp_slice = endpoint_slice("wg", ("10.244.0.9", "n1", True))
    udp_slice["ports"][0]["protocol"] = "UDP"
    tcp_slice = endpoint_slice("web", ("10.244.0.5", "n1", True))
    ports = service_ports([udp, service("web", "10.96.0.61")], [udp_slice, tcp_slice])
    assert udp_endpoints(ports) == {"10.244.0.9"}
