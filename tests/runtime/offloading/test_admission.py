"""A hostile consumer on an emulated provider: what its credential may write, the provider's admission refuses.

rome peers with naples and offloads `work`; then, with the very credential naples issued
to rome (`liqo-consumer` in rome's tenant namespace), the test writes what a hostile
consumer would write instead of what rome's virtual kubelet writes: ShadowPods reaching
for naples' hosts, more pods than rome was granted, a second gateway. naples' webhook
(running as its own ServiceAccount, with the installation's RBAC) refuses each, and the
Quota's status says what rome uses.
"""

from __future__ import annotations

from typing import Any

import pytest

from runtime.api.crds import GATEWAYSERVERS, QUOTAS, SHADOWPODS
from runtime.api.objects import JSON
from runtime.core import Client, InvalidError
from tests.runtime.peering.harness import Clusters

from .test_namespaces import consumer_client
from .test_pods import TWIN, setup

TENANT = "liqo-tenant-rome"

#: what a hostile consumer's pod asks of the provider's nodes, each refused (`tests/runtime/webhook` has one
#: case per field)
ESCAPES: dict[str, JSON] = {
    "host network": {"hostNetwork": True},
    "host PID": {"hostPID": True},
    "hostPath": {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]},
    "privileged": {"containers": [{"name": "c", "image": "x", "securityContext": {"privileged": True}}]},
    "SYS_ADMIN": {
        "containers": [
            {"name": "c", "image": "x", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}
        ]
    },
    "host port": {
        "containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 22, "hostPort": 22}]}]
    },
    "unmasked /proc": {
        "containers": [{"name": "c", "image": "x", "securityContext": {"procMount": "Unmasked"}}]
    },
    "unconfined seccomp": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}},
    "unsafe sysctl": {"securityContext": {"sysctls": [{"name": "kernel.core_pattern", "value": "|/evil"}]}},
}


def shadow_pod(name: str, **pod: Any) -> JSON:
    spec = {"containers": [{"name": "c", "image": "nginx"}], **pod}
    return {
        "apiVersion": SHADOWPODS.api_version,
        "kind": SHADOWPODS.kind,
        "metadata": {"name": name, "namespace": TWIN},
        "spec": {"pod": spec},
    }


def with_cpu(name: str, cpu: str) -> JSON:
    return shadow_pod(
        name,
        containers=[
            {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}
        ],
    )


@pytest.mark.slow
async def test_a_hostile_consumer_gets_no_escape_no_more_than_its_quota_and_one_gateway(
    clusters: Clusters,
) -> None:
    rome, naples = await setup(clusters)
    hostile: Client = await consumer_client(rome, naples)

    for what, pod in ESCAPES.items():
        with pytest.raises(InvalidError) as refused:
            await hostile.create(SHADOWPODS, shadow_pod("escape", **pod))
        assert 'violates PodSecurity "baseline:v1.36"' in refused.value.message, what

    quota = await naples.admin.get(QUOTAS, "rome", namespace=TENANT)
    granted = quota["spec"]["limits"]["cpu"]
    assert granted == "3600m", "the harness' worker shares 90% of 4 cpu"
    for i in range(3):
        await hostile.create(SHADOWPODS, with_cpu(f"greedy-{i}", "1"))
    with pytest.raises(InvalidError) as refused:
        await hostile.create(SHADOWPODS, with_cpu("greedy-3", "1"))
    assert (
        f"exceeded quota: {TENANT}/rome, requested: cpu=1, used: cpu=3, limited: cpu={granted}"
        in refused.value.message
    )

    async def used() -> JSON | None:
        found = await naples.admin.get(QUOTAS, "rome", namespace=TENANT)
        status = (found.get("status") or {}).get("used") or {}
        return status if status.get("cpu") == "3" else None

    status = await clusters.eventually(used, within=20)
    assert status["pods"] == "3" and status["memory"] == "192Mi"

    # an admitted pod made privileged by an update is refused too
    admitted = await hostile.get(SHADOWPODS, "greedy-0", namespace=TWIN)
    admitted["spec"]["pod"]["containers"][0]["securityContext"] = {"privileged": True}
    with pytest.raises(InvalidError) as refused:
        await hostile.replace(SHADOWPODS, admitted)
    assert "privileged" in refused.value.message

    # one gateway per peering: rome's own, named after it; another is refused
    await clusters.eventually(lambda: _exists(naples.admin, "rome"), within=30)
    gateway = await naples.admin.get(GATEWAYSERVERS, "rome", namespace=TENANT)
    second = {
        "apiVersion": gateway["apiVersion"],
        "kind": gateway["kind"],
        "metadata": {"name": "rome-2", "namespace": TENANT},
        "spec": gateway["spec"],
    }
    with pytest.raises(InvalidError) as refused:
        await hostile.create(GATEWAYSERVERS, second)
    assert f"tenant namespace {TENANT} holds one GatewayServer" in refused.value.message


async def _exists(admin: Client, name: str) -> bool:
    listed = (await admin.list(GATEWAYSERVERS, namespace=TENANT)).items
    return any(item["metadata"]["name"] == name for item in listed)
