"""A provider's admission on playground clusters: the runtime as process pods, the webhook behind its Service.

rome (consumer) peers with milan (provider), set up as the Terraform resources do it
(`playground.liqo`), and offloads `shop`. In real-binary mode (the real leg) milan's API
server is kube-apiserver v1.36, with Pod Security Admission enforcing the twin
namespace's labels too. The test then:

1. as a hostile consumer, with the credential milan issued to rome, writes ShadowPods
   reaching for milan's hosts (each refused, as Pod Security baseline says), more pods
   than rome was granted (refused, naming the Quota, and the Quota's `used` says what rome
   uses), and a second GatewayServer (refused);
2. restarts milan's webhook (a rolling update: `kubectl rollout restart`) under a steady
   stream of admission requests, and sees none of them fail.
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import pytest

from playground import liqo
from playground.testing import Playground
from runtime.api.crds import GATEWAYSERVERS, NAMESPACEOFFLOADINGS, QUOTAS, SHADOWPODS
from runtime.api.kinds import DEPLOYMENTS, PODS, SECRETS
from runtime.api.objects import JSON
from runtime.controllers.core.objects import kubeconfig_of
from runtime.core import APIError, Client, InvalidError
from runtime.forge.namespaceoffloading import namespace_offloading

from .test_playground_offloading import offload, rome_and_milan, until, virtual_node_ready

pytestmark = [pytest.mark.slow]

TWIN = "shop-rome"
TENANT = "liqo-tenant-rome"
WEBHOOK = "liqo-webhook"

ESCAPES: dict[str, JSON] = {
    "host network": {"hostNetwork": True},
    "hostPath": {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]},
    "privileged": {"containers": [{"name": "c", "image": "x", "securityContext": {"privileged": True}}]},
    "NET_ADMIN": {
        "containers": [
            {"name": "c", "image": "x", "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}
        ]
    },
    "host port": {
        "containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 22, "hostPort": 22}]}]
    },
    "unconfined seccomp": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}},
}


def shadow_pod(name: str, **pod: Any) -> JSON:
    return {
        "apiVersion": SHADOWPODS.api_version,
        "kind": SHADOWPODS.kind,
        "metadata": {"name": name, "namespace": TWIN},
        "spec": {"pod": {"containers": [{"name": "c", "image": "nginx"}], **pod}},
    }


async def test_a_provider_admits_only_what_its_consumer_may_and_restarts_without_a_gap(
    playground: Playground,
) -> None:
    rome_cluster, milan_cluster, milan_identity = await rome_and_milan(playground)
    async with rome_cluster.client() as rome, milan_cluster.client() as milan:
        await liqo.peer(rome, milan_identity, await liqo.issue_token(milan))
        await until(lambda: virtual_node_ready(rome, "liqo-milan"), "rome: node liqo-milan Ready")
        await offload(rome, "shop")
        secret = await rome.get(SECRETS, "liqo-credential-milan", namespace="liqo-tenant-milan")
        config = kubeconfig_of(secret)
        assert config is not None
        async with await Client.from_kubeconfig_dict(config) as hostile:
            await step_hostile_consumer(milan, hostile)
        await step_restart_under_load(milan)


async def step_hostile_consumer(milan: Client, hostile: Client) -> None:
    for what, pod in ESCAPES.items():
        with pytest.raises(InvalidError) as refused:
            await hostile.create(SHADOWPODS, shadow_pod("escape", **pod))
        assert 'violates PodSecurity "baseline:v1.36"' in refused.value.message, what

    quota = await until(lambda: _quota(milan), "milan: rome's Quota")
    granted = quota["spec"]["limits"]["cpu"]
    await hostile.create(SHADOWPODS, shadow_pod("all-of-it", containers=[_asking("c", granted)]))
    with pytest.raises(InvalidError) as refused:
        await hostile.create(SHADOWPODS, shadow_pod("one-more", containers=[_asking("c", "10m")]))
    assert (
        f"exceeded quota: {TENANT}/rome, requested: cpu=10m, used: cpu={granted}, limited: cpu={granted}"
        in refused.value.message
    )

    async def used() -> bool:
        found = await milan.get(QUOTAS, "rome", namespace=TENANT)
        return bool(((found.get("status") or {}).get("used") or {}).get("cpu") == granted)

    await until(used, "milan: rome's Quota says what it uses")
    await hostile.delete(SHADOWPODS, "all-of-it", namespace=TWIN)

    second = {
        "apiVersion": GATEWAYSERVERS.api_version,
        "kind": GATEWAYSERVERS.kind,
        "metadata": {"name": "rome-2", "namespace": TENANT},
        "spec": {},
    }
    with pytest.raises(InvalidError) as refused:
        await hostile.create(GATEWAYSERVERS, second)
    assert f"tenant namespace {TENANT} holds one GatewayServer" in refused.value.message


def _asking(name: str, cpu: str) -> JSON:
    return {"name": name, "image": "nginx", "resources": {"requests": {"cpu": cpu}}}


async def _quota(milan: Client) -> JSON | None:
    items = (await milan.list(QUOTAS, namespace=TENANT)).items
    return items[0] if items and (items[0].get("spec") or {}).get("limits", {}).get("cpu") else None


async def step_restart_under_load(milan: Client) -> None:
    """A rolling update of the webhook while dry-run creates keep calling it: not one is refused."""
    outcomes: list[str] = []
    stop = asyncio.Event()

    async def admissions() -> None:
        body = namespace_offloading("default")
        while not stop.is_set():
            try:
                await milan.create(NAMESPACEOFFLOADINGS, body, namespace="default", dry_run=True)
                outcomes.append("admitted")
            except APIError as exc:
                outcomes.append(f"{type(exc).__name__}: {exc}")
            await asyncio.sleep(0.02)

    before = {pod["metadata"]["name"] for pod in await _webhook_pods(milan)}
    stream = asyncio.create_task(admissions(), name="admission stream")
    try:
        await asyncio.sleep(2)
        restarted = datetime.datetime.now(datetime.UTC).isoformat()
        await milan.patch(
            DEPLOYMENTS,
            WEBHOOK,
            {
                "spec": {
                    "template": {
                        "metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": restarted}}
                    }
                }
            },
            namespace="liqo",
        )

        async def rolled_out() -> bool:
            pods = await _webhook_pods(milan)
            names = {pod["metadata"]["name"] for pod in pods}
            ready = [pod for pod in pods if _ready(pod) and not pod["metadata"].get("deletionTimestamp")]
            return bool(names) and not names & before and len(ready) == 1

        await until(rolled_out, "milan: the webhook rolled out")
        await asyncio.sleep(3)
    finally:
        stop.set()
        await stream
    failures = [outcome for outcome in outcomes if outcome != "admitted"]
    assert len(outcomes) > 50 and failures == [], failures[:5]


async def _webhook_pods(milan: Client) -> list[JSON]:
    return (
        await milan.list(PODS, namespace="liqo", label_selector=f"app.kubernetes.io/name={WEBHOOK}")
    ).items


def _ready(pod: JSON) -> bool:
    return any(
        cond.get("type") == "Ready" and cond.get("status") == "True"
        for cond in (pod.get("status") or {}).get("conditions") or []
    )
