"""How the node agent runs a pod's containers: the contract between the agent and its runners.

The agent (`agent.py`, `pods.py`) owns everything that talks to the API server for
pods: it watches the pods bound to its node, allocates pod IPs, writes `status`, and
finishes graceful deletion. A `Runner` only runs containers (virtual-kubelet's
narrow `PodLifecycleHandler`): the simulated runner for ordinary images, the process
runner for the runtime's own image. Runners never patch pods; they call `notify(uid)`
when a pod's report changed and the agent reads `report(uid)` and writes status.
Container Events (Pulled, Created, Started, BackOff, Killing, Unhealthy, ...) happen
inside runners, so each runner is given a `RecordEvent` and the agent's recorder
writes them (component "kubelet", host the node).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from runtime.api.objects import JSON

#: called by a runner with a pod's uid whenever that pod's `report` changed
Notify = Callable[[str], None]
#: called by a runner to record an Event about a pod: (pod, "Normal" | "Warning", reason, message)
RecordEvent = Callable[[JSON, Literal["Normal", "Warning"], str, str], Awaitable[object]]


@dataclass
class ContainerReport:
    """One container, shaped like `v1.ContainerStatus` (see `as_status`)."""

    name: str
    image: str
    #: `{"waiting": {"reason": ...}}`, `{"running": {"startedAt": ...}}` or `{"terminated": {"exitCode": ...}}`
    state: JSON
    last_state: JSON = field(default_factory=dict)
    ready: bool = False
    started: bool = False
    restart_count: int = 0
    container_id: str = ""
    image_id: str = ""

    def as_status(self) -> JSON:
        status: JSON = {
            "name": self.name,
            "image": self.image,
            "imageID": self.image_id,
            "state": self.state,
            "lastState": self.last_state,
            "ready": self.ready,
            "started": self.started,
            "restartCount": self.restart_count,
        }
        if self.container_id:
            status["containerID"] = self.container_id
        return status


@dataclass
class PodReport:
    """What a runner knows about one pod; the agent turns it into `status` (phase, conditions, containers)."""

    #: Pending | Running | Succeeded | Failed
    phase: str
    containers: list[ContainerReport]
    init_containers: list[ContainerReport] = field(default_factory=list)
    #: a one-word reason and a sentence, for a Failed or stuck pod (e.g. ErrImagePull)
    reason: str = ""
    message: str = ""
    #: the pod's IP when the runner decides it (processes share the node's network: the node IP);
    #: None lets the agent allocate one from the node's pod CIDR
    pod_ip: str | None = None


@dataclass(frozen=True)
class LogOptions:
    """The query of `GET /containerLogs/...` (the kubelet's, as `kubectl logs` sends it through the API server)."""

    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    tail_lines: int | None = None
    limit_bytes: int | None = None
    since_seconds: int | None = None
    since_time: str | None = None


class LogUnavailableError(Exception):
    """The container has no log to show (waiting to start, no previous instance): the kubelet API answers
    400 with this message, as kubelet does (404 is for a pod or container name it does not know)."""


class Runner(Protocol):
    def accepts(self, pod: JSON) -> bool:
        """Whether this runner runs this pod (decided from its spec only, so it never changes for a pod)."""

    def pod_ip(self, pod: JSON) -> str | None:
        """The IP this runner's pods get, or None to have the agent allocate one from the node's pod CIDR."""

    async def start(self, pod: JSON, *, pod_ip: str, netns: Path | None = None) -> None:
        """Start running the pod in the background and return at once; idempotent for a pod already running.

        `netns` is the pod's network namespace (its sandbox), None when it shares the node's network.
        """

    async def stop(self, uid: str, *, grace_period: float) -> None:
        """Stop every container (SIGTERM, SIGKILL after `grace_period` s), wait until they are gone, free the pod's files."""

    def report(self, uid: str) -> PodReport | None:
        """The pod's current report, or None for a pod this runner does not run."""

    def logs(self, uid: str, container: str, options: LogOptions) -> AsyncIterator[bytes]:
        """The container's log as chunks of bytes (endless while `follow`); LogUnavailableError if there is none."""

    async def close(self) -> None:
        """Stop every pod (the agent is shutting down) without deleting anything in the API."""
