"""The DaemonSet controller: one pod per eligible node (kube's `daemon` controller).

Per DaemonSet it keeps the template history as ControllerRevisions (`<ds>-<hash>`, the
hash also labels the pods as `controller-revision-hash`), claims its pods and groups
them by target node, then:

- creates a pod for every node that should run one and has none (slow-start batches),
  pinned to the node by a required node affinity `metadata.name In [node]` for the
  scheduler to bind, with kube's default daemon tolerations;
- deletes pods on nodes that should not run them any more (untolerated NoExecute
  taints, selector or affinity changes), surplus pods on a node (the oldest stays),
  failed pods (with a per-node backoff), and unscheduled pods of nodes that are gone;
- RollingUpdate: replaces old pods with at most maxUnavailable nodes unavailable;
- prunes ControllerRevisions beyond revisionHistoryLimit that no pod uses;
- status: desired/current/updated NumberScheduled, numberReady, numberAvailable,
  numberUnavailable, numberMisscheduled, observedGeneration.

Like kube it waits for the pods it created or deleted to show up in the cache
(expectations) before it acts again, and only writes status meanwhile.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import time
from datetime import datetime

from playground.controlplane import ControlPlaneOptions, Credentials
from runtime.api.kinds import CONTROLLERREVISIONS, DAEMONSETS, NODES, PODS
from runtime.api.objects import JSON
from runtime.api.selectors import Selector, SelectorError, label_selector
from runtime.core import (
    AlreadyExistsError,
    APIError,
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

from .workloads import daemons, history, names, ordering, pods, timestamps
from .workloads.claims import claim
from .workloads.expectations import Expectations
from .workloads.hashing import pod_template_hash
from .workloads.intstr import scaled_value
from .workloads.mapping import owner_or_selector
from .workloads.ownership import is_deleting, labels, name, namespace, reference
from .workloads.podcontrol import PodControl
from .workloads.status import retry_on_conflict, update_status

logger = logging.getLogger(__name__)

#: the ServiceAccount kube-controller-manager runs this controller as (system:controller:daemon-set-controller)
ACCOUNT = "daemon-set-controller"

#: node name -> the DaemonSet's pods for it
PodsByNode = dict[str, list[JSON]]

COMPONENT = "daemonset-controller"
BURST_REPLICAS = 250
#: kube's failedPodsBackoff: 1 s doubling to 15 min per DaemonSet generation and node
BACKOFF_INITIAL = 1.0
BACKOFF_MAX = 900.0


def pods_by_node(owned: list[JSON]) -> PodsByNode:
    """Group daemon pods by the node they are for; finished pods being deleted are done with."""
    grouped: PodsByNode = {}
    for pod in owned:
        if pods.is_terminal(pod) and pods.is_terminating(pod):
            continue
        node = daemons.target_node(pod)
        if node is not None:
            grouped.setdefault(node, []).append(pod)
    return grouped


def daemon_set_status(
    ds: JSON, nodes: list[JSON], grouped: PodsByNode, revision_hash: str, *, now: datetime, observe: bool
) -> JSON:
    """The counts `kubectl get ds` shows (`updateDaemonSetStatus`)."""
    min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
    generation = daemons.template_generation(ds)
    desired = current = misscheduled = ready = updated = available = 0
    for node in nodes:
        run, _ = daemons.should_run(ds, node)
        daemon_pods = grouped.get(name(node), [])
        if not run:
            misscheduled += bool(daemon_pods)
            continue
        desired += 1
        if not daemon_pods:
            continue
        current += 1
        pod = ordering.by_scheduled_then_age(daemon_pods)[0]
        if pods.is_ready(pod):
            ready += 1
            available += pods.is_available(pod, min_ready, now)
        updated += daemons.is_updated(pod, revision_hash, generation)
    status = copy.deepcopy(ds.get("status") or {})
    status.update(
        currentNumberScheduled=current,
        numberMisscheduled=misscheduled,
        desiredNumberScheduled=desired,
        numberReady=ready,
    )
    for field, value in (
        ("updatedNumberScheduled", updated),
        ("numberAvailable", available),
        ("numberUnavailable", desired - available),
    ):
        if value:
            status[field] = value
        else:
            status.pop(field, None)
    if observe:
        status["observedGeneration"] = (ds.get("metadata") or {}).get("generation", 0)
    return status


def max_unavailable(ds: JSON, desired: int) -> int:
    """Nodes a rolling update may leave without an available pod (`updatedDesiredNodeCounts`).

    maxSurge is not implemented: a surge DaemonSet updates as if maxUnavailable were at least 1.
    """
    rolling = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    unavailable = scaled_value(rolling.get("maxUnavailable"), desired, round_up=True)
    return max(unavailable, 1) if desired > 0 else unavailable


def rolling_update_deletions(
    ds: JSON, nodes: list[JSON], grouped: PodsByNode, revision_hash: str, *, now: datetime
) -> list[JSON]:
    """Old pods to delete now so the manage loop recreates them updated (kube's surge-free `rollingUpdate`)."""
    min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
    generation = daemons.template_generation(ds)
    candidates_by_node = dict(grouped)
    desired = 0
    for node in nodes:
        if daemons.should_run(ds, node)[0]:
            desired += 1
            candidates_by_node.setdefault(name(node), [])
    budget = max_unavailable(ds, desired)
    unavailable = 0
    replacements: list[JSON] = []
    candidates: list[JSON] = []
    for node_name in sorted(candidates_by_node):
        new, old, single = daemons.updated_and_old(candidates_by_node[node_name], revision_hash, generation)
        if not single or (new is None) == (old is None):
            unavailable += 1
        elif new is not None:
            unavailable += not pods.is_available(new, min_ready, now)
        elif old is not None and not pods.is_available(old, min_ready, now):
            replacements.append(old)
        elif old is not None and unavailable < budget:
            candidates.append(old)
    remaining = min(max(budget - unavailable, 0), len(candidates))
    return replacements + candidates[:remaining]


class DaemonSetReconciler:
    def __init__(
        self,
        client: Client,
        *,
        daemonsets: Informer,
        pods: Informer,
        nodes: Informer,
        revisions: Informer,
        recorder: EventRecorder,
        expectations: Expectations,
    ) -> None:
        self._client = client
        self._daemonsets = daemonsets
        self._pods = pods
        self._nodes = nodes
        self._revisions = revisions
        self._recorder = recorder
        self._expectations = expectations
        self._pod_control = PodControl(client, recorder, expectations)
        #: failed-pod backoff key -> (delay, when it was last used)
        self._backoff: dict[str, tuple[float, float]] = {}

    async def reconcile(self, request: Request) -> Result | None:
        return await retry_on_conflict(request, self._sync(request))

    async def _sync(self, request: Request) -> Result | None:
        key = str(request)
        ds = self._daemonsets.store.get(request.name, namespace=request.namespace)
        if ds is None:
            self._expectations.forget(key)
            return None
        try:
            selector = label_selector((ds.get("spec") or {}).get("selector"))
        except SelectorError as exc:
            raise PermanentError(f"{key}: invalid selector: {exc}; fix spec.selector") from exc
        if selector.empty():
            await self._recorder.record(
                ds,
                reason="SelectingAll",
                message="This daemon set is selecting all pods. A non-empty selector is required.",
                type="Warning",
            )
            return None
        if is_deleting(ds):
            return None
        nodes = sorted(self._nodes.store, key=name)
        current, old = await self._history(ds, selector)
        revision_hash = str(labels(current).get(names.CONTROLLER_REVISION_HASH, ""))
        candidates = self._pods.store.items(namespace=request.namespace)
        owned = await claim(self._client, PODS, owner=ds, candidates=candidates, selector=selector)
        grouped = pods_by_node(owned)
        now = timestamps.now()
        if not self._expectations.satisfied(key):
            status = daemon_set_status(ds, nodes, grouped, revision_hash, now=now, observe=False)
            await update_status(self._client, DAEMONSETS, ds, status)
            return Result(requeue_after=self._expectations.expires_in(key))
        wait: list[float] = []
        error: APIError | None = None
        try:
            await self._manage(key, ds, nodes, grouped, revision_hash, wait)
            strategy = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("type") or "RollingUpdate"
            if self._expectations.satisfied(key) and strategy == "RollingUpdate":
                victims = rolling_update_deletions(ds, nodes, grouped, revision_hash, now=now)
                await self._sync_nodes(
                    key, ds, deletions=victims, nodes_to_create=[], revision_hash=revision_hash
                )
            await self._cleanup_history(ds, old, grouped)
        except APIError as exc:
            error = exc
        status = daemon_set_status(ds, nodes, grouped, revision_hash, now=now, observe=True)
        await update_status(self._client, DAEMONSETS, ds, status)
        if error is not None:
            raise error
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        if min_ready and status["numberReady"] != status.get("numberAvailable", 0):
            wait.append(float(min_ready))
        return Result(requeue_after=min(wait)) if wait else None

    # pods

    async def _manage(
        self,
        key: str,
        ds: JSON,
        nodes: list[JSON],
        grouped: PodsByNode,
        revision_hash: str,
        wait: list[float],
    ) -> None:
        to_create: list[str] = []
        to_delete: list[JSON] = []
        for node in nodes:
            run, keep = daemons.should_run(ds, node)
            daemon_pods = grouped.get(name(node), [])
            if run and not daemon_pods:
                to_create.append(name(node))
            elif keep:
                to_delete += await self._excess_or_failed(ds, name(node), daemon_pods, wait)
            elif daemon_pods:
                to_delete += [pod for pod in daemon_pods if not pods.is_terminating(pod)]
        known = {name(node) for node in nodes}
        for node_name, daemon_pods in grouped.items():
            if node_name not in known:
                to_delete += [
                    pod for pod in daemon_pods if not pods.node_name(pod) and not pods.is_terminating(pod)
                ]
        await self._sync_nodes(
            key, ds, deletions=to_delete, nodes_to_create=to_create, revision_hash=revision_hash
        )

    async def _excess_or_failed(
        self, ds: JSON, node_name: str, daemon_pods: list[JSON], wait: list[float]
    ) -> list[JSON]:
        """Failed and succeeded pods go (failed ones with backoff); of several running ones the oldest stays."""
        doomed: list[JSON] = []
        running: list[JSON] = []
        for pod in daemon_pods:
            if pods.is_terminating(pod):
                continue
            if pods.phase(pod) == "Failed":
                delay = self._in_backoff(ds, node_name)
                if delay is not None:
                    wait.append(delay)
                    continue
                message = f"Found failed daemon pod {reference(pod)} on node {node_name}, will try to kill it"
                await self._recorder.record(ds, reason="FailedDaemonPod", message=message, type="Warning")
                doomed.append(pod)
            elif pods.phase(pod) == "Succeeded":
                doomed.append(pod)
            else:
                running.append(pod)
        return doomed + ordering.by_scheduled_then_age(running)[1:]

    def _in_backoff(self, ds: JSON, node_name: str) -> float | None:
        """Seconds left before a failed pod on this node may be replaced again (None: now, and back off)."""
        status = ds.get("status") or {}
        backoff_key = (
            f"{(ds.get('metadata') or {}).get('uid')}/{status.get('observedGeneration', 0)}/{node_name}"
        )
        clock = time.monotonic()
        self._backoff = {k: v for k, v in self._backoff.items() if clock - v[1] < 2 * BACKOFF_MAX}
        delay, since = self._backoff.get(backoff_key, (0.0, clock))
        if delay and clock - since < delay:
            return delay - (clock - since)
        self._backoff[backoff_key] = (min(max(delay * 2, BACKOFF_INITIAL), BACKOFF_MAX), clock)
        return None

    async def _sync_nodes(
        self, key: str, ds: JSON, *, deletions: list[JSON], nodes_to_create: list[str], revision_hash: str
    ) -> None:
        nodes_to_create = nodes_to_create[:BURST_REPLICAS]
        deletions = deletions[:BURST_REPLICAS]
        template = daemons.daemon_pod_template(ds, revision_hash)
        bodies = []
        for node_name in nodes_to_create:
            pod = pods.pod_from_template(template, owner=ds, generate_name=f"{name(ds)}-")
            daemons.pin_to_node(pod["spec"], node_name)
            bodies.append(pod)
        create_error = await self._pod_control.create_pods(key, ds, bodies)
        delete_error = await self._pod_control.delete_pods(key, ds, deletions)
        if create_error is not None:
            raise create_error
        if delete_error is not None:
            raise delete_error

    # history

    async def _history(self, ds: JSON, selector: Selector) -> tuple[JSON, list[JSON]]:
        """(current revision, old revisions) of the template (`constructHistory`)."""
        candidates = self._revisions.store.items(namespace=namespace(ds))
        owned = await claim(
            self._client, CONTROLLERREVISIONS, owner=ds, candidates=candidates, selector=selector
        )
        data = history.revision_data(ds)
        current = [revision for revision in owned if (revision.get("data") or {}) == data]
        old = [revision for revision in owned if (revision.get("data") or {}) != data]
        wanted_number = max((history.number(revision) for revision in old), default=0) + 1
        if not current:
            return await self._snapshot(ds, data, wanted_number), old
        kept = await self._dedup(ds, current)
        if history.number(kept) < wanted_number:
            kept = await self._client.patch(
                CONTROLLERREVISIONS,
                name(kept),
                {"revision": wanted_number},
                namespace=namespace(kept),
                field_manager=names.FIELD_MANAGER,
            )
        return kept, old

    async def _snapshot(self, ds: JSON, data: JSON, number: int) -> JSON:
        status = ds.get("status") or {}
        template = (ds.get("spec") or {}).get("template") or {}
        revision_hash = pod_template_hash(template, status.get("collisionCount"))
        body = history.new_revision(
            ds,
            data=data,
            number=number,
            revision_hash=revision_hash,
            hash_label=names.CONTROLLER_REVISION_HASH,
        )
        try:
            return await self._client.create(CONTROLLERREVISIONS, body, field_manager=names.FIELD_MANAGER)
        except AlreadyExistsError:
            existing = await self._client.get(CONTROLLERREVISIONS, name(body), namespace=namespace(ds))
            if (existing.get("data") or {}) == data:
                return existing
        fresh = await self._client.get(DAEMONSETS, name(ds), namespace=namespace(ds))
        fresh_status = fresh.get("status") or {}
        if fresh_status.get("collisionCount") != status.get("collisionCount"):
            raise TemporaryError(f"{reference(ds)}: stale collisionCount; syncing again")
        count = int(fresh_status.get("collisionCount") or 0) + 1
        await update_status(self._client, DAEMONSETS, fresh, {**fresh_status, "collisionCount": count})
        raise TemporaryError(
            f"{reference(ds)}: revision name {name(body)} is taken; collisionCount is now {count}"
        )

    async def _dedup(self, ds: JSON, current: list[JSON]) -> JSON:
        """Several revisions hold the current template: keep the newest, move pods onto it, delete the rest."""
        ordered = history.sort_revisions(current)
        kept = ordered[-1]
        kept_hash = labels(kept).get(names.CONTROLLER_REVISION_HASH)
        for duplicate in ordered[:-1]:
            duplicate_hash = labels(duplicate).get(names.CONTROLLER_REVISION_HASH)
            for pod in self._pods.store.items(namespace=namespace(ds)):
                if duplicate_hash and labels(pod).get(names.CONTROLLER_REVISION_HASH) == duplicate_hash:
                    relabel = {"metadata": {"labels": {names.CONTROLLER_REVISION_HASH: kept_hash}}}
                    await self._client.patch(
                        PODS, name(pod), relabel, namespace=namespace(pod), field_manager=names.FIELD_MANAGER
                    )
            try:
                await self._client.delete(
                    CONTROLLERREVISIONS, name(duplicate), namespace=namespace(duplicate)
                )
            except NotFoundError:
                continue
        return kept

    async def _cleanup_history(self, ds: JSON, old: list[JSON], grouped: PodsByNode) -> None:
        """Delete the oldest unused revisions beyond revisionHistoryLimit (`cleanupHistory`)."""
        limit = int((ds.get("spec") or {}).get("revisionHistoryLimit", 10))
        surplus = len(old) - limit
        if surplus <= 0:
            return
        live = {
            labels(pod).get(names.CONTROLLER_REVISION_HASH) for group in grouped.values() for pod in group
        }
        for revision in history.sort_revisions(old):
            if surplus <= 0:
                break
            if labels(revision).get(names.CONTROLLER_REVISION_HASH) in live:
                continue
            with contextlib.suppress(NotFoundError):
                await self._client.delete(CONTROLLERREVISIONS, name(revision), namespace=namespace(revision))
            surplus -= 1


def _every_daemonset(store: Store) -> MapFunc:
    """A node change may change where every DaemonSet runs."""

    def mapped(node: JSON) -> list[Request]:
        return [Request.of(ds) for ds in store]

    return mapped


def setup(manager: Manager, options: ControlPlaneOptions, credentials: Credentials) -> None:
    """Register the DaemonSet controller with `manager`."""
    daemonsets = manager.informer(DAEMONSETS)
    pod_informer = manager.informer(PODS)
    nodes = manager.informer(NODES)
    revisions = manager.informer(CONTROLLERREVISIONS)
    expectations = Expectations.of(pod_informer)
    client = credentials.client(ACCOUNT)
    reconciler = DaemonSetReconciler(
        client,
        daemonsets=daemonsets,
        pods=pod_informer,
        nodes=nodes,
        revisions=revisions,
        recorder=EventRecorder(client, component=COMPONENT),
        expectations=expectations,
    )
    controller = manager.controller("daemonset", reconciler, primary=daemonsets)
    controller.watches(pod_informer, owner_or_selector(DAEMONSETS, daemonsets.store))
    controller.watches(nodes, _every_daemonset(daemonsets.store))
    controller.owns(revisions)
