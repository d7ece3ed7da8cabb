"""The network fabric on real playground clusters: two clusters with the same pod CIDR, real packets.

rome (consumer) peers with milan (provider); both use kind's 10.244.0.0/16, so each IPAM
remaps the other's pod network. The peering's gateways (process pods running wireguard-go
in their pods' network namespaces) bring the tunnel up and `kubectl get foreignclusters`
says NETWORKING Established; then, with the nginx and curl stand-ins doing real TCP:

- a local pod on rome fetches from a pod offloaded to milan at the address rome reports
  for it (remapped), and through a rome Service selecting it;
- a pod offloaded to milan fetches from a pod of rome at rome's pod address as milan maps it.

Unpeering removes the routes to the remote pod network from rome's node.
"""

from __future__ import annotations

import asyncio
import ipaddress
from typing import Any

import pytest

from playground import liqo
from playground.testing import Playground
from runtime.api import constants as c
from runtime.api.crds import CONFIGURATIONS, FOREIGNCLUSTERS, NAMESPACEOFFLOADINGS
from runtime.api.kinds import ENDPOINTSLICES, NAMESPACES, PODS, SERVICES
from runtime.core import Client
from runtime.forge.ipam import translate
from runtime.forge.namespaceoffloading import namespace_offloading
from runtime.forge.networking import Cidrs
from tests.runtime.test_playground_offloading import get, kubectl, until

pytestmark = [pytest.mark.slow, pytest.mark.kubectl]

JSON = dict[str, Any]
POD_CIDR = "10.244.0.0/16"


def pod(name: str, *, image: str, labels: dict[str, str] | None = None, url: str = "") -> JSON:
    container: JSON = {"name": "main", "image": image}
    if url:
        container["args"] = ["-s", "--max-time", "10", url]
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [container], "restartPolicy": "Never"},
    }


async def running_ip(api: Client, namespace: str, name: str) -> str:
    async def check() -> str:
        found = await get(api, PODS, name, namespace=namespace)
        status = (found or {}).get("status") or {}
        return str(status.get("podIP") or "") if status.get("phase") == "Running" else ""

    return str(await until(check, f"{namespace}/{name} Running with an IP"))


async def fetched(api: Client, kubeconfig: Any, namespace: str, name: str) -> str:
    """The log of a curl pod once it ended; AssertionError when curl failed."""

    async def ended() -> str:
        found = await get(api, PODS, name, namespace=namespace)
        phase = str(((found or {}).get("status") or {}).get("phase") or "")
        return phase if phase in ("Succeeded", "Failed") else ""

    phase = await until(ended, f"{namespace}/{name} ended")
    log = await kubectl(kubeconfig, "logs", "-n", namespace, name)
    assert phase == "Succeeded", f"{namespace}/{name}: {log}"
    return log


async def test_pods_reach_each_other_across_clusters_with_the_same_pod_cidr(playground: Playground) -> None:
    clusters = await playground.up("rome", "milan")
    rome_cluster, milan_cluster = clusters["rome"], clusters["milan"]
    _, milan_identity = await asyncio.gather(
        liqo.install_runtime(rome_cluster), liqo.install_runtime(milan_cluster)
    )
    async with rome_cluster.client() as rome, milan_cluster.client() as milan:
        await liqo.peer(rome, milan_identity, await liqo.issue_token(milan))

        async def established() -> bool:
            found = await get(rome, FOREIGNCLUSTERS, "milan")
            return ((found or {}).get("status") or {}).get("networking") == "Established"

        await until(established, "rome: networking with milan Established")
        printed = await kubectl(rome_cluster.kubeconfig, "get", "foreignclusters")
        assert printed.split("\n")[1].split()[4] == "Established", printed

        local = await get(rome, CONFIGURATIONS, "milan", namespace="liqo-tenant-milan")
        milan_here = Cidrs.of(local["status"]["remote"]).pod[0]  # type: ignore[index]
        assert not ipaddress.ip_network(milan_here).overlaps(ipaddress.ip_network(POD_CIDR))
        remote = await get(milan, CONFIGURATIONS, "rome", namespace="liqo-tenant-rome")
        rome_there = Cidrs.of(remote["status"]["remote"]).pod[0]  # type: ignore[index]

        # a pod offloaded to milan, reached from rome at its remapped address and through a Service
        await rome.create(NAMESPACES, {"metadata": {"name": "web"}})
        await rome.create(
            NAMESPACEOFFLOADINGS,
            namespace_offloading("web", pod_offloading_strategy=c.POD_OFFLOADING_REMOTE),
        )
        await until(lambda: _offloaded(rome, "web"), "rome: namespace web offloaded")
        await rome.create(PODS, pod("nginx", image="nginx", labels={"app": "nginx"}), namespace="web")
        address = await running_ip(rome, "web", "nginx")
        assert ipaddress.ip_address(address) in ipaddress.ip_network(milan_here), address
        await rome.create(
            SERVICES,
            {
                "metadata": {"name": "nginx"},
                "spec": {"selector": {"app": "nginx"}, "ports": [{"port": 80, "targetPort": 80}]},
            },
            namespace="web",
        )
        cluster_ip = (await rome.get(SERVICES, "nginx", namespace="web"))["spec"]["clusterIP"]
        await rome.create(
            PODS, pod("by-ip", image="curlimages/curl", url=f"http://{address}/"), namespace="default"
        )
        assert "Welcome to nginx" in await fetched(rome, rome_cluster.kubeconfig, "default", "by-ip")

        async def endpoint_ready() -> bool:
            slices = (
                await rome.list(
                    ENDPOINTSLICES, namespace="web", label_selector="kubernetes.io/service-name=nginx"
                )
            ).items
            return any(address in ep.get("addresses", []) for s in slices for ep in s.get("endpoints") or [])

        await until(endpoint_ready, "rome: the Service's endpoint is the remapped address")
        await rome.create(
            PODS, pod("by-service", image="curlimages/curl", url=f"http://{cluster_ip}/"), namespace="default"
        )
        assert "Welcome to nginx" in await fetched(rome, rome_cluster.kubeconfig, "default", "by-service")

        # a pod of rome, reached from a pod offloaded to milan at rome's address as milan maps it
        await rome.create(PODS, pod("home", image="nginx"), namespace="default")
        home = await running_ip(rome, "default", "home")
        seen = translate(home, source=POD_CIDR, target=rome_there)
        await rome.create(
            PODS, pod("caller", image="curlimages/curl", url=f"http://{seen}/"), namespace="web"
        )
        assert "Welcome to nginx" in await fetched(rome, rome_cluster.kubeconfig, "web", "caller")


async def _offloaded(api: Client, namespace: str) -> bool:
    found = await get(api, NAMESPACEOFFLOADINGS, "offloading", namespace=namespace)
    return ((found or {}).get("status") or {}).get("offloadingPhase") == c.PHASE_READY
