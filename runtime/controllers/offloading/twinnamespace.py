"""The twin namespace controller (provider side): the namespaces consumers ask for in their NamespaceMaps.

A consumer writes its NamespaceMap's copy into its tenant namespace here (the one place its
credential may write it). Who the consumer is comes from the Tenant in that namespace,
never from the map's own labels. For every local namespace the map lists, this controller:

- creates the twin namespace itself (the consumer's credential cannot create namespaces),
  marked with the map it belongs to and the consumer's cluster id, and labelled for Pod
  Security Admission with the level the map asks for (baseline, or restricted), while the
  Tenant is Active; Cordoned and Drained tenants get no new twin namespace, nor does a
  consumer holding `max_twin_namespaces` already (counted from the API under a lock per
  tenant, so concurrent maps cannot overshoot);
- refuses names it must not hand out (the cluster's own namespaces, the runtime's, tenant
  namespaces) and any namespace that exists without being this map's twin: it is never
  adopted (EnforceSameName clashes end here), the map's status says so
  (`CreationLoopBackOff` with the reason), and the consumer's NamespaceOffloading shows it.
  A namespace someone else creates between the read and the create is read again after
  AlreadyExists and refused the same way (with a Warning Event on the map), so it never
  gets the consumer's RoleBinding;
- binds `liqo-remote-offloading` there to the consumer's ServiceAccount (removed while the
  Tenant is Drained), so the consumer has rights in its twin namespaces and nowhere else;
- reports `Accepted` in the map's `status.currentMapping`.

A namespace that leaves the map is deleted (only if it is this map's twin) and reported
`Terminating` until it is gone. A deleted map (the consumer unoffloads everything, or its
tenant namespace goes at unpeer) deletes all its twin namespaces behind the
`offloading.liqo.io/namespacemap` finalizer, released once they are gone or, at the
latest, `twin_namespace_deletion_timeout` seconds after the deletion began.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime

from runtime.api import constants as c
from runtime.api.crds import NAMESPACEMAPS, TENANTS
from runtime.api.kinds import NAMESPACES, ROLEBINDINGS
from runtime.api.objects import JSON, nested
from runtime.api.timestamps import parse_rfc3339
from runtime.core import (
    AlreadyExistsError,
    Client,
    EventRecorder,
    Informer,
    Manager,
    MapFunc,
    NotFoundError,
    Request,
    Result,
    TemporaryError,
)
from runtime.forge import namespaces as forge
from runtime.forge import podsecurity

from ..options import ControllerOptions

logger = logging.getLogger(__name__)


NAME = "twinnamespace"
EVENT_COMPONENT = "liqo-controller-manager"
#: how soon a map with namespaces still terminating is looked at again (namespace events usually come first)
TERMINATING_POLL = 1.0
_ACTIVE = "Active"
_DRAINED = "Drained"


class TwinNamespaceReconciler:
    def __init__(
        self,
        client: Client,
        *,
        namespace_maps: Informer,
        tenants: Informer,
        twins: Informer,
        role_bindings: Informer,
        recorder: EventRecorder,
        options: ControllerOptions,
    ) -> None:
        self._client = client
        self._maps = namespace_maps
        self._tenants = tenants
        self._twins = twins
        self._bindings = role_bindings
        self._recorder = recorder
        self._options = options
        #: one per tenant namespace: twin namespaces are counted and created under it, so the cap holds
        self._locks: dict[str, asyncio.Lock] = {}

    async def reconcile(self, request: Request) -> Result | None:
        namespace_map = self._maps.store.get(request.name, namespace=request.namespace)
        if namespace_map is None:
            return None
        meta = namespace_map["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        deleting = bool(meta.get("deletionTimestamp"))
        tenant = next(iter(self._tenants.store.items(namespace=request.namespace)), None)
        if deleting:
            return await self._delete(request, namespace_map, finalizers)
        if tenant is None or tenant["metadata"].get("deletionTimestamp"):
            logger.info("%s: no Tenant in %s: the NamespaceMap asks for nothing", request, request.namespace)
            return None
        origin = str(nested(tenant, "spec", "clusterID") or "")
        if c.FINALIZER_NAMESPACEMAP not in finalizers:
            await self._set_finalizers(namespace_map, [*finalizers, c.FINALIZER_NAMESPACEMAP])
            return None
        mode = str(nested(tenant, "spec", "tenantCondition") or _ACTIVE)
        desired = forge.desired_mapping(namespace_map)
        current = forge.current_mapping(namespace_map)
        status: dict[str, JSON] = {}
        for local, twin in sorted(desired.items()):
            status[local] = await self._ensure(namespace_map, local, twin, origin=origin, mode=mode)
        pending = False
        for local, entry in current.items():
            if local in desired and desired[local] == entry.get("remoteNamespace"):
                continue
            twin = str(entry.get("remoteNamespace") or "")
            if await self._remove(namespace_map, twin) and local not in desired:
                status[local] = {"remoteNamespace": twin, "phase": c.MAPPING_TERMINATING}
                pending = True
        await self._write_status(namespace_map, status)
        if pending or any(entry["phase"] != c.MAPPING_ACCEPTED for entry in status.values()):
            return Result(requeue_after=TERMINATING_POLL)
        return None

    async def _ensure(self, namespace_map: JSON, local: str, twin: str, *, origin: str, mode: str) -> JSON:
        """Make the twin namespace `twin` for consumer namespace `local`; its entry in the map's status."""
        refused = self._refusal(twin)
        if refused:
            return _backoff(twin, refused)
        existing = self._twins.store.get(twin) or await self._get_namespace(twin)
        if existing is not None and not forge.is_twin_of(existing, namespace_map):
            return _backoff(twin, _not_ours(twin))
        if existing is not None and existing["metadata"].get("deletionTimestamp"):
            return _backoff(twin, f"namespace {twin} is being deleted; it is created again once gone")
        tenant_namespace = str(namespace_map["metadata"]["namespace"])
        if existing is None:
            if mode != _ACTIVE:
                return _backoff(
                    twin,
                    f"the consumer's Tenant is {mode}: no new twin namespaces (set its tenantCondition to Active)",
                )
            made = await self._create(namespace_map, local, twin, origin=origin)
            if made:
                return _backoff(twin, made)
        else:
            await self._keep_pod_security(existing, forge.pod_security(namespace_map))
        binding = self._bindings.store.get(tenant_namespace, namespace=twin)
        if mode == _DRAINED:
            if binding is not None:
                with contextlib.suppress(NotFoundError):
                    await self._client.delete(ROLEBINDINGS, tenant_namespace, namespace=twin)
        elif binding is None:
            desired = forge.twin_role_binding(
                twin, tenant_namespace=tenant_namespace, origin_cluster_id=origin
            )
            await self._client.apply(
                ROLEBINDINGS, desired, field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER, force=True
            )
        return {"remoteNamespace": twin, "phase": c.MAPPING_ACCEPTED}

    async def _create(self, namespace_map: JSON, local: str, twin: str, *, origin: str) -> str:
        """Create the twin namespace, within the tenant's cap; why it was not made ("" when it was).

        A namespace that appears between the read and the create (another tenant's, or one the
        provider's administrators made) answers AlreadyExists: it is read again and, when it is not
        this map's, never gets the consumer's RoleBinding.
        """
        tenant_namespace = str(namespace_map["metadata"]["namespace"])
        async with self._locks.setdefault(tenant_namespace, asyncio.Lock()):
            held = await self._count_twins(tenant_namespace, origin=origin)
            cap = self._options.max_twin_namespaces
            if held >= cap:
                return (
                    f"the consumer holds {held} twin namespaces on this cluster, the most it may "
                    f"(max_twin_namespaces {cap}): unoffload a namespace, or ask the provider's administrator "
                    "to raise the cap"
                )
            body = forge.twin_namespace(
                twin, namespace_map=namespace_map, origin_namespace=local, origin_cluster_id=origin
            )
            try:
                await self._client.create(NAMESPACES, body, field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER)
            except AlreadyExistsError:
                found = await self._get_namespace(twin)
                if found is None or not forge.is_twin_of(found, namespace_map):
                    logger.warning(
                        "%s: namespace %s appeared while being created for %s and is not its twin: "
                        "the consumer gets no rights there",
                        forge.map_reference(namespace_map),
                        twin,
                        local,
                    )
                    await self._recorder.record(
                        namespace_map,
                        type="Warning",
                        reason="TwinNamespaceTaken",
                        message=f"namespace {twin} was created by someone else while it was being created as "
                        f"the twin of {local}: it is not adopted and the consumer gets no rights there",
                    )
                    return _not_ours(twin)
                return ""
            logger.info("%s: created twin namespace %s for %s", tenant_namespace, twin, local)
            return ""

    async def _count_twins(self, tenant_namespace: str, *, origin: str) -> int:
        """How many twin namespaces the tenant holds, read from the API (not a cache that may lag a create)."""
        found = await self._client.list(NAMESPACES, label_selector=f"{c.LABEL_ORIGIN_CLUSTER_ID}={origin}")
        prefix = f"{tenant_namespace}/"
        return sum(
            1
            for namespace in found.items
            if str(nested(namespace, "metadata", "annotations", c.ANNOTATION_NAMESPACE_MAP) or "").startswith(
                prefix
            )
        )

    async def _keep_pod_security(self, twin: JSON, level: podsecurity.Level) -> None:
        """Label an existing twin namespace with the Pod Security level its map asks for (one made before, or
        a level the consumer changed)."""
        wanted = podsecurity.namespace_labels(level)
        labels = twin["metadata"].get("labels") or {}
        if all(labels.get(key) == value for key, value in wanted.items()):
            return
        await self._client.patch(
            NAMESPACES,
            str(twin["metadata"]["name"]),
            {"metadata": {"labels": wanted}},
            field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
        )
        logger.info("%s: now enforces Pod Security %s", twin["metadata"]["name"], level)

    def _refusal(self, twin: str) -> str:
        if not forge.is_namespace_name(twin):
            return f"{twin!r} is not a valid namespace name (a DNS label of at most 63 characters)"
        return forge.reserved_problem(twin, runtime_namespace=self._options.namespace)

    async def _get_namespace(self, name: str) -> JSON | None:
        try:
            return await self._client.get(NAMESPACES, name)
        except NotFoundError:
            return None

    async def _remove(self, namespace_map: JSON, twin: str) -> bool:
        """Delete the twin namespace if it is this map's; whether it is still there."""
        existing = self._twins.store.get(twin) or await self._get_namespace(twin)
        if existing is None or not forge.is_twin_of(existing, namespace_map):
            return False
        if not existing["metadata"].get("deletionTimestamp"):
            with contextlib.suppress(NotFoundError):
                await self._client.delete(NAMESPACES, twin)
            logger.info("%s: deleting twin namespace %s", forge.map_reference(namespace_map), twin)
        return True

    async def _delete(self, request: Request, namespace_map: JSON, finalizers: list[str]) -> Result | None:
        if c.FINALIZER_NAMESPACEMAP not in finalizers:
            return None
        left = []
        for entry in forge.current_mapping(namespace_map).values():
            twin = str(entry.get("remoteNamespace") or "")
            if twin and await self._remove(namespace_map, twin):
                left.append(twin)
        if left:
            waited = _seconds_since(str(namespace_map["metadata"]["deletionTimestamp"]))
            if waited < self._options.twin_namespace_deletion_timeout:
                raise TemporaryError(
                    f"{request}: waiting for the twin namespaces {', '.join(left)} to go",
                    delay=TERMINATING_POLL,
                )
            await self._recorder.record(
                namespace_map,
                type="Warning",
                reason="TwinNamespacesLeft",
                message=f"twin namespaces {', '.join(left)} still terminating after "
                f"{self._options.twin_namespace_deletion_timeout:g} s; releasing the NamespaceMap anyway",
            )
        with contextlib.suppress(NotFoundError):
            await self._set_finalizers(
                namespace_map, [f for f in finalizers if f != c.FINALIZER_NAMESPACEMAP]
            )
        logger.info("%s: twin namespaces removed; NamespaceMap released", request)
        return None

    async def _write_status(self, namespace_map: JSON, status: dict[str, JSON]) -> None:
        have = forge.current_mapping(namespace_map)
        if have == status:
            return
        meta = namespace_map["metadata"]
        with contextlib.suppress(NotFoundError):
            await self._client.patch_status(
                NAMESPACEMAPS,
                meta["name"],
                {"status": {"currentMapping": {**{key: None for key in have}, **status}}},
                namespace=meta["namespace"],
                field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
            )

    async def _set_finalizers(self, namespace_map: JSON, finalizers: list[str]) -> None:
        meta = namespace_map["metadata"]
        await self._client.patch(
            NAMESPACEMAPS,
            meta["name"],
            {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}},
            namespace=meta["namespace"],
            field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
        )


def _not_ours(twin: str) -> str:
    return (
        f"namespace {twin} already exists on this cluster and is not a twin namespace of this consumer: it "
        "is never adopted; choose another name (the DefaultName or SelectedName mapping strategy)"
    )


def _backoff(twin: str, message: str) -> JSON:
    return {"remoteNamespace": twin, "phase": c.MAPPING_CREATION_LOOP_BACKOFF, "message": message}


def _seconds_since(timestamp: str) -> float:
    try:
        return (datetime.now(UTC) - parse_rfc3339(timestamp)).total_seconds()
    except ValueError:
        return 0.0


def _by_annotation(obj: JSON) -> list[Request]:
    """A twin namespace -> the NamespaceMap it belongs to."""
    reference = nested(obj, "metadata", "annotations", c.ANNOTATION_NAMESPACE_MAP) or ""
    namespace, _, name = str(reference).partition("/")
    return [Request(namespace, name)] if namespace and name else []


def _in_namespace(namespace_maps: Informer, *, by_name: bool = False) -> MapFunc:
    """A Tenant (its namespace) or a twin RoleBinding (named after the tenant namespace) -> the maps there."""

    def requests(obj: JSON) -> list[Request]:
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("name") if by_name else meta.get("namespace") or "")
        return [Request.of(nm) for nm in namespace_maps.store.items(namespace=namespace)]

    return requests


def setup(manager: Manager, options: ControllerOptions) -> None:
    namespace_maps = manager.informer(NAMESPACEMAPS, label_selector=c.LABEL_ORIGIN_CLUSTER_ID)
    tenants = manager.informer(TENANTS)
    twins = manager.informer(NAMESPACES, label_selector=c.LABEL_ORIGIN_CLUSTER_ID)
    role_bindings = manager.informer(ROLEBINDINGS, label_selector=c.LABEL_ORIGIN_CLUSTER_ID)
    reconciler = TwinNamespaceReconciler(
        manager.client,
        namespace_maps=namespace_maps,
        tenants=tenants,
        twins=twins,
        role_bindings=role_bindings,
        recorder=EventRecorder(manager.client, component=EVENT_COMPONENT),
        options=options,
    )
    controller = manager.controller(NAME, reconciler, primary=namespace_maps)
    controller.watches(tenants, _in_namespace(namespace_maps))
    controller.watches(twins, _by_annotation)
    controller.watches(role_bindings, _in_namespace(namespace_maps, by_name=True))
