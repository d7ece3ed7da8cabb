"""The pod sync controller: the pods bound to this node, run by the runners, their status written back.

One level-triggered reconcile per pod key (the kubelet's pod worker and status
manager in one), fed by the informer on `spec.nodeName=<node>` and by the runners'
notifications. A burst of notifications for one pod costs one reconcile, since the
work queue holds a key once. Each reconcile reads the pod from the cache and:

- pod gone, or replaced by a new one of the same name: stops what still runs for the
  old one and frees its IP;
- pod being deleted (deletionTimestamp): stops its containers with the pod's
  deletionGracePeriodSeconds (the runner records Killing), frees its IP and deletes it with
  gracePeriodSeconds=0 and a uid precondition, which is what completes a graceful
  deletion (the kubelet's status manager does the same);
- otherwise: picks the runner (the first that `accepts` the pod), gives the pod an IP
  (the node's for hostNetwork pods, the runner's if it decides one, else one from the
  node's pod CIDR) and, when the node has a pod network (`podnetwork.py`), a sandbox:
  its own network namespace with that IP; starts it once, and patches `pods/status`
  (strategic merge) from the runner's report, only when the status changed.

At start-up, before any reconcile, `adopt` reserves the IPs that the pods already
bound to the node carry, so a restarted agent never hands a running pod's IP to
another. A pod that already finished (Succeeded/Failed) is not started again: it
stays as it is until deleted. When the pod CIDR is exhausted the pod stays Pending
with a FailedCreatePodSandBox Warning (the CNI plugin's message) and is retried when
an IP is freed, or after `SANDBOX_RETRY` seconds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from runtime.api.kinds import PODS
from runtime.api.objects import JSON
from runtime.core import (
    Client,
    ConflictError,
    NotFoundError,
    PermanentError,
    Request,
    Result,
    Store,
    TemporaryError,
)

from .containers import RecordEvent, Runner
from .ipam import IPExhaustedError, PodIPAllocator
from .options import NodeAgentOptions
from .podnetwork import PodNetwork
from .podstatus import TERMINAL_PHASES, pod_status, status_patch

logger = logging.getLogger(__name__)

#: how long a pod whose sandbox could not be set up (no free IP) waits before another try
SANDBOX_RETRY = 10.0


@dataclass
class _Tracked:
    """A pod this agent handles, and the runner that runs it."""

    uid: str
    runner: Runner
    grace_period: float
    started: bool = False
    #: the pod has a sandbox (a network namespace) to tear down
    sandbox: bool = False


class PodSync:
    """The pod reconciler; `bind` it to its controller so runners' notifications enqueue pods."""

    def __init__(
        self,
        client: Client,
        options: NodeAgentOptions,
        *,
        pods: Store,
        runners: Sequence[Runner],
        record: RecordEvent,
        address: str,
        runner_pools: Sequence[PodIPAllocator] = (),
        network: PodNetwork | None = None,
    ) -> None:
        self._client = client
        self._options = options
        #: the node's InternalIP: every pod's hostIP, and hostNetwork pods' podIP
        self._address = address
        self._pods = pods
        self._runners = runners
        self._record = record
        self._ipam = PodIPAllocator(options.pod_cidr)
        #: address pools runners allocate from themselves (process pods' loopback block), for adoption
        self._runner_pools = runner_pools
        #: pods' sandboxes (None: pods share the node's network)
        self._network = network
        self._tracked: dict[Request, _Tracked] = {}
        self._requests: dict[str, Request] = {}
        #: pods waiting for a free IP, enqueued again as soon as one is released
        self._waiting_for_ip: set[Request] = set()
        self._enqueue: Callable[[Request], None] | None = None

    def bind(self, enqueue: Callable[[Request], None]) -> None:
        self._enqueue = enqueue

    def notify(self, uid: str) -> None:
        """A runner's report of pod `uid` changed (call on the event loop's thread)."""
        request = self._requests.get(uid)
        if request is not None and self._enqueue is not None:
            self._enqueue(request)

    def adopt(self) -> None:
        """Reserve the IPs the pods bound to this node already have (call once the pod cache has synced)."""
        for pod in self._pods:
            meta, status = pod["metadata"], pod.get("status") or {}
            ip = status.get("podIP")
            if not ip or (pod.get("spec") or {}).get("hostNetwork"):
                continue
            if any(pool.reserve(str(meta["uid"]), str(ip)) for pool in self._runner_pools):
                continue
            if not self._ipam.reserve(str(meta["uid"]), str(ip)) and self._ipam.owner_of(str(ip)) is not None:
                logger.warning(
                    "%s/%s: its IP %s is held by another pod: it gets a new one when it restarts",
                    meta.get("namespace"),
                    meta["name"],
                    ip,
                )
        logger.info("%s: adopted %d pod IPs", self._options.node_name, len(self._ipam))

    def find(self, namespace: str, name: str) -> tuple[Runner, JSON] | None:
        """The runner that runs this pod and the pod (for the kubelet API), or None if it runs nowhere here."""
        request = Request(namespace, name)
        pod = self._pods.get(name, namespace=namespace)
        tracked = self._tracked.get(request)
        if pod is None or tracked is None or not tracked.started or pod["metadata"]["uid"] != tracked.uid:
            return None
        return tracked.runner, pod

    async def close(self) -> None:
        """Stop every runner's pods (the agent is shutting down); nothing is deleted in the API."""
        for runner in self._runners:
            await runner.close()

    async def reconcile(self, request: Request) -> Result | None:
        pod = self._pods.get(request.name, namespace=request.namespace)
        tracked = self._tracked.get(request)
        if tracked is not None and (pod is None or pod["metadata"]["uid"] != tracked.uid):
            await self._forget(request, tracked, grace_period=tracked.grace_period)
            tracked = None
        if pod is None:
            return None
        if tracked is None:
            tracked = self._track(request, pod)
        if pod["metadata"].get("deletionTimestamp"):
            await self._terminate(request, pod, tracked)
            return None
        if tracked is None:
            message = (
                f"Error: no runner of node {self._options.node_name} runs this pod: the runtime's image runs as "
                "processes, any other image is simulated, and one pod cannot mix the two"
            )
            await self._record(pod, "Warning", "Failed", message)
            raise PermanentError(f"{request}: {message}")
        if not tracked.started and (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
            return None  # finished before this agent started: nothing runs it any more
        pod_ip = await self._pod_ip(request, pod, tracked)
        if not tracked.started:
            netns = await self._sandbox(request, pod, tracked, pod_ip)
            await tracked.runner.start(pod, pod_ip=pod_ip, netns=netns)
            tracked.started = True
        report = tracked.runner.report(tracked.uid)
        await self._write_status(
            pod, pod_status(pod, report, host_ip=self._address, pod_ip=pod_ip, now=_now())
        )
        return None

    def _track(self, request: Request, pod: JSON) -> _Tracked | None:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        runner = next((r for r in self._runners if r.accepts(pod)), None)
        if runner is None:
            return None
        tracked = _Tracked(
            uid=str(meta["uid"]),
            runner=runner,
            grace_period=float(spec.get("terminationGracePeriodSeconds", 30)),
        )
        self._tracked[request] = tracked
        self._requests[tracked.uid] = request
        return tracked

    async def _forget(self, request: Request, tracked: _Tracked, *, grace_period: float) -> None:
        if tracked.started:
            await tracked.runner.stop(tracked.uid, grace_period=grace_period)
        if tracked.sandbox and self._network is not None:
            await self._network.teardown(tracked.uid)
            tracked.sandbox = False
        self._tracked.pop(request, None)
        self._requests.pop(tracked.uid, None)
        self._waiting_for_ip.discard(request)
        if self._ipam.release(tracked.uid) is not None:
            for waiting in sorted(self._waiting_for_ip):
                if self._enqueue is not None:
                    self._enqueue(waiting)

    async def _terminate(self, request: Request, pod: JSON, tracked: _Tracked | None) -> None:
        meta = pod["metadata"]
        if tracked is not None:
            await self._forget(
                request, tracked, grace_period=float(meta.get("deletionGracePeriodSeconds") or 0)
            )
        try:
            await self._client.delete(
                PODS,
                meta["name"],
                namespace=meta["namespace"],
                grace_period_seconds=0,
                preconditions={"uid": meta["uid"]},
            )
        except (NotFoundError, ConflictError):
            return  # already gone, or a new pod of that name
        logger.info("%s: containers stopped; the pod is deleted", request)

    async def _pod_ip(self, request: Request, pod: JSON, tracked: _Tracked) -> str:
        if (pod.get("spec") or {}).get("hostNetwork"):
            return self._address
        try:
            ip = tracked.runner.pod_ip(pod) or self._ipam.allocate(tracked.uid)
        except IPExhaustedError as exc:
            self._waiting_for_ip.add(request)
            await self._record(
                pod,
                "Warning",
                "FailedCreatePodSandBox",
                f'Failed to create pod sandbox: plugin type="host-local" failed (add): {exc}',
            )
            await self._write_status(
                pod, pod_status(pod, None, host_ip=self._address, pod_ip=None, now=_now())
            )
            raise TemporaryError(f"no free pod IP: {exc}", delay=SANDBOX_RETRY) from exc
        self._waiting_for_ip.discard(request)
        return ip

    async def _sandbox(self, request: Request, pod: JSON, tracked: _Tracked, pod_ip: str) -> Path | None:
        """The pod's network namespace, made now (None: the pod shares the node's network)."""
        if self._network is None or (pod.get("spec") or {}).get("hostNetwork"):
            return None
        try:
            path = await self._network.setup(tracked.uid, pod_ip)
        except OSError as exc:
            message = f'Failed to create pod sandbox: plugin type="bridge" failed (add): {exc}'
            await self._record(pod, "Warning", "FailedCreatePodSandBox", message)
            raise TemporaryError(f"{request}: {message}", delay=SANDBOX_RETRY) from exc
        tracked.sandbox = True
        return path

    async def _write_status(self, pod: JSON, desired: JSON) -> None:
        patch = status_patch(pod.get("status") or {}, desired)
        if patch is None:
            return
        meta = pod["metadata"]
        await self._client.patch_status(
            PODS, meta["name"], patch, namespace=meta["namespace"], patch_type="strategic"
        )
        logger.debug("%s/%s: status written (%s)", meta["namespace"], meta["name"], desired.get("phase"))


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
