"""The ShadowPod controller (provider side): a real Pod for every pod a consumer offloaded here.

A consumer's virtual kubelet writes ShadowPods into its twin namespaces; this controller
keeps a Pod of the same name for each (`runtime.forge.pods.provider_pod`), owned by it, so
the pod runs on the provider's own nodes whatever the consumer does next:

- a Pod deleted out of band (or evicted, or lost with its node) is created again, and
  the ShadowPod's `status.recreations` counts it (the consumer adds it to the restart
  counts it reports); a Pod that completed is left as it is;
- nothing depends on the consumer being reachable: while it is partitioned away, its
  pods keep running and keep being recreated;
- only ShadowPods in a twin namespace (made for a consumer's NamespaceMap) are run, and
  never one whose pod does not meet the twin namespace's Pod Security level (baseline, or
  restricted: `runtime.forge.pods.shadow_pod_problems`), whoever wrote it and whatever the
  admission webhook let through while it was down; the ShadowPod's `Accepted` condition
  says why;
- a Cordoned tenant's pods keep running (recreated if needed) but new ones are not
  started; a Drained tenant's Pods are deleted;
- image changes of the ShadowPod reach the Pod (the one part of a Pod's spec that may
  change).

Deletion (finalizer `offloading.liqo.io/shadowpod`): the Pod is deleted with the grace
period the consumer's pod was deleted with (`offloading.liqo.io/deletion-grace-period-
seconds`), and the finalizer goes once the Pod is gone; a Pod still there 30 seconds past
its grace period is deleted at once, so a ShadowPod never lingers. A new ShadowPod gets its
Pod first and the finalizer right after: the Pod is what the consumer waits for, and the
finalizer's write (an update the admission webhook reviews) would delay it; a ShadowPod
deleted in between takes its Pod with it, as the Pod's owner.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from datetime import UTC, datetime

from runtime.api import constants as c
from runtime.api.crds import SHADOWPODS, TENANTS
from runtime.api.kinds import NAMESPACES, PODS
from runtime.api.objects import JSON, nested
from runtime.api.timestamps import parse_rfc3339
from runtime.core import (
    AlreadyExistsError,
    Client,
    Informer,
    Manager,
    NotFoundError,
    Request,
    Result,
)
from runtime.forge import conditions, podsecurity
from runtime.forge import pods as forge

from ..options import ControllerOptions

logger = logging.getLogger(__name__)


NAME = "shadowpod"
CONDITION_ACCEPTED = "Accepted"
#: how long past its grace period a Pod being deleted for its ShadowPod is waited for before it is forced
FORCE_AFTER = 30.0
#: the grace period of a Pod whose ShadowPod says none (the API's default)
DEFAULT_GRACE = 30


class ShadowPodReconciler:
    def __init__(
        self,
        client: Client,
        *,
        shadow_pods: Informer,
        pods: Informer,
        twins: Informer,
        tenants: Informer,
    ) -> None:
        self._client = client
        self._shadows = shadow_pods
        self._pods = pods
        self._twins = twins
        self._tenants = tenants

    async def reconcile(self, request: Request) -> Result | None:
        shadow = self._shadows.store.get(request.name, namespace=request.namespace)
        if shadow is None:
            return None
        meta = shadow["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        pod = self._pods.store.get(request.name, namespace=request.namespace)
        if pod is not None and not forge.is_pod_of(pod, shadow):
            await self._set_status(
                shadow, None, refusal=f"a Pod {request.name} that is not this ShadowPod's exists"
            )
            return None
        if meta.get("deletionTimestamp"):
            return await self._delete(shadow, pod, finalizers)
        mode, refusal = self._tenant_mode(request.namespace)
        twin = self._twins.store.get(request.namespace)
        level = podsecurity.enforced_level(twin)
        problems = forge.shadow_pod_problems(shadow, level=level)
        if problems:
            refusal = "this cluster does not run it: " + podsecurity.refusal(problems, enforced=level)
        status = shadow.get("status") or {}
        runs = not refusal and mode != "Drained"
        if runs and pod is None and (mode != "Cordoned" or status.get("podUID")):
            # the Pod before the finalizer: the Pod is what the consumer waits for
            return await self._create(shadow, origin_cluster_id=_origin(twin))
        shadow = await self._finalized(shadow)
        if shadow is None:
            return None
        if not runs:
            if pod is not None and not pod["metadata"].get("deletionTimestamp"):
                with contextlib.suppress(NotFoundError):
                    await self._client.delete(PODS, request.name, namespace=request.namespace)
            await self._set_status(shadow, pod, refusal=refusal or "the consumer's Tenant is Drained")
            return None
        if pod is None:
            await self._set_status(
                shadow, None, refusal="the consumer's Tenant is Cordoned: no new pods are started"
            )
            return None
        updates = forge.image_updates(pod, shadow)
        if updates and not pod["metadata"].get("deletionTimestamp"):
            await self._client.patch(
                PODS,
                request.name,
                {"spec": {"containers": updates}},
                namespace=request.namespace,
                patch_type="strategic",
                field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
            )
        await self._set_status(shadow, pod)
        return None

    def _tenant_mode(self, namespace: str) -> tuple[str, str]:
        """The tenantCondition of the consumer the namespace is a twin for; a refusal when it is none's."""
        twin = self._twins.store.get(namespace)
        reference = nested(twin, "metadata", "annotations", c.ANNOTATION_NAMESPACE_MAP)
        if not reference:
            return "", f"namespace {namespace} is not a twin namespace of any consumer"
        tenant_namespace = str(reference).partition("/")[0]
        tenant = next(iter(self._tenants.store.items(namespace=tenant_namespace)), None)
        if tenant is None:
            return "", f"the consumer of namespace {namespace} has no Tenant here any more"
        return str(nested(tenant, "spec", "tenantCondition") or "Active"), ""

    async def _create(self, shadow: JSON, *, origin_cluster_id: str) -> Result | None:
        meta = shadow["metadata"]
        status = shadow.get("status") or {}
        try:
            pod = await self._client.create(
                PODS,
                forge.provider_pod(shadow, origin_cluster_id=origin_cluster_id),
                field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
            )
        except AlreadyExistsError:
            return None  # the cache is behind; the Pod's event brings the key back
        finalized = await self._finalized(shadow)
        if finalized is None:
            return None  # deleted meanwhile: the Pod goes with it (the ShadowPod owns it)
        recreated = bool(status.get("podUID"))
        if recreated:
            logger.info("%s/%s: the Pod was gone; created it again", meta["namespace"], meta["name"])
        else:
            logger.info("%s/%s: created the Pod", meta["namespace"], meta["name"])
        await self._set_status(finalized, pod, recreations=int(status.get("recreations") or 0) + recreated)
        return None

    async def _finalized(self, shadow: JSON) -> JSON | None:
        """The ShadowPod with this controller's finalizer (added when missing); None when it is gone."""
        finalizers = list(shadow["metadata"].get("finalizers") or [])
        if c.FINALIZER_SHADOWPOD in finalizers:
            return shadow
        try:
            return await self._patch_meta(shadow, {"finalizers": [*finalizers, c.FINALIZER_SHADOWPOD]})
        except NotFoundError:
            return None

    async def _delete(self, shadow: JSON, pod: JSON | None, finalizers: list[str]) -> Result | None:
        meta = shadow["metadata"]
        if c.FINALIZER_SHADOWPOD not in finalizers:
            return None
        if pod is not None:
            grace = _grace(shadow)
            overdue = _seconds_since(str(meta["deletionTimestamp"])) > grace + FORCE_AFTER
            if not pod["metadata"].get("deletionTimestamp") or overdue:
                with contextlib.suppress(NotFoundError):
                    await self._client.delete(
                        PODS,
                        meta["name"],
                        namespace=meta["namespace"],
                        grace_period_seconds=0 if overdue else grace,
                    )
            return Result(requeue_after=grace + FORCE_AFTER)
        with contextlib.suppress(NotFoundError):
            await self._patch_meta(
                shadow, {"finalizers": [f for f in finalizers if f != c.FINALIZER_SHADOWPOD]}
            )
        return None

    async def _set_status(
        self, shadow: JSON, pod: JSON | None, *, refusal: str = "", recreations: int | None = None
    ) -> None:
        current = shadow.get("status") or {}
        generation = shadow["metadata"].get("generation")
        accepted = conditions.condition(
            CONDITION_ACCEPTED,
            not refusal,
            reason="Refused" if refusal else "Running",
            message=refusal or "this cluster runs the pod",
            observed_generation=generation,
        )
        wanted: JSON = {
            "phase": nested(pod, "status", "phase") or ("Refused" if refusal else "Pending"),
            "podUID": str(pod["metadata"]["uid"]) if pod is not None else current.get("podUID"),
            "recreations": recreations if recreations is not None else int(current.get("recreations") or 0),
        }
        if all(current.get(k) == v for k, v in wanted.items()) and not conditions.differs(
            current.get("conditions"), [accepted]
        ):
            return
        wanted["conditions"] = conditions.merged(current.get("conditions"), [accepted], at=conditions.now())
        meta = shadow["metadata"]
        with contextlib.suppress(NotFoundError):
            # conditional on the version read: a reconcile from a stale cache must not undo a recreation's count
            await self._client.patch_status(
                SHADOWPODS,
                meta["name"],
                {"metadata": {"resourceVersion": meta["resourceVersion"]}, "status": wanted},
                namespace=meta["namespace"],
                field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
            )

    async def _patch_meta(self, shadow: JSON, changes: JSON) -> JSON:
        meta = shadow["metadata"]
        return await self._client.patch(
            SHADOWPODS,
            meta["name"],
            {"metadata": {**changes, "resourceVersion": meta["resourceVersion"]}},
            namespace=meta["namespace"],
            field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
        )


def _origin(twin: JSON | None) -> str:
    """The consumer's cluster id, as its twin namespace (written by this cluster) says."""
    return str(nested(twin, "metadata", "labels", c.LABEL_ORIGIN_CLUSTER_ID) or "")


def _grace(shadow: JSON) -> int:
    annotations = shadow["metadata"].get("annotations") or {}
    value = annotations.get(c.ANNOTATION_DELETION_GRACE)
    if value is not None and str(value).isdigit():
        return int(value)
    spec = nested(shadow, "spec", "pod") or {}
    return int(spec.get("terminationGracePeriodSeconds") or DEFAULT_GRACE)


def _seconds_since(timestamp: str) -> float:
    try:
        return (datetime.now(UTC) - parse_rfc3339(timestamp)).total_seconds()
    except ValueError:
        return 0.0


def setup(manager: Manager, options: ControllerOptions) -> None:
    shadow_pods = manager.informer(SHADOWPODS)
    pods = manager.informer(PODS, label_selector=f"{c.LABEL_REFLECTION_MANAGED_BY}={c.MANAGED_BY_SHADOWPOD}")
    twins = manager.informer(NAMESPACES, label_selector=c.LABEL_ORIGIN_CLUSTER_ID)
    tenants = manager.informer(TENANTS)
    reconciler = ShadowPodReconciler(
        manager.client, shadow_pods=shadow_pods, pods=pods, twins=twins, tenants=tenants
    )
    settings = dataclasses.replace(
        manager.settings,
        queueing=dataclasses.replace(manager.settings.queueing, workers=options.shadow_pod_workers),
    )
    controller = manager.controller(NAME, reconciler, primary=shadow_pods, settings=settings)
    controller.owns(pods)

    def in_namespace(obj: JSON) -> list[Request]:
        namespace = str(obj["metadata"]["name"])
        return [Request.of(shadow) for shadow in shadow_pods.store.items(namespace=namespace)]

    def of_tenant(tenant: JSON) -> list[Request]:
        reference = f"{tenant['metadata']['namespace']}/"
        return [
            Request.of(shadow)
            for twin in twins.store
            if str(
                nested(twin["metadata"], "annotations", c.ANNOTATION_NAMESPACE_MAP, default="")
            ).startswith(reference)
            for shadow in shadow_pods.store.items(namespace=str(twin["metadata"]["name"]))
        ]

    controller.watches(twins, in_namespace)
    controller.watches(tenants, of_tenant)
