"""The simulated runner: pods whose images are not the runtime's run nowhere, but look as if they did.

No container runtime exists on the playground's machines, so a pod of, say, `nginx`
runs no process: its containers are reported Running and ready at once (readiness
and startup probes count as passing), after its init containers have each completed
(terminated, exit code 0, reason Completed), in order. Its log is a few lines saying
that it is simulated. This is what kwok's fake kubelet does, and it is enough for
everything the control plane does with pods (scheduling, Services, EndpointSlices,
rollouts, offloading) to behave as on a real cluster.

Three reserved image repositories (registry `playground.invalid`, which can never
resolve) make a container fail the way real ones do, for tests and demos of failure
handling; any tag or digest works:

- `playground.invalid/fail-pull` (`FAIL_PULL_IMAGE`): the pull never succeeds; the
  container waits with ErrImagePull, then ImagePullBackOff, alternating with growing
  back-off, and the pod stays Pending.
- `playground.invalid/crash` (`CRASH_IMAGE`): the container exits with code 1 as soon
  as it starts; it is restarted according to the pod's restartPolicy, waiting in
  CrashLoopBackOff between restarts (back-off `backoff` seconds, doubling, at most
  `backoff_max`: the kubelet's 10 s and 5 min by default), and its restartCount grows.
- `playground.invalid/exit0` (`EXIT0_IMAGE`): the container exits with code 0 at once
  (reason Completed); with restartPolicy Never or OnFailure a pod of such containers
  goes Succeeded, like a Job's.

Events are the kubelet's, with its messages: Pulled ("already present": nothing is
ever pulled), Created and Started for each container instance, Pulling/Failed/BackOff
for a pull that fails, BackOff for a crash loop, Killing when the pod is deleted.

A pod the agent adopts after a restart keeps what its status already says: a running
container keeps its startedAt, containerID and restartCount (and records no new Events).

A pod with a network namespace of its own (the netns network) is reachable at its IP,
and two kinds of image do real work there (`standins.py`): nginx images serve HTTP on
their container ports, curl images fetch a URL and exit as curl would.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Literal, NoReturn

from playground.network.netns import Namespaces
from runtime.api.image import image_repository, is_runtime_image
from runtime.api.objects import JSON

from .containers import ContainerReport, LogOptions, LogUnavailableError, Notify, PodReport, RecordEvent
from .phase import initial_waiting_reason, is_sidecar, pod_phase
from .standins import (
    FETCHER,
    HTTP_SERVER,
    HTTPServer,
    ServiceIP,
    ServiceResolver,
    fetch,
    fetch_url,
    http_ports,
    stand_in,
)

logger = logging.getLogger(__name__)

FAIL_PULL_IMAGE = "playground.invalid/fail-pull"
CRASH_IMAGE = "playground.invalid/crash"
EXIT0_IMAGE = "playground.invalid/exit0"
#: the kubelet's container restart (and image pull) back-off: 10 s, doubling per restart, at most 5 min
RESTART_BACKOFF = 10.0
RESTART_BACKOFF_MAX = 300.0
#: how long a failed pull shows ErrImagePull before ImagePullBackOff (about one kubelet pod sync)
PULL_ERROR_SECONDS = 2.0
#: the scheme of simulated containers' IDs (`containerID` reads `simulated://<id>`)
CONTAINER_ID_SCHEME = "simulated"


class Behaviour(Enum):
    RUN = "run"
    FAIL_PULL = "fail-pull"
    CRASH = "crash"
    EXIT0 = "exit0"


def behaviour(image: str) -> Behaviour:
    repository = image_repository(image)
    if repository == FAIL_PULL_IMAGE:
        return Behaviour.FAIL_PULL
    if repository == CRASH_IMAGE:
        return Behaviour.CRASH
    if repository == EXIT0_IMAGE:
        return Behaviour.EXIT0
    return Behaviour.RUN


class SimulatedRunner:
    """Runs every pod none of whose containers uses the runtime's image (see the module docstring)."""

    def __init__(
        self,
        *,
        notify: Notify,
        record: RecordEvent | None = None,
        backoff: float = RESTART_BACKOFF,
        backoff_max: float = RESTART_BACKOFF_MAX,
        namespaces: Namespaces | None = None,
        service_ip: ServiceIP | None = None,
    ) -> None:
        self._notify = notify
        self._record = record
        self._backoff = backoff
        self._backoff_max = backoff_max
        #: for stand-ins: sockets in pods' namespaces, and Service names to ClusterIPs
        self._namespaces = namespaces
        self._service_ip = service_ip
        self._pods: dict[str, _SimulatedPod] = {}

    def accepts(self, pod: JSON) -> bool:
        spec = pod.get("spec") or {}
        containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
        return not any(is_runtime_image(str(c.get("image", ""))) for c in containers)

    def pod_ip(self, pod: JSON) -> str | None:
        return None

    async def start(self, pod: JSON, *, pod_ip: str, netns: Path | None = None) -> None:
        uid = str(pod["metadata"]["uid"])
        if uid in self._pods:
            return
        network = None
        if netns is not None and self._namespaces is not None and self._service_ip is not None:
            network = _PodNetwork(netns, self._namespaces, self._service_ip)
        simulated = _SimulatedPod(
            pod,
            notify=self._notify,
            record=self._record,
            backoff=self._backoff,
            backoff_max=self._backoff_max,
            network=network,
        )
        self._pods[uid] = simulated
        simulated.task = asyncio.create_task(simulated.run(), name=f"simulated pod {simulated.ref}")
        logger.info("%s: simulating the pod's containers (IP %s)", simulated.ref, pod_ip)

    async def stop(self, uid: str, *, grace_period: float) -> None:
        simulated = self._pods.pop(uid, None)
        if simulated is not None:
            await simulated.kill()
            logger.info("%s: simulated containers stopped", simulated.ref)

    def report(self, uid: str) -> PodReport | None:
        simulated = self._pods.get(uid)
        return None if simulated is None else simulated.report()

    def logs(self, uid: str, container: str, options: LogOptions) -> AsyncIterator[bytes]:
        simulated = self._pods.get(uid)
        if simulated is None:
            raise LogUnavailableError(f"pod with uid {uid} is not running on this node")
        return simulated.logs(container, options)

    async def close(self) -> None:
        pods, self._pods = list(self._pods.values()), {}
        for simulated in pods:
            await simulated.stop()


@dataclass(frozen=True)
class _PodNetwork:
    """What stand-ins need: the pod's namespace, threads to enter it, and Service names."""

    path: Path
    namespaces: Namespaces
    service_ip: ServiceIP


@dataclass
class _Instance:
    """One run of a container: its log lines, (timestamp, text)."""

    lines: list[tuple[datetime, str]] = field(default_factory=list)


class _Container:
    def __init__(
        self, spec: JSON, *, init: bool, pod: _SimulatedPod, previous: JSON | None, waiting: str
    ) -> None:
        self.name = str(spec["name"])
        self.image = str(spec.get("image", ""))
        self.init = init
        self.sidecar = init and is_sidecar(spec)
        self.behaviour = behaviour(self.image)
        self.spec = spec
        self.pod = pod
        #: nginx and curl images do real work when the pod has a network of its own
        self.stand_in = stand_in(self.image) if pod.network is not None else None
        self.report = ContainerReport(
            name=self.name,
            image=self.image,
            state={"waiting": {"reason": waiting}},
        )
        #: what the pod's status said before the agent (re)started: adopted by the first instance
        self.previous = previous if previous and previous.get("image") == self.image else None
        if self.previous:
            self.report.restart_count = int(self.previous.get("restartCount") or 0)
        self.current: _Instance | None = None
        self.last: _Instance | None = None
        #: set once the first instance started (a sidecar must start before the next init container)
        self.started = asyncio.Event()

    @property
    def restart_policy(self) -> str:
        if self.sidecar:
            return "Always"
        policy = self.pod.restart_policy
        # init containers are retried until they succeed unless the pod never restarts anything
        return "OnFailure" if self.init and policy == "Always" else policy

    def restarts(self, exit_code: int) -> bool:
        policy = self.restart_policy
        return policy == "Always" or (policy == "OnFailure" and exit_code != 0)

    @property
    def keeps_running(self) -> bool:
        """A container that runs until the pod stops (init containers that are not sidecars complete)."""
        return (
            self.behaviour is Behaviour.RUN and self.stand_in != FETCHER and (self.sidecar or not self.init)
        )

    def adopt_finished(self) -> int | None:
        """Keep a previous instance that exited for good (the pod is adopted); its exit code, or None."""
        previous = self.previous or {}
        terminated = (previous.get("state") or {}).get("terminated")
        if not terminated or self.keeps_running or self.restarts(int(terminated.get("exitCode", 0))):
            return None
        self.previous = None
        self.report.state = {"terminated": dict(terminated)}
        self.report.container_id = str(previous.get("containerID", ""))
        self.report.image_id = _image_id(self.image)
        return int(terminated.get("exitCode", 0))

    def start_instance(self, now: datetime) -> bool:
        """Start the next instance; True if it is one that already ran before the agent restarted."""
        previous, self.previous = self.previous, None
        if self.current is not None:
            self.last = self.current
        self.current = _Instance()
        running: JSON | None = ((previous or {}).get("state") or {}).get("running")
        adopted = previous is not None and running is not None and self.keeps_running
        if previous is not None and running is not None and self.keeps_running:
            self.report.state = {"running": dict(running)}
            self.report.container_id = str(previous.get("containerID") or _container_id())
        else:
            self.report.state = {"running": {"startedAt": _timestamp(now)}}
            self.report.container_id = _container_id()
        self.report.image_id = _image_id(self.image)
        self.report.started = True
        self.started.set()
        self.log(now, f"image {self.image}")
        return adopted

    def log(self, now: datetime, text: str) -> None:
        if self.current is not None:
            self.current.lines.append((now, f"simulated container {self.name} of {self.pod.ref}: {text}"))

    def output(self, text: str) -> None:
        """A line the stand-in itself writes (a real process's output)."""
        if self.current is not None:
            self.current.lines.append((_now(), text))


class _SimulatedPod:
    def __init__(
        self,
        pod: JSON,
        *,
        notify: Notify,
        record: RecordEvent | None,
        backoff: float,
        backoff_max: float,
        network: _PodNetwork | None = None,
    ) -> None:
        self.pod = pod
        self.network = network
        meta = pod["metadata"]
        spec = pod.get("spec") or {}
        status = pod.get("status") or {}
        self.uid = str(meta["uid"])
        self.name = str(meta["name"])
        self.namespace = str(meta.get("namespace", ""))
        self.ref = f"{self.namespace}/{self.name}"
        self.spec = spec
        self.restart_policy = str(spec.get("restartPolicy", "Always"))
        self._notify = notify
        self._record = record
        self._backoff = backoff
        self._backoff_max = backoff_max
        previous = {
            str(s.get("name")): s
            for s in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
        }
        waiting = initial_waiting_reason(spec)
        self.init_containers = [
            _Container(
                c, init=True, pod=self, previous=previous.get(str(c["name"])), waiting="PodInitializing"
            )
            for c in spec.get("initContainers") or []
        ]
        self.containers = [
            _Container(c, init=False, pod=self, previous=previous.get(str(c["name"])), waiting=waiting)
            for c in spec.get("containers") or []
        ]
        self.task: asyncio.Task[None] | None = None
        self.stopped = asyncio.Event()

    def report(self) -> PodReport:
        init = [_copy(c.report) for c in self.init_containers]
        containers = [_copy(c.report) for c in self.containers]
        phase = pod_phase(self.spec, [r.as_status() for r in init], [r.as_status() for r in containers])
        return PodReport(phase=phase, containers=containers, init_containers=init)

    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            for container in self.init_containers:
                if container.sidecar:
                    group.create_task(
                        self._lifecycle(container), name=f"simulated {self.ref} {container.name}"
                    )
                    await container.started.wait()
                elif not await self._lifecycle(container):
                    return
            for container in self.containers:
                group.create_task(self._lifecycle(container), name=f"simulated {self.ref} {container.name}")

    async def kill(self) -> None:
        """Stop the pod because it is deleted: `Killing` for every running container first."""
        for container in [*self.init_containers, *self.containers]:
            if "running" in container.report.state:
                await self._event("Normal", "Killing", f"Stopping container {container.name}")
        await self.stop()

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        self.stopped.set()

    async def _lifecycle(self, container: _Container) -> bool:
        """Run the container's instances until it stops for good; True if it (last) exited 0.

        A container that keeps running (or keeps failing to pull) never returns.
        """
        if container.behaviour is Behaviour.FAIL_PULL:
            await self._fail_pull(container)
        finished = container.adopt_finished()
        if finished is not None:
            return finished == 0
        while True:
            now = _now()
            adopted = container.start_instance(now)
            exit_code = 1 if container.behaviour is Behaviour.CRASH else 0
            server: HTTPServer | None = None
            running = container.keeps_running
            if container.stand_in == HTTP_SERVER:
                server = await self._serve(container)
                running, exit_code = server is not None, 0 if server is not None else 1
            elif running:
                container.log(now, "no process runs: the playground node agent only simulates this container")
            if running:
                container.report.ready = True
            elif container.stand_in != FETCHER:
                self._terminate(container, exit_code, now)
            self._notify(self.uid)
            if not adopted:
                await self._event(
                    "Normal", "Pulled", f'Container image "{container.image}" already present on machine'
                )
                await self._event("Normal", "Created", f"Created container: {container.name}")
                await self._event("Normal", "Started", f"Started container {container.name}")
            if running:
                try:
                    await self.stopped.wait()  # until the pod stops (which cancels this task)
                finally:
                    if server is not None:
                        await server.close()
                return True
            if container.stand_in == FETCHER:
                exit_code = await self._fetch(container)
                self._terminate(container, exit_code, _now(), stand_in=True)
                self._notify(self.uid)
            if not container.restarts(exit_code):
                return exit_code == 0
            container.report.restart_count += 1
            delay = min(self._backoff * 2 ** min(container.report.restart_count - 1, 32), self._backoff_max)
            container.report.last_state = container.report.state
            container.report.state = {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off {_seconds(delay)} restarting failed container={container.name} "
                    f"pod={self.name}_{self.namespace}({self.uid})",
                }
            }
            container.report.started = False
            self._notify(self.uid)
            await self._event(
                "Warning",
                "BackOff",
                f"Back-off restarting failed container {container.name} in pod {self.name}_{self.namespace}({self.uid})",
            )
            await asyncio.sleep(delay)

    async def _serve(self, container: _Container) -> HTTPServer | None:
        """Start the nginx stand-in; None (and nginx's message in the log) when a port cannot be bound."""
        assert self.network is not None
        ports = http_ports(container.spec)
        try:
            server = await HTTPServer.start(
                self.network.namespaces, self.network.path, ports, log=container.output
            )
        except OSError as exc:
            container.output(
                f"nginx: [emerg] bind() to 0.0.0.0 port {ports} failed ({exc.errno}: {exc.strerror})"
            )
            return None
        container.log(_now(), f"serving HTTP on port {', '.join(map(str, ports))} (an nginx stand-in)")
        return server

    async def _fetch(self, container: _Container) -> int:
        """Run the curl stand-in once; its exit code."""
        assert self.network is not None
        url = fetch_url(container.spec)
        if url is None:
            container.output("curl: (2) no URL specified")
            return 2
        resolver = ServiceResolver(self.namespace, self.network.service_ip)
        return await fetch(self.network.path, url, resolver=resolver, log=container.output)

    def _terminate(
        self, container: _Container, exit_code: int, now: datetime, *, stand_in: bool = False
    ) -> None:
        if not stand_in:
            reason = f"({CRASH_IMAGE} always fails)" if exit_code else "(completed)"
            container.log(now, f"exiting with code {exit_code} {reason}")
        running = container.report.state.get("running") or {}
        container.report.state = {
            "terminated": {
                "exitCode": exit_code,
                "reason": "Error" if exit_code else "Completed",
                "startedAt": running.get("startedAt", _timestamp(now)),
                "finishedAt": _timestamp(now),
                "containerID": container.report.container_id,
            }
        }
        container.report.ready = False
        container.report.started = False

    async def _fail_pull(self, container: _Container) -> NoReturn:
        image = container.image
        failure = (
            f'failed to pull and unpack image "{image}": simulated pull failure: '
            f"{FAIL_PULL_IMAGE} is the playground's reserved image that never pulls"
        )
        attempt = 0
        while True:
            container.report.state = {"waiting": {"reason": "ErrImagePull", "message": failure}}
            self._notify(self.uid)
            await self._event("Normal", "Pulling", f'Pulling image "{image}"')
            await self._event("Warning", "Failed", f'Failed to pull image "{image}": {failure}')
            await self._event("Warning", "Failed", "Error: ErrImagePull")
            await asyncio.sleep(min(PULL_ERROR_SECONDS, self._backoff))
            delay = min(self._backoff * 2 ** min(attempt, 32), self._backoff_max)
            container.report.state = {
                "waiting": {"reason": "ImagePullBackOff", "message": f'Back-off pulling image "{image}"'}
            }
            self._notify(self.uid)
            await self._event("Normal", "BackOff", f'Back-off pulling image "{image}"')
            await self._event("Warning", "Failed", "Error: ImagePullBackOff")
            await asyncio.sleep(delay)
            attempt += 1

    async def _event(self, type: Literal["Normal", "Warning"], reason: str, message: str) -> None:
        if self._record is not None:
            await self._record(self.pod, type, reason, message)

    def logs(self, name: str, options: LogOptions) -> AsyncIterator[bytes]:
        container = next((c for c in [*self.init_containers, *self.containers] if c.name == name), None)
        if container is None:
            raise LogUnavailableError(f"container {name} is not valid for pod {self.name}")
        instance = container.last if options.previous else container.current
        if instance is None:
            if options.previous:
                raise LogUnavailableError(
                    f'previous terminated container "{name}" in pod "{self.name}" not found'
                )
            waiting = container.report.state.get("waiting") or {}
            reason = waiting.get("reason", "ContainerCreating")
            if reason in ("ErrImagePull", "ImagePullBackOff"):
                reason = "trying and failing to pull image"
            raise LogUnavailableError(
                f'container "{name}" in pod "{self.name}" is waiting to start: {reason}'
            )
        follow = options.follow and not options.previous and "running" in container.report.state
        return self._stream(_select(instance.lines, options), follow=follow)

    async def _stream(self, chunks: list[bytes], *, follow: bool) -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk
        if follow:
            # a simulated container writes nothing more: the stream ends when the pod stops
            await self.stopped.wait()


def _select(lines: list[tuple[datetime, str]], options: LogOptions) -> list[bytes]:
    """The lines `options` asks for, as the kubelet cuts them: since, tail, timestamps, then the byte limit."""
    if options.since_seconds is not None:
        since = _now().timestamp() - options.since_seconds
        lines = [line for line in lines if line[0].timestamp() >= since]
    if options.since_time is not None:
        start = datetime.fromisoformat(options.since_time.replace("Z", "+00:00"))
        lines = [line for line in lines if line[0] >= start]
    if options.tail_lines is not None:
        lines = lines[-options.tail_lines :] if options.tail_lines > 0 else []
    chunks = [
        (f"{_timestamp_nano(at)} {text}\n" if options.timestamps else f"{text}\n").encode()
        for at, text in lines
    ]
    if options.limit_bytes is None:
        return chunks
    limited: list[bytes] = []
    budget = options.limit_bytes
    for chunk in chunks:
        if budget <= 0:
            break
        limited.append(chunk[:budget])
        budget -= len(chunk)
    return limited


def _copy(report: ContainerReport) -> ContainerReport:
    return replace(report, state=_deep(report.state), last_state=_deep(report.last_state))


def _deep(state: JSON) -> JSON:
    return {key: dict(value) for key, value in state.items()}


def _container_id() -> str:
    return f"{CONTAINER_ID_SCHEME}://{uuid.uuid4().hex}{uuid.uuid4().hex}"


def _image_id(image: str) -> str:
    """A stable stand-in for the image's digest (no image is ever pulled, so there is no real one)."""
    return f"{image_repository(image)}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def _seconds(delay: float) -> str:
    """Go's time.Duration formatting for the back-off message (`10s`, `2m40s`, `500ms`)."""
    if delay < 1:
        return f"{round(delay * 1000)}ms"
    minutes, seconds = divmod(round(delay), 60)
    return f"{minutes}m{seconds}s" if minutes else f"{seconds}s"


def _now() -> datetime:
    return datetime.now(UTC)


def _timestamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _timestamp_nano(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%f000Z")
