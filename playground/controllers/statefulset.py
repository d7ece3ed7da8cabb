"""The StatefulSet controller: ordered pods with stable names and storage (kube's `statefulset` controller).

Per StatefulSet it keeps the template history as ControllerRevisions (`<set>-<hash>`;
`status.currentRevision` / `updateRevision` name them and pods carry theirs as
`controller-revision-hash`), claims the pods named `<set>-<ordinal>`, then:

- creates missing ordinals, each after its PVCs (`<template>-<set>-<ordinal>`); with
  OrderedReady one at a time, the next only once every lower ordinal is Running and
  Ready (and available for minReadySeconds), with Parallel all at once;
- recreates failed or finished pods, and fixes pod identity labels and PVC owners;
- scales down from the highest ordinal, one at a time with OrderedReady; PVCs stay
  unless the persistentVolumeClaimRetentionPolicy says Delete (then they get the owner
  reference the garbage collector needs);
- RollingUpdate: deletes the highest ordinal at or above the partition that is not at
  the update revision, waiting for each replacement to be healthy; OnDelete leaves it
  to the user;
- status: replicas, readyReplicas, availableReplicas, currentReplicas, updatedReplicas,
  currentRevision, updateRevision, collisionCount, observedGeneration; revisions beyond
  revisionHistoryLimit that nothing uses are deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Coroutine
from datetime import datetime
from typing import Any

from playground.controlplane import ControlPlaneOptions, Credentials
from runtime.api.kinds import CONTROLLERREVISIONS, PERSISTENTVOLUMECLAIMS, PODS, STATEFULSETS
from runtime.api.objects import JSON
from runtime.api.selectors import SelectorError, label_selector
from runtime.core import (
    AlreadyExistsError,
    APIStatusError,
    Client,
    ConflictError,
    EventRecorder,
    Informer,
    Manager,
    NotFoundError,
    PermanentError,
    Request,
    Result,
    TemporaryError,
)

from .workloads import history, names, pods, stateful, timestamps
from .workloads.claims import claim
from .workloads.hashing import controller_revision_hash
from .workloads.mapping import owner_or_selector
from .workloads.ownership import is_deleting, name, namespace, reference, uid
from .workloads.status import retry_on_conflict, update_status

logger = logging.getLogger(__name__)

#: the ServiceAccount kube-controller-manager runs this controller as (system:controller:statefulset-controller)
ACCOUNT = "statefulset-controller"


COMPONENT = "statefulset-controller"


class _Blocked(Exception):
    """Monotonic (OrderedReady) progress stops here until something changes."""


class _Revisions:
    """The revisions one sync works with."""

    def __init__(self, current: JSON, update: JSON, collision_count: int) -> None:
        self.current = current
        self.update = update
        self.collision_count = collision_count

    @property
    def current_name(self) -> str:
        return name(self.current)

    @property
    def update_name(self) -> str:
        return name(self.update)


def replica_status(
    sts: JSON, pod_list: list[JSON], revisions: _Revisions, *, now: datetime
) -> dict[str, int]:
    """Counts over created pods (`computeReplicaStatus`)."""
    min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
    counts = dict.fromkeys(
        ("replicas", "readyReplicas", "availableReplicas", "currentReplicas", "updatedReplicas"), 0
    )
    for pod in pod_list:
        created = stateful.is_created(pod)
        counts["replicas"] += created
        if pods.is_running_and_ready(pod):
            counts["readyReplicas"] += 1
            counts["availableReplicas"] += stateful.is_running_and_available(pod, min_ready, now)
        if created and not pods.is_terminating(pod):
            counts["currentReplicas"] += stateful.revision_of(pod) == revisions.current_name
            counts["updatedReplicas"] += stateful.revision_of(pod) == revisions.update_name
    return counts


def stateful_set_status(sts: JSON, pod_list: list[JSON], revisions: _Revisions, *, now: datetime) -> JSON:
    """The new status, a finished rolling update completed (`updateStatus` + `completeRollingUpdate`)."""
    status = copy.deepcopy(sts.get("status") or {})
    counts = replica_status(sts, pod_list, revisions, now=now)
    status.update(
        observedGeneration=(sts.get("metadata") or {}).get("generation", 0),
        currentRevision=revisions.current_name,
        updateRevision=revisions.update_name,
        collisionCount=revisions.collision_count,
        replicas=counts["replicas"],
        availableReplicas=counts["availableReplicas"],
    )
    strategy = ((sts.get("spec") or {}).get("updateStrategy") or {}).get("type") or "RollingUpdate"
    if (
        strategy == "RollingUpdate"
        and counts["updatedReplicas"] == counts["replicas"]
        and counts["readyReplicas"] == counts["replicas"]
    ):
        counts["currentReplicas"] = counts["updatedReplicas"]
        status["currentRevision"] = status["updateRevision"]
    for field in ("readyReplicas", "currentReplicas", "updatedReplicas"):
        if counts[field]:
            status[field] = counts[field]
        else:
            status.pop(field, None)
    return status


class StatefulSetReconciler:
    def __init__(
        self,
        client: Client,
        *,
        statefulsets: Informer,
        pods: Informer,
        claims: Informer,
        revisions: Informer,
        recorder: EventRecorder,
    ) -> None:
        self._client = client
        self._statefulsets = statefulsets
        self._pods = pods
        self._claims = claims
        self._revisions = revisions
        self._recorder = recorder

    async def reconcile(self, request: Request) -> Result | None:
        return await retry_on_conflict(request, self._sync(request))

    async def _sync(self, request: Request) -> Result | None:
        sts = self._statefulsets.store.get(request.name, namespace=request.namespace)
        if sts is None:
            return None
        try:
            selector = label_selector((sts.get("spec") or {}).get("selector"))
        except SelectorError as exc:
            raise PermanentError(f"{request}: invalid selector: {exc}; fix spec.selector") from exc
        owned = await claim(
            self._client,
            PODS,
            owner=sts,
            candidates=self._pods.store.items(namespace=request.namespace),
            selector=selector,
            accept=lambda pod: stateful.is_member(sts, pod),
        )
        revision_candidates = self._revisions.store.items(namespace=request.namespace)
        revisions = await claim(
            self._client, CONTROLLERREVISIONS, owner=sts, candidates=revision_candidates, selector=selector
        )
        revisions = history.sort_revisions(revisions)
        chosen = await self._choose_revisions(sts, revisions)
        replicas, condemned = self._partition(sts, owned, chosen)
        error: Exception | None = None
        if not is_deleting(sts):
            try:
                await self._update(sts, replicas, condemned, chosen)
            except _Blocked:
                pass
            except APIStatusError as exc:
                error = exc
        now = timestamps.now()
        status = stateful_set_status(sts, [*replicas, *condemned], chosen, now=now)
        await update_status(self._client, STATEFULSETS, sts, status)
        if error is not None:
            raise error
        await self._truncate_history(sts, owned, revisions, chosen)
        min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
        if min_ready and status.get("availableReplicas", 0) != stateful.replicas(sts):
            return Result(requeue_after=float(min_ready))
        return None

    # revisions

    async def _choose_revisions(self, sts: JSON, revisions: list[JSON]) -> _Revisions:
        """(current, update) revisions, creating the update revision if the template is new (`getStatefulSetRevisions`)."""
        collision_count = int((sts.get("status") or {}).get("collisionCount") or 0)
        data = history.revision_data(sts)
        number = history.next_number(revisions)
        equal = [revision for revision in revisions if (revision.get("data") or {}) == data]
        if equal and revisions and name(equal[-1]) == name(revisions[-1]):
            update = revisions[-1]
        elif equal:
            update = await self._client.patch(
                CONTROLLERREVISIONS,
                name(equal[-1]),
                {"revision": number},
                namespace=namespace(sts),
                field_manager=names.FIELD_MANAGER,
            )
        else:
            update, collision_count = await self._create_revision(sts, data, number, collision_count)
        current_name = (sts.get("status") or {}).get("currentRevision")
        current = next((revision for revision in revisions if name(revision) == current_name), update)
        return _Revisions(current, update, collision_count)

    async def _create_revision(
        self, sts: JSON, data: JSON, number: int, collision_count: int
    ) -> tuple[JSON, int]:
        """`CreateControllerRevision`: a taken name with other data bumps the collision count and retries."""
        while True:
            revision_hash = controller_revision_hash(data, collision_count)
            body = history.new_revision(
                sts, data=data, number=number, revision_hash=revision_hash, hash_label=names.CONTROLLER_HASH
            )
            try:
                created = await self._client.create(
                    CONTROLLERREVISIONS, body, field_manager=names.FIELD_MANAGER
                )
                return created, collision_count
            except AlreadyExistsError:
                existing = await self._client.get(CONTROLLERREVISIONS, name(body), namespace=namespace(sts))
                if (existing.get("data") or {}) == data:
                    return existing, collision_count
                collision_count += 1

    async def _truncate_history(
        self, sts: JSON, owned: list[JSON], revisions: list[JSON], chosen: _Revisions
    ) -> None:
        live = {chosen.current_name, chosen.update_name, *(stateful.revision_of(pod) for pod in owned)}
        historic = [revision for revision in revisions if name(revision) not in live]
        limit = int((sts.get("spec") or {}).get("revisionHistoryLimit", 10))
        for revision in historic[: max(len(historic) - limit, 0)]:
            with contextlib.suppress(NotFoundError):
                await self._client.delete(CONTROLLERREVISIONS, name(revision), namespace=namespace(revision))

    # pods

    def _partition(self, sts: JSON, owned: list[JSON], chosen: _Revisions) -> tuple[list[JSON], list[JSON]]:
        """(a pod, existing or to create, per ordinal in range; the pods out of range, highest first)."""
        start = stateful.start_ordinal(sts)
        by_ordinal: dict[int, JSON] = {}
        condemned: list[JSON] = []
        for pod in owned:
            if stateful.in_range(sts, pod):
                by_ordinal[stateful.ordinal_of(pod)] = pod
            elif stateful.ordinal_of(pod) >= 0:
                condemned.append(pod)
        current_set = stateful.at_revision(sts, chosen.current)
        update_set = stateful.at_revision(sts, chosen.update)
        replicas = [
            by_ordinal.get(ordinal)
            or stateful.versioned_pod(
                sts,
                current=current_set,
                update=update_set,
                current_revision=chosen.current_name,
                update_revision=chosen.update_name,
                ordinal=ordinal,
            )
            for ordinal in range(start, start + stateful.replicas(sts))
        ]
        condemned.sort(key=stateful.ordinal_of, reverse=True)
        return replicas, condemned

    async def _update(
        self, sts: JSON, replicas: list[JSON], condemned: list[JSON], chosen: _Revisions
    ) -> None:
        """`updateStatefulSet` after the partition: replicas, condemned pods, then the rolling update."""
        monotonic = ((sts.get("spec") or {}).get("podManagementPolicy") or "OrderedReady") != "Parallel"
        unhealthy = [pod for pod in [*replicas, *condemned[::-1]] if not stateful.is_healthy(pod)]
        first_unhealthy = unhealthy[0] if unhealthy else None
        update_set = stateful.at_revision(sts, chosen.update)
        await self._for_all(
            monotonic,
            [
                self._process_replica(sts, replicas, index, chosen, monotonic)
                for index in range(len(replicas))
            ],
        )
        await self._for_all(monotonic, [self._fix_claims(update_set, pod) for pod in condemned])
        await self._for_all(
            monotonic, [self._process_condemned(sts, pod, first_unhealthy, monotonic) for pod in condemned]
        )
        strategy = (sts.get("spec") or {}).get("updateStrategy") or {}
        if (strategy.get("type") or "RollingUpdate") != "RollingUpdate":
            return
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
        start = stateful.start_ordinal(sts)
        for pod in reversed(replicas):
            if stateful.ordinal_of(pod) - start < partition:
                break
            if stateful.revision_of(pod) != chosen.update_name and not pods.is_terminating(pod):
                logger.info("%s: pod %s is terminating for update", reference(sts), name(pod))
                await self._delete_pod(sts, pod)
                return
            if not stateful.is_healthy(pod):
                return

    @staticmethod
    async def _for_all(monotonic: bool, steps: list[Coroutine[Any, Any, None]]) -> None:
        """Run the steps in order, stopping at the first blocked one (monotonic), or all at once (burst)."""
        if monotonic:
            for index, step in enumerate(steps):
                try:
                    await step
                except BaseException:
                    for remaining in steps[index + 1 :]:
                        remaining.close()
                    raise
            return
        results = await asyncio.gather(*steps, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, _Blocked):
                raise result

    async def _process_replica(
        self, sts: JSON, replicas: list[JSON], index: int, chosen: _Revisions, monotonic: bool
    ) -> None:
        pod = replicas[index]
        min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
        if pods.phase(pod) in pods.TERMINAL_PHASES:
            failed = pods.phase(pod) == "Failed"
            await self._recorder.record(
                sts,
                reason="RecreatingFailedPod" if failed else "RecreatingTerminatedPod",
                message=f"StatefulSet {reference(sts)} is recreating {'failed' if failed else 'terminated'} Pod {name(pod)}",
                type="Warning" if failed else "Normal",
            )
            await self._delete_pod(sts, pod)
            raise _Blocked
        update_set = stateful.at_revision(sts, chosen.update)
        if not stateful.is_created(pod):
            await self._create_pod(sts, pod)
            if monotonic:
                raise _Blocked
            return
        if pods.phase(pod) == "Pending":
            await self._create_claims(sts, pod)
        if monotonic and (
            pods.is_terminating(pod)
            or not pods.is_running_and_ready(pod)
            or not stateful.is_running_and_available(pod, min_ready, timestamps.now())
        ):
            raise _Blocked
        if not stateful.storage_matches(sts, pod):
            # a live pod's volumes cannot change: make sure at least its claims exist
            await self._create_claims(sts, pod)
        await self._fix_claims(update_set, pod)
        if not stateful.identity_matches(sts, pod):
            labels = stateful.identity_labels(sts, stateful.ordinal_of(pod))
            await self._client.patch(
                PODS,
                name(pod),
                {"metadata": {"labels": labels}},
                namespace=namespace(pod),
                field_manager=names.FIELD_MANAGER,
            )

    async def _process_condemned(
        self, sts: JSON, pod: JSON, first_unhealthy: JSON | None, monotonic: bool
    ) -> None:
        min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
        if pods.is_terminating(pod):
            if monotonic:
                raise _Blocked
            return
        healthy_enough = pods.is_running_and_ready(pod) and stateful.is_running_and_available(
            pod, min_ready, timestamps.now()
        )
        if monotonic and not healthy_enough and pod is not first_unhealthy:
            raise _Blocked
        logger.info("%s: pod %s is terminating for scale down", reference(sts), name(pod))
        await self._delete_pod(sts, pod)
        if monotonic:
            raise _Blocked

    async def _create_pod(self, sts: JSON, pod: JSON) -> None:
        """`CreateStatefulPod`: the PVCs first, then the pod, then the PVCs' owners."""
        await self._create_claims(sts, pod)
        try:
            created = await self._client.create(PODS, pod, field_manager=names.FIELD_MANAGER)
        except AlreadyExistsError as exc:
            raise TemporaryError(f"{reference(sts)}: pod {name(pod)} exists but is not cached yet") from exc
        except APIStatusError as exc:
            await self._event(
                sts,
                "FailedCreate",
                f"create Pod {name(pod)} in StatefulSet {name(sts)} failed error: {exc.message}",
            )
            raise
        await self._event(
            sts, "SuccessfulCreate", f"create Pod {name(pod)} in StatefulSet {name(sts)} successful"
        )
        await self._fix_claims(sts, created)

    async def _delete_pod(self, sts: JSON, pod: JSON) -> None:
        try:
            await self._client.delete(
                PODS, name(pod), namespace=namespace(pod), preconditions={"uid": uid(pod)}
            )
        except (NotFoundError, ConflictError):
            return
        except APIStatusError as exc:
            await self._event(
                sts,
                "FailedDelete",
                f"delete Pod {name(pod)} in StatefulSet {name(sts)} failed error: {exc.message}",
            )
            raise
        await self._event(
            sts, "SuccessfulDelete", f"delete Pod {name(pod)} in StatefulSet {name(sts)} successful"
        )

    async def _event(self, sts: JSON, reason: str, message: str) -> None:
        if reason.startswith("Failed"):
            await self._recorder.record(sts, reason=reason, message=message, type="Warning")
        else:
            await self._recorder.record(sts, reason=reason, message=message)

    # claims

    async def _create_claims(self, sts: JSON, pod: JSON) -> None:
        """Create the ordinal's missing PVCs (`createPersistentVolumeClaims`)."""
        failures: list[str] = []
        for body in stateful.claims_for(sts, stateful.ordinal_of(pod)).values():
            cached = self._claims.store.get(name(body), namespace=namespace(sts))
            if cached is not None:
                if is_deleting(cached):
                    failures.append(f"pvc {name(body)} is being deleted")
                continue
            try:
                await self._client.create(PERSISTENTVOLUMECLAIMS, body, field_manager=names.FIELD_MANAGER)
            except AlreadyExistsError:
                continue
            except APIStatusError as exc:
                failures.append(f"failed to create PVC {name(body)}: {exc.message}")
                message = f"create Claim {name(body)} for Pod {name(pod)} in StatefulSet {name(sts)} failed error: {exc.message}"
                await self._event(sts, "FailedCreate", message)
                continue
            message = f"create Claim {name(body)} Pod {name(pod)} in StatefulSet {name(sts)} success"
            await self._event(sts, "SuccessfulCreate", message)
        if failures:
            raise TemporaryError(f"{reference(sts)}: " + "; ".join(failures))

    async def _fix_claims(self, sts: JSON, pod: JSON) -> None:
        """Give the pod's PVCs the owners the retention policy asks for."""
        if not stateful.is_created(pod):
            return
        for body in stateful.claims_for(sts, stateful.ordinal_of(pod)).values():
            cached = self._claims.store.get(name(body), namespace=namespace(sts))
            if cached is None or stateful.claim_owners_match(sts, pod, cached):
                continue
            owners = stateful.claim_owners(sts, pod, cached)
            meta = {key: value for key, value in cached["metadata"].items() if key != "ownerReferences"}
            if owners:
                meta["ownerReferences"] = owners
            # an Update, as the real controller's (its role may not patch claims)
            await self._client.replace(
                PERSISTENTVOLUMECLAIMS, {**cached, "metadata": meta}, field_manager=names.FIELD_MANAGER
            )


def setup(manager: Manager, options: ControlPlaneOptions, credentials: Credentials) -> None:
    """Register the StatefulSet controller with `manager`."""
    statefulsets = manager.informer(STATEFULSETS)
    pod_informer = manager.informer(PODS)
    claims = manager.informer(PERSISTENTVOLUMECLAIMS)
    revisions = manager.informer(CONTROLLERREVISIONS)
    client = credentials.client(ACCOUNT)
    reconciler = StatefulSetReconciler(
        client,
        statefulsets=statefulsets,
        pods=pod_informer,
        claims=claims,
        revisions=revisions,
        recorder=EventRecorder(client, component=COMPONENT),
    )
    controller = manager.controller("statefulset", reconciler, primary=statefulsets)
    controller.watches(pod_informer, owner_or_selector(STATEFULSETS, statefulsets.store))
    controller.owns(revisions)
