"""A hostile consumer against its provider's network, on real playground clusters (issue 20, findings 1, 6, 11).

rome peers with milan (the tunnel up) and offloads `shop`. Then, with nothing but rome's own
credential on milan (what any holder of a milan peering token gets), the test writes what a
hostile consumer would, and watches milan's nodes and its gateway pod meanwhile:

1. rome's Configuration on milan, `spec.remote`, `status.remote`, `status.local` and
   `spec.local`, set to hostile networks (link-local, kind's node network, milan's own node
   network, half the Internet, loopback, multicast, milan's pod and Service CIDRs, IPv6,
   garbage, nft syntax): no node of milan ever routes any of them, no nft rule (nodes,
   gateway) names them, every route is one milan's IPAM gave out; `status.remote` goes back
   to what the IPAM derives; a `spec.remote` no peer may have gets a False `Accepted`
   condition and a Warning Event naming the network and why, one that only overlaps milan's
   networks is remapped into the IPAM's pool (what is routed is the remapped network);
2. ShadowEndpointSlices in the twin namespace listing, besides one address of rome's network,
   milan's API server (its Service and its endpoint), a node, another tenant's network and a
   pod of milan, or loopback and link-local (which kube-apiserver would refuse in an
   EndpointSlice): milan's EndpointSlices list rome's address only, and a Warning Event on
   each ShadowEndpointSlice names the rest;
3. that other tenant's Configuration deleted: its network is released, and the next peering
   asking for the same network gets it back.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from playground import liqo
from playground.cluster import Cluster
from playground.testing import Playground
from runtime.api import constants as c
from runtime.api.crds import CONFIGURATIONS, FOREIGNCLUSTERS, NETWORKS, SHADOWENDPOINTSLICES
from runtime.api.kinds import DEPLOYMENTS, ENDPOINTSLICES, EVENTS, NAMESPACES, NODES, PODS, SECRETS, SERVICES
from runtime.api.objects import JSON
from runtime.controllers.core.objects import kubeconfig_of
from runtime.core import Client, InvalidError
from runtime.fabric.routes import ROUTE_PROTOCOL
from runtime.forge import install, ipam
from runtime.forge.networking import Cidrs
from tests.runtime.test_playground_fabric import GATEWAYS, bypassed, in_node
from tests.runtime.test_playground_offloading import get, offload, until

pytestmark = [pytest.mark.slow, pytest.mark.kubectl]

TENANT = "liqo-tenant-rome"
TWIN = "shop-rome"
#: how long each hostile value is watched for a route or rule made from it (sampled every SAMPLE seconds)
WATCH = 3.0
SAMPLE = 0.2
ROME_POD_CIDR = "10.244.0.0/16"
POOL = [ipaddress.IPv4Network(cidr) for cidr in ipam.DEFAULT_POOL]


@dataclass(frozen=True)
class Hostile:
    """One hostile write: `networks` as the pod CIDRs of `field` (`spec.remote`, `status.local`, ...)."""

    id: str
    field: str
    networks: list[Any]
    #: `spec.remote` emptied at the same time (the IPAM then has nothing to derive `status.remote` from)
    empty_spec: bool = False


def hostile_writes(node_network: str) -> list[Hostile]:
    garbage: list[Any] = ["default", "10.0.0.0/16 } ; flush ruleset ; add table ip x {", "fd00::/64", 12345]
    dangerous = [
        "169.254.169.254/32",
        "172.18.0.0/16",
        node_network,
        "128.0.0.0/1",
        "127.0.0.0/8",
        "224.0.0.0/4",
        ROME_POD_CIDR,  # milan's own pod CIDR (the playground's clusters share it)
        "10.96.0.0/16",  # milan's Service CIDR
    ]
    # (kind's node network, 172.18.0.0/16, is not the playground's: asked for in spec.remote, it is a free network
    # of the pool, given as it is; milan's own node network is remapped)
    writes = [
        Hostile(f"spec.remote={value}", "spec.remote", [value])
        for value in dangerous[:6]
        if value != "172.18.0.0/16"
    ]
    writes += [Hostile(f"spec.remote={value!r}", "spec.remote", [value]) for value in garbage]
    writes += [
        Hostile(f"status.remote={value!r} with no spec.remote", "status.remote", [value], empty_spec=True)
        for value in [*dangerous, *garbage[:2]]
    ]
    writes += [Hostile(f"status.remote={value}", "status.remote", [value]) for value in dangerous[:4]]
    # (milan's Service CIDR as a /16 is a network rome's IPAM may give milan's pods: the NAT applies to the
    # tunnel's traffic only; of another size than milan's pod CIDR it cannot be one)
    writes += [
        Hostile(f"status.local={value!r}", "status.local", [value])
        for value in ["127.0.0.0/8", "10.96.0.0/24", garbage[1], "fd00::/64"]
    ]
    writes += [
        Hostile(f"spec.local={value}", "spec.local", [value]) for value in (node_network, "10.96.0.0/16")
    ]
    return writes


def networks_in(values: list[Any]) -> list[ipaddress.IPv4Network]:
    """The hostile values that are IPv4 networks at all (the others must simply never reach a command)."""
    found = []
    for value in values:
        try:
            found.append(ipaddress.IPv4Network(value))
        except (ValueError, TypeError):
            continue
    return found


def node_network_of(state_dir: Path, node: str) -> str:
    listed = json.loads(in_node(state_dir, node, "ip", "-j", "-4", "address", "show", "dev", "eth0"))
    info = listed[0]["addr_info"][0]
    return str(ipaddress.IPv4Interface(f"{info['local']}/{info['prefixlen']}").network)


def proto_routes(state_dir: Path, node: str) -> list[ipaddress.IPv4Network]:
    listed = json.loads(
        in_node(state_dir, node, "ip", "-j", "route", "show", "proto", ROUTE_PROTOCOL) or "[]"
    )
    return [ipaddress.IPv4Network(route["dst"]) for route in listed]


def in_pod(cluster: Cluster, pod: JSON, *argv: str) -> str:
    pid = cluster.container_pid(pod, pod["spec"]["containers"][0]["name"])
    assert pid is not None, f"{cluster.name}: no process for pod {pod['metadata']['name']}"
    return subprocess.run(
        ["nsenter", "-t", str(pid), "-n", *argv], capture_output=True, text=True, check=True
    ).stdout


async def given_networks(milan: Client) -> set[ipaddress.IPv4Network]:
    """Every network milan's IPAM gave out (the Networks' status)."""
    given = set()
    for network in (await milan.list(NETWORKS)).items:
        cidr = (network.get("status") or {}).get("cidr")
        if cidr:
            given.add(ipaddress.IPv4Network(cidr))
    return given


class Watcher:
    """What milan's nodes and gateway pod route and NAT, checked against hostile networks."""

    def __init__(self, milan_cluster: Cluster, milan: Client, nodes: list[str]) -> None:
        self._cluster = milan_cluster
        self._milan = milan
        self._nodes = nodes
        self._state_dir = milan_cluster.paths.root.parent
        #: every network milan's IPAM gave out since the watch began (a released one is unrouted a moment later)
        self._given: set[ipaddress.IPv4Network] = set()

    async def _gateway(self) -> JSON:
        pods = (await self._milan.list(PODS, namespace=TENANT, label_selector=GATEWAYS)).items
        running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
        assert len(running) == 1, [p["metadata"]["name"] for p in pods]
        return running[0]

    async def problems(self, hostile: list[ipaddress.IPv4Network], texts: list[str]) -> list[str]:
        found: list[str] = []
        self._given |= await given_networks(self._milan)
        given = self._given
        for node in self._nodes:
            routed = await asyncio.to_thread(proto_routes, self._state_dir, node)
            bypass = await asyncio.to_thread(bypassed, self._state_dir, node)
            for network in routed:
                if network not in given:
                    found.append(
                        f"{node} routes {network}, which milan's IPAM never gave out ({sorted(given)})"
                    )
            for network in [*routed, *bypass]:
                found += [
                    f"{node} routes or bypasses {network}, hostile {bad}"
                    for bad in hostile
                    if network.overlaps(bad)
                ]
        gateway = await self._gateway()
        rules = await asyncio.to_thread(in_pod, self._cluster, gateway, "nft", "list", "ruleset")
        routes = json.loads(
            await asyncio.to_thread(in_pod, self._cluster, gateway, "ip", "-j", "-4", "route") or "[]"
        )
        for route in routes:
            if route["dst"] == "default":
                continue
            network = ipaddress.IPv4Network(route["dst"], strict=False)
            found += [f"the gateway routes {network}, hostile {bad}" for bad in hostile if network == bad]
        found += [f"the gateway's nft rules name {text!r}" for text in texts if text in rules]
        return found

    async def never(self, hostile: Hostile) -> None:
        """Watch for WATCH seconds: no route or rule ever made from `hostile`."""
        networks = networks_in(hostile.networks)
        # milan's own pod CIDR is in its gateway's rules by right (the NAT's target)
        texts = [str(n) for n in networks if str(n) != ROME_POD_CIDR] + [
            str(v) for v in hostile.networks if isinstance(v, str) and not networks_in([v])
        ]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WATCH
        while loop.time() < deadline:
            found = await self.problems(networks, texts)
            assert not found, f"{hostile.id}: {found}"
            await asyncio.sleep(SAMPLE)


async def no_pods(api: Client, component: str) -> bool:
    selector = f"{c.LABEL_COMPONENT}={component}"
    return not (await api.list(PODS, namespace=liqo.NAMESPACE, label_selector=selector)).items


async def consumer_credential(rome: Client) -> Client:
    secret = await rome.get(SECRETS, f"{c.CREDENTIAL_SECRET_PREFIX}milan", namespace="liqo-tenant-milan")
    config = kubeconfig_of(secret)
    assert config is not None, secret["metadata"]
    return await Client.from_kubeconfig_dict(config)


async def write(credential: Client, hostile: Hostile) -> bool:
    """`hostile` written as rome's credential can write it (a merge patch, on the subresource it lives in); False
    when the API server refused it already (a value its schema does not allow)."""
    part, side = hostile.field.split(".")
    body: JSON = {part: {side: {"cidr": {"pod": hostile.networks}}}}
    if hostile.empty_spec:
        await credential.patch(CONFIGURATIONS, "rome", {"spec": {"remote": None}}, namespace=TENANT)
    try:
        await credential.patch(
            CONFIGURATIONS, "rome", body, namespace=TENANT, subresource="status" if part == "status" else None
        )
    except InvalidError:
        return False
    return True


#: the spec.remote values milan's IPAM remaps rather than refuses (they only overlap milan's own networks)
def remapped_values(node_network: str) -> set[str]:
    return {node_network}


async def remapped_away(milan: Client, value: str) -> bool:
    """rome's status.remote on milan is a network of the IPAM's pool that does not overlap `value`."""
    found = await get(milan, CONFIGURATIONS, "rome", namespace=TENANT)
    mapped = Cidrs.of(((found or {}).get("status") or {}).get("remote")).pod
    hostile = ipaddress.IPv4Network(value)
    return bool(mapped) and all(
        not ipaddress.IPv4Network(m).overlaps(hostile)
        and any(ipaddress.IPv4Network(m).subnet_of(p) for p in POOL)
        for m in mapped
    )


async def restore(credential: Client, milan: Client, legit: JSON, nodes: list[str], state_dir: Path) -> str:
    """rome's Configuration on milan as rome's runtime writes it, and milan routing rome's network again (the
    network the IPAM gives it, which may have moved while rome asked for others); that network."""
    await credential.patch(
        CONFIGURATIONS, "rome", {"spec": {"remote": legit["spec"]["remote"]}}, namespace=TENANT
    )
    await credential.patch(
        CONFIGURATIONS,
        "rome",
        {"status": {"local": legit["status"]["local"]}},
        namespace=TENANT,
        subresource="status",
    )

    async def routed_again() -> str:
        found = await get(milan, CONFIGURATIONS, "rome", namespace=TENANT)
        mapped = Cidrs.of(((found or {}).get("status") or {}).get("remote")).pod
        if not mapped or ipaddress.IPv4Network(mapped[0]) not in await given_networks(milan):
            return ""
        wanted = ipaddress.IPv4Network(mapped[0])
        routed = [await asyncio.to_thread(proto_routes, state_dir, node) for node in nodes]
        return mapped[0] if all(wanted in routes for routes in routed) else ""

    return str(await until(routed_again, "milan: rome's network routed again to rome's gateway"))


async def refusal_reported(milan: Client, value: Any) -> str:
    """The message of the False `Accepted` condition of rome's Configuration and of a Warning Event naming `value`."""
    found = await get(milan, CONFIGURATIONS, "rome", namespace=TENANT)
    conditions = ((found or {}).get("status") or {}).get("conditions") or []
    accepted = next((entry for entry in conditions if entry.get("type") == c.CONDITION_ACCEPTED), None)
    if (
        accepted is None
        or accepted.get("status") != "False"
        or str(value) not in str(accepted.get("message"))
    ):
        return ""
    events = (await milan.list(EVENTS, namespace=TENANT)).items
    named = [
        e
        for e in events
        if e["involvedObject"].get("kind") == "Configuration"
        and e.get("type") == "Warning"
        and str(value) in str(e.get("message"))
    ]
    return str(accepted["message"]) if named else ""


def shadow_slice(name: str, addresses: list[str]) -> JSON:
    """A ShadowEndpointSlice of Service `name`, one ready endpoint per address, as the consumer may write it."""
    return {
        "apiVersion": SHADOWENDPOINTSLICES.api_version,
        "kind": SHADOWENDPOINTSLICES.kind,
        "metadata": {"name": name, "labels": {"kubernetes.io/service-name": name}},
        "spec": {
            "template": {
                "addressType": "IPv4",
                "endpoints": [
                    {"addresses": [address], "conditions": {"ready": True}} for address in addresses
                ],
                "ports": [{"port": 443, "protocol": "TCP"}],
            }
        },
    }


async def served(milan: Client, service: str) -> list[str]:
    """The addresses of milan's EndpointSlices of Service `service` in the twin namespace."""
    selector = f"kubernetes.io/service-name={service}"
    slices = (await milan.list(ENDPOINTSLICES, namespace=TWIN, label_selector=selector)).items
    return [a for s in slices for ep in s.get("endpoints") or [] for a in ep.get("addresses") or []]


async def other_tenant(milan: Client, name: str) -> list[str]:
    """A Configuration of another consumer `name` (its tenant namespace made by hand) asking for rome's pod CIDR;
    the networks milan's IPAM gives it."""
    namespace = f"liqo-tenant-{name}"
    await milan.create(NAMESPACES, {"metadata": {"name": namespace}})
    await milan.create(
        CONFIGURATIONS,
        {
            "apiVersion": CONFIGURATIONS.api_version,
            "kind": CONFIGURATIONS.kind,
            "metadata": {"name": name},
            "spec": {"remoteClusterID": f"{name}-id", "remote": {"cidr": {"pod": [ROME_POD_CIDR]}}},
        },
        namespace=namespace,
    )

    async def mapped() -> list[str]:
        found = await get(milan, CONFIGURATIONS, name, namespace=namespace)
        return [str(n) for n in Cidrs.of(((found or {}).get("status") or {}).get("remote")).pod]

    return list(await until(mapped, f"milan: the IPAM maps {name}'s pod CIDR"))


async def test_a_hostile_consumer_never_makes_its_provider_route_nat_or_serve_foreign_networks(
    playground: Playground,
) -> None:
    clusters = await playground.up("rome", "milan")
    rome_cluster, milan_cluster = clusters["rome"], clusters["milan"]
    _, identity = await asyncio.gather(
        liqo.install_runtime(rome_cluster), liqo.install_runtime(milan_cluster)
    )
    state_dir = milan_cluster.paths.root.parent
    async with rome_cluster.client() as rome, milan_cluster.client() as milan:
        await liqo.peer(rome, identity, await liqo.issue_token(milan))

        async def networked() -> bool:
            found = await get(rome, FOREIGNCLUSTERS, "milan")
            return ((found or {}).get("status") or {}).get("networking") == "Established"

        await until(networked, "rome: the network fabric with milan Established")
        await offload(rome, "shop", pod_offloading_strategy=c.POD_OFFLOADING_REMOTE)
        await until(lambda: get(milan, NAMESPACES, TWIN), f"milan: twin namespace {TWIN}")
        nodes = [
            n["metadata"]["name"]
            for n in (await milan.list(NODES)).items
            if (n["metadata"].get("labels") or {}).get(c.LABEL_TYPE) != c.TYPE_VIRTUAL_NODE
        ]
        # from now on rome behaves as a hostile consumer would: its own runtime does not write there any more
        await rome.patch(
            DEPLOYMENTS,
            f"liqo-{install.CONTROLLER_MANAGER}",
            {"spec": {"replicas": 0}},
            namespace=liqo.NAMESPACE,
        )
        await until(lambda: no_pods(rome, install.CONTROLLER_MANAGER), "rome: its controller manager stopped")
        legit = await milan.get(CONFIGURATIONS, "rome", namespace=TENANT)
        legit_route = Cidrs.of(legit["status"]["remote"]).pod[0]
        node_network = node_network_of(state_dir, nodes[0])
        watcher = Watcher(milan_cluster, milan, nodes)
        assert not await watcher.problems([], []), "milan's routes before any hostile write"

        # 1. hostile Configurations: never a route or rule, status.remote always the IPAM's, refusals reported
        async with await consumer_credential(rome) as credential:
            for hostile in hostile_writes(node_network):
                accepted = await write(credential, hostile)
                if accepted:
                    await watcher.never(hostile)
                if (
                    accepted
                    and hostile.field == "spec.remote"
                    and hostile.networks[0] in remapped_values(node_network)
                ):
                    await until(
                        functools.partial(remapped_away, milan, hostile.networks[0]),
                        f"{hostile.id}: remapped",
                    )
                elif accepted and hostile.field == "spec.remote":
                    await until(
                        functools.partial(refusal_reported, milan, hostile.networks[0]),
                        f"{hostile.id}: refusal reported",
                    )
                if accepted and hostile.empty_spec:

                    async def cleared() -> bool:
                        found = await get(milan, CONFIGURATIONS, "rome", namespace=TENANT)
                        return not Cidrs.of(((found or {}).get("status") or {}).get("remote")).pod

                    await until(cleared, f"{hostile.id}: the IPAM derives an empty status.remote")
                legit_route = await restore(credential, milan, legit, nodes, state_dir)

            # 2. a ShadowEndpointSlice with foreign addresses: milan's EndpointSlice lists rome's only
            others = await other_tenant(milan, "naples")
            api_server = (await milan.get(SERVICES, "kubernetes", namespace="default"))["spec"]["clusterIP"]
            api_endpoints = (
                await milan.list(
                    ENDPOINTSLICES,
                    namespace="default",
                    label_selector="kubernetes.io/service-name=kubernetes",
                )
            ).items
            api_address = api_endpoints[0]["endpoints"][0]["addresses"][0]
            node = await milan.get(NODES, nodes[0])
            node_address = next(
                a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP"
            )
            rome_address = str(ipaddress.IPv4Network(legit_route).network_address + 7)
            # a Service of milan's, one of its pods, a node, another tenant: each a valid EndpointSlice address
            foreign = {
                "hostile": [
                    api_server,
                    api_address,
                    node_address,
                    str(ipaddress.IPv4Network(others[0]).network_address + 7),
                    "10.244.0.9",  # a pod of milan
                ],
                # kube-apiserver refuses these in an EndpointSlice: the provider's slice still lists rome's address
                "special": ["127.0.0.1", "169.254.169.254"],
            }
            for name, addresses in foreign.items():
                await credential.create(
                    SHADOWENDPOINTSLICES, shadow_slice(name, [*addresses, rome_address]), namespace=TWIN
                )
            for name in foreign:
                assert await until(
                    functools.partial(served, milan, name),
                    f"milan: the EndpointSlice of ShadowEndpointSlice {name}",
                ) == [rome_address]
            await asyncio.sleep(WATCH)
            for name in foreign:
                assert await served(milan, name) == [rome_address]

            async def refused_named() -> bool:
                events = (await milan.list(EVENTS, namespace=TWIN)).items
                return all(
                    address
                    in " ".join(
                        str(e.get("message")) for e in events if e["involvedObject"].get("name") == name
                    )
                    for name, addresses in foreign.items()
                    for address in addresses
                )

            await until(
                refused_named, "milan: an Event on each ShadowEndpointSlice names every refused address"
            )

        # 3. a peering that goes releases its networks: the next one asking for the same gets them back
        await milan.delete(CONFIGURATIONS, "naples", namespace="liqo-tenant-naples")

        async def released() -> bool:
            return not (await milan.list(NETWORKS, namespace="liqo-tenant-naples")).items

        await until(released, "milan: naples' Networks released")
        assert await other_tenant(milan, "palermo") == others
