"""The provider's Tenant controller against an emulator, running as the controller manager's ServiceAccount."""

from __future__ import annotations

import copy
import dataclasses
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runtime.api import constants as c
from runtime.api.crds import IDENTITIES, RESOURCESLICES, TENANTS
from runtime.api.kinds import (
    CLUSTERROLEBINDINGS,
    CLUSTERROLES,
    EVENTS,
    NAMESPACES,
    ROLEBINDINGS,
    SERVICEACCOUNTS,
)
from runtime.api.objects import JSON
from runtime.api.timestamps import rfc3339
from runtime.controllers.authentication.tenant import setup
from runtime.controllers.options import ControllerOptions
from runtime.core import Client, NotFoundError
from runtime.forge.rbac import cluster_roles
from runtime.forge.tenant import (
    CONSUMER_ROLE_BINDING,
    CONSUMER_SERVICE_ACCOUNT,
    tenant,
    tenant_namespace_name,
)
from tests.playground.conftest import eventually
from tests.runtime.auth.cluster import NAMESPACE, controllers, hours_ago, service_account_client

OPTIONS = ControllerOptions(namespace=NAMESPACE)


async def make_tenant(admin: Client, *, finalizer: bool = False) -> JSON:
    """A Tenant made by hand in a plain namespace (as if the auth service had stopped half-way)."""
    name = f"c{uuid.uuid4().hex[:10]}"
    await admin.create(NAMESPACES, {"metadata": {"name": tenant_namespace_name(name)}})
    body = tenant(cluster_id=str(uuid.uuid4()), cluster_name=name, public_key="a2V5")
    if not finalizer:
        del body["metadata"]["finalizers"]
    return await admin.create(TENANTS, body)


async def fresh(admin: Client, obj: JSON) -> JSON | None:
    try:
        return await admin.get(TENANTS, obj["metadata"]["name"], namespace=obj["metadata"]["namespace"])
    except NotFoundError:
        return None


def conditions_of(obj: JSON | None) -> dict[str, tuple[str, str]]:
    items = ((obj or {}).get("status") or {}).get("conditions") or []
    return {item["type"]: (item["status"], item["reason"]) for item in items}


async def add_slice(admin: Client, namespace: str, name: str = "default") -> None:
    await admin.create(
        RESOURCESLICES,
        {
            "apiVersion": RESOURCESLICES.api_version,
            "kind": RESOURCESLICES.kind,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"consumerClusterID": str(uuid.uuid4())},
        },
    )


async def exists(admin: Client, resource: Any, name: str, namespace: str | None = None) -> bool:
    try:
        await admin.get(resource, name, namespace=namespace)
    except NotFoundError:
        return False
    return True


def has(check: Callable[[JSON | None], bool], admin: Client, obj: JSON) -> Callable[[], Any]:
    async def condition() -> bool:
        return check(await fresh(admin, obj))

    return condition


async def test_a_tenant_gets_its_finalizer_namespace_labels_account_binding_and_status(
    admin: Client, manager_client: Client
) -> None:
    obj = await make_tenant(admin)
    ns = obj["metadata"]["namespace"]
    async with controllers(manager_client, setup, options=OPTIONS):
        await eventually(has(lambda t: conditions_of(t).get("Ready") == ("True", "Provisioned"), admin, obj))
    current = await fresh(admin, obj)
    assert current is not None
    assert c.FINALIZER_TENANT in current["metadata"]["finalizers"]
    assert current["status"]["tenantNamespace"] == ns
    assert conditions_of(current)["Active"] == ("True", "Active")
    labels = (await admin.get(NAMESPACES, ns))["metadata"]["labels"]
    assert labels[c.LABEL_TENANT_NAMESPACE] == "true"
    assert labels[c.LABEL_REMOTE_CLUSTER_ID] == obj["spec"]["clusterID"]
    assert await exists(admin, SERVICEACCOUNTS, CONSUMER_SERVICE_ACCOUNT, ns)
    binding = await admin.get(ROLEBINDINGS, CONSUMER_ROLE_BINDING, namespace=ns)
    assert binding["subjects"][0]["namespace"] == ns


async def test_drift_is_repaired(admin: Client, manager_client: Client) -> None:
    obj = await make_tenant(admin)
    ns = obj["metadata"]["namespace"]
    async with controllers(manager_client, setup, options=OPTIONS):
        await eventually(has(lambda t: conditions_of(t).get("Ready") == ("True", "Provisioned"), admin, obj))
        await admin.delete(SERVICEACCOUNTS, CONSUMER_SERVICE_ACCOUNT, namespace=ns)
        binding = await admin.get(ROLEBINDINGS, CONSUMER_ROLE_BINDING, namespace=ns)
        binding["subjects"] = [{"kind": "ServiceAccount", "name": "intruder", "namespace": "default"}]
        await admin.replace(ROLEBINDINGS, binding)
        await admin.patch(
            NAMESPACES, ns, {"metadata": {"labels": {c.LABEL_REMOTE_CLUSTER_ID: "someone-else"}}}
        )

        async def repaired() -> bool:
            binding = await admin.get(ROLEBINDINGS, CONSUMER_ROLE_BINDING, namespace=ns)
            labels = (await admin.get(NAMESPACES, ns))["metadata"]["labels"]
            return (
                await exists(admin, SERVICEACCOUNTS, CONSUMER_SERVICE_ACCOUNT, ns)
                and binding["subjects"][0]["name"] == CONSUMER_SERVICE_ACCOUNT
                and labels[c.LABEL_REMOTE_CLUSTER_ID] == obj["spec"]["clusterID"]
            )

        await eventually(repaired)
    events = (await admin.list(EVENTS, namespace=ns)).items
    assert any(e["reason"] == "Repaired" and e["involvedObject"]["kind"] == "Tenant" for e in events)


async def test_cordon_marks_the_slices_drain_removes_access_and_active_restores_it(
    admin: Client, manager_client: Client
) -> None:
    obj = await make_tenant(admin)
    ns = obj["metadata"]["namespace"]
    await add_slice(admin, ns)

    async def cordon_annotation() -> str | None:
        item = await admin.get(RESOURCESLICES, "default", namespace=ns)
        return (item["metadata"].get("annotations") or {}).get(c.ANNOTATION_CORDON_TENANT)

    async def set_condition(value: str) -> None:
        await admin.patch(
            TENANTS, obj["metadata"]["name"], {"spec": {"tenantCondition": value}}, namespace=ns
        )

    async with controllers(manager_client, setup, options=OPTIONS):
        await eventually(has(lambda t: conditions_of(t).get("Active") == ("True", "Active"), admin, obj))
        await set_condition("Cordoned")
        await eventually(has(lambda t: conditions_of(t).get("Active") == ("False", "Cordoned"), admin, obj))
        assert await cordon_annotation() == "true"
        await set_condition("Active")
        await eventually(has(lambda t: conditions_of(t).get("Active") == ("True", "Active"), admin, obj))
        assert await cordon_annotation() is None

        await set_condition("Drained")
        await eventually(has(lambda t: conditions_of(t).get("Active") == ("False", "Drained"), admin, obj))
        assert not await exists(admin, ROLEBINDINGS, CONSUMER_ROLE_BINDING, ns)
        assert not await exists(admin, RESOURCESLICES, "default", ns)
        await set_condition("Active")

        async def bound_again() -> bool:
            return await exists(admin, ROLEBINDINGS, CONSUMER_ROLE_BINDING, ns)

        await eventually(bound_again)


async def test_deleting_a_tenant_deletes_its_namespace_and_releases_the_finalizer(
    admin: Client, manager_client: Client
) -> None:
    obj = await make_tenant(admin)
    ns = obj["metadata"]["namespace"]
    async with controllers(manager_client, setup, options=OPTIONS):
        await eventually(has(lambda t: conditions_of(t).get("Ready") == ("True", "Provisioned"), admin, obj))
        await admin.delete(TENANTS, obj["metadata"]["name"], namespace=ns)
        await eventually(has(lambda t: t is None, admin, obj))
    namespace = await admin.get(NAMESPACES, ns)
    assert namespace["metadata"].get("deletionTimestamp")


async def test_a_namespace_shared_with_this_clusters_own_peering_keeps_it_and_loses_the_tenants_objects(
    admin: Client, manager_client: Client
) -> None:
    obj = await make_tenant(admin)
    ns = obj["metadata"]["namespace"]
    await add_slice(admin, ns)
    identity = {
        "apiVersion": IDENTITIES.api_version,
        "kind": IDENTITIES.kind,
        "metadata": {"name": obj["metadata"]["name"], "namespace": ns},
        "spec": {"clusterID": obj["spec"]["clusterID"]},
    }
    await admin.create(IDENTITIES, identity)
    async with controllers(manager_client, setup, options=OPTIONS):
        await eventually(has(lambda t: conditions_of(t).get("Ready") == ("True", "Provisioned"), admin, obj))
        await admin.delete(TENANTS, obj["metadata"]["name"], namespace=ns)
        await eventually(has(lambda t: t is None, admin, obj))
    assert not (await admin.get(NAMESPACES, ns))["metadata"].get("deletionTimestamp")
    assert await exists(admin, IDENTITIES, obj["metadata"]["name"], ns)
    for resource, name in (
        (RESOURCESLICES, "default"),
        (SERVICEACCOUNTS, CONSUMER_SERVICE_ACCOUNT),
        (ROLEBINDINGS, CONSUMER_ROLE_BINDING),
    ):
        assert not await exists(admin, resource, name, ns), resource.kind


async def test_a_namespace_that_is_not_the_tenants_is_left_alone(
    admin: Client, manager_client: Client
) -> None:
    obj = await make_tenant(admin, finalizer=True)
    ns = obj["metadata"]["namespace"]
    await admin.patch(NAMESPACES, ns, {"metadata": {"labels": {c.LABEL_TENANT_NAMESPACE: "true"}}})
    await admin.delete(TENANTS, obj["metadata"]["name"], namespace=ns)
    async with controllers(manager_client, setup, options=OPTIONS):
        await eventually(has(lambda t: t is None, admin, obj))
    assert not (await admin.get(NAMESPACES, ns))["metadata"].get("deletionTimestamp")


async def test_the_finalizer_is_released_within_the_bound_when_the_namespace_cannot_be_deleted(
    admin: Client, installed_kubeconfig: Path
) -> None:
    role = copy.deepcopy(
        next(r for r in cluster_roles() if r["metadata"]["name"] == "liqo-controller-manager")
    )
    role["metadata"] = {"name": "tenant-test-no-namespace-delete"}
    for rule in role["rules"]:
        if "namespaces" in rule["resources"]:
            rule["resources"] = [r for r in rule["resources"] if r != "namespaces"]
    role["rules"].append(
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch", "patch"]}
    )
    await admin.apply(CLUSTERROLES, role, field_manager="test", force=True)
    await admin.apply(
        SERVICEACCOUNTS, {"metadata": {"name": "tenant-test", "namespace": NAMESPACE}}, field_manager="test"
    )
    await admin.apply(
        CLUSTERROLEBINDINGS,
        {
            "metadata": {"name": "tenant-test"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role["metadata"]["name"],
            },
            "subjects": [{"kind": "ServiceAccount", "name": "tenant-test", "namespace": NAMESPACE}],
        },
        field_manager="test",
    )
    obj = await make_tenant(admin)
    ns = obj["metadata"]["namespace"]
    options = dataclasses.replace(OPTIONS, tenant_deletion_timeout=1.0)
    async with (
        await service_account_client(admin, installed_kubeconfig, "tenant-test") as limited,
        controllers(limited, setup, options=options),
    ):
        await eventually(has(lambda t: conditions_of(t).get("Ready") == ("True", "Provisioned"), admin, obj))
        await admin.delete(TENANTS, obj["metadata"]["name"], namespace=ns)
        await eventually(has(lambda t: t is None, admin, obj), within=15)
    assert not (await admin.get(NAMESPACES, ns))["metadata"].get("deletionTimestamp")
    events = (await admin.list(EVENTS, namespace=ns)).items
    left = [e for e in events if e["reason"] == "TenantNamespaceLeft"]
    assert left and left[0]["type"] == "Warning" and "by hand" in left[0]["message"]


async def test_a_tenant_whose_consumer_vanished_is_removed_with_the_slices_it_holds(
    admin: Client, manager_client: Client
) -> None:
    obj = await make_tenant(admin, finalizer=True)
    ns, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
    await add_slice(admin, ns)
    await admin.patch_status(
        TENANTS, name, {"status": {"credentialExpiresAt": rfc3339(hours_ago(2))}}, namespace=ns
    )
    options = dataclasses.replace(OPTIONS, tenant_orphan_grace=3600.0)
    async with controllers(manager_client, setup, options=options):
        await eventually(has(lambda t: t is None, admin, obj), within=15)
    events = (await admin.list(EVENTS, namespace=ns)).items
    removed = [e for e in events if e["reason"] == "OrphanRemoved"]
    assert removed and "1 ResourceSlices" in removed[0]["message"]
    namespace = await admin.get(NAMESPACES, ns)
    assert namespace["metadata"].get("deletionTimestamp"), "the tenant namespace, slices and all, goes too"


async def test_a_recent_credential_keeps_an_empty_tenant(admin: Client, manager_client: Client) -> None:
    obj = await make_tenant(admin)
    ns, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
    await admin.patch_status(
        TENANTS, name, {"status": {"credentialExpiresAt": rfc3339(hours_ago(0.5))}}, namespace=ns
    )
    options = dataclasses.replace(OPTIONS, tenant_orphan_grace=3600.0)
    async with controllers(manager_client, setup, options=options):
        await eventually(has(lambda t: conditions_of(t).get("Ready") == ("True", "Provisioned"), admin, obj))
    # stopping the controllers lets the reconcile that wrote the status finish: had it removed the Tenant, it would show
    current = await fresh(admin, obj)
    assert current is not None and not current["metadata"].get("deletionTimestamp")


async def test_a_tenant_outside_its_namespace_is_reported_misplaced(
    admin: Client, manager_client: Client
) -> None:
    name = f"c{uuid.uuid4().hex[:10]}"
    elsewhere = f"t-{uuid.uuid4().hex[:10]}"
    await admin.create(NAMESPACES, {"metadata": {"name": elsewhere}})
    body = tenant(cluster_id=str(uuid.uuid4()), cluster_name=name, public_key="a2V5")
    body["metadata"]["namespace"] = elsewhere
    obj = await admin.create(TENANTS, body)
    async with controllers(manager_client, setup, options=OPTIONS):
        await eventually(has(lambda t: conditions_of(t).get("Ready") == ("False", "Misplaced"), admin, obj))
    current = await fresh(admin, obj)
    assert current is not None
    message = next(i["message"] for i in current["status"]["conditions"] if i["type"] == "Ready")
    assert tenant_namespace_name(name) in message
    assert not await exists(admin, SERVICEACCOUNTS, CONSUMER_SERVICE_ACCOUNT, elsewhere)
