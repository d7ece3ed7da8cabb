"""One supervisor per playground cluster: the process that runs the cluster's processes, as the
kubelet runs a kind node's static pods (`python -m playground.supervisor`).

`playground up` writes the cluster's plan (`plan.py`: every process in start order, what
each waits for, its readiness probe, the restart back-off) and starts the supervisor
detached; the supervisor starts the processes in kubeadm's order, restarts one that exits
with the kubelet's back-off, holds a role stopped on request (`state.py`'s held file and
SIGHUP) and, on SIGTERM, stops them one at a time in reverse start order
(`supervisor.py`). Its state file tells launchers what runs.
"""

from .plan import Plan, ProcessPlan, RestartPolicy, stop_order
from .state import (
    BACKOFF,
    HELD,
    RUNNING,
    STOPPED,
    SUPERVISOR,
    WAITING,
    RoleState,
    SupervisorState,
    read_held,
    read_state,
    write_held,
    write_state,
)

__all__ = [
    "BACKOFF",
    "HELD",
    "RUNNING",
    "STOPPED",
    "SUPERVISOR",
    "WAITING",
    "Plan",
    "ProcessPlan",
    "RestartPolicy",
    "RoleState",
    "SupervisorState",
    "read_held",
    "read_state",
    "stop_order",
    "write_held",
    "write_state",
]
