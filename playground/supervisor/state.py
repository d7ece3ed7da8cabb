"""What a supervisor reports and what it is asked: its state file and its held roles (pure I/O).

The state file (the cluster's `processes.json`) is written by the supervisor alone,
atomically, on every change: its own process record, then each role's state, the record
of the process running it, and its exits. Launchers read it to stop, wait and report.

The held file lists roles the supervisor must keep stopped (`playground`'s stop of one
node agent or of the API server, as a test does to a kind node); a launcher rewrites it
and sends the supervisor SIGHUP.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playground.processes import ProcessRecord

#: the role of the supervisor's own record
SUPERVISOR = "supervisor"

# role states
WAITING = "waiting"  # for the roles it starts after to be ready
RUNNING = "running"
BACKOFF = "backoff"  # exited; restarted after a delay
HELD = "held"  # stopped on request, until asked to start again
STOPPED = "stopped"  # the supervisor is stopping or stopped


@dataclass(frozen=True)
class RoleState:
    role: str
    state: str
    #: the process running the role now (None unless running)
    record: ProcessRecord | None = None
    #: how many times a process of this role exited by itself since the supervisor started
    exits: int = 0
    #: the last such exit's code (negative: killed by that signal)
    last_exit: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "state": self.state,
            "record": self.record.as_json() if self.record else None,
            "exits": self.exits,
            "lastExit": self.last_exit,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RoleState:
        record = data.get("record")
        last_exit = data.get("lastExit")
        return cls(
            role=str(data["role"]),
            state=str(data["state"]),
            record=ProcessRecord.from_json(record) if record else None,
            exits=int(data.get("exits", 0)),
            last_exit=int(last_exit) if last_exit is not None else None,
        )


@dataclass(frozen=True)
class SupervisorState:
    supervisor: ProcessRecord
    roles: tuple[RoleState, ...] = ()

    def role(self, name: str) -> RoleState | None:
        for state in self.roles:
            if state.role == name:
                return state
        return None

    def records(self) -> list[ProcessRecord]:
        """The supervisor's record, then the record of every process it runs now."""
        return [self.supervisor, *(state.record for state in self.roles if state.record is not None)]

    def as_json(self) -> dict[str, Any]:
        return {"supervisor": self.supervisor.as_json(), "roles": [state.as_json() for state in self.roles]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SupervisorState:
        return cls(
            supervisor=ProcessRecord.from_json(data["supervisor"]),
            roles=tuple(RoleState.from_json(item) for item in data.get("roles") or ()),
        )


def _write_atomically(path: Path, data: Any, *, only_if_absent: bool = False) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    if not only_if_absent:
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)  # fails if `path` exists: never replaces what another writer put there
    except FileExistsError:
        pass
    finally:
        tmp.unlink()


def write_state(path: Path, state: SupervisorState, *, only_if_absent: bool = False) -> None:
    """Write `state` to `path` atomically; with `only_if_absent`, only when there is no state yet."""
    _write_atomically(path, state.as_json(), only_if_absent=only_if_absent)


def read_state(path: Path) -> SupervisorState | None:
    """The state a supervisor last wrote to `path`, None when there is none."""
    try:
        return SupervisorState.from_json(json.loads(path.read_text()))
    except FileNotFoundError:
        return None


def write_held(path: Path, roles: Iterable[str]) -> None:
    _write_atomically(path, sorted(set(roles)))


def read_held(path: Path) -> set[str]:
    try:
        return {str(role) for role in json.loads(path.read_text())}
    except FileNotFoundError:
        return set()
