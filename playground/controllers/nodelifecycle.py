"""Node lifecycle and taint eviction: what kube-controller-manager does about nodes that go away.

Node lifecycle (kube's node-lifecycle-controller). A node agent proves it is alive by
renewing its Lease in `kube-node-lease` and by posting a fresh Ready heartbeat. The
controller notes, on its own clock, when it last saw either change (not the
timestamps themselves, so clock skew between machines does not matter). When neither
changed for `node_monitor_grace_period` (`node_startup_grace_period` for a node that
never posted Ready, counted from its creation), it sets Ready, MemoryPressure,
DiskPressure and PIDPressure to Unknown ("Kubelet stopped posting node status."),
and marks the node's pods Ready=False. Taints follow the conditions on every pass:
`node.kubernetes.io/unreachable` (Ready Unknown) or `not-ready` (Ready False) with
effects NoSchedule and NoExecute (the latter stamped with timeAdded), the pressure and
network taints (NoSchedule), and `unschedulable` for cordoned nodes; they go when the
condition clears. Other taints are left alone.

Taint eviction (kube's taint-eviction-controller). A pod on a node with NoExecute
taints it does not tolerate is deleted at once; one tolerating them for
`tolerationSeconds` is deleted when the first toleration runs out, counted from the
taint's timeAdded (a requeue waits for that moment). Deletion records a
`TaintManagerEviction` event and the pod's DisruptionTarget condition, as kube does.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from playground.controlplane import ControlPlaneOptions, Credentials
from playground.scheduler.taints import tolerates
from runtime.api.kinds import LEASES, NODES, PODS
from runtime.api.objects import JSON
from runtime.core import (
    Client,
    ConflictError,
    EventRecorder,
    Manager,
    NotFoundError,
    Request,
    Result,
    Store,
    TemporaryError,
)

logger = logging.getLogger(__name__)

#: the ServiceAccount kube-controller-manager runs node lifecycle and taint eviction as (system:controller:node-controller)
ACCOUNT = "node-controller"


NODE_LEASE_NAMESPACE = "kube-node-lease"
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
#: node condition -> status -> the NoSchedule taint kube puts on for it
CONDITION_TAINTS: dict[str, dict[str, str]] = {
    "Ready": {"False": NOT_READY, "Unknown": UNREACHABLE},
    "MemoryPressure": {"True": "node.kubernetes.io/memory-pressure"},
    "DiskPressure": {"True": "node.kubernetes.io/disk-pressure"},
    "NetworkUnavailable": {"True": "node.kubernetes.io/network-unavailable"},
    "PIDPressure": {"True": "node.kubernetes.io/pid-pressure"},
}
#: the taints this controller owns: every other taint on a node is someone else's
MANAGED_TAINTS = frozenset(
    {(key, "NoSchedule") for statuses in CONDITION_TAINTS.values() for key in statuses.values()}
    | {(UNSCHEDULABLE, "NoSchedule"), (NOT_READY, "NoExecute"), (UNREACHABLE, "NoExecute")}
)
#: the conditions a silent node's kubelet can no longer vouch for (NetworkUnavailable is the network's)
MONITORED_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
CONFLICT_RETRIES = 3
#: the pods-by-node index this module adds to the shared pod informer
NODE_INDEX = "node-lifecycle.node"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _epoch(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def condition(obj: JSON, kind: str) -> JSON | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def unknown_conditions(node: JSON, *, now: str) -> list[JSON] | None:
    """The node's conditions with the monitored ones Unknown, as kube words it; None if they are already."""
    conditions = copy.deepcopy(list((node.get("status") or {}).get("conditions") or []))
    changed = False
    for kind in MONITORED_CONDITIONS:
        current = next((c for c in conditions if c.get("type") == kind), None)
        if current is None:
            conditions.append(
                {
                    "type": kind,
                    "status": "Unknown",
                    "reason": "NodeStatusNeverUpdated",
                    "message": "Kubelet never posted node status.",
                    "lastHeartbeatTime": node["metadata"].get("creationTimestamp"),
                    "lastTransitionTime": now,
                }
            )
            changed = True
        elif current.get("status") != "Unknown":
            current.update(
                status="Unknown",
                reason="NodeStatusUnknown",
                message="Kubelet stopped posting node status.",
                lastTransitionTime=now,
            )
            changed = True
    return conditions if changed else None


def desired_taints(node: JSON, *, now: str) -> list[JSON]:
    """The node's taints with those this controller owns matching its conditions (existing ones kept as they are)."""
    wanted: list[tuple[str, str]] = []
    for kind, statuses in CONDITION_TAINTS.items():
        found = condition(node, kind)
        key = statuses.get(str(found.get("status"))) if found else None
        if key:
            wanted.append((key, "NoSchedule"))
    if (node.get("spec") or {}).get("unschedulable"):
        wanted.append((UNSCHEDULABLE, "NoSchedule"))
    ready = condition(node, "Ready")
    ready_status = ready.get("status") if ready else None
    if ready_status == "False":
        wanted.append((NOT_READY, "NoExecute"))
    elif ready_status == "Unknown":
        wanted.append((UNREACHABLE, "NoExecute"))
    current = list((node.get("spec") or {}).get("taints") or [])
    taints = [
        t for t in current if (t.get("key"), t.get("effect")) not in MANAGED_TAINTS or _pair(t) in wanted
    ]
    for key, effect in wanted:
        if not any(_pair(t) == (key, effect) for t in taints):
            taints.append(
                {"key": key, "effect": effect, **({"timeAdded": now} if effect == "NoExecute" else {})}
            )
    return taints


def _pair(taint: JSON) -> tuple[str, str]:
    return str(taint.get("key", "")), str(taint.get("effect", ""))


@dataclass(frozen=True)
class Verdict:
    """Whether and when a pod must leave its node: `at` None means it tolerates the taints forever."""

    tolerated: bool
    at: float | None = None


def eviction(pod: JSON, taints: Iterable[JSON], *, added: dict[tuple[str, str], float]) -> Verdict:
    """When the pod's tolerations of the NoExecute `taints` run out (`added`: when each taint came, epoch s).

    Each taint is matched by the first toleration that tolerates it (kube's
    GetMatchingTolerations); a pod tolerating every taint goes when the earliest
    `timeAdded + tolerationSeconds` passes, or never if none has tolerationSeconds.
    """
    tolerations = list((pod.get("spec") or {}).get("tolerations") or [])
    deadlines: list[float] = []
    for taint in taints:
        match = next((t for t in tolerations if tolerates(t, taint)), None)
        if match is None:
            return Verdict(tolerated=False)
        seconds = match.get("tolerationSeconds")
        if seconds is not None:
            deadlines.append(
                added[(str(taint.get("key", "")), str(taint.get("value", "")))] + max(0, int(seconds))
            )
    return Verdict(tolerated=True, at=min(deadlines) if deadlines else None)


def _node_name(pod: JSON) -> list[str]:
    name = (pod.get("spec") or {}).get("nodeName")
    return [str(name)] if name else []


def _terminal(pod: JSON) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


@dataclass(frozen=True)
class Probe:
    """The node's last heartbeat and Lease renewal as seen, and when (the loop clock) either last changed."""

    heartbeat: str
    renewed: str
    seen_at: float


class NodeLifecycleReconciler:
    def __init__(
        self,
        client: Client,
        *,
        nodes: Store,
        leases: Store,
        pods: Store,
        options: ControlPlaneOptions,
        recorder: EventRecorder,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._nodes = nodes
        self._leases = leases
        self._pods = pods
        self._options = options
        self._recorder = recorder
        self._clock = clock
        self._probes: dict[str, Probe] = {}

    async def reconcile(self, request: Request) -> Result | None:
        name = request.name
        node = self._nodes.get(name)
        if node is None:
            self._probes.pop(name, None)
            return None
        if self._silent(node):
            node = await self._mark_unknown(node)
            if node is None:
                return None
        await self._update_taints(node)
        ready = condition(node, "Ready")
        if ready is not None and ready.get("status") == "Unknown":
            await self._mark_pods_not_ready(name)
        return Result(requeue_after=self._options.node_monitor_period)

    async def _update_taints(self, node: JSON) -> None:
        """Make the taints match the conditions; on a conflict (our cache was behind) read the node again."""
        name = str(node["metadata"]["name"])
        for _ in range(CONFLICT_RETRIES):
            taints = desired_taints(node, now=_now())
            if taints == list((node.get("spec") or {}).get("taints") or []):
                return
            patch = {
                "metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                "spec": {"taints": taints},
            }
            try:
                await self._client.patch(NODES, name, patch)
            except NotFoundError:
                return
            except ConflictError:
                try:
                    node = await self._client.get(NODES, name)
                except NotFoundError:
                    return
                continue
            logger.info("%s: taints now %s", name, [f"{t['key']}:{t['effect']}" for t in taints])
            return
        raise TemporaryError(f"{name}: the node kept changing under our taint update")

    def _silent(self, node: JSON) -> bool:
        """Whether neither the Ready heartbeat nor the Lease changed for the grace period."""
        name = str(node["metadata"]["name"])
        ready = condition(node, "Ready")
        lease = self._leases.get(name, namespace=NODE_LEASE_NAMESPACE)
        heartbeat = str(ready.get("lastHeartbeatTime") or "") if ready else ""
        renewed = str(((lease or {}).get("spec") or {}).get("renewTime") or "")
        now = self._clock()
        probe = self._probes.get(name)
        if probe is None:
            # a node that never posted Ready is measured from its creation, as kube does
            created = node["metadata"].get("creationTimestamp")
            age = time.time() - _epoch(str(created)) if ready is None and created else 0.0
            probe = Probe(heartbeat, renewed, now - max(0.0, age))
        elif heartbeat != probe.heartbeat or renewed != probe.renewed:
            probe = Probe(heartbeat, renewed, now)
        self._probes[name] = probe
        grace = self._options.node_monitor_grace_period if ready else self._options.node_startup_grace_period
        return now - probe.seen_at > grace

    async def _mark_unknown(self, node: JSON) -> JSON | None:
        name = str(node["metadata"]["name"])
        conditions = unknown_conditions(node, now=_now())
        if conditions is None:
            return node
        patch = {
            "metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
            "status": {"conditions": conditions},
        }
        try:
            updated = await self._client.patch_status(NODES, name, patch)
        except NotFoundError:
            return None
        logger.warning(
            "%s: no Lease renewal or status heartbeat for too long: conditions set to Unknown "
            "(is its node agent running and able to reach the API server?)",
            name,
        )
        await self._recorder.record(
            updated, reason="NodeNotReady", message=f"Node {name} status is now: NodeNotReady"
        )
        return updated

    async def _mark_pods_not_ready(self, node_name: str) -> None:
        """kube's MarkPodsNotReady: every pod on the node with a Ready condition gets it False."""
        for pod in self._pods.by_index(NODE_INDEX, node_name):
            ready = condition(pod, "Ready")
            if ready is None or ready.get("status") == "False" or _terminal(pod):
                continue
            meta = pod["metadata"]
            patch = {
                "metadata": {"uid": meta["uid"]},
                "status": {
                    "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": _now()}]
                },
            }
            try:
                updated = await self._client.patch_status(
                    PODS, meta["name"], patch, namespace=meta["namespace"], patch_type="strategic"
                )
            except (NotFoundError, ConflictError):
                continue
            logger.info(
                "%s/%s: marked not ready: its node %s is not ready",
                meta["namespace"],
                meta["name"],
                node_name,
            )
            await self._recorder.record(
                updated, type="Warning", reason="NodeNotReady", message="Node is not ready"
            )


class TaintEvictionReconciler:
    def __init__(
        self,
        client: Client,
        *,
        pods: Store,
        nodes: Store,
        recorder: EventRecorder,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._client = client
        self._pods = pods
        self._nodes = nodes
        self._recorder = recorder
        self._clock = clock
        #: NoExecute taints without timeAdded: (node, key, value) -> when first seen (epoch s)
        self._first_seen: dict[tuple[str, str, str], float] = {}

    async def reconcile(self, request: Request) -> Result | None:
        pod = self._pods.get(request.name, namespace=request.namespace)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return None
        node_name = (pod.get("spec") or {}).get("nodeName")
        node = self._nodes.get(str(node_name)) if node_name else None
        if node is None:
            return None
        taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("effect") == "NoExecute"]
        if not taints:
            return None
        verdict = eviction(pod, taints, added=self._added(str(node_name), taints))
        if verdict.tolerated and verdict.at is None:
            return None
        now = self._clock()
        if verdict.at is not None and verdict.at > now:
            return Result(requeue_after=verdict.at - now)
        await self._evict(pod)
        return None

    def _added(self, node: str, taints: list[JSON]) -> dict[tuple[str, str], float]:
        added: dict[tuple[str, str], float] = {}
        for taint in taints:
            key, value = str(taint.get("key", "")), str(taint.get("value", ""))
            stamp = taint.get("timeAdded")
            added[(key, value)] = (
                _epoch(str(stamp))
                if stamp
                else self._first_seen.setdefault((node, key, value), self._clock())
            )
        return added

    async def _evict(self, pod: JSON) -> None:
        meta = pod["metadata"]
        name, namespace = str(meta["name"]), str(meta["namespace"])
        await self._recorder.record(
            pod, reason="TaintManagerEviction", message=f"Marking for deletion Pod {namespace}/{name}"
        )
        target = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint",
            "lastTransitionTime": _now(),
        }
        try:
            if condition(pod, "DisruptionTarget") is None:
                await self._client.patch_status(
                    PODS,
                    name,
                    {"metadata": {"uid": meta["uid"]}, "status": {"conditions": [target]}},
                    namespace=namespace,
                    patch_type="strategic",
                )
            await self._client.delete(PODS, name, namespace=namespace, preconditions={"uid": meta["uid"]})
        except (NotFoundError, ConflictError):
            return
        logger.info("%s/%s: evicted: its node has NoExecute taints it no longer tolerates", namespace, name)


def setup(manager: Manager, options: ControlPlaneOptions, credentials: Credentials) -> None:
    nodes = manager.informer(NODES)
    leases = manager.informer(LEASES, namespace=NODE_LEASE_NAMESPACE)
    pods = manager.informer(PODS)
    pods.store.add_index(NODE_INDEX, _node_name)
    client = credentials.client(ACCOUNT)
    lifecycle = NodeLifecycleReconciler(
        client,
        nodes=nodes.store,
        leases=leases.store,
        pods=pods.store,
        options=options,
        recorder=EventRecorder(client, component="node-controller"),
    )
    manager.controller("node-lifecycle", lifecycle, primary=nodes).watches(
        leases, lambda lease: [Request("", str(lease["metadata"]["name"]))]
    )
    eviction_controller = TaintEvictionReconciler(
        client,
        pods=pods.store,
        nodes=nodes.store,
        recorder=EventRecorder(client, component="taint-eviction-controller"),
    )
    manager.controller("taint-eviction", eviction_controller, primary=pods).watches(
        nodes,
        lambda node: [Request.of(p) for p in pods.store.by_index(NODE_INDEX, str(node["metadata"]["name"]))],
    )
