"""Pod garbage collection: force-delete pods bound to a node that no longer exists.

No agent will ever finish such a pod, so it would stay forever (a pod on a node waits
for that node's agent to confirm its end). As kube's podgc does with orphaned pods: the
node must have been missing for `pod_gc_quarantine` (a node being re-registered is not
gone) and a direct read must confirm it; then the pod is marked Failed with the
DisruptionTarget condition (server-side apply as `PodGC`, reason `DeletionByPodGC`) and
deleted with grace 0.

Pods terminating on a node that exists but is unreachable are not podgc's business
(kube only force-deletes those on nodes tainted out-of-service); they wait for their
node or for an operator. kube's other cases (unscheduled terminating pods, a cap on
terminated pods) are left out: the API server deletes unscheduled pods at once, and a
playground holds far fewer pods than the cap.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from playground.controlplane import ControlPlaneOptions, Credentials
from runtime.api.kinds import NODES, PODS
from runtime.api.objects import JSON
from runtime.core import Client, ConflictError, Manager, NotFoundError, Request, Result, Store

logger = logging.getLogger(__name__)

#: the ServiceAccount kube-controller-manager runs this controller as (system:controller:pod-garbage-collector)
ACCOUNT = "pod-garbage-collector"


FIELD_MANAGER = "PodGC"
#: the pods-by-node index this module adds to the shared pod informer
NODE_INDEX = "podgc.node"
TERMINAL_PHASES = ("Succeeded", "Failed")


def _node_name(pod: JSON) -> list[str]:
    name = (pod.get("spec") or {}).get("nodeName")
    return [str(name)] if name else []


def failed_status(pod: JSON) -> JSON:
    """The apply configuration kube's podgc sends before deleting an orphaned pod."""
    meta = pod["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
        "status": {
            "phase": "Failed",
            "conditions": [
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "DeletionByPodGC",
                    "message": "PodGC: node no longer exists",
                }
            ],
        },
    }


class PodGCReconciler:
    def __init__(
        self,
        client: Client,
        *,
        pods: Store,
        nodes: Store,
        options: ControlPlaneOptions,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._pods = pods
        self._nodes = nodes
        self._options = options
        self._clock = clock
        #: node name -> when it was first seen missing (clock seconds)
        self._missing_since: dict[str, float] = {}

    async def reconcile(self, request: Request) -> Result | None:
        pod = self._pods.get(request.name, namespace=request.namespace)
        if pod is None:
            return None
        node_names = _node_name(pod)
        if not node_names:
            return None
        node = node_names[0]
        if self._nodes.get(node) is not None:
            self._missing_since.pop(node, None)
            return None
        now = self._clock()
        waited = now - self._missing_since.setdefault(node, now)
        if waited < self._options.pod_gc_quarantine:
            return Result(requeue_after=self._options.pod_gc_quarantine - waited)
        try:
            await self._client.get(NODES, node)
        except NotFoundError:
            pass
        else:
            self._missing_since.pop(node, None)
            return None  # our cache is behind: the node is back
        if (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES:
            try:
                await self._client.apply(
                    PODS, failed_status(pod), field_manager=FIELD_MANAGER, force=True, subresource="status"
                )
            except NotFoundError:
                return None
        await self._force_delete(pod, node)
        return None

    async def _force_delete(self, pod: JSON, node: str) -> None:
        meta = pod["metadata"]
        try:
            await self._client.delete(
                PODS,
                str(meta["name"]),
                namespace=str(meta["namespace"]),
                grace_period_seconds=0,
                preconditions={"uid": meta["uid"]},
            )
        except (NotFoundError, ConflictError):
            return
        logger.info(
            "%s/%s: force-deleted: its node %s no longer exists", meta["namespace"], meta["name"], node
        )


def setup(manager: Manager, options: ControlPlaneOptions, credentials: Credentials) -> None:
    pods = manager.informer(PODS)
    nodes = manager.informer(NODES)
    pods.store.add_index(NODE_INDEX, _node_name)
    reconciler = PodGCReconciler(
        credentials.client(ACCOUNT), pods=pods.store, nodes=nodes.store, options=options
    )
    manager.controller("pod-garbage-collector", reconciler, primary=pods).watches(
        nodes,
        lambda node: [Request.of(p) for p in pods.store.by_index(NODE_INDEX, str(node["metadata"]["name"]))],
    )
