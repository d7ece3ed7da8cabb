"""The consumer's VirtualNode controller against an emulator, running as the controller manager's ServiceAccount."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from playground.controllers import gc
from runtime.api import constants as c
from runtime.api.crds import VIRTUALNODES
from runtime.api.kinds import (
    CLUSTERROLEBINDINGS,
    CLUSTERROLES,
    DEPLOYMENTS,
    NAMESPACES,
    NODES,
    ROLEBINDINGS,
    ROLES,
    SECRETS,
    SERVICEACCOUNTS,
)
from runtime.api.objects import JSON
from runtime.controllers.offloading import virtualnode
from runtime.controllers.options import ControllerOptions
from runtime.core import Client, ForbiddenError, NotFoundError, Resource
from runtime.forge.virtualnode import virtual_node
from tests.playground.conftest import eventually
from tests.playground.conftest import running as run_components

from .installed import OPTIONS, install, running

NAMESPACE = f"{c.TENANT_NAMESPACE_PREFIX}rome"
VK = "liqo-vk-rome"
PROVIDER_ID = "5f1e0c2a-8d6b-4e0f-b3a7-1c2d3e4f5a6b"
CONTROLLER_OPTIONS = ControllerOptions(
    namespace=OPTIONS.namespace, image="registry.local/runtime:test", virtual_node_deletion_timeout=60.0
)
NAMESPACED = [
    (SERVICEACCOUNTS, "ServiceAccount"),
    (ROLES, "Role"),
    (ROLEBINDINGS, "RoleBinding"),
    (DEPLOYMENTS, "Deployment"),
]


@pytest.fixture
async def admin(kubeconfig: Path) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(kubeconfig) as api:
        await install(api)
        await api.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        for name in ("liqo-credential-rome", "unrelated"):
            await api.create(
                SECRETS, {"metadata": {"name": name, "namespace": NAMESPACE}, "stringData": {"k": "v"}}
            )
        yield api


async def create_virtual_node(admin: Client) -> JSON:
    body = virtual_node(
        "rome",
        namespace=NAMESPACE,
        cluster_id=PROVIDER_ID,
        resource_slice_name="milan",
        resources={"cpu": "2", "memory": "4Gi", "pods": "110"},
        credential_secret="liqo-credential-rome",
    )
    return await admin.create(VIRTUALNODES, body)


async def exists(admin: Client, resource: Resource, name: str, namespace: str | None = None) -> bool:
    try:
        await admin.get(resource, name, namespace=namespace)
    except NotFoundError:
        return False
    return True


async def conditions_of(admin: Client) -> dict[str, tuple[str, str]]:
    found = await admin.get(VIRTUALNODES, "rome", namespace=NAMESPACE)
    return {
        e["type"]: (e["status"], e["reason"]) for e in (found.get("status") or {}).get("conditions") or []
    }


async def all_there(admin: Client) -> bool:
    checks = [exists(admin, resource, VK, NAMESPACE) for resource, _ in NAMESPACED]
    checks += [exists(admin, CLUSTERROLES, VK), exists(admin, CLUSTERROLEBINDINGS, VK)]
    return all(await asyncio.gather(*checks))


async def add_virtual_node_object(admin: Client) -> None:
    """The Node the virtual kubelet would register (made by hand: no virtual kubelet runs here)."""
    labels = {c.LABEL_TYPE: c.TYPE_VIRTUAL_NODE, c.LABEL_REMOTE_CLUSTER_ID: PROVIDER_ID}
    await admin.create(NODES, {"metadata": {"name": "liqo-rome", "labels": labels}})
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "provider reachable"}
    await admin.patch_status(NODES, "liqo-rome", {"status": {"conditions": [ready]}})


async def test_a_virtual_node_gets_its_virtual_kubelet_and_reports_it(
    admin: Client, kubeconfig: Path
) -> None:
    async with running(admin, kubeconfig, virtualnode.setup, options=CONTROLLER_OPTIONS):
        await create_virtual_node(admin)
        await eventually(lambda: all_there(admin), within=15)

        deployment = await admin.get(DEPLOYMENTS, VK, namespace=NAMESPACE)
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        assert container["image"] == "registry.local/runtime:test"
        assert container["args"][0] == f"--virtual-node={NAMESPACE}/rome"
        owner = deployment["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"]) == ("VirtualNode", "rome")
        assert deployment["metadata"]["managedFields"][0]["manager"] == c.FIELD_MANAGER_CONTROLLER_MANAGER
        found = await admin.get(VIRTUALNODES, "rome", namespace=NAMESPACE)
        assert c.FINALIZER_VIRTUALNODE in found["metadata"]["finalizers"]

        async def waiting() -> bool:
            return (await conditions_of(admin)).get(c.CONDITION_READY, ("", ""))[0] == "False"

        await eventually(waiting, within=10)
        reported = await conditions_of(admin)
        assert reported[c.CONDITION_VIRTUAL_KUBELET] == ("False", "Unavailable")
        assert reported[c.CONDITION_NODE] == ("False", "NotRegistered")

        # the Deployment turns available and the node registers: the virtual node is Ready
        available = {
            "type": "Available",
            "status": "True",
            "reason": "MinimumReplicasAvailable",
            "message": "ok",
        }
        await admin.patch_status(
            DEPLOYMENTS,
            VK,
            {"status": {"replicas": 1, "availableReplicas": 1, "conditions": [available]}},
            namespace=NAMESPACE,
        )
        await add_virtual_node_object(admin)

        async def ready() -> bool:
            return (await conditions_of(admin)).get(c.CONDITION_READY) == ("True", "Ready")

        await eventually(ready, within=10)
        found = await admin.get(VIRTUALNODES, "rome", namespace=NAMESPACE)
        assert found["status"]["nodeName"] == "liqo-rome"

        # drift is repaired: a deleted Role comes back
        await admin.delete(ROLES, VK, namespace=NAMESPACE)
        await eventually(lambda: exists(admin, ROLES, VK, NAMESPACE), within=10)


async def test_a_binding_from_an_older_install_is_rebound_to_the_virtual_kubelet_s_own_role(
    admin: Client, kubeconfig: Path
) -> None:
    """Installs before the per-virtual-kubelet ClusterRole bound the shared `liqo-virtual-kubelet` (roleRef is
    immutable, so an apply alone cannot move it)."""
    role_ref = {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "liqo-virtual-kubelet",
    }
    subject = {"kind": "ServiceAccount", "name": VK, "namespace": NAMESPACE}
    labels = {c.LABEL_COMPONENT: "virtual-kubelet", c.LABEL_VIRTUAL_NODE_NAME: "rome"}
    await admin.create(
        CLUSTERROLEBINDINGS,
        {"metadata": {"name": VK, "labels": labels}, "roleRef": role_ref, "subjects": [subject]},
    )
    async with running(admin, kubeconfig, virtualnode.setup, options=CONTROLLER_OPTIONS):
        await create_virtual_node(admin)

        async def rebound() -> bool:
            binding = await admin.get(CLUSTERROLEBINDINGS, VK)
            return bool(binding["roleRef"]["name"] == VK)

        await eventually(rebound, within=15)


async def test_the_virtual_kubelet_may_read_its_credential_and_no_other_secret(
    admin: Client, kubeconfig: Path
) -> None:
    async with running(admin, kubeconfig, virtualnode.setup, options=CONTROLLER_OPTIONS):
        await create_virtual_node(admin)
        await eventually(lambda: all_there(admin), within=15)
    review = await admin.create(
        SERVICEACCOUNTS,
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 600},
        },
        namespace=NAMESPACE,
        name=VK,
        subresource="token",
    )
    config = yaml.safe_load(await asyncio.to_thread(kubeconfig.read_text))
    config["users"][0]["user"] = {"token": review["status"]["token"]}
    async with await Client.from_kubeconfig_dict(config) as kubelet:
        assert (await kubelet.get(SECRETS, "liqo-credential-rome", namespace=NAMESPACE))["metadata"]["name"]
        with pytest.raises(ForbiddenError):
            await kubelet.get(SECRETS, "unrelated", namespace=NAMESPACE)
        with pytest.raises(ForbiddenError):
            await kubelet.list(SECRETS, namespace=NAMESPACE)
        # what the ClusterRole gives: its VirtualNode
        assert (await kubelet.get(VIRTUALNODES, "rome", namespace=NAMESPACE))["spec"][
            "clusterID"
        ] == PROVIDER_ID


async def deleted_everything(admin: Client) -> bool:
    gone = [
        not await exists(admin, resource, VK, NAMESPACE)
        for resource, kind in NAMESPACED
        if kind != "Deployment"
    ]
    return (
        all(gone)
        and not await exists(admin, CLUSTERROLEBINDINGS, VK)
        and not await exists(admin, CLUSTERROLES, VK)
        and not await exists(admin, NODES, "liqo-rome")
        and not await exists(admin, VIRTUALNODES, "rome", NAMESPACE)
    )


@contextlib.asynccontextmanager
async def garbage_collector(kubeconfig: Path) -> AsyncIterator[None]:
    """The playground's garbage collector (it completes foreground deletions)."""
    async with run_components(kubeconfig, gc.setup):
        yield


async def test_deleting_the_virtual_node_removes_its_virtual_kubelet_and_node(
    admin: Client, kubeconfig: Path
) -> None:
    async with (
        garbage_collector(kubeconfig),
        running(admin, kubeconfig, virtualnode.setup, options=CONTROLLER_OPTIONS),
    ):
        await create_virtual_node(admin)
        await eventually(lambda: all_there(admin), within=15)
        await add_virtual_node_object(admin)
        await admin.delete(VIRTUALNODES, "rome", namespace=NAMESPACE)
        # well within the 60 s bound: the Deployment went first, then everything else
        await eventually(lambda: deleted_everything(admin), within=20)
        assert not await exists(admin, DEPLOYMENTS, VK, NAMESPACE)


async def test_a_slow_deployment_deletion_does_not_hold_the_virtual_node_forever(
    admin: Client, kubeconfig: Path
) -> None:
    options = dataclasses.replace(CONTROLLER_OPTIONS, virtual_node_deletion_timeout=2.0)
    # no garbage collector: the foreground deletion of the Deployment never completes
    async with running(admin, kubeconfig, virtualnode.setup, options=options):
        await create_virtual_node(admin)
        await eventually(lambda: all_there(admin), within=15)
        await add_virtual_node_object(admin)
        await admin.delete(VIRTUALNODES, "rome", namespace=NAMESPACE)
        await eventually(lambda: deleted_everything(admin), within=20)
    lingering = await admin.get(DEPLOYMENTS, VK, namespace=NAMESPACE)
    assert lingering["metadata"]["deletionTimestamp"]


async def test_a_node_that_is_not_a_virtual_node_is_left_alone(admin: Client, kubeconfig: Path) -> None:
    options = dataclasses.replace(CONTROLLER_OPTIONS, virtual_node_deletion_timeout=1.0)
    await admin.create(NODES, {"metadata": {"name": "liqo-rome"}})
    async with running(admin, kubeconfig, virtualnode.setup, options=options):
        await create_virtual_node(admin)
        await eventually(lambda: all_there(admin), within=15)
        await admin.delete(VIRTUALNODES, "rome", namespace=NAMESPACE)

        async def gone() -> bool:
            return not await exists(admin, VIRTUALNODES, "rome", NAMESPACE)

        await eventually(gone, within=20)
    assert await exists(admin, NODES, "liqo-rome")
