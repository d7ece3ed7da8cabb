"""The Deployment controller: rolls a Deployment's template out through ReplicaSets (kube's `deployment` controller).

Per Deployment it claims the ReplicaSets of its namespace, finds the one whose template
is the Deployment's (the new one; created when missing, named `<deployment>-<hash>` and
labelled `pod-template-hash`) and the old ones, then:

- scaling events (spec.replicas changed since the ReplicaSets' `desired-replicas`
  annotation) and paused Deployments are scaled proportionally across the active
  ReplicaSets (`sync`);
- RollingUpdate scales the new ReplicaSet up within `replicas + maxSurge` and the old
  ones down while at least `replicas - maxUnavailable` pods stay available (unhealthy
  old pods go first); Recreate scales every old ReplicaSet to zero, waits until their
  pods are gone, then scales the new one up;
- finished rollouts prune old ReplicaSets beyond `revisionHistoryLimit`;
- status: replicas, updatedReplicas, readyReplicas, availableReplicas,
  unavailableReplicas, observedGeneration and the Available / Progressing conditions
  with kube's reasons, so `kubectl rollout status` reports like on a real cluster.

One `_Rollout` carries a single sync: a working copy of the Deployment and the
ReplicaSets as this sync last wrote them, mirroring kube's functions (`getNewReplicaSet`,
`reconcileNewReplicaSet`, `reconcileOldReplicaSets`, `scale`, `syncRolloutStatus`, ...).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable
from datetime import datetime

from playground.controlplane import ControlPlaneOptions, Credentials
from runtime.api.kinds import DEPLOYMENTS, PODS, REPLICASETS
from runtime.api.objects import JSON
from runtime.api.selectors import Selector, SelectorError, label_selector
from runtime.core import (
    AlreadyExistsError,
    APIStatusError,
    Client,
    EventRecorder,
    Informer,
    Manager,
    MapFunc,
    NotFoundError,
    PermanentError,
    Request,
    Result,
    Store,
    TemporaryError,
)

from .workloads import names, pods, rollout, timestamps
from .workloads.claims import claim
from .workloads.conditions import get_condition, new_condition, remove_condition, set_condition
from .workloads.hashing import pod_template_hash
from .workloads.mapping import owner_or_selector
from .workloads.ordering import by_creation, by_revision, by_size_newer, by_size_older, replicas
from .workloads.ownership import (
    controller_of,
    controller_ref,
    is_controlled_by,
    is_deleting,
    labels,
    name,
    uid,
)
from .workloads.podcontrol import is_namespace_terminating
from .workloads.status import retry_on_conflict

logger = logging.getLogger(__name__)

#: the ServiceAccount kube-controller-manager runs this controller as (system:controller:deployment-controller)
ACCOUNT = "deployment-controller"


COMPONENT = "deployment-controller"
#: a deadline closer than this is checked again at once (kube: rate-limited requeue)
_MIN_RECHECK = 1.0


class _Rollout:
    """One sync of one Deployment: kube's controller functions over a working copy."""

    def __init__(
        self,
        client: Client,
        recorder: EventRecorder,
        deployment: JSON,
        replica_sets: Iterable[JSON],
        *,
        now: datetime,
    ) -> None:
        self.client = client
        self.recorder = recorder
        self.d = deployment
        self.now = now
        #: the Deployment's ReplicaSets by uid, replaced by what the API returns after each write
        self.rs: dict[str, JSON] = {uid(rs): rs for rs in replica_sets}
        self.requeue_after: float | None = None

    # reading

    @property
    def ref(self) -> str:
        return f"{self.d['metadata'].get('namespace')}/{self.d['metadata']['name']}"

    def current(self, rs: JSON) -> JSON:
        return self.rs.get(uid(rs), rs)

    def listed(self) -> list[JSON]:
        return list(self.rs.values())

    def remember(self, rs: JSON) -> JSON:
        self.rs[uid(rs)] = rs
        return rs

    def condition(self, kind: str, status: str, reason: str, message: str) -> JSON:
        return new_condition(kind, status, reason, message, now=self.now, update_time=True)

    # writing the Deployment

    async def write_status(self) -> None:
        updated = await self.client.update_status(DEPLOYMENTS, self.d, field_manager=names.FIELD_MANAGER)
        self.d["metadata"]["resourceVersion"] = updated["metadata"]["resourceVersion"]

    async def set_revision(self, revision: str | None) -> None:
        """Record the new ReplicaSet's revision on the Deployment (`SetDeploymentRevision`, then an Update)."""
        meta = self.d["metadata"]
        if revision is None or (meta.get("annotations") or {}).get(names.REVISION) == revision:
            return
        annotated = {
            **self.d,
            "metadata": {
                **meta,
                "annotations": {**(meta.get("annotations") or {}), names.REVISION: revision},
            },
        }
        updated = await self.client.replace(DEPLOYMENTS, annotated, field_manager=names.FIELD_MANAGER)
        meta["annotations"] = updated["metadata"].get("annotations") or {}
        meta["resourceVersion"] = updated["metadata"]["resourceVersion"]

    # the new and old ReplicaSets

    async def all_replica_sets(self, *, create: bool) -> tuple[JSON | None, list[JSON]]:
        """(new, old): the new ReplicaSet (created if `create` and missing), revisions synced."""
        old = rollout.find_old(self.d, self.listed())
        new = await self.new_replica_set(old, create=create)
        return new, [self.current(rs) for rs in old]

    async def new_replica_set(self, old: list[JSON], *, create: bool) -> JSON | None:
        existing = rollout.find_new(self.d, self.listed())
        new_revision = rollout.max_revision(old) + 1
        if existing is not None:
            return await self._sync_existing(existing, new_revision)
        if not create:
            return None
        return await self._create_new(old, new_revision)

    async def _sync_existing(self, existing: JSON, new_revision: int) -> JSON:
        rs = copy.deepcopy(existing)
        annotations_changed = rollout.set_new_rs_annotations(self.d, rs, new_revision, exists=True)
        min_ready = rollout.spec(self.d).get("minReadySeconds", 0)
        if annotations_changed or rs["spec"].get("minReadySeconds", 0) != min_ready:
            rs["spec"]["minReadySeconds"] = min_ready
            return self.remember(
                await self.client.replace(REPLICASETS, rs, field_manager=names.FIELD_MANAGER)
            )
        await self.set_revision((rs["metadata"].get("annotations") or {}).get(names.REVISION))
        status = self.d.setdefault("status", {})
        if rollout.has_progress_deadline(self.d) and get_condition(status, rollout.PROGRESSING) is None:
            message = f'Found new replica set "{name(rs)}"'
            set_condition(status, self.condition(rollout.PROGRESSING, "True", rollout.FOUND_NEW_RS, message))
            await self.write_status()
        return existing

    async def _create_new(self, old: list[JSON], new_revision: int) -> JSON:
        status = self.d.setdefault("status", {})
        template = copy.deepcopy(rollout.spec(self.d).get("template") or {})
        template_hash = pod_template_hash(template, status.get("collisionCount"))
        template_meta = template.setdefault("metadata", {})
        template_meta["labels"] = {
            **(template_meta.get("labels") or {}),
            names.POD_TEMPLATE_HASH: template_hash,
        }
        selector = copy.deepcopy(rollout.spec(self.d).get("selector") or {})
        selector["matchLabels"] = {
            **(selector.get("matchLabels") or {}),
            names.POD_TEMPLATE_HASH: template_hash,
        }
        meta = self.d["metadata"]
        rs_name = f"{meta['name']}-{template_hash}"
        body: JSON = {
            "apiVersion": REPLICASETS.api_version,
            "kind": REPLICASETS.kind,
            "metadata": {
                "name": rs_name,
                "namespace": meta["namespace"],
                "labels": dict(template_meta["labels"]),
                "ownerReferences": [controller_ref(self.d)],
            },
            "spec": {
                "replicas": 0,
                "minReadySeconds": rollout.spec(self.d).get("minReadySeconds", 0),
                "selector": selector,
                "template": template,
            },
        }
        body["spec"]["replicas"] = rollout.new_rs_new_replicas(self.d, [*old, body], body)
        rollout.set_new_rs_annotations(self.d, body, new_revision, exists=False)
        already_exists = False
        try:
            created = await self.client.create(REPLICASETS, body, field_manager=names.FIELD_MANAGER)
        except AlreadyExistsError:
            created = await self._adopt_or_collide(rs_name)
            already_exists = True
        except APIStatusError as exc:
            if not is_namespace_terminating(exc):
                await self._report_create_failure(rs_name, exc)
            raise
        self.remember(created)
        if not already_exists and replicas(created) > 0:
            await self.recorder.record(
                self.d,
                reason="ScalingReplicaSet",
                message=f"Scaled up replica set {rs_name} from 0 to {replicas(created)}",
            )
        await self.set_revision(str(new_revision))
        if not already_exists and rollout.has_progress_deadline(self.d):
            message = f'Created new replica set "{rs_name}"'
            set_condition(
                status, self.condition(rollout.PROGRESSING, "True", rollout.NEW_RS_CREATED, message)
            )
            await self.write_status()
        return created

    async def _adopt_or_collide(self, rs_name: str) -> JSON:
        """The name is taken: ours (a cache behind) or a hash collision, resolved by collisionCount."""
        existing = await self.client.get(REPLICASETS, rs_name, namespace=self.d["metadata"]["namespace"])
        template = rollout.spec(self.d).get("template") or {}
        if is_controlled_by(existing, self.d) and rollout.equal_ignore_hash(
            template, rollout.spec(existing).get("template") or {}
        ):
            return existing
        status = self.d.setdefault("status", {})
        status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
        await self.write_status()
        raise TemporaryError(
            f"{self.ref}: replica set name {rs_name} is taken by another template; "
            f"collisionCount is now {status['collisionCount']}"
        )

    async def _report_create_failure(self, rs_name: str, exc: APIStatusError) -> None:
        message = f'Failed to create new replica set "{rs_name}": {exc.message}'
        if rollout.has_progress_deadline(self.d):
            status = self.d.setdefault("status", {})
            set_condition(
                status, self.condition(rollout.PROGRESSING, "False", rollout.FAILED_RS_CREATE, message)
            )
            try:
                await self.write_status()
            except APIStatusError as status_exc:
                logger.warning("%s: could not record the failure in status: %s", self.ref, status_exc)
        await self.recorder.record(self.d, reason=rollout.FAILED_RS_CREATE, message=message, type="Warning")

    # scaling

    async def scale_replica_set(
        self, rs: JSON, new_scale: int, operation: str | None = None
    ) -> tuple[bool, JSON]:
        """Set a ReplicaSet's size and replica annotations (`scaleReplicaSet`); (scaled, ReplicaSet)."""
        rs = self.current(rs)
        old_scale = replicas(rs)
        if operation is None:
            if old_scale == new_scale:
                return False, rs
            operation = "up" if old_scale < new_scale else "down"
        size_changes = old_scale != new_scale
        wanted = rollout.desired(self.d)
        maximum = wanted + rollout.max_surge(self.d)
        if not size_changes and not rollout.replicas_annotations_need_update(rs, wanted, maximum):
            return False, rs
        body = copy.deepcopy(rs)
        body["spec"]["replicas"] = new_scale
        rollout.set_replicas_annotations(body, wanted, maximum)
        rs = self.remember(await self.client.replace(REPLICASETS, body, field_manager=names.FIELD_MANAGER))
        if size_changes:
            logger.info(
                "%s: scaled %s replica set %s from %d to %d",
                self.ref,
                operation,
                name(rs),
                old_scale,
                new_scale,
            )
            await self.recorder.record(
                self.d,
                reason="ScalingReplicaSet",
                message=f"Scaled {operation} replica set {name(rs)} from {old_scale} to {new_scale}",
            )
        return size_changes, rs

    async def scale(self, new: JSON | None, old: list[JSON]) -> None:
        """A scaling event or a paused Deployment: resize the active ReplicaSets (`scale`)."""
        wanted = rollout.desired(self.d)
        target = rollout.find_active_or_latest(new, old)
        if target is not None:
            if replicas(target) != wanted:
                await self.scale_replica_set(target, wanted)
            return
        if rollout.is_saturated(self.d, new):
            for rs in rollout.active(old):
                await self.scale_replica_set(rs, 0)
            return
        if not rollout.is_rolling_update(self.d):
            return
        active_sets = rollout.active([*old, new])
        allowed = wanted + rollout.max_surge(self.d) if wanted > 0 else 0
        to_add = allowed - rollout.total_replicas(active_sets)
        operation = ""
        if to_add > 0:
            active_sets, operation = by_size_newer(active_sets), "up"
        elif to_add < 0:
            active_sets, operation = by_size_older(active_sets), "down"
        sizes: dict[str, int] = {}
        added = 0
        for rs in active_sets:
            if to_add:
                share = rollout.proportion(rs, self.d, to_add, added)
                sizes[uid(rs)] = replicas(rs) + share
                added += share
            else:
                sizes[uid(rs)] = replicas(rs)
        for index, rs in enumerate(active_sets):
            if index == 0 and to_add:
                sizes[uid(rs)] = max(sizes[uid(rs)] + to_add - added, 0)
            await self.scale_replica_set(rs, sizes[uid(rs)], operation)

    async def reconcile_new(self, new: JSON) -> bool:
        """Scale the new ReplicaSet up within maxSurge, or down to the Deployment's size."""
        new = self.current(new)
        wanted = rollout.desired(self.d)
        if replicas(new) == wanted:
            return False
        if replicas(new) > wanted:
            return (await self.scale_replica_set(new, wanted))[0]
        target = rollout.new_rs_new_replicas(self.d, [self.current(rs) for rs in self.listed()], new)
        return (await self.scale_replica_set(new, target))[0]

    async def reconcile_old(self, old: list[JSON], new: JSON) -> bool:
        """Scale old ReplicaSets down while enough pods stay available (`reconcileOldReplicaSets`)."""
        old = rollout.active(self.current(rs) for rs in old)
        if rollout.total_replicas(old) == 0:
            return False
        new = self.current(new)
        everything = [*old, new]
        min_available = rollout.desired(self.d) - rollout.max_unavailable(self.d)
        new_unavailable = replicas(new) - int(rollout.status_of(new).get("availableReplicas") or 0)
        max_scaled_down = rollout.total_replicas(everything) - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        cleaned = await self._cleanup_unhealthy(old, max_scaled_down)
        scaled = await self._scale_down_for_rolling([*(self.current(rs) for rs in old), new], old)
        return cleaned + scaled > 0

    async def _cleanup_unhealthy(self, old: list[JSON], limit: int) -> int:
        """Scale away old pods that are not available anyway: that costs no availability."""
        total = 0
        for rs in by_creation(old):
            rs = self.current(rs)
            if total >= limit:
                break
            available = int(rollout.status_of(rs).get("availableReplicas") or 0)
            if replicas(rs) == 0 or replicas(rs) == available:
                continue
            count = min(limit - total, replicas(rs) - available)
            await self.scale_replica_set(rs, replicas(rs) - count)
            total += count
        return total

    async def _scale_down_for_rolling(self, everything: list[JSON], old: list[JSON]) -> int:
        min_available = rollout.desired(self.d) - rollout.max_unavailable(self.d)
        available = rollout.available_replicas(everything)
        if available <= min_available:
            return 0
        budget = available - min_available
        total = 0
        for rs in by_creation(self.current(rs) for rs in old):
            if total >= budget:
                break
            if replicas(rs) == 0:
                continue
            count = min(replicas(rs), budget - total)
            await self.scale_replica_set(rs, replicas(rs) - count)
            total += count
        return total

    # history and status

    async def cleanup(self, old: list[JSON]) -> None:
        """Delete the oldest idle ReplicaSets beyond revisionHistoryLimit (`cleanupDeployment`)."""
        limit = rollout.spec(self.d).get("revisionHistoryLimit")
        if limit is None:
            return
        alive = [self.current(rs) for rs in old if not is_deleting(self.current(rs))]
        surplus = len(alive) - int(limit)
        for rs in by_revision(alive)[: max(surplus, 0)]:
            status = rollout.status_of(rs)
            generation = int(rs["metadata"].get("generation") or 0)
            if (
                status.get("replicas")
                or replicas(rs)
                or generation > int(status.get("observedGeneration") or 0)
            ):
                continue
            logger.info(
                "%s: deleting old replica set %s (beyond revisionHistoryLimit %d)", self.ref, name(rs), limit
            )
            try:
                await self.client.delete(REPLICASETS, name(rs), namespace=self.d["metadata"]["namespace"])
            except NotFoundError:
                continue

    async def sync_status(self, everything: list[JSON | None], new: JSON | None) -> None:
        """Counts and Available only (`syncDeploymentStatus`)."""
        status = rollout.calculate_status(self._fresh(everything), self._fresh_one(new), self.d, now=self.now)
        if status != self.d.get("status"):
            self.d["status"] = status
            await self.write_status()

    async def sync_rollout_status(self, everything: list[JSON | None], new: JSON | None) -> None:
        """Counts plus the Progressing and ReplicaFailure conditions (`syncRolloutStatus`)."""
        new = self._fresh_one(new)
        everything_now = self._fresh(everything)
        status = rollout.calculate_status(everything_now, new, self.d, now=self.now)
        if not rollout.has_progress_deadline(self.d):
            remove_condition(status, rollout.PROGRESSING)
        current = get_condition(rollout.status_of(self.d), rollout.PROGRESSING)
        complete = (
            status.get("replicas", 0) == status.get("updatedReplicas", 0)
            and current is not None
            and current.get("reason") == rollout.NEW_RS_AVAILABLE
        )
        if rollout.has_progress_deadline(self.d) and not complete:
            self._progress(status, current, new)
        failure = self._replica_failure(everything_now, new)
        if failure is not None:
            set_condition(status, failure)
        else:
            remove_condition(status, rollout.REPLICA_FAILURE)
        if status == self.d.get("status"):
            self.requeue_after = self._recheck_in(status)
            return
        self.d["status"] = status
        await self.write_status()

    def _progress(self, status: JSON, current: JSON | None, new: JSON | None) -> None:
        deployment_name = self.d["metadata"]["name"]
        subject = f'ReplicaSet "{name(new)}"' if new is not None else f'Deployment "{deployment_name}"'
        if rollout.is_complete(self.d, status):
            message = f"{subject} has successfully progressed."
            set_condition(
                status, self.condition(rollout.PROGRESSING, "True", rollout.NEW_RS_AVAILABLE, message)
            )
        elif rollout.is_progressing(self.d, status):
            condition = self.condition(
                rollout.PROGRESSING, "True", rollout.RS_UPDATED, f"{subject} is progressing."
            )
            if current is not None:
                if current.get("status") == "True":
                    condition["lastTransitionTime"] = current.get("lastTransitionTime")
                remove_condition(status, rollout.PROGRESSING)
            set_condition(status, condition)
        elif rollout.is_timed_out(self.d, status, now=self.now):
            message = f"{subject} has timed out progressing."
            set_condition(status, self.condition(rollout.PROGRESSING, "False", rollout.TIMED_OUT, message))

    def _replica_failure(self, everything: list[JSON], new: JSON | None) -> JSON | None:
        candidates = ([new] if new is not None else []) + everything
        for rs in candidates:
            for condition in rollout.status_of(rs).get("conditions") or []:
                if condition.get("type") == rollout.REPLICA_FAILURE:
                    failure = {
                        key: condition[key]
                        for key in ("type", "status", "reason", "message")
                        if key in condition
                    }
                    stamp = condition.get("lastTransitionTime")
                    return {**failure, "lastUpdateTime": stamp, "lastTransitionTime": stamp}
        return None

    def _recheck_in(self, status: JSON) -> float | None:
        """When to look again for a stuck rollout's deadline (`requeueStuckDeployment`)."""
        current = get_condition(rollout.status_of(self.d), rollout.PROGRESSING)
        if (
            current is None
            or rollout.is_complete(self.d, status)
            or current.get("reason") == rollout.TIMED_OUT
        ):
            return None
        deadline = rollout.progress_deadline(self.d, rollout.status_of(self.d))
        if deadline is None:
            return None
        return max((deadline - self.now).total_seconds() + 1.0, _MIN_RECHECK)

    def _fresh(self, replica_sets: Iterable[JSON | None]) -> list[JSON]:
        return [self.current(rs) for rs in replica_sets if rs is not None]

    def _fresh_one(self, rs: JSON | None) -> JSON | None:
        return self.current(rs) if rs is not None else None

    # the strategies

    async def check_paused_conditions(self) -> None:
        if not rollout.has_progress_deadline(self.d):
            return
        status = self.d.setdefault("status", {})
        current = get_condition(status, rollout.PROGRESSING)
        if current is not None and current.get("reason") == rollout.TIMED_OUT:
            return
        paused_recorded = current is not None and current.get("reason") == rollout.PAUSED
        paused = bool(rollout.spec(self.d).get("paused"))
        if paused and not paused_recorded:
            condition = self.condition(rollout.PROGRESSING, "Unknown", rollout.PAUSED, "Deployment is paused")
        elif not paused and paused_recorded:
            condition = self.condition(
                rollout.PROGRESSING, "Unknown", rollout.RESUMED, "Deployment is resumed"
            )
        else:
            return
        set_condition(status, condition)
        await self.write_status()

    async def is_scaling_event(self) -> bool:
        new, old = await self.all_replica_sets(create=False)
        for rs in rollout.active([*old, new]):
            wanted = rollout.annotation_int(rs, names.DESIRED_REPLICAS)
            if wanted is not None and wanted != rollout.desired(self.d):
                return True
        return False

    async def sync(self) -> None:
        """Scaling events and paused Deployments: no new ReplicaSet, sizes only."""
        new, old = await self.all_replica_sets(create=False)
        await self.scale(new, old)
        if rollout.spec(self.d).get("paused"):
            await self.cleanup(old)
        await self.sync_status([*old, new], new)

    async def status_only(self) -> None:
        new, old = await self.all_replica_sets(create=False)
        await self.sync_status([*old, new], new)

    async def rolling(self) -> None:
        new, old = await self.all_replica_sets(create=True)
        assert new is not None, "all_replica_sets(create=True) returns the new ReplicaSet"
        everything: list[JSON | None] = [*old, new]
        if await self.reconcile_new(new) or await self.reconcile_old(old, new):
            await self.sync_rollout_status(everything, new)
            return
        if rollout.is_complete(self.d, rollout.status_of(self.d)):
            await self.cleanup(old)
        await self.sync_rollout_status(everything, new)

    async def recreate(self, pods_by_owner: dict[str, list[JSON]]) -> None:
        new, old = await self.all_replica_sets(create=False)
        scaled_down = False
        for rs in rollout.active(old):
            scaled_down = (await self.scale_replica_set(rs, 0))[0] or scaled_down
        if scaled_down or self._old_pods_running(new, old, pods_by_owner):
            await self.sync_rollout_status([*old, new], new)
            return
        if new is None:
            new, old = await self.all_replica_sets(create=True)
            assert new is not None, "all_replica_sets(create=True) returns the new ReplicaSet"
        await self.scale_replica_set(new, rollout.desired(self.d))
        if rollout.is_complete(self.d, rollout.status_of(self.d)):
            await self.cleanup(old)
        await self.sync_rollout_status([*old, new], new)

    def _old_pods_running(
        self, new: JSON | None, old: list[JSON], pods_by_owner: dict[str, list[JSON]]
    ) -> bool:
        if rollout.actual_replicas(self.current(rs) for rs in old) > 0:
            return True
        return any(
            not pods.is_terminal(pod)
            for owner, owned in pods_by_owner.items()
            if new is None or owner != uid(new)
            for pod in owned
        )


class DeploymentReconciler:
    def __init__(
        self,
        client: Client,
        *,
        deployments: Informer,
        replicasets: Informer,
        pods: Informer,
        recorder: EventRecorder,
    ) -> None:
        self._client = client
        self._deployments = deployments
        self._replicasets = replicasets
        self._pods = pods
        self._recorder = recorder

    async def reconcile(self, request: Request) -> Result | None:
        return await retry_on_conflict(request, self._sync(request))

    async def _sync(self, request: Request) -> Result | None:
        cached = self._deployments.store.get(request.name, namespace=request.namespace)
        if cached is None:
            return None
        deployment = copy.deepcopy(cached)
        try:
            selector = label_selector(rollout.spec(deployment).get("selector"))
        except SelectorError as exc:
            raise PermanentError(f"{request}: invalid selector: {exc}; fix spec.selector") from exc
        if selector.empty():
            await self._selecting_all(deployment)
            return None
        owned = await claim(
            self._client,
            REPLICASETS,
            owner=deployment,
            candidates=self._replicasets.store.items(namespace=request.namespace),
            selector=selector,
        )
        run = _Rollout(self._client, self._recorder, deployment, owned, now=timestamps.now())
        if is_deleting(deployment):
            await run.status_only()
            return None
        await run.check_paused_conditions()
        if rollout.spec(deployment).get("paused") or await run.is_scaling_event():
            await run.sync()
        elif rollout.strategy_type(deployment) == rollout.RECREATE:
            await run.recreate(self._pods_by_owner(deployment, selector, owned))
        else:
            await run.rolling()
        return Result(requeue_after=run.requeue_after) if run.requeue_after is not None else None

    async def _selecting_all(self, deployment: JSON) -> None:
        await self._recorder.record(
            deployment,
            reason="SelectingAll",
            message="This deployment is selecting all pods. A non-empty selector is required.",
            type="Warning",
        )
        status = deployment.setdefault("status", {})
        generation = deployment["metadata"].get("generation", 0)
        if int(status.get("observedGeneration") or 0) < generation:
            status["observedGeneration"] = generation
            await self._client.update_status(DEPLOYMENTS, deployment, field_manager=names.FIELD_MANAGER)

    def _pods_by_owner(
        self, deployment: JSON, selector: Selector, owned: list[JSON]
    ) -> dict[str, list[JSON]]:
        """The Deployment's pods grouped by the uid of their ReplicaSet (`getPodMapForDeployment`)."""
        uids = {uid(rs) for rs in owned}
        grouped: dict[str, list[JSON]] = {rs_uid: [] for rs_uid in uids}
        for pod in self._pods.store.items(namespace=deployment["metadata"]["namespace"]):
            ref = controller_of(pod)
            if ref is not None and ref.get("uid") in uids and selector.matches(labels(pod)):
                grouped[str(ref["uid"])].append(pod)
        return grouped


def _pods_to_recreate_deployments(deployments: Store, replicasets: Store) -> MapFunc:
    """A pod's Deployment (through its ReplicaSet), when that Deployment recreates: it waits for old pods to go."""

    def mapped(pod: JSON) -> list[Request]:
        ref = controller_of(pod)
        if ref is None or ref.get("kind") != REPLICASETS.kind:
            return []
        namespace = pod["metadata"].get("namespace")
        rs = replicasets.get(str(ref["name"]), namespace=namespace)
        owner = controller_of(rs) if rs is not None else None
        if owner is None or owner.get("kind") != DEPLOYMENTS.kind:
            return []
        deployment = deployments.get(str(owner["name"]), namespace=namespace)
        if deployment is None or rollout.strategy_type(deployment) != rollout.RECREATE:
            return []
        return [Request.of(deployment)]

    return mapped


def setup(manager: Manager, options: ControlPlaneOptions, credentials: Credentials) -> None:
    """Register the Deployment controller with `manager`."""
    deployments = manager.informer(DEPLOYMENTS)
    replicasets = manager.informer(REPLICASETS)
    pod_informer = manager.informer(PODS)
    client = credentials.client(ACCOUNT)
    reconciler = DeploymentReconciler(
        client,
        deployments=deployments,
        replicasets=replicasets,
        pods=pod_informer,
        recorder=EventRecorder(client, component=COMPONENT),
    )
    controller = manager.controller("deployment", reconciler, primary=deployments)
    controller.watches(replicasets, owner_or_selector(DEPLOYMENTS, deployments.store))
    controller.watches(pod_informer, _pods_to_recreate_deployments(deployments.store, replicasets.store))
