"""The provider's ResourceSlice controller against an emulator, running as the controller manager's ServiceAccount."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from runtime.api import constants as c
from runtime.api.crds import QUOTAS, RESOURCESLICES, TENANTS
from runtime.api.kinds import NAMESPACES, NODES, PODS, SERVICEACCOUNTS
from runtime.api.objects import JSON
from runtime.controllers.authentication import resourceslice
from runtime.controllers.options import ControllerOptions
from runtime.core import Client, Manager, NotFoundError
from runtime.forge import resourceslice as forge
from runtime.forge.resourceslice import resource_slice
from tests.playground.conftest import eventually

from .installed import OPTIONS, running

CONTROLLER_OPTIONS = ControllerOptions(namespace=OPTIONS.namespace)


async def add_node(admin: Client, name: str, **allocatable: str) -> None:
    await admin.create(NODES, {"metadata": {"name": name}})
    resources = {"cpu": "4", "memory": "8Gi", "pods": "110", **allocatable}
    status = {
        "capacity": resources,
        "allocatable": resources,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}],
    }
    await admin.patch_status(NODES, name, {"status": status})


async def add_pod(admin: Client, node: str, *, cpu: str, memory: str) -> None:
    # no service account controller runs here: the pod's ServiceAccount is made by hand
    await admin.create(SERVICEACCOUNTS, {"metadata": {"name": "default", "namespace": "default"}})
    await admin.create(
        PODS,
        {
            "metadata": {"name": f"load-{node}", "namespace": "default"},
            "spec": {
                "nodeName": node,
                "containers": [
                    {
                        "name": "c",
                        "image": "busybox",
                        "resources": {"requests": {"cpu": cpu, "memory": memory}},
                    }
                ],
            },
        },
    )


async def add_tenant(admin: Client, consumer: str, *, condition: str = "Active") -> str:
    namespace = f"{c.TENANT_NAMESPACE_PREFIX}{consumer}"
    await admin.create(NAMESPACES, {"metadata": {"name": namespace}})
    await admin.create(
        TENANTS,
        {
            "metadata": {"name": consumer, "namespace": namespace},
            "spec": {
                "clusterID": f"{consumer}-id",
                "clusterName": consumer,
                "serviceAccountName": "liqo-consumer",
                "tenantCondition": condition,
            },
        },
    )
    return namespace


async def request_slice(
    admin: Client, consumer: str, resources: dict[str, str] | None = None, *, namespace: str | None = None
) -> None:
    body = resource_slice(
        consumer,
        namespace=namespace or f"{c.TENANT_NAMESPACE_PREFIX}{consumer}",
        consumer_cluster_id=f"{consumer}-id",
        provider_cluster_id=OPTIONS.cluster_id,
        resources=resources,
    )
    await admin.create(RESOURCESLICES, body)


async def answered(admin: Client, consumer: str, *, namespace: str | None = None) -> JSON | None:
    """The slice once both of its conditions are written (None before)."""
    found = await admin.get(
        RESOURCESLICES, consumer, namespace=namespace or f"{c.TENANT_NAMESPACE_PREFIX}{consumer}"
    )
    types = {entry["type"] for entry in (found.get("status") or {}).get("conditions") or []}
    return found if {c.CONDITION_AUTHENTICATION, c.CONDITION_RESOURCES} <= types else None


def reasons(found: JSON) -> dict[str, str]:
    return {entry["type"]: entry["reason"] for entry in found["status"]["conditions"]}


def message(found: JSON, type: str = c.CONDITION_RESOURCES) -> str:
    return str(next(entry["message"] for entry in found["status"]["conditions"] if entry["type"] == type))


async def wait_answer(admin: Client, consumer: str, *, namespace: str | None = None) -> JSON:
    box: list[JSON] = []

    async def ready() -> bool:
        found = await answered(admin, consumer, namespace=namespace)
        if found is not None:
            box.append(found)
        return found is not None

    await eventually(ready, within=15)
    return box[-1]


async def test_an_active_tenant_gets_the_default_share_and_a_quota(admin: Client, kubeconfig: Path) -> None:
    await add_node(admin, "a")
    await add_node(admin, "b")
    await add_pod(admin, "a", cpu="1", memory="2Gi")
    namespace = await add_tenant(admin, "rome")
    async with running(admin, kubeconfig, resourceslice.setup, options=CONTROLLER_OPTIONS):
        await request_slice(admin, "rome")
        found = await wait_answer(admin, "rome")
        assert reasons(found) == {
            c.CONDITION_AUTHENTICATION: c.REASON_ACCEPTED,
            c.CONDITION_RESOURCES: c.REASON_ACCEPTED,
        }
        # 90% of (8 cpu, 16Gi, 220 pods) minus the bound pod's (1 cpu, 2Gi, 1 pod)
        assert found["status"]["resources"] == {"cpu": "6300m", "memory": "12902Mi", "pods": "197"}
        assert found["status"]["observedGeneration"] == found["metadata"]["generation"]

        async def quota() -> JSON | None:
            try:
                return await admin.get(QUOTAS, "rome", namespace=namespace)
            except NotFoundError:
                return None

        await eventually(quota, within=10)
        granted = await quota()
        assert granted is not None
        assert granted["spec"]["limits"] == found["status"]["resources"]
        assert granted["spec"]["user"] == f"system:serviceaccount:{namespace}:liqo-consumer"
        assert granted["spec"]["limitsEnforcement"] == "None"
        assert granted["metadata"]["ownerReferences"][0]["uid"] == found["metadata"]["uid"]

        # the provider grows: the default share follows
        await add_node(admin, "c")

        async def grown() -> bool:
            current = await answered(admin, "rome")
            return current is not None and current["status"]["resources"]["cpu"] == "9900m"

        await eventually(grown, within=10)


async def test_requests_are_accepted_resized_or_denied_with_a_message(
    admin: Client, kubeconfig: Path
) -> None:
    await add_node(admin, "a", **{"example.com/fpga": "2"})
    await add_node(admin, "b")
    for consumer in ("rome", "turin", "naples"):
        await add_tenant(admin, consumer)
    async with running(admin, kubeconfig, resourceslice.setup, options=CONTROLLER_OPTIONS):
        await request_slice(admin, "rome", {"cpu": "4", "memory": "4Gi", "example.com/fpga": "1"})
        rome = await wait_answer(admin, "rome")
        assert reasons(rome)[c.CONDITION_RESOURCES] == c.REASON_ACCEPTED
        assert rome["status"]["resources"] == {"cpu": "4", "example.com/fpga": "1", "memory": "4Gi"}

        # 90% of 8 cpu is 7200m; rome holds 4
        await request_slice(admin, "turin", {"cpu": "8"})
        turin = await wait_answer(admin, "turin")
        assert reasons(turin)[c.CONDITION_RESOURCES] == c.REASON_RESIZED
        assert turin["status"]["resources"] == {"cpu": "3200m"}
        assert "cpu 3200m of 8 requested" in message(turin)

        await request_slice(admin, "naples", {"cpu": "1", "nvidia.com/gpu": "1"})
        naples = await wait_answer(admin, "naples")
        assert reasons(naples)[c.CONDITION_RESOURCES] == c.REASON_DENIED
        assert naples["status"]["resources"] == {}
        assert "nvidia.com/gpu (requested 1; this provider has none)" in message(naples)
        with pytest.raises(NotFoundError):
            await admin.get(QUOTAS, "naples", namespace=f"{c.TENANT_NAMESPACE_PREFIX}naples")

        # rome's grant stays what it was while the others were answered
        again = await answered(admin, "rome")
        assert again is not None and again["status"]["resources"] == rome["status"]["resources"]


async def test_slices_answered_together_never_share_the_same_resources(
    admin: Client, kubeconfig: Path
) -> None:
    await add_node(admin, "a")
    consumers = [f"c{i}" for i in range(4)]
    for consumer in consumers:
        await add_tenant(admin, consumer)
    async with running(admin, kubeconfig, resourceslice.setup, options=CONTROLLER_OPTIONS):
        await asyncio.gather(*(request_slice(admin, consumer, {"cpu": "1"}) for consumer in consumers))
        answers = [await wait_answer(admin, consumer) for consumer in consumers]
    # 90% of 4 cpu: three whole cpus and a cut one, whatever the order
    granted = sorted(answer["status"]["resources"].get("cpu", "0") for answer in answers)
    assert granted == ["1", "1", "1", "600m"]


@pytest.mark.parametrize(
    ("tenant", "namespace", "says"),
    [
        (None, "default", "no Tenant in namespace default"),
        ("Cordoned", None, "is Cordoned"),
    ],
    ids=["no-tenant", "cordoned-tenant"],
)
async def test_a_slice_without_an_active_tenant_is_denied(
    admin: Client, kubeconfig: Path, tenant: str | None, namespace: str | None, says: str
) -> None:
    await add_node(admin, "a")
    if tenant is not None:
        await add_tenant(admin, "rome", condition=tenant)
    async with running(admin, kubeconfig, resourceslice.setup, options=CONTROLLER_OPTIONS):
        await request_slice(admin, "rome", namespace=namespace)
        found = await wait_answer(admin, "rome", namespace=namespace)
    assert reasons(found) == {
        c.CONDITION_AUTHENTICATION: c.REASON_DENIED,
        c.CONDITION_RESOURCES: c.REASON_DENIED,
    }
    assert says in message(found, c.CONDITION_AUTHENTICATION)
    assert found["status"]["resources"] == {}


async def test_a_cordoned_tenant_keeps_its_grant_under_a_cordoned_quota(
    admin: Client, kubeconfig: Path
) -> None:
    await add_node(admin, "a")
    namespace = await add_tenant(admin, "rome")
    options = dataclasses.replace(CONTROLLER_OPTIONS, quota_enforcement="Soft")
    async with running(admin, kubeconfig, resourceslice.setup, options=options):
        await request_slice(admin, "rome", {"cpu": "1"})
        await wait_answer(admin, "rome")
        await admin.patch(TENANTS, "rome", {"spec": {"tenantCondition": "Cordoned"}}, namespace=namespace)

        async def cordoned() -> bool:
            try:
                quota = await admin.get(QUOTAS, "rome", namespace=namespace)
            except NotFoundError:
                return False
            return bool(quota["spec"]["cordoned"]) and quota["spec"]["limitsEnforcement"] == "Soft"

        await eventually(cordoned, within=10)
        found = await admin.get(RESOURCESLICES, "rome", namespace=namespace)
    assert reasons(found) == {
        c.CONDITION_AUTHENTICATION: c.REASON_DENIED,
        c.CONDITION_RESOURCES: c.REASON_ACCEPTED,
    }
    assert found["status"]["resources"] == {"cpu": "1"}


def reconciles(manager: Manager) -> float:
    """How many times the ResourceSlice controller reconciled so far."""
    return sum(
        sample.value
        for metric in manager.registry.collect()
        if metric.name == "controller_runtime_reconcile"
        for sample in metric.samples
        if sample.name.endswith("_total") and sample.labels.get("controller") == resourceslice.NAME
    )


async def test_pod_status_updates_requeue_no_slice_and_a_grant_as_asked_follows_nothing(
    admin: Client, kubeconfig: Path
) -> None:
    """A provider's pods change status all the time; only what changes a node's free resources (a pod bound,
    finished, deleted) looks at slices again, and only at those whose grant follows free resources."""
    await add_node(admin, "a")
    await add_pod(admin, "a", cpu="500m", memory="256Mi")
    for consumer in ("fixed", "share"):
        await add_tenant(admin, consumer)
    await request_slice(admin, "fixed", {"cpu": "1", "memory": "1Gi"})
    await request_slice(admin, "share")
    async with running(admin, kubeconfig, resourceslice.setup, options=CONTROLLER_OPTIONS) as manager:
        fixed = await wait_answer(admin, "fixed")
        share = await wait_answer(admin, "share")
        assert reasons(fixed)[c.CONDITION_RESOURCES] == c.REASON_ACCEPTED
        assert forge.follows_free_resources(share) and not forge.follows_free_resources(fixed)
        await asyncio.sleep(1)
        before = reconciles(manager)
        for i in range(10):
            ready = "True" if i % 2 else "False"
            await admin.patch_status(
                PODS,
                "load-a",
                {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": ready}]}},
                namespace="default",
            )
            await asyncio.sleep(0.05)
        await asyncio.sleep(1)
        assert reconciles(manager) == before
        await admin.patch_status(PODS, "load-a", {"status": {"phase": "Succeeded"}}, namespace="default")
        await eventually(lambda: reconciles(manager) > before, within=10)
