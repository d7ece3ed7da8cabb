"""Pods through the virtual node, on emulated clusters: ShadowPods out, status back, deletion, restarts.

rome (consumer) peers with naples (provider). The harness runs no scheduler and no node
agents, so the tests bind pods to the virtual node themselves (as a scheduler would) and
play the provider's kubelet by writing the status of the provider's Pods; everything in
between is the runtime: the pod webhook, the virtual kubelet's pod reflector, and the
provider's ShadowPod controller.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from runtime.api import constants as c
from runtime.api.crds import CONFIGURATIONS, NAMESPACEOFFLOADINGS, SHADOWPODS
from runtime.api.kinds import NAMESPACES, PODS, SECRETS, SERVICEACCOUNTS
from runtime.api.objects import JSON
from runtime.forge.ipam import translate
from runtime.forge.serviceaccounts import token_secret_name
from tests.runtime.peering.harness import Cluster, Clusters

from .support import get, offload, peered, phase

TWIN = "work-rome"
NODE = "liqo-naples"


async def setup(clusters: Clusters) -> tuple[Cluster, Cluster]:
    rome = await clusters.cluster("rome")
    naples = await clusters.cluster("naples")
    await peered(clusters, rome, naples)
    await offload(rome, "work")
    await clusters.eventually(lambda: phase(rome, "work", c.PHASE_READY), within=30)
    await clusters.eventually(lambda: get(rome.admin, SERVICEACCOUNTS, "default", namespace="work"))
    return rome, naples


def pod(name: str, **spec: Any) -> JSON:
    return {
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"nodeName": NODE, "containers": [{"name": "web", "image": "nginx"}], **spec},
    }


async def running(naples: Cluster, name: str, *, ip: str = "10.244.0.7", restarts: int = 0) -> None:
    """What naples' kubelet would report about its Pod `name`."""
    await naples.admin.patch_status(
        PODS,
        name,
        {
            "status": {
                "phase": "Running",
                "podIP": ip,
                "podIPs": [{"ip": ip}],
                "startTime": "2024-05-01T10:00:00Z",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [
                    {
                        "name": "web",
                        "ready": True,
                        "restartCount": restarts,
                        "image": "nginx",
                        "imageID": "",
                        "state": {"running": {}},
                    }
                ],
            }
        },
        namespace=TWIN,
    )


async def local_status(rome: Cluster, name: str) -> JSON:
    found = await get(rome.admin, PODS, name, namespace="work")
    return dict((found or {}).get("status") or {})


@pytest.mark.slow
async def test_a_pod_on_the_virtual_node_runs_on_the_provider_and_reports_back(clusters: Clusters) -> None:
    rome, naples = await setup(clusters)
    local = await rome.admin.create(PODS, pod("web-1"), namespace="work")
    assert {"key": c.TAINT_VIRTUAL_NODE, "operator": "Exists", "effect": "NoExecute"} in local["spec"][
        "tolerations"
    ]

    remote = await clusters.eventually(lambda: get(naples.admin, PODS, "web-1", namespace=TWIN), within=30)
    spec = remote["spec"]
    assert "nodeName" not in spec
    # the provider's API server adds its own default tolerations; the virtual node's is not carried over
    assert all(t.get("key") != c.TAINT_VIRTUAL_NODE for t in spec.get("tolerations") or [])
    assert spec["automountServiceAccountToken"] is False
    assert remote["metadata"]["labels"][c.LABEL_ORIGIN_CLUSTER_ID] == rome.cluster_id
    assert remote["metadata"]["labels"]["app"] == "web"
    # the token wiring reads the reflected Secret: tokens of the pod's own ServiceAccount on rome
    sources = [s for v in spec["volumes"] if "projected" in v for s in v["projected"]["sources"]]
    assert sources and all("secret" in s for s in sources)
    assert {s["secret"]["name"] for s in sources} == {token_secret_name("web-1")}
    secret = await naples.admin.get(SECRETS, token_secret_name("web-1"), namespace=TWIN)
    assert base64.b64decode(secret["data"]["namespace"]) == b"work"
    env = {e["name"]: e.get("value") for e in spec["containers"][0]["env"]}
    assert env["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"

    # status back: phase, IP (as rome's IPAM maps naples' pod CIDR, which overlaps rome's), the virtual
    # kubelet's address as host IP
    await running(naples, "web-1", restarts=2)

    async def reported() -> JSON | None:
        status = await local_status(rome, "web-1")
        return status if status.get("phase") == "Running" else None

    status = await clusters.eventually(reported, within=30)
    configuration = await rome.admin.get(CONFIGURATIONS, "naples", namespace="liqo-tenant-naples")
    mapped = configuration["status"]["remote"]["cidr"]["pod"][0]
    assert mapped != "10.244.0.0/16"
    assert status["podIP"] == translate("10.244.0.7", source="10.244.0.0/16", target=mapped)
    assert status["hostIP"] == "127.0.0.1"
    assert status["containerStatuses"][0]["restartCount"] == 2

    # deleted out of band on the provider: recreated, and counted as a restart
    uid = remote["metadata"]["uid"]
    await naples.admin.delete(PODS, "web-1", namespace=TWIN)

    async def recreated() -> JSON | None:
        found = await get(naples.admin, PODS, "web-1", namespace=TWIN)
        return found if found is not None and found["metadata"]["uid"] != uid else None

    await clusters.eventually(recreated, within=30)
    await running(naples, "web-1", restarts=0)

    async def restarted() -> bool:
        statuses = (await local_status(rome, "web-1")).get("containerStatuses") or []
        return bool(statuses) and statuses[0]["restartCount"] == 1

    await clusters.eventually(restarted, within=30)

    # deletion: the ShadowPod goes (its Pod with it), then the local pod for good
    await rome.admin.delete(PODS, "web-1", namespace="work", grace_period_seconds=5)

    async def all_gone() -> bool:
        return (
            await get(rome.admin, PODS, "web-1", namespace="work") is None
            and await get(naples.admin, SHADOWPODS, "web-1", namespace=TWIN) is None
            and await get(naples.admin, PODS, "web-1", namespace=TWIN) is None
            and await get(naples.admin, SECRETS, token_secret_name("web-1"), namespace=TWIN) is None
        )

    await clusters.eventually(all_gone, within=30)


@pytest.mark.slow
async def test_pods_that_cannot_be_offloaded_stay_pending_and_say_why(clusters: Clusters) -> None:
    rome, naples = await setup(clusters)
    await rome.admin.create(PODS, pod("host", hostNetwork=True), namespace="work")
    await rome.admin.create(NAMESPACES, {"metadata": {"name": "plain"}})
    await clusters.eventually(lambda: get(rome.admin, SERVICEACCOUNTS, "default", namespace="plain"))
    forced = pod("forced", tolerations=[{"key": c.TAINT_VIRTUAL_NODE, "operator": "Exists"}])
    await rome.admin.create(PODS, forced, namespace="plain")

    async def backed_off(namespace: str, name: str) -> JSON | None:
        found = await get(rome.admin, PODS, name, namespace=namespace)
        status = (found or {}).get("status") or {}
        return status if status.get("reason") == c.REASON_OFFLOADING_BACKOFF else None

    host = await clusters.eventually(lambda: backed_off("work", "host"), within=30)
    assert host["phase"] == "Pending"
    assert 'violates PodSecurity "baseline:v1.36": host namespaces (hostNetwork=true)' in host["message"]
    plain = await clusters.eventually(lambda: backed_off("plain", "forced"), within=30)
    assert "namespace plain is not offloaded to naples" in plain["message"]
    assert await get(naples.admin, SHADOWPODS, "host", namespace=TWIN) is None


@pytest.mark.slow
async def test_a_killed_virtual_kubelet_duplicates_nothing_and_unoffloading_brings_pods_back(
    clusters: Clusters,
) -> None:
    rome, naples = await setup(clusters)
    names = [f"batch-{i}" for i in range(8)]
    for i, name in enumerate(names):
        await rome.admin.create(PODS, pod(name), namespace="work")
        if i == 3:
            await clusters.kill_virtual_kubelets(rome)

    async def offloaded() -> bool:
        shadows = (await naples.admin.list(SHADOWPODS, namespace=TWIN)).items
        remote = (await naples.admin.list(PODS, namespace=TWIN)).items
        return sorted(s["metadata"]["name"] for s in shadows) == names and len(remote) == len(names)

    await clusters.eventually(offloaded, within=60)
    await clusters.kill_virtual_kubelets(rome)
    for name in names:
        await running(naples, name)

    async def all_running() -> bool:
        phases = [(await local_status(rome, name)).get("phase") for name in names]
        return phases == ["Running"] * len(names)

    await clusters.eventually(all_running, within=60)
    assert len((await naples.admin.list(PODS, namespace=TWIN)).items) == len(names)

    # unoffloading: the twin namespace goes, and the offloaded pods are deleted here (their controllers
    # would make them again locally)
    await rome.admin.delete(NAMESPACEOFFLOADINGS, "offloading", namespace="work")

    async def brought_back() -> bool:
        return (
            not (await rome.admin.list(PODS, namespace="work")).items
            and await get(naples.admin, NAMESPACES, TWIN) is None
        )

    await clusters.eventually(brought_back, within=60)
