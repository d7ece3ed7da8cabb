"""An uninstall lets the runtime finish the deletions under way before it goes, and forces what it cannot.

Seen on real nodes: `terraform destroy` unpeered, the provider began deleting the consumer's
tenant namespace, and its uninstall deleted the controller manager before it released the
NamespaceMap's finalizer there: the namespace stayed Terminating for good. Here no controller
runs at all (only the runtime's CRDs are applied), the worst case of that race.
"""

from __future__ import annotations

from typing import Any

from playground.testing import Playground
from runtime.api import constants as c
from runtime.api.crds import NAMESPACEMAPS
from runtime.api.kinds import NAMESPACES
from runtime.core import APIError, Client, NotFoundError
from runtime.forge.install import install_manifests
from runtime.forge.namespaces import namespace_map
from runtime.forge.tenant import tenant_namespace, tenant_namespace_name
from runtime.operations import install as installer
from tests.playground.conftest import eventually
from tests.runtime.controllers.installed import OPTIONS

CONSUMER_ID = "5f1e4c2a-8d3b-4a6e-9c7f-0e2d1b3a4c5d"


async def apply(api: Client, obj: dict[str, Any]) -> None:
    resource = await api.resource_for(obj["apiVersion"], obj["kind"])
    await api.apply(
        resource, obj, namespace=obj["metadata"].get("namespace"), field_manager=c.FIELD_MANAGER_TERRAFORM
    )


async def applied(api: Client, obj: dict[str, Any]) -> bool:
    """Whether `obj` applies (False while its CRD is not served yet)."""
    try:
        await apply(api, obj)
    except APIError:
        return False
    return True


async def gone(api: Client, name: str) -> bool:
    try:
        await api.get(NAMESPACES, name)
    except NotFoundError:
        return True
    return False


async def test_an_uninstall_releases_a_tenant_namespace_being_deleted(playground: Playground) -> None:
    (cluster,) = await playground.up("settle")
    tenant = tenant_namespace_name("rome")
    async with cluster.client() as api:
        for obj in install_manifests(OPTIONS):
            if obj["kind"] in ("CustomResourceDefinition", "Namespace"):
                await apply(api, obj)
        await apply(api, tenant_namespace(cluster_id=CONSUMER_ID, cluster_name="rome"))
        held = namespace_map("milan", namespace=tenant, cluster_id=CONSUMER_ID, desired={})
        held["metadata"]["finalizers"] = [c.FINALIZER_NAMESPACEMAP]
        await eventually(lambda: applied(api, held), within=30)
        await api.delete(NAMESPACES, tenant)

        async def terminating() -> bool:
            obj = await api.get(NAMESPACEMAPS, "milan", namespace=tenant)
            return bool(obj["metadata"].get("deletionTimestamp"))

        await eventually(terminating, within=30)

        warnings = await installer.uninstall(
            api,
            OPTIONS.namespace,
            force=False,
            purge=False,
            seconds=6,
            field_manager=c.FIELD_MANAGER_TERRAFORM,
        )

        assert warnings == [
            f"NamespaceMap {tenant}/milan was still being deleted by the runtime; its finalizers were "
            "removed so that it goes (objects it created on the remote cluster may be left there)"
        ]
        await eventually(lambda: gone(api, tenant), within=30)
