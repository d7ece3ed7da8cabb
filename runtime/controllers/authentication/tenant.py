"""The Tenant controller (provider side): keeps each consumer's tenant in place, and removes it on deletion.

A Tenant (created by the auth service when a consumer peers) lives in its consumer's
tenant namespace `liqo-tenant-<name>`. For every Tenant this controller:

- keeps the namespace's labels, the ServiceAccount `liqo-consumer` and the RoleBinding
  of `liqo-remote-consumer` as `runtime.forge.tenant` describes them, re-applying
  whatever drifted (server-side apply, field manager `liqo-controller-manager`);
- applies `spec.tenantCondition`: Active keeps the consumer's access; Cordoned keeps it
  but marks the consumer's ResourceSlices `liqo.io/cordon-tenant` so no new resources
  are granted; Drained removes the RoleBinding (the credential can do nothing) and
  deletes the ResourceSlices. Setting Active again undoes either;
- removes a Tenant whose consumer vanished without revoking: its last credential
  expired `tenant_orphan_grace` seconds ago (a live consumer renews it well before). What
  it holds goes with it: its ResourceSlices free what they were granted, its twin
  namespaces and their pods go with its NamespaceMaps;
- on deletion (finalizer `authentication.liqo.io/tenant`) deletes the tenant namespace,
  and with it everything the consumer had here, then releases the finalizer. With
  bidirectional peering the namespace is shared with this cluster's own peering towards
  the consumer (an Identity lives there): then only the consumer's objects go
  (ResourceSlices, Quotas, ServiceAccount, RoleBinding) and the namespace stays for the
  other direction, whose unpeer removes it. The namespace cannot finish while the
  Tenant inside it exists, so the finalizer never waits for it; if the clean-up fails it
  retries with backoff for `tenant_deletion_timeout` seconds, then releases the finalizer
  anyway with a Warning event, so a Tenant never blocks deletion forever.

Status: `tenantNamespace` and two conditions, `Ready` (the objects are in place, or
why not) and `Active` (the tenantCondition in force, with what it means and how to
undo it).
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from runtime.api import constants as c
from runtime.api.crds import IDENTITIES, QUOTAS, RESOURCESLICES, TENANTS
from runtime.api.kinds import NAMESPACES, ROLEBINDINGS, SERVICEACCOUNTS
from runtime.api.objects import JSON, nested
from runtime.api.timestamps import parse_rfc3339, rfc3339
from runtime.api.views import TenantSpec
from runtime.core import (
    APIError,
    Client,
    EventRecorder,
    Informer,
    Manager,
    MapFunc,
    NotFoundError,
    Request,
    Resource,
    Result,
    TemporaryError,
)
from runtime.core.failures import explain
from runtime.forge import conditions
from runtime.forge.tenant import (
    COMPONENT,
    CONSUMER_ROLE_BINDING,
    CONSUMER_SERVICE_ACCOUNT,
    is_tenant_namespace_of,
    role_binding,
    service_account,
    tenant_namespace,
    tenant_namespace_name,
)

from ..options import ControllerOptions

logger = logging.getLogger(__name__)


NAME = "tenant"

EVENT_COMPONENT = "tenant-controller"
CONDITION_READY = "Ready"
CONDITION_ACTIVE = "Active"
ACTIVE, CORDONED, DRAINED = "Active", "Cordoned", "Drained"


def utc_now() -> datetime:
    return datetime.now(UTC)


def covers(actual: Any, desired: Any) -> bool:
    """Whether `actual` holds everything `desired` says (maps: a subset, recursively; anything else: equal)."""
    if isinstance(desired, dict):
        return isinstance(actual, dict) and all(covers(actual.get(k), v) for k, v in desired.items())
    return bool(actual == desired)


def _meta(obj: JSON) -> JSON:
    return obj.get("metadata") or {}


def _is_deleting(obj: JSON) -> bool:
    return bool(_meta(obj).get("deletionTimestamp"))


class TenantReconciler:
    def __init__(
        self,
        client: Client,
        *,
        tenants: Informer,
        namespaces: Informer,
        service_accounts: Informer,
        role_bindings: Informer,
        resource_slices: Informer,
        recorder: EventRecorder,
        options: ControllerOptions,
        now: Callable[[], datetime] = utc_now,
    ) -> None:
        self._client = client
        self._tenants = tenants
        self._namespaces = namespaces
        self._service_accounts = service_accounts
        self._role_bindings = role_bindings
        self._slices = resource_slices
        self._recorder = recorder
        self._options = options
        self._now = now

    async def reconcile(self, request: Request) -> Result | None:
        cached = self._tenants.store.get(request.name, namespace=request.namespace)
        if cached is None:
            return None
        tenant = copy.deepcopy(cached)
        if _is_deleting(tenant):
            await self._finalize(request, tenant)
            return None
        if c.FINALIZER_TENANT not in (_meta(tenant).get("finalizers") or []):
            tenant = await self._add_finalizer(request, tenant)
        spec: TenantSpec = tenant.get("spec") or {}
        cluster_id, cluster_name = (
            str(spec.get("clusterID", "")),
            str(spec.get("clusterName") or request.name),
        )
        generation = int(_meta(tenant).get("generation") or 0)
        expected = tenant_namespace_name(cluster_name)
        if request.namespace != expected:
            message = (
                f"a Tenant of cluster {cluster_name!r} belongs in namespace {expected}: "
                "create it there (the auth service does) and delete this one"
            )
            await self._set_status(
                tenant, [_ready(False, "Misplaced", message, generation)], generation=generation
            )
            return None
        namespace = self._namespaces.store.get(request.namespace)
        if namespace is not None and _is_deleting(namespace):
            message = (
                f"the tenant namespace {request.namespace} is being deleted, and the Tenant with it; "
                "the consumer has to peer again afterwards"
            )
            await self._set_status(
                tenant, [_ready(False, "NamespaceTerminating", message, generation)], generation=generation
            )
            return None
        mode = str(spec.get("tenantCondition") or ACTIVE)
        await self._ensure_objects(
            request, tenant, cluster_id=cluster_id, cluster_name=cluster_name, mode=mode
        )
        slices = self._slices.store.items(namespace=request.namespace)
        await self._apply_mode(request, mode, slices)
        message = (
            f"the tenant namespace, ServiceAccount {CONSUMER_SERVICE_ACCOUNT} and "
            f"RoleBinding {CONSUMER_ROLE_BINDING} are in place"
        )
        await self._set_status(
            tenant,
            [_ready(True, "Provisioned", message, generation), _active(mode, generation)],
            generation=generation,
        )
        return await self._collect_orphan(request, tenant)

    # provisioning

    async def _ensure_objects(
        self, request: Request, tenant: JSON, *, cluster_id: str, cluster_name: str, mode: str
    ) -> None:
        ns = request.namespace
        wanted = [
            (
                NAMESPACES,
                self._namespaces.store.get(ns),
                tenant_namespace(cluster_id=cluster_id, cluster_name=cluster_name),
            ),
            (
                SERVICEACCOUNTS,
                self._service_accounts.store.get(CONSUMER_SERVICE_ACCOUNT, namespace=ns),
                service_account(cluster_id=cluster_id, namespace=ns),
            ),
        ]
        binding = self._role_bindings.store.get(CONSUMER_ROLE_BINDING, namespace=ns)
        if mode != DRAINED:
            wanted.append((ROLEBINDINGS, binding, role_binding(cluster_id=cluster_id, namespace=ns)))
        elif binding is not None:
            await self._delete(ROLEBINDINGS, CONSUMER_ROLE_BINDING, namespace=ns)
            await self._recorder.record(
                tenant,
                reason="AccessRemoved",
                message=f"drained: deleted RoleBinding {CONSUMER_ROLE_BINDING}, the consumer's credential grants nothing",
            )
        for resource, actual, desired in wanted:
            if actual is not None and covers(actual, desired):
                continue
            await self._client.apply(
                resource, desired, field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER, force=True
            )
            what = f"{desired['kind']} {desired['metadata']['name']}"
            if actual is None:
                logger.info("%s: %s was missing (or not yet seen); applied it", request, what)
                continue
            logger.info("%s: %s drifted; re-applied it", request, what)
            await self._recorder.record(tenant, reason="Repaired", message=f"{what} drifted; re-applied it")

    async def _apply_mode(self, request: Request, mode: str, slices: list[JSON]) -> None:
        for item in slices:
            name = str(_meta(item)["name"])
            if mode == DRAINED:
                await self._delete(RESOURCESLICES, name, namespace=request.namespace)
                logger.info("%s: drained: deleted ResourceSlice %s", request, name)
                continue
            cordoned = nested(_meta(item), "annotations", c.ANNOTATION_CORDON_TENANT) == "true"
            if cordoned == (mode == CORDONED):
                continue
            value = "true" if mode == CORDONED else None
            try:
                await self._client.patch(
                    RESOURCESLICES,
                    name,
                    {"metadata": {"annotations": {c.ANNOTATION_CORDON_TENANT: value}}},
                    namespace=request.namespace,
                    field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
                )
            except NotFoundError:
                continue

    async def _collect_orphan(self, request: Request, tenant: JSON) -> Result | None:
        grace = self._options.tenant_orphan_grace
        expires = nested(tenant, "status", "credentialExpiresAt")
        if grace is None or not expires:
            return None
        try:
            deadline = parse_rfc3339(str(expires)) + timedelta(seconds=grace)
        except ValueError:
            return None
        left = (deadline - self._now()).total_seconds()
        if left > 0:
            return Result(requeue_after=left)
        held = len(self._slices.store.items(namespace=request.namespace))
        logger.info(
            "%s: its last credential expired at %s, %g s ago; removing the tenant and the %d ResourceSlices it holds",
            request,
            expires,
            grace - left,
            held,
        )
        await self._recorder.record(
            tenant,
            reason="OrphanRemoved",
            message=f"the consumer's last credential expired at {expires} and was not renewed within "
            f"{grace:g} s: removing the tenant and what it holds ({held} ResourceSlices, its twin namespaces); "
            "the consumer has to peer again",
        )
        await self._delete(TENANTS, request.name, namespace=request.namespace)
        return None

    # deletion

    async def _finalize(self, request: Request, tenant: JSON) -> None:
        finalizers = list(_meta(tenant).get("finalizers") or [])
        if c.FINALIZER_TENANT not in finalizers:
            return
        try:
            await self._clean_up(request, tenant)
        except APIError as exc:
            if self._deleting_for(tenant) < self._options.tenant_deletion_timeout:
                raise TemporaryError(
                    f"could not clean up the tenant namespace {request.namespace}: {exc}"
                ) from exc
            logger.warning(
                "%s: could not clean up the tenant namespace within %g s (%s); releasing the Tenant anyway: "
                "delete namespace %s by hand",
                request,
                self._options.tenant_deletion_timeout,
                exc,
                request.namespace,
            )
            await self._recorder.record(
                tenant,
                type="Warning",
                reason="TenantNamespaceLeft",
                message=f"could not clean up the tenant namespace {request.namespace} "
                f"({explain(exc, advice=False)}); delete it by hand",
            )
        finalizers.remove(c.FINALIZER_TENANT)
        try:
            await self._client.patch(
                TENANTS,
                request.name,
                {"metadata": {"finalizers": finalizers, "resourceVersion": _meta(tenant)["resourceVersion"]}},
                namespace=request.namespace,
                field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
            )
        except NotFoundError:
            return

    async def _clean_up(self, request: Request, tenant: JSON) -> None:
        """Delete the tenant namespace, or only the consumer's objects in it when it is shared.

        With bidirectional peering this cluster's own peering towards the consumer (its
        Identity, credential and VirtualNode) lives in the same namespace, and must stay.
        """
        ns = request.namespace
        try:
            namespace = await self._client.get(NAMESPACES, ns)
        except NotFoundError:
            return
        cluster_id = str(nested(tenant, "spec", "clusterID", default=""))
        if _is_deleting(namespace) or not is_tenant_namespace_of(namespace, cluster_id):
            return
        if (await self._client.list(IDENTITIES, namespace=ns)).items:
            for resource in (RESOURCESLICES, QUOTAS):
                for item in (await self._client.list(resource, namespace=ns)).items:
                    await self._delete(resource, str(item["metadata"]["name"]), namespace=ns)
            await self._delete(ROLEBINDINGS, CONSUMER_ROLE_BINDING, namespace=ns)
            await self._delete(SERVICEACCOUNTS, CONSUMER_SERVICE_ACCOUNT, namespace=ns)
            logger.info(
                "%s: kept the namespace (this cluster's own peering lives there); removed the tenant's objects",
                request,
            )
            await self._recorder.record(
                tenant,
                reason="TenantObjectsDeleted",
                message=f"kept namespace {ns}, where this cluster's own peering with the consumer lives; deleted the "
                f"consumer's ResourceSlices, Quotas, ServiceAccount {CONSUMER_SERVICE_ACCOUNT} and RoleBinding "
                f"{CONSUMER_ROLE_BINDING}",
            )
            return
        with contextlib.suppress(NotFoundError):
            await self._client.delete(NAMESPACES, ns)
        logger.info("%s: deleted the tenant namespace %s", request, ns)
        await self._recorder.record(
            tenant, reason="TenantNamespaceDeleted", message=f"deleted namespace {ns}"
        )

    def _deleting_for(self, tenant: JSON) -> float:
        try:
            since = parse_rfc3339(str(_meta(tenant)["deletionTimestamp"]))
        except (KeyError, ValueError):
            return 0.0
        return (self._now() - since).total_seconds()

    # writes

    async def _add_finalizer(self, request: Request, tenant: JSON) -> JSON:
        meta = _meta(tenant)
        finalizers = [*(meta.get("finalizers") or []), c.FINALIZER_TENANT]
        return await self._client.patch(
            TENANTS,
            request.name,
            {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}},
            namespace=request.namespace,
            field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
        )

    async def _delete(self, resource: Resource, name: str, *, namespace: str) -> None:
        try:
            await self._client.delete(resource, name, namespace=namespace)
        except NotFoundError:
            return

    async def _set_status(self, tenant: JSON, desired: list[JSON], *, generation: int) -> None:
        """Write tenantNamespace, observedGeneration and exactly these conditions, unless nothing changes."""
        meta, status = _meta(tenant), tenant.get("status") or {}
        current = status.get("conditions") or []
        if (
            not conditions.differs(current, desired)
            and len(current) == len(desired)
            and status.get("tenantNamespace") == meta["namespace"]
            and status.get("observedGeneration") == generation
        ):
            return
        patch = {
            "status": {
                "tenantNamespace": meta["namespace"],
                "observedGeneration": generation,
                "conditions": conditions.merged(current, desired, at=rfc3339(self._now())),
            }
        }
        await self._client.patch_status(
            TENANTS,
            meta["name"],
            patch,
            namespace=meta["namespace"],
            field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
        )


def _ready(ok: bool, reason: str, message: str, generation: int) -> JSON:
    return conditions.condition(
        CONDITION_READY, ok, reason=reason, message=message, observed_generation=generation
    )


def _active(mode: str, generation: int) -> JSON:
    """The Active condition for a tenantCondition: what it means and how to undo it."""
    if mode == CORDONED:
        ok, message = (
            False,
            "the consumer keeps what it has but is granted nothing new (its ResourceSlices are marked "
            f"{c.ANNOTATION_CORDON_TENANT}); set spec.tenantCondition to Active to uncordon",
        )
    elif mode == DRAINED:
        ok, message = (
            False,
            f"the consumer's access is removed (RoleBinding {CONSUMER_ROLE_BINDING} deleted) and its ResourceSlices "
            "are deleted; set spec.tenantCondition to Active to let it back",
        )
    else:
        ok, message = True, "the consumer may use this provider within what its ResourceSlices are granted"
    return conditions.condition(
        CONDITION_ACTIVE,
        ok,
        reason=mode if mode in (CORDONED, DRAINED) else ACTIVE,
        message=message,
        observed_generation=generation,
    )


def _in_namespace(tenants: Informer) -> MapFunc:
    """An object in a tenant namespace (or the namespace itself) -> the Tenants in that namespace."""

    def mapped(obj: JSON) -> list[Request]:
        meta = _meta(obj)
        namespace = meta.get("namespace") or meta.get("name")
        return [Request.of(item) for item in tenants.store.items(namespace=str(namespace))]

    return mapped


def setup(manager: Manager, options: ControllerOptions) -> None:
    """Register the Tenant controller with `manager`."""
    tenants = manager.informer(TENANTS)
    namespaces = manager.informer(NAMESPACES, label_selector=c.LABEL_TENANT_NAMESPACE)
    selector = f"{c.LABEL_COMPONENT}={COMPONENT}"
    service_accounts = manager.informer(SERVICEACCOUNTS, label_selector=selector)
    role_bindings = manager.informer(ROLEBINDINGS, label_selector=selector)
    resource_slices = manager.informer(RESOURCESLICES)
    reconciler = TenantReconciler(
        manager.client,
        tenants=tenants,
        namespaces=namespaces,
        service_accounts=service_accounts,
        role_bindings=role_bindings,
        resource_slices=resource_slices,
        recorder=EventRecorder(manager.client, component=EVENT_COMPONENT),
        options=options,
    )
    controller = manager.controller(NAME, reconciler, primary=tenants)
    for informer in (namespaces, service_accounts, role_bindings, resource_slices):
        controller.watches(informer, _in_namespace(tenants))
