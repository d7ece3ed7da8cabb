"""The process runner: pods of the runtime's own image run as local processes on the node.

The playground has no container runtime, yet the runtime's controllers, auth service
and webhook must really run in playground clusters. Their image
(`runtime.api.image.is_runtime_image`) is this very package, so a container of it is
its `command` run by this interpreter (console scripts resolve in the venv first), in
a private mount namespace where the pod's volumes sit at their mountPaths: the
ServiceAccount token, `ca.crt` and namespace at
`/var/run/secrets/kubernetes.io/serviceaccount`, next to `KUBERNETES_SERVICE_HOST`/
`_PORT` (the `kubernetes` Service's ClusterIP and port, which kube-proxy translates), so
in-cluster clients work unmodified. Each process runs in its pod's network namespace
(the sandbox the agent made, with the pod's IP). In the loopback fallback processes
share the host's network stack instead; each pod gets an address of its own from the
node agent's loopback /24 (`loopback.py`), binds its ports on `$POD_IP`, and reaches
the API server at the address of the agent's kubeconfig.

This module is the `Runner` the agent drives (see `containers.py`); `podrun.py` runs
each pod. Nothing outlives the agent for long: every process records a pid file and
asks for SIGKILL when the agent dies, and `prepare()` (called by the first `start()`
if the agent did not call it) kills whatever a previous run on the same state
directory left behind, then checks that mount namespaces work here.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path

from runtime.api.image import is_runtime_image
from runtime.api.objects import JSON

from . import podrun
from .containers import LogOptions, LogUnavailableError, Notify, PodReport, RecordEvent
from .ipam import PodIPAllocator
from .mounts import check_namespaces, kill_recorded
from .objects import ObjectSource
from .podrun import NodeContext, PodRun, ProcessSettings

logger = logging.getLogger(__name__)


class ProcessRunner:
    """Runs pods whose every container uses the runtime's image; implements `containers.Runner`."""

    def __init__(
        self,
        objects: ObjectSource,
        *,
        state_dir: Path,
        node_address: str,
        api_host: str,
        api_port: int,
        notify: Notify,
        record: RecordEvent | None = None,
        settings: ProcessSettings | None = None,
        allocatable: Mapping[str, str] | None = None,
        address_pool: PodIPAllocator | None = None,
        api_service: Callable[[], tuple[str, int] | None] | None = None,
    ) -> None:
        self._objects = objects
        self._state_dir = state_dir
        self._address = node_address
        #: loopback addresses of this node's process pods (see loopback.py); None: they share the node's
        self._address_pool = address_pool
        self._api_host = api_host
        self._api_port = api_port
        #: pods have sandboxes of their own (IPs from the node's pod CIDR, given by the agent), and reach the
        #: API server at the `kubernetes` Service this gives (its ClusterIP and port, when known)
        self._api_service = api_service
        self._notify = notify
        self._record = record
        self._settings = settings or ProcessSettings()
        self._allocatable = dict(allocatable) if allocatable is not None else host_allocatable()
        self._pods: dict[str, PodRun] = {}
        self._node: NodeContext | None = None
        self._prepare_lock = asyncio.Lock()

    @property
    def pods_dir(self) -> Path:
        return podrun.pods_dir(self._state_dir)

    async def prepare(self) -> None:
        """Kill processes a previous run on this state dir left behind, clear its pod files, check mounts."""
        async with self._prepare_lock:
            if self._node is not None:
                return
            killed = await asyncio.to_thread(_clear, self.pods_dir)
            if killed:
                logger.warning("killed %d process group(s) left behind by a previous node agent run", killed)
            problem = await check_namespaces(self._state_dir / "mount-check")
            if problem:
                logger.error("%s: runtime pods on this node will not start", problem)
            self._node = NodeContext(
                address=self._address,
                api_endpoint=self._api_endpoint,
                pods_dir=self.pods_dir,
                objects=self._objects,
                notify=self._notify,
                record=self._record,
                settings=self._settings,
                allocatable=self._allocatable,
                problem=problem,
            )

    def accepts(self, pod: JSON) -> bool:
        spec = pod.get("spec") or {}
        containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
        return bool(containers) and all(is_runtime_image(str(c.get("image") or "")) for c in containers)

    def pod_ip(self, pod: JSON) -> str | None:
        if self._api_service is not None:
            return None
        if self._address_pool is None:
            return self._address
        return self._address_pool.allocate(str((pod.get("metadata") or {}).get("uid") or ""))

    def _api_endpoint(self) -> tuple[str, int]:
        service = self._api_service() if self._api_service is not None else None
        return service if service is not None else (self._api_host, self._api_port)

    async def start(self, pod: JSON, *, pod_ip: str, netns: Path | None = None) -> None:
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        current = self._pods.get(uid)
        if current is not None:
            current.update(pod)
            return
        await self.prepare()
        assert self._node is not None
        if uid in self._pods:
            return
        run = PodRun(pod, pod_ip=pod_ip, node=self._node, netns=netns)
        self._pods[uid] = run
        run.start()

    async def stop(self, uid: str, *, grace_period: float) -> None:
        await self._stop(uid, grace_period, announce=True)

    async def _stop(self, uid: str, grace_period: float, *, announce: bool) -> None:
        run = self._pods.get(uid)
        if run is None:
            return
        try:
            await run.stop(grace_period, announce=announce)
        finally:
            self._pods.pop(uid, None)
            if self._address_pool is not None:
                self._address_pool.release(uid)

    def report(self, uid: str) -> PodReport | None:
        run = self._pods.get(uid)
        return run.report() if run is not None else None

    async def logs(self, uid: str, container: str, options: LogOptions) -> AsyncIterator[bytes]:
        run = self._pods.get(uid)
        if run is None:
            raise LogUnavailableError(f'container "{container}" is not running on this node (pod {uid})')
        async for chunk in run.log_file(container, previous=options.previous).read(options):
            yield chunk

    async def close(self) -> None:
        """Stop every pod (each within its grace period, at most `shutdown_grace`)."""
        runs = list(self._pods.values())
        cap = self._settings.shutdown_grace
        await asyncio.gather(
            *(self._stop(run.uid, min(cap, _grace(run.pod)), announce=False) for run in runs)
        )


def host_allocatable() -> dict[str, str]:
    """The node's CPUs and memory, kubelet's stand-in for a container limit that is not set."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {"cpu": str(os.cpu_count() or 1), "memory": str(memory)}


def _grace(pod: JSON) -> float:
    return float((pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30))


def _clear(pods_dir: Path) -> int:
    """Kill the process groups recorded under `pods_dir`, then remove it; how many were still alive."""
    if not pods_dir.exists():
        pods_dir.mkdir(parents=True, mode=0o700)
        return 0
    killed = kill_recorded(pods_dir)
    shutil.rmtree(pods_dir, ignore_errors=True)
    pods_dir.mkdir(parents=True, mode=0o700)
    return killed
