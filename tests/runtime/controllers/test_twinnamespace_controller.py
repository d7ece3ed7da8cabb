"""The provider's twin namespace controller against an emulator, as the controller manager's ServiceAccount.

What a hostile (or unlucky) consumer meets: a namespace that appears while its twin is
being created is never handed to it, it holds no more twin namespaces than the cap, and
its twin namespaces enforce the Pod Security level its map asks for.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any, cast

from runtime.api import constants as c
from runtime.api.crds import NAMESPACEMAPS, TENANTS
from runtime.api.kinds import EVENTS, NAMESPACES, ROLEBINDINGS
from runtime.api.objects import JSON
from runtime.controllers.offloading import twinnamespace
from runtime.controllers.options import ControllerOptions
from runtime.core import Client, EventRecorder, Manager, NotFoundError, Request, Resource, Settings
from runtime.forge import namespaces as forge
from runtime.forge import podsecurity
from runtime.forge.tenant import tenant, tenant_namespace_name
from tests.playground.conftest import eventually

from .installed import OPTIONS, controller_manager_client, running

CONTROLLER_OPTIONS = ControllerOptions(namespace=OPTIONS.namespace)


@dataclasses.dataclass
class Consumer:
    name: str
    cluster_id: str

    @property
    def namespace(self) -> str:
        return tenant_namespace_name(self.name)


async def consumer(admin: Client) -> Consumer:
    """A consumer's tenant namespace and its Active Tenant, as the auth service leaves them."""
    found = Consumer(name=f"c{uuid.uuid4().hex[:8]}", cluster_id=str(uuid.uuid4()))
    await admin.create(NAMESPACES, {"metadata": {"name": found.namespace}})
    await admin.create(
        TENANTS, tenant(cluster_id=found.cluster_id, cluster_name=found.name, public_key="a2V5")
    )
    return found


async def namespace_map(
    admin: Client, who: Consumer, desired: dict[str, str], *, name: str = "milan", level: str = "baseline"
) -> JSON:
    """The copy of the consumer's NamespaceMap in its tenant namespace, as its controller writes it."""
    local = forge.namespace_map(
        name,
        namespace="liqo-tenant-milan",
        cluster_id=OPTIONS.cluster_id,
        desired=desired,
        pod_security=podsecurity.level(level),
    )
    body = forge.replica_namespace_map(
        local, remote_namespace=who.namespace, origin_cluster_id=who.cluster_id
    )
    return await admin.create(NAMESPACEMAPS, body)


async def mapping(admin: Client, who: Consumer, name: str = "milan") -> dict[str, JSON]:
    return forge.current_mapping(await admin.get(NAMESPACEMAPS, name, namespace=who.namespace))


async def get(admin: Client, resource: Resource, name: str, namespace: str | None = None) -> JSON | None:
    try:
        return await admin.get(resource, name, namespace=namespace)
    except NotFoundError:
        return None


class RacingClient:
    """The controller's client, with someone else creating namespace `taken` right after the controller read
    it and found nothing: the create that follows meets AlreadyExists."""

    def __init__(self, client: Client, admin: Client, *, taken: str) -> None:
        self._client = client
        self._admin = admin
        self._taken = taken

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def get(self, resource: Resource, name: str, **options: Any) -> JSON:
        try:
            return await self._client.get(resource, name, **options)
        except NotFoundError:
            if resource is NAMESPACES and name == self._taken:
                self._taken = ""
                await self._admin.create(
                    NAMESPACES, {"metadata": {"name": name, "labels": {"owner": "someone"}}}
                )
            raise


@contextlib.asynccontextmanager
async def reconciler(
    api: Client, writer: Any
) -> AsyncIterator[tuple[twinnamespace.TwinNamespaceReconciler, Manager]]:
    """The controller's reconciler over informers of `api`, writing through `writer`, called by the test."""
    manager = Manager(api, settings=Settings(server=None))
    found = twinnamespace.TwinNamespaceReconciler(
        cast(Client, writer),
        namespace_maps=manager.informer(NAMESPACEMAPS, label_selector=c.LABEL_ORIGIN_CLUSTER_ID),
        tenants=manager.informer(TENANTS),
        twins=manager.informer(NAMESPACES, label_selector=c.LABEL_ORIGIN_CLUSTER_ID),
        role_bindings=manager.informer(ROLEBINDINGS, label_selector=c.LABEL_ORIGIN_CLUSTER_ID),
        recorder=EventRecorder(api, component=twinnamespace.EVENT_COMPONENT),
        options=CONTROLLER_OPTIONS,
    )
    task = asyncio.create_task(manager.run(), name="informers under test")
    try:
        await asyncio.wait_for(manager.informers.wait_synced(), 10)
        yield found, manager
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_namespace_made_by_someone_else_during_the_create_never_gets_the_consumers_binding(
    admin: Client, kubeconfig: Path
) -> None:
    who = await consumer(admin)
    twin = f"shop-{uuid.uuid4().hex[:6]}"
    created = await namespace_map(admin, who, {"shop": twin})
    request = Request(who.namespace, "milan")
    async with (
        await controller_manager_client(admin, kubeconfig) as api,
        reconciler(api, RacingClient(api, admin, taken=twin)) as (found, manager),
    ):
        maps = manager.informer(NAMESPACEMAPS, label_selector=c.LABEL_ORIGIN_CLUSTER_ID).store
        await found.reconcile(request)  # adds the finalizer, and looks again once it is seen

        def finalized() -> bool:
            current = maps.get("milan", namespace=who.namespace) or created
            return c.FINALIZER_NAMESPACEMAP in (current["metadata"].get("finalizers") or [])

        await eventually(finalized, within=10)
        await found.reconcile(request)
    assert await get(admin, ROLEBINDINGS, who.namespace, namespace=twin) is None
    entry = (await mapping(admin, who))["shop"]
    assert entry["phase"] == c.MAPPING_CREATION_LOOP_BACKOFF
    assert f"namespace {twin} already exists on this cluster and is not a twin namespace" in entry["message"]
    events = (await admin.list(EVENTS, namespace=who.namespace)).items
    assert any(e["reason"] == "TwinNamespaceTaken" and twin in e["message"] for e in events)
    assert (await admin.get(NAMESPACES, twin))["metadata"]["labels"]["owner"] == "someone"


async def test_a_consumer_holds_no_more_twin_namespaces_than_the_cap(admin: Client, kubeconfig: Path) -> None:
    who = await consumer(admin)
    tag = uuid.uuid4().hex[:6]
    await namespace_map(admin, who, {"a": f"a-{tag}", "b": f"b-{tag}"}, name="milan")
    await namespace_map(admin, who, {"c": f"c-{tag}", "d": f"d-{tag}"}, name="naples")
    options = dataclasses.replace(CONTROLLER_OPTIONS, max_twin_namespaces=3)
    async with running(admin, kubeconfig, twinnamespace.setup, options=options):

        async def entries() -> list[JSON]:
            return [
                *(await mapping(admin, who, "milan")).values(),
                *(await mapping(admin, who, "naples")).values(),
            ]

        async def settled() -> bool:
            return len(await entries()) == 4

        await eventually(settled, within=20)
        found = await entries()
    phases = sorted(entry["phase"] for entry in found)
    assert phases == [c.MAPPING_ACCEPTED] * 3 + [c.MAPPING_CREATION_LOOP_BACKOFF]
    refused = next(entry for entry in found if entry["phase"] == c.MAPPING_CREATION_LOOP_BACKOFF)
    assert (
        "holds 3 twin namespaces on this cluster, the most it may (max_twin_namespaces 3)"
        in refused["message"]
    )
    assert await get(admin, NAMESPACES, refused["remoteNamespace"]) is None


async def test_twin_namespaces_enforce_the_pod_security_level_the_map_asks_for(
    admin: Client, kubeconfig: Path
) -> None:
    who = await consumer(admin)
    twin = f"shop-{uuid.uuid4().hex[:6]}"
    await namespace_map(admin, who, {"shop": twin}, level="restricted")

    async def level_of() -> str | None:
        found = await get(admin, NAMESPACES, twin)
        labels = ((found or {}).get("metadata") or {}).get("labels") or {}
        return labels.get(c.LABEL_POD_SECURITY_ENFORCE)

    async with running(admin, kubeconfig, twinnamespace.setup, options=CONTROLLER_OPTIONS):
        await eventually(lambda: _is(level_of(), "restricted"), within=20)
        labels = (await admin.get(NAMESPACES, twin))["metadata"]["labels"]
        assert labels[c.LABEL_POD_SECURITY_ENFORCE_VERSION] == podsecurity.VERSION
        await admin.patch(
            NAMESPACEMAPS, "milan", {"spec": {"podSecurity": "baseline"}}, namespace=who.namespace
        )
        await eventually(lambda: _is(level_of(), "baseline"), within=20)


async def _is(value: Awaitable[str | None], expected: str) -> bool:
    return await value == expected
