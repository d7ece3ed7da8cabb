"""One pod run as local processes: volumes, init containers, containers, restarts, probes, termination.

This is the pod worker of kubelet (`pod_workers.go` + `kuberuntime_manager.go`) for one
pod. Volumes are written first (FailedMount events and retries until they can be).
Init containers then run one at a time, each to a successful exit; then every
container runs in its own loop: build its environment (CreateContainerConfigError
until the Secrets and ConfigMaps it needs exist), start the process through
`mounts.spawn`, copy its output to a CRI log file, run its probes, and when it exits
record the terminated state and restart it as `restartPolicy` says, with kubelet's
crash-loop back-off (immediately, then 10 s doubling to 5 min; reset after 10 min of
running). A liveness or startup probe failure kills the process (SIGTERM, SIGKILL after
the grace period) and the same loop restarts it.

Container states, phases and event reasons and messages are kubelet's, so `kubectl get
pods` and `kubectl describe` read as they would on a real node.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import signal
import sys
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from runtime.api.objects import JSON
from runtime.core import APIError
from runtime.core.events import EventType

from .containers import ContainerReport, LogUnavailableError, Notify, PodReport, RecordEvent
from .downward import PodContext
from .env import ContainerConfigError, command_line, container_env, expand, references, service_env
from .logfiles import LogFile
from .mounts import Mount, ProcessSpec, Spawned, StartError, kill_group, kill_recorded, spawn, start_time
from .objects import ObjectSource
from .phase import initial_waiting_reason, is_sidecar, pod_phase
from .probes import ProbeKind, ProbeTarget, ProbeWorker, http_get, is_supported
from .volumes import PodVolumes, VolumeError

logger = logging.getLogger(__name__)


PYTHON_NAMES = ("python", "python3")
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEFAULT_GRACE = 30.0
PROBES: tuple[tuple[ProbeKind, str], ...] = (
    ("Startup", "startupProbe"),
    ("Liveness", "livenessProbe"),
    ("Readiness", "readinessProbe"),
)
#: how long a stopped process's output may take to drain before its readers are cut off
DRAIN_SECONDS = 2.0


@dataclass(frozen=True)
class ProcessSettings:
    """Timings of the process runner (kubelet's defaults; tests shorten them)."""

    #: crash-loop back-off: the second restart waits `backoff_base`, doubling up to `backoff_cap`
    backoff_base: float = 10.0
    backoff_cap: float = 300.0
    #: a container that ran this long starts its back-off afresh
    backoff_reset: float = 600.0
    #: how often a container waiting for a Secret or ConfigMap (CreateContainerConfigError) tries again
    config_retry: float = 2.0
    #: failed volume set-ups retry after this, doubling up to `mount_retry_cap`
    mount_retry_base: float = 0.5
    mount_retry_cap: float = 32.0
    #: how often Secret, ConfigMap and downwardAPI volume contents are refreshed
    volume_resync: float = 60.0
    #: the longest grace period `close()` gives a pod when the agent shuts down
    shutdown_grace: float = 10.0


@dataclass(frozen=True)
class NodeContext:
    """What every pod run on this node shares."""

    address: str
    #: where pods reach the API server (KUBERNETES_SERVICE_HOST and _PORT), asked at each container start
    api_endpoint: Callable[[], tuple[str, int]]
    pods_dir: Path
    objects: ObjectSource
    notify: Notify
    record: RecordEvent | None
    settings: ProcessSettings
    allocatable: Mapping[str, str]
    #: why processes cannot run here (no mount namespaces), or None
    problem: str | None = None


@dataclass
class _Instance:
    """One start of a container: its process, its log, and what an exec into it needs."""

    index: int
    spawned: Spawned
    log: LogFile
    env: dict[str, str]
    mounts: list[Mount]
    workdirs: list[str]
    started: float
    started_at: str
    container_id: str
    probes: list[asyncio.Task[None]] = field(default_factory=list)


@dataclass
class _Backoff:
    delay: float = 0.0

    def next(self, ran_for: float, settings: ProcessSettings) -> float:
        """How long to wait before the next start: 0 the first time, then base doubling to the cap."""
        if ran_for >= settings.backoff_reset:
            self.delay = 0.0
        current = self.delay
        self.delay = settings.backoff_base if current == 0 else min(current * 2, settings.backoff_cap)
        return current


class _Container:
    def __init__(self, spec: JSON, *, init: bool, waiting: str) -> None:
        self.spec = spec
        self.name = str(spec.get("name") or "")
        self.init = init
        self.sidecar = init and is_sidecar(spec)
        #: set once the container has started (for a sidecar, the next init container may start)
        self.started_event = asyncio.Event()
        self.report = ContainerReport(
            name=self.name, image=str(spec.get("image") or ""), state={"waiting": {"reason": waiting}}
        )
        self.report.image_id = self.report.image
        self.instance: _Instance | None = None
        #: the instance whose output is the current log, and the one `previous` shows
        self.current: int | None = None
        self.last: int | None = None
        self.backoff = _Backoff()
        self.ran_for = 0.0
        self.logs: dict[int, LogFile] = {}


class PodRun:
    """Runs one pod's containers as processes until `stop()`."""

    def __init__(self, pod: JSON, *, pod_ip: str, node: NodeContext, netns: Path | None = None) -> None:
        self.pod = pod
        #: the pod's network namespace (None: the node's network)
        self.netns = netns
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        self.uid = str(meta.get("uid") or "")
        self.name = str(meta.get("name") or "")
        self.namespace = str(meta.get("namespace") or "")
        self.ref = f"{self.namespace}/{self.name}"
        self.node = node
        self.pod_ip = pod_ip
        self.directory = node.pods_dir / self.uid
        self.context = PodContext(pod_ip=pod_ip, host_ip=node.address, allocatable=node.allocatable)
        self.volumes = PodVolumes(
            pod, directory=self.directory / "volumes", source=node.objects, context=self.context
        )
        self.policy = str(spec.get("restartPolicy") or "Always")
        self.init_containers = [
            _Container(c, init=True, waiting="PodInitializing") for c in spec.get("initContainers") or []
        ]
        self.containers = [
            _Container(c, init=False, waiting=initial_waiting_reason(spec))
            for c in spec.get("containers") or []
        ]
        self.stopping = False
        #: the regular containers are done: sidecars stop and are not restarted
        self.finishing = False
        self._task: asyncio.Task[None] | None = None

    def update(self, pod: JSON) -> None:
        """A newer version of the pod (labels, annotations): downward API volumes pick it up on refresh."""
        self.pod = pod
        self.volumes.pod = pod

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"pod {self.ref}")

    # report

    def report(self) -> PodReport:
        return PodReport(
            phase=pod_phase(
                self.pod.get("spec") or {},
                [c.report.as_status() for c in self.init_containers],
                [c.report.as_status() for c in self.containers],
            ),
            containers=[c.report for c in self.containers],
            init_containers=[c.report for c in self.init_containers],
            pod_ip=self.pod_ip,
        )

    def _changed(self) -> None:
        self.node.notify(self.uid)

    async def _event(self, type_: EventType, reason: str, message: str) -> None:
        if self.node.record is None:
            return
        try:
            await self.node.record(self.pod, type_, reason, message)
        except Exception:
            logger.exception("%s: could not record event %s", self.ref, reason)

    # the pod's life

    async def _run(self) -> None:
        try:
            refresh = await self._set_up_volumes()
            refresher = asyncio.create_task(self._refresh_volumes(refresh), name=f"pod {self.ref} volumes")
            try:
                await self._run_containers()
            finally:
                refresher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await refresher
        except Exception as exc:
            logger.exception("%s: the process runner failed; the pod's containers stay waiting", self.ref)
            for c in [*self.init_containers, *self.containers]:
                if "running" not in c.report.state:
                    c.report.state = {
                        "waiting": {"reason": "RunContainerError", "message": f"playground: {exc!r}"}
                    }
            self._changed()

    async def _run_containers(self) -> None:
        """Init containers one by one (sidecars keep running), then every container at once."""
        sidecars: dict[_Container, asyncio.Task[bool]] = {}
        try:
            for c in self.init_containers:
                if c.sidecar:
                    sidecars[c] = asyncio.create_task(
                        self._run_container(c), name=f"pod {self.ref} sidecar {c.name}"
                    )
                    await c.started_event.wait()
                elif not await self._run_container(c):
                    return
            if self.init_containers:
                for c in self.containers:
                    c.report.state = {"waiting": {"reason": "ContainerCreating"}}
                self._changed()
            async with asyncio.TaskGroup() as group:
                for c in self.containers:
                    group.create_task(self._run_container(c), name=f"pod {self.ref} container {c.name}")
        finally:
            # the regular containers are done (or the pod stops): sidecars go too
            self.finishing = True
            grace = self._grace({})
            await asyncio.gather(
                *(self._terminate(c.instance, grace) for c in sidecars if c.instance is not None)
            )
            for task in sidecars.values():
                task.cancel()
            await asyncio.gather(*sidecars.values(), return_exceptions=True)

    async def _set_up_volumes(self) -> float | None:
        delay = self.node.settings.mount_retry_base
        while True:
            try:
                return await self.volumes.materialise()
            except VolumeError as exc:
                logger.info("%s: %s (retrying in %.1f s)", self.ref, exc, delay)
                await self._event("Warning", "FailedMount", str(exc))
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.node.settings.mount_retry_cap)

    async def _refresh_volumes(self, token_refresh: float | None) -> None:
        resync = self.node.settings.volume_resync
        while True:
            await asyncio.sleep(resync if token_refresh is None else min(resync, token_refresh))
            try:
                token_refresh = await self.volumes.materialise()
            except VolumeError as exc:
                logger.warning("%s: %s", self.ref, exc)
                await self._event("Warning", "FailedMount", str(exc))
                token_refresh = None

    async def _run_container(self, c: _Container) -> bool:
        """Run (and restart) one container; True once it exited 0 and will not run again."""
        while not self._ends(c):
            code = await self._attempt(c)
            if self._ends(c):
                break
            if code is None:
                if c.report.state["waiting"]["reason"] == "CreateContainerConfigError":
                    await asyncio.sleep(self.node.settings.config_retry)
                else:
                    await self._back_off(c)
                continue
            if not self._restarts(c, code):
                return code == 0
            await self._back_off(c)
        return False

    def _ends(self, c: _Container) -> bool:
        return self.stopping or (c.sidecar and self.finishing)

    def _restarts(self, c: _Container, code: int) -> bool:
        if c.sidecar:
            return True
        if c.init:
            return code != 0 and self.policy != "Never"
        return self.policy == "Always" or (self.policy == "OnFailure" and code != 0)

    async def _back_off(self, c: _Container) -> None:
        """Wait before the next start; a container that could not start keeps showing why while it waits."""
        delay = c.backoff.next(c.ran_for, self.node.settings)
        c.ran_for = 0.0
        if delay <= 0:
            return
        if "terminated" not in c.report.state:
            await asyncio.sleep(delay)
            return
        pod = f"{self.name}_{self.namespace}({self.uid})"
        c.report.last_state = c.report.state
        c.last, c.current = c.current, None
        message = f"back-off {_duration(delay)} restarting failed container={c.name} pod={pod}"
        c.report.state = {"waiting": {"reason": "CrashLoopBackOff", "message": message}}
        c.report.ready = c.report.started = False
        self._changed()
        await self._event("Warning", "BackOff", f"Back-off restarting failed container {c.name} in pod {pod}")
        await asyncio.sleep(delay)

    def _waiting(self, c: _Container, reason: str, message: str) -> None:
        c.report.state = {"waiting": {"reason": reason, "message": message}}
        c.report.ready = c.report.started = False
        self._changed()

    # one start of a container

    async def _attempt(self, c: _Container) -> int | None:
        """Start `c` once and wait for it to exit: its exit code, or None if it could not start."""
        try:
            env, argv, mounts = await self._launch_config(c)
        except ContainerConfigError as exc:
            self._waiting(c, "CreateContainerConfigError", str(exc))
            await self._event("Warning", "Failed", f"Error: {exc}")
            return None
        except StartError as exc:
            self._waiting(c, "RunContainerError", str(exc))
            await self._event("Warning", "Failed", f"Error: {exc}")
            return None
        index = (c.current + 1) if c.current is not None else (c.last + 1) if c.last is not None else 0
        workdirs = [w for w in (str(c.spec.get("workingDir") or ""), str(self.directory)) if w]
        spec = ProcessSpec(
            argv=argv,
            pid_file=str(pid_file(self.directory, c.name)),
            mounts=mounts,
            workdirs=workdirs,
            netns=str(self.netns or ""),
        )
        try:
            spawned = await spawn(spec, env=env)
        except StartError as exc:
            self._waiting(c, "RunContainerError", str(exc))
            await self._event("Warning", "Failed", f"Error: {exc}")
            return None
        log = LogFile(self.directory / "logs" / c.name / f"{index}.log")
        await log.open()
        loop = asyncio.get_running_loop()
        instance = _Instance(
            index=index,
            spawned=spawned,
            log=log,
            env=env,
            mounts=mounts,
            workdirs=workdirs,
            started=loop.time(),
            started_at=_now(),
            container_id=f"process://{uuid.uuid4().hex}",
        )
        for stale in self._started(c, instance):
            await asyncio.to_thread(stale.unlink, True)
        await self._event(
            "Normal", "Pulled", f'Container image "{c.report.image}" already present on machine'
        )
        await self._event("Normal", "Created", f"Created container: {c.name}")
        await self._event("Normal", "Started", f"Started container {c.name}")
        return await self._supervise(c, instance)

    def _started(self, c: _Container, instance: _Instance) -> list[Path]:
        """Record that `instance` runs; the log files no longer needed (kubelet keeps the current and previous)."""
        if "terminated" in c.report.state:
            c.report.last_state = c.report.state
            c.last = c.current
        stale = [c.logs.pop(i).path for i in list(c.logs) if i not in (c.last, instance.index)]
        c.logs[instance.index] = instance.log
        c.instance, c.current = instance, instance.index
        c.report.restart_count = instance.index
        c.report.container_id = instance.container_id
        c.report.state = {"running": {"startedAt": instance.started_at}}
        startup = c.spec.get("startupProbe")
        readiness = c.spec.get("readinessProbe")
        c.report.started = not (startup and is_supported(startup))
        c.report.ready = c.report.started and not (readiness and is_supported(readiness))
        if c.report.started:
            c.started_event.set()
        self._changed()
        return stale

    async def _supervise(self, c: _Container, instance: _Instance) -> int:
        spawned = instance.spawned
        streams = [(spawned.stdout, "stdout"), (spawned.stderr, "stderr")]
        pumps = [
            asyncio.create_task(instance.log.pump(stream, name), name=f"pod {self.ref} {c.name} {name}")
            for stream, name in streams
            if stream is not None
        ]
        instance.probes = await self._start_probes(c, instance)
        try:
            returncode = await spawned.process.wait()
        finally:
            # the container is its main process: what it started goes with it
            kill_group(spawned.process.pid)
            for task in instance.probes:
                task.cancel()
            await asyncio.gather(*instance.probes, return_exceptions=True)
            _, pending = await asyncio.wait(pumps, timeout=DRAIN_SECONDS)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            spawned.close()
            await instance.log.close()
            await asyncio.to_thread(spawned.pid_file.unlink, True)
            c.instance = None
        code = returncode if returncode >= 0 else 128 - returncode
        c.ran_for = asyncio.get_running_loop().time() - instance.started
        c.report.state = {
            "terminated": {
                "exitCode": code,
                "reason": "Completed" if code == 0 else "Error",
                "startedAt": instance.started_at,
                "finishedAt": _now(),
                "containerID": instance.container_id,
            }
        }
        c.report.ready = c.report.started = False
        self._changed()
        return code

    async def _launch_config(self, c: _Container) -> tuple[dict[str, str], list[str], list[Mount]]:
        """The process's environment, command line and mounts (ContainerConfigError / StartError when impossible)."""
        fetched: dict[tuple[str, str], JSON | None] = {}
        for kind, name in sorted(references(c.spec)):
            try:
                fetched[(kind, name)] = await self.node.objects.get(kind, self.namespace, name)
            except APIError as exc:
                raise ContainerConfigError(f"{kind.lower()} {self.namespace}/{name}: {exc}") from None
        env = container_env(
            self.pod,
            c.spec,
            objects=lambda kind, name: fetched.get((kind, name)),
            context=self.context,
            base=service_env(*self.node.api_endpoint()),
        )
        if self.node.problem:
            raise StartError(self.node.problem)
        argv = command_line(c.spec, env)
        if not argv:
            raise StartError(
                f"playground: container {c.name} has no command: the runtime image has no default entrypoint"
            )
        mounts = await asyncio.to_thread(self._mounts, c, env)
        return {**self._image_env(), **env}, resolve_python(argv), mounts

    def _image_env(self) -> dict[str, str]:
        """What the runtime image's config would set: PATH (the venv first), HOME, HOSTNAME, unbuffered Python."""
        return {
            "PATH": f"{Path(sys.executable).parent}:{IMAGE_PATH}",
            "HOME": str(self.directory),
            "HOSTNAME": self.name,
            "PYTHONUNBUFFERED": "1",
        }

    def _mounts(self, c: _Container, env: Mapping[str, str]) -> list[Mount]:
        mounts = []
        for volume_mount in c.spec.get("volumeMounts") or []:
            name = str(volume_mount.get("name") or "")
            if not self.volumes.has(name):
                raise StartError(f'container {c.name}: volume "{name}" is not a volume of the pod')
            source = self.volumes.path(name)
            sub_path = str(volume_mount.get("subPath") or "")
            if volume_mount.get("subPathExpr"):
                sub_path = expand(str(volume_mount["subPathExpr"]), env)
            if sub_path:
                parts = PurePosixPath(sub_path).parts
                if PurePosixPath(sub_path).is_absolute() or ".." in parts:
                    raise StartError(
                        f"container {c.name}: subPath {sub_path!r} must be relative without '..'"
                    )
                source = source / sub_path
                if not source.exists() and not source.is_symlink():
                    source.mkdir(parents=True, exist_ok=True)
            read_only = bool(volume_mount.get("readOnly")) or self.volumes.is_read_only(name)
            mounts.append(Mount(str(source), str(volume_mount.get("mountPath") or ""), read_only))
        return sorted(mounts, key=lambda m: len(PurePosixPath(m.target).parts))

    # probes

    def _probe_target(self, c: _Container, instance: _Instance) -> ProbeTarget:
        """Probes and hooks reach the pod IP (the node's), the container's named ports, and exec in its mounts."""
        ports = {str(p["name"]): int(p["containerPort"]) for p in c.spec.get("ports") or [] if p.get("name")}
        return ProbeTarget(
            host=self.pod_ip, ports=ports, exec=lambda argv, seconds: self._exec(instance, argv, seconds)
        )

    async def _start_probes(self, c: _Container, instance: _Instance) -> list[asyncio.Task[None]]:
        target = self._probe_target(c, instance)
        gate = asyncio.Event()
        if c.report.started:
            gate.set()
        tasks = []
        for kind, key in PROBES:
            probe = c.spec.get(key)
            if not probe:
                continue
            if not is_supported(probe):
                await self._event(
                    "Warning",
                    "ProbeWarning",
                    f"{kind} probe of container {c.name}: only httpGet, tcpSocket and exec probes are supported "
                    "by the playground's process runner; the probe is skipped",
                )
                continue
            worker = ProbeWorker(
                kind,
                probe,
                target=target,
                on_result=self._on_probe_result(c, instance, kind, gate),
                on_failure=self._on_probe_failure(kind),
                gate=None if kind == "Startup" else gate,
            )
            tasks.append(
                asyncio.create_task(
                    worker.run(started_at=instance.started),
                    name=f"pod {self.ref} {c.name} {kind.lower()} probe",
                )
            )
        return tasks

    def _on_probe_failure(self, kind: ProbeKind) -> Callable[[str], Awaitable[None]]:
        async def failed(message: str) -> None:
            await self._event("Warning", "Unhealthy", f"{kind} probe failed: {message}")

        return failed

    def _on_probe_result(
        self, c: _Container, instance: _Instance, kind: ProbeKind, gate: asyncio.Event
    ) -> Callable[[bool, str], Awaitable[None]]:
        async def changed(success: bool, _message: str) -> None:
            if kind == "Readiness":
                c.report.ready = success and c.report.started
                self._changed()
            elif kind == "Startup" and success:
                c.report.started = True
                c.started_event.set()
                readiness = c.spec.get("readinessProbe")
                c.report.ready = not (readiness and is_supported(readiness))
                gate.set()
                self._changed()
            elif not success:
                await self._event(
                    "Normal", "Killing", f"Container {c.name} failed {kind.lower()} probe, will be restarted"
                )
                await self._terminate(instance, self._grace(c.spec.get(f"{kind.lower()}Probe") or {}))

        return changed

    async def _exec(self, instance: _Instance, argv: list[str], seconds: float) -> tuple[int, bytes]:
        """Run `argv` with the container's environment and mounts; (exit code, output), TimeoutError."""
        spec = ProcessSpec(
            argv=resolve_python(argv),
            pid_file=str(self.directory / "run" / f"exec-{uuid.uuid4().hex[:12]}.pid"),
            mounts=instance.mounts,
            workdirs=instance.workdirs,
            netns=str(self.netns or ""),
        )
        spawned = await spawn(spec, env=instance.env, merge_stderr=True)
        process = spawned.process
        try:
            async with asyncio.timeout(seconds):
                output = await spawned.stdout.read()
                code = await process.wait()
        finally:
            kill_group(process.pid)
            spawned.close()
            if process.returncode is None:
                await process.wait()
            await asyncio.to_thread(spawned.pid_file.unlink, True)
        return code, output

    # termination

    def _grace(self, probe: JSON) -> float:
        seconds = probe.get("terminationGracePeriodSeconds")
        if seconds is None:
            seconds = (self.pod.get("spec") or {}).get("terminationGracePeriodSeconds", DEFAULT_GRACE)
        return float(seconds)

    async def _terminate(self, instance: _Instance, grace: float) -> None:
        """SIGTERM the instance's process group, SIGKILL it if it still runs after `grace` seconds."""
        process = instance.spawned.process
        if process.returncode is not None:
            return
        kill_group(process.pid, signal.SIGTERM)
        try:
            async with asyncio.timeout(grace):
                await process.wait()
        except TimeoutError:
            kill_group(process.pid, signal.SIGKILL)
            await process.wait()

    async def _stop_container(self, c: _Container, grace: float, *, announce: bool) -> None:
        instance = c.instance
        if instance is None:
            return
        if announce:
            await self._event("Normal", "Killing", f"Stopping container {c.name}")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        pre_stop = (c.spec.get("lifecycle") or {}).get("preStop")
        if pre_stop:
            try:
                async with asyncio.timeout(grace):
                    await self._pre_stop(c, instance, pre_stop)
            except TimeoutError:
                await self._event(
                    "Warning", "FailedPreStopHook", f"PreStopHook failed: timed out after {_duration(grace)}"
                )
        await self._terminate(instance, max(0.0, deadline - loop.time()))

    async def _pre_stop(self, c: _Container, instance: _Instance, hook: JSON) -> None:
        if "exec" in hook:
            try:
                code, output = await self._exec(
                    instance, list(hook["exec"].get("command") or []), DEFAULT_GRACE
                )
            except (OSError, StartError) as exc:
                code, output = -1, str(exc).encode()
            if code != 0:
                message = f"PreStopHook {hook['exec'].get('command')} for Container {c.name} failed: {output.decode(errors='replace')}"
                await self._event("Warning", "FailedPreStopHook", message)
        elif "httpGet" in hook:
            target = self._probe_target(c, instance)
            result = await http_get(hook["httpGet"], DEFAULT_GRACE, target)
            if not result.success:
                await self._event("Warning", "FailedPreStopHook", f"PreStopHook failed: {result.message}")
        elif "sleep" in hook:
            await asyncio.sleep(float(hook["sleep"].get("seconds") or 0))

    async def stop(self, grace: float, *, announce: bool = True) -> None:
        """Stop every container (preStop hooks, SIGTERM, SIGKILL after `grace`), then remove the pod's files.

        `announce` records kubelet's `Killing` Event for each running container (not when the agent shuts down).
        """
        self.stopping = True
        containers = [*self.init_containers, *self.containers]
        await asyncio.gather(*(self._stop_container(c, grace, announce=announce) for c in containers))
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        run_dir = self.directory / "run"
        killed = (
            await asyncio.to_thread(kill_recorded, run_dir) if await asyncio.to_thread(run_dir.exists) else 0
        )
        if killed:
            logger.warning("%s: killed %d process group(s) left behind by its containers", self.ref, killed)
        await asyncio.to_thread(shutil.rmtree, self.directory, True)

    # logs

    def log_file(self, container: str, *, previous: bool) -> LogFile:
        """The log a `/containerLogs` request reads, chosen as kubelet's validateContainerLogStatus does."""
        c = next((c for c in [*self.init_containers, *self.containers] if c.name == container), None)
        if c is None:
            raise LogUnavailableError(f'container "{container}" not found in pod "{self.name}"')
        report, pod = c.report, self.name
        if previous:
            if not report.last_state.get("terminated") or c.last not in c.logs:
                raise LogUnavailableError(
                    f'previous terminated container "{container}" in pod "{pod}" not found'
                )
            return c.logs[c.last]
        if c.current is not None and c.current in c.logs:
            return c.logs[c.current]
        if report.last_state.get("terminated") and c.last in c.logs:
            return c.logs[c.last]
        waiting = report.state.get("waiting")
        if waiting is not None:
            raise LogUnavailableError(
                f'container "{container}" in pod "{pod}" is waiting to start: {waiting.get("reason", "")}'
            )
        raise LogUnavailableError(f'container "{container}" in pod "{pod}" is waiting to start - no logs yet')


def pods_dir(node_state_dir: Path) -> Path:
    """Where the node agent run with `node_state_dir` keeps its process pods' files (see processes.py)."""
    return node_state_dir / "pods"


def pod_dir(node_state_dir: Path, pod_uid: str) -> Path:
    """The directory of a process pod's files on the node agent run with `node_state_dir`."""
    return pods_dir(node_state_dir) / pod_uid


def pid_file(directory: Path, container: str) -> Path:
    """Where the process of `container` of the pod run in `directory` records itself (`<pid> <start time>`)."""
    return directory / "run" / f"{container}.pid"


def container_pid(node_state_dir: Path, pod_uid: str, container: str) -> int | None:
    """The running process of a process pod's container on the node agent run with `node_state_dir`.

    None when there is none: no pid file (not a process pod, or the container is not running) or one
    whose process has gone (its pid reused by another process: the start time differs).
    """
    path = pid_file(pod_dir(node_state_dir, pod_uid), container)
    try:
        pid_text, started = path.read_text().split()
        pid = int(pid_text)
    except (OSError, ValueError):
        return None
    return pid if start_time(pid) == started else None


def resolve_python(argv: list[str]) -> list[str]:
    """`python`/`python3` as the program means this interpreter (its venv has the runtime installed)."""
    return [sys.executable, *argv[1:]] if argv and argv[0] in PYTHON_NAMES else argv


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _duration(seconds: float) -> str:
    """A duration as Go prints it (`10s`, `2m40s`, `5m0s`, `200ms`)."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    minutes, rest = divmod(seconds, 60)
    text = f"{rest:g}s"
    return f"{int(minutes)}m{text}" if minutes else text
