"""What a cluster's supervisor runs: every process in start order, what each one waits for, how
it is probed, and how exits are restarted (pure; `plan.json`, written by the launcher).

The order and the gates are kubeadm's: etcd first, kube-apiserver once etcd is ready, the
controller manager and the scheduler once the API server's `/readyz` is ok (they fail at
once against an API server still bootstrapping its RBAC). A probe is what the kubelet does
for a static pod's `httpGet` probe: a GET without credentials, TLS not verified, ready on 200.
A process may run in a network namespace of its own (its node's, as a kind node's static
pods and DaemonSet pods run in the node container's), and a real node's processes in the
node's mount namespace too: the supervisor enters them with `nsenter` before the process
execs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ProcessPlan:
    #: what it is in its cluster: `etcd`, `apiserver`, `node/<name>`, ...
    role: str
    argv: tuple[str, ...]
    #: where its stdout and stderr go (appended)
    log: str
    #: roles whose probe must answer before this one starts (each start, restarts too)
    after: tuple[str, ...] = ()
    #: its readiness probe URL (None: it is ready as soon as it runs)
    ready: str | None = None
    #: the network namespace it runs in (a namespace file, `/run/netns/<name>`; None: the supervisor's)
    netns: str | None = None
    #: the mount namespace it runs in (a namespace file; None: the supervisor's)
    mntns: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "argv": list(self.argv),
            "log": self.log,
            "after": list(self.after),
            "ready": self.ready,
            "netns": self.netns,
            "mntns": self.mntns,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProcessPlan:
        return cls(
            role=str(data["role"]),
            argv=tuple(str(arg) for arg in data["argv"]),
            log=str(data["log"]),
            after=tuple(str(role) for role in data.get("after") or ()),
            ready=str(data["ready"]) if data.get("ready") else None,
            netns=str(data["netns"]) if data.get("netns") else None,
            mntns=str(data["mntns"]) if data.get("mntns") else None,
        )


@dataclass(frozen=True)
class RestartPolicy:
    """The kubelet's CrashLoopBackOff for a container that exits: the delay doubles from `initial`
    up to `maximum`, and starts over once the process ran for twice the maximum.

    The defaults are the kubelet's reduced back-off (KEP-4603: 1 s up to 60 s), short
    enough that a control-plane process that crashed once is back before a test notices.
    """

    initial: float = 1.0
    maximum: float = 60.0

    def delay(self, exits: int) -> float:
        """The wait before the restart that follows the `exits`-th consecutive exit (1-based)."""
        return float(min(self.initial * 2 ** max(exits - 1, 0), self.maximum))

    @property
    def reset_after(self) -> float:
        """A process that ran this long before it exited is restarted after `initial` again."""
        return 2 * self.maximum


@dataclass(frozen=True)
class Plan:
    processes: tuple[ProcessPlan, ...]
    restart: RestartPolicy = field(default_factory=RestartPolicy)
    #: how long each process has to exit after SIGTERM before it is killed
    grace: float = 10.0

    def __post_init__(self) -> None:
        roles = [process.role for process in self.processes]
        seen: set[str] = set()
        for process in self.processes:
            unknown = [role for role in process.after if role not in seen]
            if unknown:
                raise ValueError(
                    f"{process.role} waits for {', '.join(unknown)}, which "
                    f"{'does' if len(unknown) == 1 else 'do'} not start before it (order: {', '.join(roles)})"
                )
            seen.add(process.role)
        if len(seen) != len(roles):
            raise ValueError(f"roles given twice in {roles}")

    def process(self, role: str) -> ProcessPlan:
        for process in self.processes:
            if process.role == role:
                return process
        raise KeyError(role)

    @property
    def roles(self) -> list[str]:
        return [process.role for process in self.processes]

    def as_json(self) -> dict[str, Any]:
        return {
            "processes": [process.as_json() for process in self.processes],
            "restart": {"initial": self.restart.initial, "maximum": self.restart.maximum},
            "grace": self.grace,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        restart = data.get("restart") or {}
        return cls(
            processes=tuple(ProcessPlan.from_json(item) for item in data["processes"]),
            restart=RestartPolicy(
                initial=float(restart.get("initial", RestartPolicy.initial)),
                maximum=float(restart.get("maximum", RestartPolicy.maximum)),
            ),
            grace=float(data.get("grace", cls.grace)),
        )


def stop_order(plan: Plan, roles: Iterable[str]) -> list[str]:
    """`roles` in reverse start order: what started last stops first (etcd, started first, stops last)."""
    wanted = set(roles)
    return [role for role in reversed(plan.roles) if role in wanted]
