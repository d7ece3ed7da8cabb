"""The supervisor of one cluster's processes: start them in order, restart the ones that exit,
stop them in reverse order.

Every role of the plan gets a task that loops: wait until the roles it starts after are
ready, start its process, wait for it to exit, back off, start again. Children run in
sessions of their own, so a signal to the supervisor reaches none of them: they stop only
when the supervisor stops them, one at a time, last started first (`processes.stop`:
SIGTERM to the child's group, then SIGKILL to what is left after the plan's grace), so
kube-apiserver has finished with etcd before etcd is asked to stop. Exits are noticed on
SIGCHLD. SIGHUP rereads the held roles: a newly held role is stopped and stays stopped, a
role no longer held starts again at once. Every change is written to the state file.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from playground import processes
from playground.processes import ProcessRecord

from . import probes
from .plan import Plan, ProcessPlan, stop_order
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
    write_state,
)

logger = logging.getLogger("playground.supervisor")

#: how often a start gate probes the roles it waits for
GATE_POLL = 0.1


@dataclass
class _Role:
    plan: ProcessPlan
    state: str = WAITING
    process: subprocess.Popen[bytes] | None = None
    record: ProcessRecord | None = None
    #: set to the exit code when the running process exits
    exited: asyncio.Future[int] | None = None
    #: the task keeping the role running (None while held or stopped)
    task: asyncio.Task[None] | None = None
    #: a start in progress (it finishes even when the task is cancelled, so its process is known)
    launching: asyncio.Task[None] | None = None
    exits: int = 0
    #: exits since the last start that ran long enough to reset the back-off
    consecutive: int = 0
    last_exit: int | None = None

    def snapshot(self) -> RoleState:
        return RoleState(
            role=self.plan.role,
            state=self.state,
            record=self.record,
            exits=self.exits,
            last_exit=self.last_exit,
        )


def own_record(log: str) -> ProcessRecord:
    info = processes.read_proc(os.getpid())
    if info is None:
        raise RuntimeError("the supervisor cannot read its own /proc entry")
    return ProcessRecord(
        role=SUPERVISOR, pid=info.pid, start_time=info.start_time, cmdline=info.cmdline, log=log
    )


class Supervisor:
    def __init__(
        self,
        plan: Plan,
        *,
        state_path: Path,
        held_path: Path,
        record: ProcessRecord,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.plan = plan
        self._state_path = state_path
        self._held_path = held_path
        self._record = record
        self._env = dict(env) if env is not None else None
        self._roles = {process.role: _Role(process) for process in plan.processes}
        self._held: set[str] = set()
        #: held-role changes and the shutdown take turns
        self._lock = asyncio.Lock()
        self._stopping = asyncio.Event()
        self._background: set[asyncio.Task[None]] = set()

    # the state file

    def _write(self) -> None:
        roles = tuple(role.snapshot() for role in self._roles.values())
        write_state(self._state_path, SupervisorState(supervisor=self._record, roles=roles))

    def _set(self, role: _Role, state: str) -> None:
        role.state = state
        self._write()

    # running

    async def run(self) -> None:
        """Run the plan until SIGTERM or SIGINT, then stop every process in reverse start order."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stopping.set)
        loop.add_signal_handler(signal.SIGHUP, self._on_hangup)
        loop.add_signal_handler(signal.SIGCHLD, self._reap)
        try:
            self._held = await asyncio.to_thread(read_held, self._held_path)
            for role in self._roles.values():
                if role.plan.role in self._held:
                    role.state = HELD
                else:
                    self._keep(role)
            self._write()
            await self._stopping.wait()
            await self._shutdown()
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD):
                loop.remove_signal_handler(sig)

    def _keep(self, role: _Role) -> None:
        role.task = asyncio.create_task(self._keep_running(role), name=f"keep {role.plan.role}")

    async def _keep_running(self, role: _Role) -> None:
        restart = self.plan.restart
        while True:
            self._set(role, WAITING)
            await self._wait_for(role.plan.after)
            role.launching = asyncio.create_task(self._launch(role), name=f"start {role.plan.role}")
            await asyncio.shield(role.launching)
            assert role.exited is not None
            started = time.monotonic()
            code = await role.exited
            ran = time.monotonic() - started
            role.process, role.record = None, None
            role.exits += 1
            role.last_exit = code
            role.consecutive = 1 if ran >= restart.reset_after else role.consecutive + 1
            delay = restart.delay(role.consecutive)
            logger.warning(
                "%s exited with code %d after %.1f s; restarting it in %g s (exit %d)",
                role.plan.role,
                code,
                ran,
                delay,
                role.exits,
            )
            self._set(role, BACKOFF)
            await asyncio.sleep(delay)

    async def _wait_for(self, roles: Iterable[str]) -> None:
        """Until every role of `roles` runs and its probe (if it has one) answers."""
        waiting = list(roles)
        while waiting:
            role = self._roles[waiting[0]]
            if role.record is not None and (role.plan.ready is None or await probes.ready(role.plan.ready)):
                waiting.pop(0)
            else:
                await asyncio.sleep(GATE_POLL)

    async def _launch(self, role: _Role) -> None:
        plan = role.plan
        log = Path(plan.log)

        def start() -> tuple[subprocess.Popen[bytes], ProcessRecord | None]:
            log.parent.mkdir(parents=True, exist_ok=True)
            with log.open("a") as out:
                out.write(f"--- started {dt.datetime.now(dt.UTC).isoformat()}\n")
            netns = Path(plan.netns) if plan.netns is not None else None
            mntns = Path(plan.mntns) if plan.mntns is not None else None
            return processes.launch(plan.role, plan.argv, log=log, env=self._env, netns=netns, mntns=mntns)

        role.exited = asyncio.get_running_loop().create_future()
        try:
            process, record = await asyncio.to_thread(start)
        except OSError as exc:  # not executable, say: an exit like any other
            logger.error("%s could not start: %s", plan.role, exc)
            role.exited.set_result(127)
            return
        role.process, role.record = process, record
        if record is None:
            role.exited.set_result(await asyncio.to_thread(process.wait))
        else:
            logger.info("%s started (pid %d)", plan.role, record.pid)
            self._set(role, RUNNING)
            self._reap()  # it may have exited before it was known

    def _reap(self) -> None:
        for role in self._roles.values():
            if role.process is not None and role.exited is not None and not role.exited.done():
                code = role.process.poll()
                if code is not None:
                    role.exited.set_result(code)

    # holding and stopping

    def _on_hangup(self) -> None:
        task = asyncio.create_task(self._apply_held(), name="apply held roles")
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _apply_held(self) -> None:
        async with self._lock:
            if self._stopping.is_set():
                return
            held = await asyncio.to_thread(read_held, self._held_path)
            for name in stop_order(self.plan, held - self._held):
                await self._halt(self._roles[name])
                self._set(self._roles[name], HELD)
                logger.info("%s held stopped", name)
            for name in self.plan.roles:
                if name in self._held - held:
                    role = self._roles[name]
                    role.consecutive = 0
                    logger.info("%s released", name)
                    self._keep(role)
            self._held = held & set(self._roles)

    async def _halt(self, role: _Role) -> None:
        """Stop keeping `role` running, and stop its process if one runs."""
        await self._release(role)
        await self._stop_process(role)

    async def _release(self, role: _Role) -> None:
        """Stop keeping `role` running (nothing restarts it), leaving a running process alone."""
        if role.task is not None:
            role.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await role.task
            role.task = None
        if role.launching is not None:
            with contextlib.suppress(Exception):
                await role.launching
            role.launching = None

    async def _stop_process(self, role: _Role) -> None:
        record = role.record
        if record is None:
            return
        started = time.monotonic()
        foreign = await asyncio.to_thread(processes.stop, [record], timeout=self.plan.grace)
        if role.process is not None:
            role.process.poll()
        role.process, role.record = None, None
        if foreign:
            logger.warning(
                "%s: pid %d belongs to another process now; left it alone", role.plan.role, record.pid
            )
        else:
            logger.info("%s stopped in %.2f s", role.plan.role, time.monotonic() - started)

    async def _shutdown(self) -> None:
        async with self._lock:
            order = stop_order(self.plan, self.plan.roles)
            logger.info("stopping %s", ", ".join(order))
            for role in self._roles.values():
                await self._release(role)
            for name in order:
                role = self._roles[name]
                await self._stop_process(role)
                self._set(role, STOPPED)
