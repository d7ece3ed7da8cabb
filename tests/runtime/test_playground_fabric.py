"""The network fabric on real playground clusters: three clusters with the same pod CIDR, real packets.

rome (consumer) peers at once with milan (region north) and naples (region south); all use
kind's 10.244.0.0/16, so rome's IPAM maps each provider's pods to a network of its own and
each provider maps rome's. The peerings' gateways (process pods running wireguard-go in
their pods' network namespaces) bring the tunnels up and `kubectl get foreignclusters`
says NETWORKING Established, the Connections and the networking module the latency the
gateways measure through the tunnel; then, with the nginx and curl stand-ins doing real TCP:

1. a local pod on rome fetches from a pod offloaded to milan at the address rome reports
   for it (remapped), and through a rome Service selecting it; the same from naples;
2. a pod offloaded to milan fetches from a pod of rome at rome's address as milan maps it, and
   through a Service of the offloaded namespace (its copy on milan lists that address);
3. the gateway pod deleted on milan, then on rome: the tunnel comes back and traffic resumes;
4. unpeering milan removes the routes and masquerade bypass rules on both sides' nodes, the
   gateways, keys and networking objects of both sides; naples' tunnel stays.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import subprocess
from pathlib import Path

import pytest

from playground import liqo
from playground.network import names
from playground.testing import Playground
from runtime.api import constants as c
from runtime.api.crds import (
    CONFIGURATIONS,
    CONNECTIONS,
    FOREIGNCLUSTERS,
    GATEWAYCLIENTS,
    GATEWAYSERVERS,
    NAMESPACEOFFLOADINGS,
    NETWORKS,
    PUBLICKEYS,
)
from runtime.api.kinds import ENDPOINTSLICES, NAMESPACES, PODS, SECRETS, SERVICES
from runtime.api.objects import JSON
from runtime.core import Client
from runtime.fabric.routes import ROUTE_PROTOCOL
from runtime.forge.fabricrules import NODE_TABLE
from runtime.forge.ipam import translate
from runtime.forge.namespaceoffloading import namespace_offloading
from runtime.forge.networking import Cidrs
from runtime.operations.peering import unpeer
from tests.runtime.liqo_docs import MILAN_NETWORKED
from tests.runtime.test_playground_offloading import get, kubectl, region, three_regions, until

pytestmark = [pytest.mark.slow, pytest.mark.kubectl]

POD_CIDR = "10.244.0.0/16"
GATEWAYS = f"{c.LABEL_COMPONENT}=gateway"
#: curl pods run for one fetch before it counts as failed
FETCH_ATTEMPTS = 5
#: what a peering's networking leaves on each side, all gone after an unpeer
NETWORKING_KINDS = (CONFIGURATIONS, NETWORKS, PUBLICKEYS, CONNECTIONS, GATEWAYSERVERS, GATEWAYCLIENTS)


def pod(
    name: str,
    *,
    image: str,
    labels: dict[str, str] | None = None,
    url: str = "",
    node_selector: dict[str, str] | None = None,
) -> JSON:
    container: JSON = {"name": "main", "image": image}
    if url:
        container["args"] = ["-s", "--max-time", "10", url]
    spec: JSON = {"containers": [container], "restartPolicy": "Never"}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec}


async def running_ip(api: Client, namespace: str, name: str) -> str:
    async def check() -> str:
        found = await get(api, PODS, name, namespace=namespace)
        status = (found or {}).get("status") or {}
        return str(status.get("podIP") or "") if status.get("phase") == "Running" else ""

    return str(await until(check, f"{namespace}/{name} Running with an IP"))


async def fetch(
    api: Client,
    kubeconfig: Path,
    namespace: str,
    name: str,
    url: str,
    *,
    node_selector: dict[str, str] | None = None,
) -> str:
    """Run a curl pod fetching `url` to its end; its log, or AssertionError when curl failed every time.

    A client tries again, as on any cluster: kube-proxy programs a Service a moment after its
    endpoints are listed (a connection refused until then), so up to FETCH_ATTEMPTS pods are run,
    a second apart, `name`, `name-2`, ...
    """
    logs = []
    for attempt in range(1, FETCH_ATTEMPTS + 1):
        pod_name = name if attempt == 1 else f"{name}-{attempt}"
        body = pod(pod_name, image="curlimages/curl", url=url, node_selector=node_selector)
        await api.create(PODS, body, namespace=namespace)

        async def ended(pod_name: str = pod_name) -> str:
            found = await get(api, PODS, pod_name, namespace=namespace)
            phase = str(((found or {}).get("status") or {}).get("phase") or "")
            return phase if phase in ("Succeeded", "Failed") else ""

        phase = await until(ended, f"{namespace}/{pod_name} ended")
        log = await kubectl(kubeconfig, "logs", "-n", namespace, pod_name)
        if phase == "Succeeded":
            return log
        logs.append(log)
        await asyncio.sleep(1)
    raise AssertionError(f"{namespace}/{name} fetching {url} failed {FETCH_ATTEMPTS} times: {logs}")


async def offload(api: Client, namespace: str, terms: list[JSON]) -> None:
    await api.create(NAMESPACES, {"metadata": {"name": namespace}})
    await api.create(
        NAMESPACEOFFLOADINGS,
        namespace_offloading(
            namespace, pod_offloading_strategy=c.POD_OFFLOADING_REMOTE, cluster_selector_terms=terms
        ),
    )

    async def ready() -> bool:
        found = await get(api, NAMESPACEOFFLOADINGS, "offloading", namespace=namespace)
        return ((found or {}).get("status") or {}).get("offloadingPhase") == c.PHASE_READY

    await until(ready, f"rome: namespace {namespace} offloaded")


async def mapped(api: Client, name: str, namespace: str) -> str:
    found = await get(api, CONFIGURATIONS, name, namespace=namespace)
    return Cidrs.of(((found or {}).get("status") or {}).get("remote")).pod[0]


async def connection_latency(api: Client, namespace: str) -> str:
    connections = (await api.list(CONNECTIONS, namespace=namespace)).items
    return next(
        (str(((c.get("status") or {}).get("latency") or {}).get("value") or "") for c in connections), ""
    )


async def restart_gateway(api: Client, namespace: str) -> None:
    """Delete the gateway pod and wait for its successor to report the tunnel Connected again."""
    old = (await api.list(PODS, namespace=namespace, label_selector=GATEWAYS)).items
    assert len(old) == 1, old
    await api.delete(PODS, old[0]["metadata"]["name"], namespace=namespace)

    async def reconnected() -> bool:
        pods = (await api.list(PODS, namespace=namespace, label_selector=GATEWAYS)).items
        fresh = [p for p in pods if p["metadata"]["uid"] != old[0]["metadata"]["uid"]]
        if not fresh or (fresh[0].get("status") or {}).get("phase") != "Running":
            return False
        connections = (await api.list(CONNECTIONS, namespace=namespace)).items
        return any(
            (conn.get("status") or {}).get("value") == "Connected"
            and str((conn.get("status") or {}).get("latestHandshake") or "")
            >= str(fresh[0]["metadata"]["creationTimestamp"])
            for conn in connections
        )

    await until(reconnected, f"{namespace}: the new gateway reconnected")


def in_node(state_dir: Path, node: str, *argv: str) -> str:
    netns = names.node_netns(state_dir, node)
    return subprocess.run(
        ["ip", "netns", "exec", netns, *argv], capture_output=True, text=True, check=True
    ).stdout


def bypassed(state_dir: Path, node: str) -> list[ipaddress.IPv4Network]:
    """The networks the masquerade bypass on `node` covers."""
    table = in_node(state_dir, node, "nft", "list", "table", "ip", NODE_TABLE)
    # nft prints the set as it stores it: adjacent networks merged (10.0.0.0/16 and 10.1.0.0/16 as 10.0.0.0/15)
    sets = re.findall(r"ip daddr \{? ?([0-9./, ]+?) ?\}? snat", table)
    return [ipaddress.IPv4Network(cidr) for found in sets for cidr in found.split(", ")]


def node_routes(state_dir: Path, node: str) -> dict[str, bool]:
    """Each remote network the fabric agent routes on `node`, and whether its masquerade bypass covers it."""
    listed = in_node(state_dir, node, "ip", "route", "show", "proto", ROUTE_PROTOCOL)
    routes = [line.split()[0] for line in listed.splitlines() if line.strip()]
    networks = bypassed(state_dir, node)
    return {
        cidr: any(ipaddress.IPv4Network(cidr).subnet_of(network) for network in networks) for cidr in routes
    }


async def copy_endpoints(api: Client, namespace: str, service: str) -> list[str]:
    selector = f"kubernetes.io/service-name={service}"
    slices = (await api.list(ENDPOINTSLICES, namespace=namespace, label_selector=selector)).items
    return [a for s in slices for ep in s.get("endpoints") or [] for a in ep.get("addresses") or []]


async def local_service_copy(rome: Client, milan: Client, namespace: str, address: str) -> str:
    """A Service `home` of rome's offloaded `namespace` whose endpoint is a local pod at `address` (a Service
    without selector and its EndpointSlice, as for anything outside the namespace); its copy's ClusterIP on
    milan once the copy's EndpointSlice lists the endpoint (the curl stand-in reads no DNS: it is given the IP).
    """
    await rome.create(
        SERVICES, {"metadata": {"name": "home"}, "spec": {"ports": [{"port": 80}]}}, namespace=namespace
    )
    endpoint_slice = {
        "metadata": {"name": "home-1", "labels": {"kubernetes.io/service-name": "home"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
        "ports": [{"port": 80, "protocol": "TCP"}],
    }
    await rome.create(ENDPOINTSLICES, endpoint_slice, namespace=namespace)
    twin = f"{namespace}-rome"

    async def copied() -> str:
        found = await get(milan, SERVICES, "home", namespace=twin)
        if found is None or not await copy_endpoints(milan, twin, "home"):
            return ""
        return str(found["spec"].get("clusterIP") or "")

    return str(await until(copied, f"milan: the copy of Service {namespace}/home with its endpoint"))


async def test_pods_reach_each_other_across_clusters_with_the_same_pod_cidr(playground: Playground) -> None:
    rome_cluster, milan_cluster, naples_cluster, milan_identity, naples_identity = await three_regions(
        playground
    )
    kubeconfig = rome_cluster.kubeconfig
    async with (
        rome_cluster.client() as rome,
        milan_cluster.client() as milan,
        naples_cluster.client() as naples,
    ):
        await asyncio.gather(
            liqo.peer(rome, milan_identity, await liqo.issue_token(milan)),
            liqo.peer(rome, naples_identity, await liqo.issue_token(naples)),
        )

        async def established() -> bool:
            found = [await get(rome, FOREIGNCLUSTERS, name) for name in ("milan", "naples")]
            return all(((fc or {}).get("status") or {}).get("networking") == "Established" for fc in found)

        await until(established, "rome: networking with milan and naples Established")
        printed = await kubectl(kubeconfig, "get", "foreignclusters")
        rows = {line.split()[0]: line.split() for line in printed.strip().split("\n")[1:]}
        assert rows["milan"][:6] == MILAN_NETWORKED, printed
        assert rows["naples"][4] == "Established", printed

        # the tunnel's round trip, as the gateways' probes measure it through the tunnel
        latency = await until(
            lambda: connection_latency(rome, "liqo-tenant-milan"), "rome: the tunnel's latency"
        )
        printed = await kubectl(kubeconfig, "get", "connections", "-n", "liqo-tenant-milan")
        assert re.search(r"^milan\s+Connected\s+\S+\s+Client\s", printed, re.MULTILINE), printed
        assert re.fullmatch(r"[0-9.]+(µs|ms)", latency), latency

        milan_here = await mapped(rome, "milan", "liqo-tenant-milan")
        naples_here = await mapped(rome, "naples", "liqo-tenant-naples")
        rome_at_milan = await mapped(milan, "rome", "liqo-tenant-rome")
        networks = [ipaddress.ip_network(cidr) for cidr in (POD_CIDR, milan_here, naples_here)]
        assert not any(a.overlaps(b) for i, a in enumerate(networks) for b in networks[i + 1 :]), networks

        # 1. offloaded pods reached from rome, by their remapped address and through a Service
        await offload(rome, "north", region("north"))
        await offload(rome, "south", region("south"))
        await rome.create(PODS, pod("nginx", image="nginx", labels={"app": "nginx"}), namespace="north")
        await rome.create(PODS, pod("nginx", image="nginx"), namespace="south")
        at_milan = await running_ip(rome, "north", "nginx")
        at_naples = await running_ip(rome, "south", "nginx")
        assert ipaddress.ip_address(at_milan) in ipaddress.ip_network(milan_here), at_milan
        assert ipaddress.ip_address(at_naples) in ipaddress.ip_network(naples_here), at_naples
        assert "Welcome to nginx" in await fetch(
            rome, kubeconfig, "default", "to-milan", f"http://{at_milan}/"
        )
        assert "Welcome to nginx" in await fetch(
            rome, kubeconfig, "default", "to-naples", f"http://{at_naples}/"
        )
        await rome.create(
            SERVICES,
            {
                "metadata": {"name": "nginx"},
                "spec": {"selector": {"app": "nginx"}, "ports": [{"port": 80, "targetPort": 80}]},
            },
            namespace="north",
        )
        cluster_ip = (await rome.get(SERVICES, "nginx", namespace="north"))["spec"]["clusterIP"]

        async def endpoint_ready() -> bool:
            selector = "kubernetes.io/service-name=nginx"
            slices = (await rome.list(ENDPOINTSLICES, namespace="north", label_selector=selector)).items
            return any(at_milan in ep.get("addresses", []) for s in slices for ep in s.get("endpoints") or [])

        await until(endpoint_ready, "rome: the Service's endpoint is the remapped address")
        assert "Welcome to nginx" in await fetch(
            rome, kubeconfig, "default", "by-service", f"http://{cluster_ip}/"
        )

        # 2. a pod of rome reached from a pod offloaded to milan, at rome's address as milan maps it, and
        # through a Service of the offloaded namespace (its copy on milan lists the pod where milan reaches it)
        await rome.create(PODS, pod("home", image="nginx"), namespace="default")
        home_ip = await running_ip(rome, "default", "home")
        home = translate(home_ip, source=POD_CIDR, target=rome_at_milan)
        assert "Welcome to nginx" in await fetch(rome, kubeconfig, "north", "caller", f"http://{home}/")
        milan_ip = await local_service_copy(rome, milan, "north", home_ip)
        assert milan_ip != cluster_ip
        assert home in await copy_endpoints(milan, "north-rome", "home")
        assert "Welcome to nginx" in await fetch(
            rome, kubeconfig, "north", "caller-by-service", f"http://{milan_ip}/"
        )

        # 3. either gateway restarted: the tunnel comes back
        await restart_gateway(milan, "liqo-tenant-rome")
        assert "Welcome to nginx" in await fetch(
            rome, kubeconfig, "default", "after-server", f"http://{at_milan}/"
        )
        await restart_gateway(rome, "liqo-tenant-milan")
        assert "Welcome to nginx" in await fetch(
            rome, kubeconfig, "default", "after-client", f"http://{at_milan}/"
        )

        # the ForeignCluster's networking module says the latency too (it looks again every peering resync)
        async def module_latency() -> bool:
            found = await get(rome, FOREIGNCLUSTERS, "naples")
            module = (((found or {}).get("status") or {}).get("modules") or {}).get("networking") or {}
            return any("latency" in str(cond.get("message")) for cond in module.get("conditions") or [])

        await until(module_latency, "rome: naples' networking module reports the latency")

        # 4. unpeer milan: its routes, gateway, keys and networking objects go; naples stays
        state_dir = rome_cluster.paths.root.parent
        routes = node_routes(state_dir, "rome-control-plane")
        assert routes == {milan_here: True, naples_here: True}, routes
        assert node_routes(state_dir, "milan-control-plane") == {rome_at_milan: True}
        await rome.delete(NAMESPACES, "north")
        await unpeer(
            rome, "milan", namespace="liqo", seconds=120, field_manager=c.FIELD_MANAGER_TERRAFORM, force=False
        )

        async def milan_gone() -> bool:
            left = [
                *(await milan.list(PODS, namespace="liqo-tenant-rome", label_selector=GATEWAYS)).items,
                *(await milan.list(SECRETS, label_selector=GATEWAYS)).items,
                *[item for kind in NETWORKING_KINDS for item in (await milan.list(kind)).items],
                *(await rome.list(SECRETS, namespace="liqo-tenant-milan", label_selector=GATEWAYS)).items,
                *[
                    item
                    for kind in NETWORKING_KINDS
                    for item in (await rome.list(kind, namespace="liqo-tenant-milan")).items
                ],
            ]
            # rome's routes and masquerade bypass: naples' network only; milan's: none
            return (
                not left
                and node_routes(state_dir, "rome-control-plane") == {naples_here: True}
                and node_routes(state_dir, "milan-control-plane") == {}
                and not bypassed(state_dir, "milan-control-plane")
            )

        await until(
            milan_gone, "rome and milan: milan's routes, gateways, keys and networking objects removed"
        )
        assert "Welcome to nginx" in await fetch(
            rome, kubeconfig, "default", "still-naples", f"http://{at_naples}/"
        )
