"""The ReplicaSet controller: keeps `spec.replicas` pods of the template running (kube's `replicaset` controller).

Per ReplicaSet it claims the active pods of its namespace (adopting orphans its selector
matches, releasing owned pods it no longer matches), then, once the pods it created or
deleted earlier have shown up in the cache (expectations), creates the missing pods in
slow-start batches or deletes the surplus in kube's order (unscheduled, pending,
not-ready and newer pods first), and writes status: replicas, fullyLabeledReplicas,
readyReplicas, availableReplicas (Ready for minReadySeconds), observedGeneration and a
ReplicaFailure condition while pods cannot be created or deleted.
"""

from __future__ import annotations

import copy
import logging
from datetime import datetime, timedelta

from playground.controlplane import ControlPlaneOptions, Credentials
from runtime.api.kinds import PODS, REPLICASETS
from runtime.api.objects import JSON
from runtime.api.selectors import SelectorError, label_selector, set_selector
from runtime.core import (
    APIError,
    APIStatusError,
    Client,
    EventRecorder,
    Informer,
    Manager,
    PermanentError,
    Request,
    Result,
)

from .workloads import ordering, pods, timestamps
from .workloads.claims import claim
from .workloads.conditions import get_condition, new_condition, remove_condition, set_condition
from .workloads.expectations import Expectations
from .workloads.mapping import owner_or_selector
from .workloads.ownership import controller_of, is_deleting, labels, name, uid
from .workloads.podcontrol import PodControl
from .workloads.status import retry_on_conflict, update_status

logger = logging.getLogger(__name__)

#: the ServiceAccount kube-controller-manager runs this controller as (system:controller:replicaset-controller)
ACCOUNT = "replicaset-controller"


COMPONENT = "replicaset-controller"
#: kube's BurstReplicas: the most pods one sync creates or deletes
BURST_REPLICAS = 500
REPLICA_FAILURE = "ReplicaFailure"


def replica_set_status(rs: JSON, owned: list[JSON], *, error: Exception | None, now: datetime) -> JSON:
    """The status `owned` (the ReplicaSet's active pods) gives it (`calculateStatus`)."""
    status = copy.deepcopy(rs.get("status") or {})
    spec = rs.get("spec") or {}
    template_labels = set_selector(((spec.get("template") or {}).get("metadata") or {}).get("labels"))
    min_ready = int(spec.get("minReadySeconds") or 0)
    failure = get_condition(status, REPLICA_FAILURE)
    if error is not None and failure is None:
        diff = len(owned) - ordering.replicas(rs)
        reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
        message = error.message if isinstance(error, APIStatusError) else str(error)
        set_condition(
            status, new_condition(REPLICA_FAILURE, "True", reason, message, now=now, update_time=False)
        )
    elif error is None and failure is not None:
        remove_condition(status, REPLICA_FAILURE)
    counts = {
        "fullyLabeledReplicas": sum(template_labels.matches(labels(pod)) for pod in owned),
        "readyReplicas": sum(pods.is_ready(pod) for pod in owned),
        "availableReplicas": sum(pods.is_available(pod, min_ready, now) for pod in owned),
    }
    status["replicas"] = len(owned)
    for field, value in counts.items():
        if value:
            status[field] = value
        else:
            status.pop(field, None)
    status["observedGeneration"] = (rs.get("metadata") or {}).get("generation", 0)
    return status


def next_availability(owned: list[JSON], min_ready_seconds: int, now: datetime) -> float | None:
    """Seconds until the next Ready pod counts as available (None if none is waiting for that)."""
    waits = [
        (since + timedelta(seconds=min_ready_seconds) - now).total_seconds()
        for pod in owned
        if (since := pods.ready_since(pod)) is not None and not pods.is_available(pod, min_ready_seconds, now)
    ]
    return max(min(waits), 0.0) + 0.5 if waits else None


class ReplicaSetReconciler:
    def __init__(
        self,
        client: Client,
        *,
        replicasets: Informer,
        pods: Informer,
        recorder: EventRecorder,
        expectations: Expectations,
    ) -> None:
        self._client = client
        self._replicasets = replicasets
        self._pods = pods
        self._expectations = expectations
        self._pod_control = PodControl(client, recorder, expectations)

    async def reconcile(self, request: Request) -> Result | None:
        return await retry_on_conflict(request, self._sync(request))

    async def _sync(self, request: Request) -> Result | None:
        key = str(request)
        rs = self._replicasets.store.get(request.name, namespace=request.namespace)
        if rs is None:
            self._expectations.forget(key)
            return None
        try:
            selector = label_selector((rs.get("spec") or {}).get("selector"))
        except SelectorError as exc:
            raise PermanentError(f"{key}: invalid selector: {exc}; fix spec.selector") from exc
        needs_sync = self._expectations.satisfied(key)
        candidates = [
            pod for pod in self._pods.store.items(namespace=request.namespace) if pods.is_active(pod)
        ]
        owned = await claim(self._client, PODS, owner=rs, candidates=candidates, selector=selector)
        error: APIError | None = None
        if needs_sync and not is_deleting(rs):
            try:
                await self._manage(key, rs, owned)
            except APIError as exc:
                error = exc
        now = timestamps.now()
        await update_status(
            self._client, REPLICASETS, rs, replica_set_status(rs, owned, error=error, now=now)
        )
        if error is not None:
            raise error
        if not needs_sync:
            return Result(requeue_after=self._expectations.expires_in(key))
        min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
        wait = next_availability(owned, min_ready, now) if min_ready else None
        return Result(requeue_after=wait) if wait is not None else None

    async def _manage(self, key: str, rs: JSON, owned: list[JSON]) -> None:
        diff = len(owned) - ordering.replicas(rs)
        if diff < 0:
            await self._create(key, rs, min(-diff, BURST_REPLICAS))
        elif diff > 0:
            await self._delete(key, rs, owned, min(diff, BURST_REPLICAS))

    async def _create(self, key: str, rs: JSON, count: int) -> None:
        logger.info("%s: too few replicas (need %d), creating %d", key, ordering.replicas(rs), count)
        template = (rs.get("spec") or {}).get("template") or {}
        bodies = [
            pods.pod_from_template(template, owner=rs, generate_name=f"{name(rs)}-") for _ in range(count)
        ]
        error = await self._pod_control.create_pods(key, rs, bodies)
        if error is not None:
            raise error

    async def _delete(self, key: str, rs: JSON, owned: list[JSON], count: int) -> None:
        logger.info("%s: too many replicas (need %d), deleting %d", key, ordering.replicas(rs), count)
        victims = ordering.pods_to_delete(owned, count, related=self._related_pods(rs, owned))
        error = await self._pod_control.delete_pods(key, rs, victims)
        if error is not None:
            raise error

    def _related_pods(self, rs: JSON, owned: list[JSON]) -> list[JSON]:
        """The pods of every ReplicaSet sharing this one's controller (its Deployment's other revisions)."""
        owner = controller_of(rs)
        if owner is None:
            return owned
        namespace = (rs.get("metadata") or {}).get("namespace")
        siblings = {
            uid(other)
            for other in self._replicasets.store.items(namespace=namespace)
            if (ref := controller_of(other)) is not None and ref.get("uid") == owner.get("uid")
        }
        return [
            pod
            for pod in self._pods.store.items(namespace=namespace)
            if (ref := controller_of(pod)) is not None and ref.get("uid") in siblings
        ]


def setup(manager: Manager, options: ControlPlaneOptions, credentials: Credentials) -> None:
    """Register the ReplicaSet controller with `manager`."""
    replicasets = manager.informer(REPLICASETS)
    pod_informer = manager.informer(PODS)
    expectations = Expectations.of(pod_informer)
    client = credentials.client(ACCOUNT)
    reconciler = ReplicaSetReconciler(
        client,
        replicasets=replicasets,
        pods=pod_informer,
        recorder=EventRecorder(client, component=COMPONENT),
        expectations=expectations,
    )
    controller = manager.controller("replicaset", reconciler, primary=replicasets)
    controller.watches(pod_informer, owner_or_selector(REPLICASETS, replicasets.store))
