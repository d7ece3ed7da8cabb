"""Provider side of resource negotiation: answers every ResourceSlice a consumer creates in its tenant namespace.

Each slice gets a status with two conditions, `Authentication` (Accepted when the slice's
namespace holds the Active Tenant of the consumer it names) and `Resources` (Accepted,
Resized or Denied, see `runtime.forge.resourceslice`), the granted amounts, and a Quota of
the same name limiting the consumer to them. Everything is computed from the informers'
caches: nodes, bound pods, the other slices, the Tenants and the cluster identity
ConfigMap's `sharingPercentage`; a change of those looks again at the slices whose grant
follows them (`follows_free_resources`: the default shares and the requests not granted
as asked), so a default share follows the provider's free resources and a cut request
grows back when resources free up (unchanged explicit grants stay, and nothing drops below
what is in use). Of pod events only those that change what a node has free count (a pod
bound, finished, deleted or resized: `node_usage`), not the many status updates.

Grants are decided one at a time (a lock), and each decision counts the grants this
controller wrote even before its cache shows them (the scheduler's "assumed" pods), so two
slices answered back to back never both take the same free resources.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable

from runtime.api import constants as c
from runtime.api.crds import QUOTAS, RESOURCESLICES, TENANTS
from runtime.api.kinds import CONFIGMAPS, NODES, PODS
from runtime.api.objects import JSON, nested
from runtime.api.views import ResourceSliceStatus, TenantSpec
from runtime.core import (
    Client,
    Informer,
    Manager,
    MapFunc,
    NotFoundError,
    PermanentError,
    Request,
    Result,
    TemporaryError,
    object_key,
)
from runtime.forge import conditions
from runtime.forge import resourceslice as forge
from runtime.forge.quota import quota, service_account_user

from ..options import ControllerOptions

logger = logging.getLogger(__name__)


NAME = "resourceslice"
#: how soon a slice is looked at again while the cluster identity ConfigMap is missing
IDENTITY_RETRY = 10.0


class ResourceSliceReconciler:
    def __init__(
        self,
        client: Client,
        *,
        slices: Informer,
        tenants: Informer,
        nodes: Informer,
        pods: Informer,
        quotas: Informer,
        identity: Informer,
        options: ControllerOptions,
    ) -> None:
        self._client = client
        self._slices = slices
        self._tenants = tenants
        self._nodes = nodes
        self._pods = pods
        self._quotas = quotas
        self._identity = identity
        self._options = options
        self._lock = asyncio.Lock()
        #: slice key -> the amounts this controller last granted it (until the slice is deleted)
        self._assumed: dict[str, forge.Amounts] = {}
        slices.add_handler(self._forget_deleted)

    def _forget_deleted(self, kind: str, obj: JSON, old: JSON | None) -> None:
        if kind == "DELETED":
            self._assumed.pop(object_key(obj), None)

    async def reconcile(self, request: Request) -> Result | None:
        resource_slice = self._slices.store.get(request.name, namespace=request.namespace)
        if resource_slice is None or resource_slice["metadata"].get("deletionTimestamp"):
            return None
        tenant = self._tenant(resource_slice)
        authenticated, why = _authentication(resource_slice, tenant)
        percentage = self._sharing_percentage()
        async with self._lock:
            answer = self._answer(
                resource_slice, tenant=tenant, authenticated=authenticated, percentage=percentage
            )
            await self._write_status(resource_slice, authenticated=authenticated, why=why, answer=answer)
        await self._keep_quota(resource_slice, tenant=tenant, answer=answer)
        return None

    def _tenant(self, resource_slice: JSON) -> JSON | None:
        """The Tenant of the slice's namespace (the one of the consumer it names, if there are several)."""
        found = sorted(
            self._tenants.store.items(namespace=resource_slice["metadata"]["namespace"]),
            key=lambda tenant: str(tenant["metadata"]["name"]),
        )
        consumer = nested(resource_slice, "spec", "consumerClusterID")
        return next((t for t in found if nested(t, "spec", "clusterID") == consumer), None) or next(
            iter(found), None
        )

    def _sharing_percentage(self) -> int:
        identity = self._identity.store.get(c.CLUSTER_IDENTITY_CONFIGMAP, namespace=self._options.namespace)
        where = f"{self._options.namespace}/{c.CLUSTER_IDENTITY_CONFIGMAP}"
        if identity is None:
            raise TemporaryError(
                f"{where} not found: install the runtime (it says how much of this cluster to share)",
                delay=IDENTITY_RETRY,
            )
        value = nested(identity, "data", c.IDENTITY_SHARING_PERCENTAGE, default="90")
        try:
            percentage = int(value)
        except ValueError:
            percentage = 0
        if not 0 < percentage <= 100:
            raise PermanentError(
                f"{where}: {c.IDENTITY_SHARING_PERCENTAGE} {value!r} is not a percentage in 1..100"
            )
        return percentage

    def _answer(
        self, resource_slice: JSON, *, tenant: JSON | None, authenticated: bool, percentage: int
    ) -> forge.Grant:
        if not authenticated:
            return _kept(resource_slice) if _may_keep(resource_slice, tenant) else _not_authenticated()
        key = object_key(resource_slice)
        held = forge.total(self._holding(other) for other in self._slices.store if object_key(other) != key)
        free = forge.free_resources(self._nodes.store, self._pods.store)
        available = forge.available(free, sharing_percentage=percentage, held_by_others=held)
        in_use = self._in_use(resource_slice)
        return forge.grant(
            nested(resource_slice, "spec", "resources") or {},
            available=available,
            sharing_percentage=percentage,
            keep=forge.floor(resource_slice, in_use=in_use),
        )

    def _holding(self, resource_slice: JSON) -> forge.Amounts:
        assumed = self._assumed.get(object_key(resource_slice))
        return assumed if assumed is not None else forge.granted(resource_slice)

    def _in_use(self, resource_slice: JSON) -> forge.Amounts:
        meta = resource_slice["metadata"]
        found = self._quotas.store.get(meta["name"], namespace=meta["namespace"])
        return forge.amounts(nested(found, "status", "used"))

    async def _write_status(
        self, resource_slice: JSON, *, authenticated: bool, why: str, answer: forge.Grant
    ) -> None:
        meta = resource_slice["metadata"]
        current = resource_slice.get("status") or {}
        wanted = forge.status(
            generation=meta.get("generation"),
            authenticated=authenticated,
            authentication_message=why,
            answer=answer,
        )
        if (
            (current.get("resources") or {}) != wanted["resources"]
            or current.get("observedGeneration") != wanted["observedGeneration"]
            or (conditions.differs(current.get("conditions"), wanted["conditions"]))
        ):
            wanted["conditions"] = conditions.merged(
                current.get("conditions"), wanted["conditions"], at=conditions.now()
            )
            await self._client.apply(
                RESOURCESLICES,
                {"metadata": {"name": meta["name"], "namespace": meta["namespace"]}, "status": wanted},
                subresource="status",
                field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
                force=True,
            )
            logger.info(
                "%s/%s: resources %s: %s", meta["namespace"], meta["name"], answer.reason, answer.message
            )
        self._assumed[object_key(resource_slice)] = forge.amounts(answer.resources) if answer.accepted else {}

    async def _keep_quota(self, resource_slice: JSON, *, tenant: JSON | None, answer: forge.Grant) -> None:
        meta = resource_slice["metadata"]
        existing = self._quotas.store.get(meta["name"], namespace=meta["namespace"])
        if not answer.accepted or tenant is None:
            if existing is not None:
                with contextlib.suppress(NotFoundError):
                    await self._client.delete(QUOTAS, meta["name"], namespace=meta["namespace"])
                logger.info("%s/%s: nothing granted; Quota deleted", meta["namespace"], meta["name"])
            return
        tenant_spec: TenantSpec = tenant.get("spec") or {}
        wanted = quota(
            resource_slice,
            user=service_account_user(meta["namespace"], str(tenant_spec["serviceAccountName"])),
            limits=answer.resources,
            enforcement=self._options.quota_enforcement,
            cordoned=tenant_spec.get("tenantCondition", "Active") != "Active",
        )
        if existing is not None and _is_same_quota(existing, wanted):
            return
        await self._client.apply(QUOTAS, wanted, field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER, force=True)


def _authentication(resource_slice: JSON, tenant: JSON | None) -> tuple[bool, str]:
    """Whether the slice comes from an Active tenant of this provider, and a sentence saying so or why not."""
    namespace = resource_slice["metadata"]["namespace"]
    consumer = nested(resource_slice, "spec", "consumerClusterID", default="")
    if tenant is None:
        return (
            False,
            f"no Tenant in namespace {namespace}: create ResourceSlices in the consumer's tenant namespace",
        )
    spec: TenantSpec = tenant.get("spec") or {}
    where = f"tenant {namespace}/{tenant['metadata']['name']}"
    if spec.get("clusterID") != consumer:
        return (
            False,
            f"the slice names consumer cluster {consumer!r}, but {where} is cluster {spec.get('clusterID')!r}",
        )
    if tenant["metadata"].get("deletionTimestamp"):
        return False, f"{where} is being deleted"
    if not spec.get("serviceAccountName"):
        return False, f"{where} names no serviceAccountName (the consumer's identity) yet"
    condition = spec.get("tenantCondition", "Active")
    if condition != "Active":
        return (
            False,
            f"{where} is {condition}: it gets no new resources (what it was granted stays, cordoned)",
        )
    return True, f"consumer {spec.get('clusterName') or consumer} is an Active tenant"


def _may_keep(resource_slice: JSON, tenant: JSON | None) -> bool:
    """A cordoned or drained tenant keeps what it was granted (its Quota turns cordoned)."""
    spec = (tenant or {}).get("spec") or {}
    consumer = nested(resource_slice, "spec", "consumerClusterID")
    return (
        tenant is not None
        and not tenant["metadata"].get("deletionTimestamp")
        and spec.get("clusterID") == consumer
        and bool(spec.get("serviceAccountName"))
        and bool(forge.granted(resource_slice))
    )


def _kept(resource_slice: JSON) -> forge.Grant:
    status: ResourceSliceStatus = resource_slice.get("status") or {}
    current = conditions.find(status.get("conditions"), c.CONDITION_RESOURCES) or {}
    return forge.Grant(
        str(current.get("reason") or c.REASON_ACCEPTED),
        str(current.get("message") or ""),
        forge.formatted(forge.granted(resource_slice)),
    )


def _not_authenticated() -> forge.Grant:
    return forge.Grant(c.REASON_DENIED, "resources are granted to consumers that are Active tenants only")


def _is_same_quota(existing: JSON, wanted: JSON) -> bool:
    owners = [ref.get("uid") for ref in existing["metadata"].get("ownerReferences") or []]
    spec = existing.get("spec") or {}
    return wanted["metadata"]["ownerReferences"][0]["uid"] in owners and all(
        spec.get(key) == value for key, value in wanted["spec"].items()
    )


def _slices_following_free_resources(slices: Informer) -> MapFunc:
    """Anything that changes what is free or held -> the slices whose grant follows it (not those granted as
    asked: a grant is a promise)."""

    def requests(obj: JSON) -> Iterable[Request]:
        return [Request.of(item) for item in slices.store if forge.follows_free_resources(item)]

    return requests


def _takes_other_resources(kind: str, pod: JSON, old: JSON | None) -> bool:
    """Whether a pod event changes what the provider's nodes have free (its node, requests, or being counted);
    most pod events (status, conditions) do not."""
    if kind == "DELETED":
        return forge.node_usage(pod) is not None
    return forge.node_usage(pod) != forge.node_usage(old)


def _slices_of_namespace(slices: Informer) -> MapFunc:
    def requests(obj: JSON) -> Iterable[Request]:
        namespace = obj["metadata"].get("namespace")
        return [Request.of(resource_slice) for resource_slice in slices.store.items(namespace=namespace)]

    return requests


def setup(manager: Manager, options: ControllerOptions) -> None:
    slices = manager.informer(RESOURCESLICES)
    tenants = manager.informer(TENANTS)
    nodes = manager.informer(NODES)
    pods = manager.informer(PODS, field_selector="spec.nodeName!=")
    quotas = manager.informer(QUOTAS)
    identity = manager.informer(
        CONFIGMAPS,
        namespace=options.namespace,
        field_selector=f"metadata.name={c.CLUSTER_IDENTITY_CONFIGMAP}",
    )
    reconciler = ResourceSliceReconciler(
        manager.client,
        slices=slices,
        tenants=tenants,
        nodes=nodes,
        pods=pods,
        quotas=quotas,
        identity=identity,
        options=options,
    )
    controller = manager.controller(NAME, reconciler, primary=slices)
    controller.owns(quotas)
    controller.watches(tenants, _slices_of_namespace(slices))
    for informer in (slices, nodes, identity):
        controller.watches(informer, _slices_following_free_resources(slices))
    controller.watches(pods, _slices_following_free_resources(slices), when=_takes_other_resources)
