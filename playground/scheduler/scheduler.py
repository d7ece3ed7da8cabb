"""The scheduler: binds pending pods to nodes, as kube-scheduler does, as one reconciler on runtime.core.

A pod is pending when it has no `spec.nodeName`, names this scheduler in `spec.schedulerName`,
is neither being deleted nor finished, and has no scheduling gates.

Every reconcile (whatever pod it was asked about) runs a scheduling *pass* when the
cluster changed since the last one: it reads pods, nodes and namespaces from the informers'
stores, decides for every pending pod, highest priority first, with no await in between,
and only then writes, concurrently: a Binding per placed pod (`pods/<name>/binding`) with a
`Scheduled` event, and for a pod that fits nowhere a `PodScheduled=False/Unschedulable`
condition and a `FailedScheduling` event carrying kube-scheduler's message. So a hundred
pods created at once are decided in one pass and bound in parallel, and no API read happens
per pod. Pods already decided are *assumed* on their node until the informer shows them
bound (or a bind fails), so the next pass counts them even before their Binding lands.

A pod that fits nowhere is tried again on every change of a node, a namespace or a placed pod
(the controller maps those to the waiting pods), and every `unschedulable_retry` seconds
otherwise; its event and condition are written again only when the message changes or at
that period.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from playground.controlplane import ControlPlaneOptions, Credentials
from runtime.api.kinds import NAMESPACES, NODES, PODS
from runtime.api.objects import JSON
from runtime.core import (
    APIError,
    Client,
    ConflictError,
    EventRecorder,
    Informer,
    Manager,
    NotFoundError,
    Request,
    Result,
    TemporaryError,
)

from .nodeinfo import PodInfo, Snapshot
from .placement import decide, priority_order

logger = logging.getLogger(__name__)

CONTROLLER = "scheduler"
TERMINAL_PHASES = ("Succeeded", "Failed")
#: what the API server writes into a pod's `spec.schedulerName` when it names none
DEFAULT_SCHEDULER_NAME = "default-scheduler"


@dataclass
class Waiting:
    """A pod that fit nowhere in the last pass that looked at it."""

    request: Request
    message: str
    #: loop time its event and condition were last written
    reported_at: float


def is_pending(pod: JSON, *, scheduler_name: str) -> bool:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    return (
        not spec.get("nodeName")
        and spec.get("schedulerName", DEFAULT_SCHEDULER_NAME) == scheduler_name
        and not meta.get("deletionTimestamp")
        and (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES
        and not spec.get("schedulingGates")
    )


class Scheduler:
    def __init__(
        self,
        client: Client,
        *,
        pods: Informer,
        nodes: Informer,
        namespaces: Informer,
        options: ControlPlaneOptions,
    ) -> None:
        self._client = client
        self._pods = pods
        self._nodes = nodes
        self._namespaces = namespaces
        self._options = options
        self._recorder = EventRecorder(client, component=options.scheduler_name)
        #: pod uid -> the node it was decided for, until the informer shows it bound
        self._assumed: dict[str, str] = {}
        #: pod uid -> why it fit nowhere
        self._waiting: dict[str, Waiting] = {}
        #: pod uid -> what the filters read of its current version
        self._infos: dict[str, PodInfo] = {}
        #: bumped on every change the informers see, and when an assumption is dropped
        self._version = 0
        #: the version the last pass started from
        self._passed = -1
        for informer in (pods, nodes, namespaces):
            informer.add_handler(self._changed)

    def _changed(self, kind: str, obj: JSON, old: JSON | None) -> None:
        self._version += 1

    # maps of related changes to the pods they may unblock

    def waiting_pods(self, obj: JSON) -> list[Request]:
        return [waiting.request for waiting in self._waiting.values()]

    def waiting_pods_if_placed(self, pod: JSON) -> list[Request]:
        """A placed pod that changes (finishes, goes away, moves its labels) may make room for the waiting ones."""
        return self.waiting_pods(pod) if (pod.get("spec") or {}).get("nodeName") else []

    # reconcile

    async def reconcile(self, request: Request) -> Result | None:
        now = asyncio.get_running_loop().time()
        pod = self._pods.store.get(request.name, namespace=request.namespace)
        uid = str((pod or {}).get("metadata", {}).get("uid", ""))
        waiting = self._waiting.get(uid)
        retry = self._options.unschedulable_retry
        if self._version != self._passed or (waiting is not None and now >= waiting.reported_at + retry):
            await self._pass(now)
        waiting = self._waiting.get(uid)
        if waiting is None:
            return None
        return Result(requeue_after=max(waiting.reported_at + retry - now, 0.0))

    async def _pass(self, now: float) -> None:
        self._passed = self._version
        pending, placed = self._scan()
        if not pending:
            return
        snapshot = Snapshot.of(self._nodes.store, placed, self._namespaces.store)
        binds: list[tuple[PodInfo, str]] = []
        reports: list[tuple[PodInfo, str]] = []
        for pod in sorted(pending, key=priority_order):
            decision = decide(pod, snapshot)
            if decision.node is not None:
                snapshot.place(pod, decision.node)
                self._assumed[pod.uid] = decision.node
                self._waiting.pop(pod.uid, None)
                binds.append((pod, decision.node))
            elif self._wait(pod, decision.message, now):
                reports.append((pod, decision.message))
        async with asyncio.TaskGroup() as group:
            bound = [group.create_task(self._bind(pod, node), name=f"bind {pod.key}") for pod, node in binds]
            for pod, message in reports:
                group.create_task(self._report(pod, message), name=f"report {pod.key}")
        failed = [pod.key for (pod, _), task in zip(binds, bound, strict=True) if not task.result()]
        if failed:
            raise TemporaryError(f"binding {', '.join(failed)} failed; scheduling them again")

    def _scan(self) -> tuple[list[PodInfo], list[tuple[PodInfo, str]]]:
        """Pending pods not yet decided, and placed pods (bound and not finished, or assumed) with their nodes.

        Assumptions the store has caught up with (the pod is bound, or gone) are dropped, and
        so are waiting records of pods no longer pending.
        """
        pending_pods: list[JSON] = []
        placed_pods: list[tuple[JSON, str]] = []
        assumed: dict[str, str] = {}
        for pod in self._pods.store:
            uid = str(pod["metadata"].get("uid", ""))
            node = (pod.get("spec") or {}).get("nodeName")
            if node:
                if (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES:
                    placed_pods.append((pod, str(node)))
            elif uid in self._assumed:
                assumed[uid] = self._assumed[uid]
                placed_pods.append((pod, assumed[uid]))
            elif is_pending(pod, scheduler_name=self._options.scheduler_name):
                pending_pods.append(pod)
        self._assumed = assumed
        pending_uids = {str(pod["metadata"].get("uid", "")) for pod in pending_pods}
        self._waiting = {uid: w for uid, w in self._waiting.items() if uid in pending_uids}
        if not pending_pods:
            return [], []
        infos: dict[str, PodInfo] = {}
        pending = [self._info(pod, infos) for pod in pending_pods]
        placed = [(self._info(pod, infos), node) for pod, node in placed_pods]
        self._infos = infos
        return pending, placed

    def _info(self, pod: JSON, infos: dict[str, PodInfo]) -> PodInfo:
        """The PodInfo of this version of `pod`, reused from the last pass when the pod did not change."""
        uid = str(pod["metadata"].get("uid", ""))
        info = self._infos.get(uid)
        if info is None or info.pod is not pod:
            info = PodInfo.of(pod)
        infos[uid] = info
        return info

    def _wait(self, pod: PodInfo, message: str, now: float) -> bool:
        """Record that `pod` fits nowhere; whether to write its condition and event (new, changed or due)."""
        previous = self._waiting.get(pod.uid)
        due = (
            previous is None
            or previous.message != message
            or now >= previous.reported_at + self._options.unschedulable_retry
        )
        if previous is None or previous.message != message:
            logger.info("%s: unschedulable: %s", pod.key, message)
        reported_at = now if previous is None or due else previous.reported_at
        self._waiting[pod.uid] = Waiting(Request(pod.namespace, pod.name), message, reported_at)
        return due

    def _forget(self, pod: PodInfo) -> None:
        """Drop the pod's assumed placement (its bind did not happen), so the next pass decides again."""
        self._assumed.pop(pod.uid, None)
        self._version += 1

    async def _bind(self, pod: PodInfo, node: str) -> bool:
        """Bind `pod` to `node`; False if it should be tried again."""
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        try:
            await self._client.create(PODS, binding, namespace=pod.namespace, subresource="binding")
        except (NotFoundError, ConflictError) as exc:
            self._forget(pod)
            logger.info("%s: not bound to %s, it was deleted or bound meanwhile: %s", pod.key, node, exc)
            return True
        except APIError as exc:
            self._forget(pod)
            logger.warning("%s: binding to %s failed: %s", pod.key, node, exc)
            return False
        except asyncio.CancelledError:
            self._forget(pod)
            raise
        logger.debug("%s: bound to %s", pod.key, node)
        await self._recorder.record(
            pod.pod,
            reason="Scheduled",
            message=f"Successfully assigned {pod.key} to {node}",
            action="Binding",
        )
        return True

    async def _report(self, pod: PodInfo, message: str) -> None:
        """Set the pod's PodScheduled condition (unless it already says this) and record FailedScheduling."""
        condition = unschedulable_condition(pod.pod, message)
        if condition is not None:
            try:
                await self._client.patch_status(
                    PODS,
                    pod.name,
                    {"status": {"conditions": [condition]}},
                    namespace=pod.namespace,
                    patch_type="strategic",
                    field_manager=self._options.scheduler_name,
                )
            except NotFoundError:
                return
            except APIError as exc:
                logger.warning("%s: could not set its PodScheduled condition: %s", pod.key, exc)
        await self._recorder.record(
            pod.pod, reason="FailedScheduling", message=message, type="Warning", action="Scheduling"
        )


def unschedulable_condition(pod: JSON, message: str) -> JSON | None:
    """The PodScheduled=False condition to write for `message`, or None if the pod already carries it.

    Its lastTransitionTime moves only when the status changes, as kube's pod condition helpers do.
    """
    conditions = (pod.get("status") or {}).get("conditions") or []
    current = next((c for c in conditions if c.get("type") == "PodScheduled"), None) or {}
    wanted = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
    if all(current.get(key) == value for key, value in wanted.items()):
        return None
    unchanged = current.get("status") == "False" and current.get("lastTransitionTime")
    return {
        **wanted,
        "lastProbeTime": None,
        "lastTransitionTime": current["lastTransitionTime"] if unchanged else _now(),
    }


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def setup(manager: Manager, options: ControlPlaneOptions, credentials: Credentials) -> None:
    """Schedule the pods that name `options.scheduler_name`, with the manager's shared pod, node and namespace informers."""
    pods = manager.informer(PODS)
    nodes = manager.informer(NODES)
    namespaces = manager.informer(NAMESPACES)
    scheduler = Scheduler(
        credentials.scheduler, pods=pods, nodes=nodes, namespaces=namespaces, options=options
    )
    controller = manager.controller(CONTROLLER, scheduler, primary=pods)
    for related in (nodes, namespaces):
        controller.watches(related, scheduler.waiting_pods)
    controller.watches(pods, scheduler.waiting_pods_if_placed)
