"""A test that hangs fails with where it hangs: pytest-timeout, plus the asyncio tasks' stacks.

pytest-timeout (`timeout` in pyproject.toml) fails a test still running after that many
seconds. Its `signal` method raises in the main thread and writes every other thread's
stack into the test's captured output: the run goes on, on one worker or several
(pytest-xdist sends the report, output included, to the controller). An async test that
hangs is idle in its event loop's `select()`, though, and the main thread's traceback says
no more than that: so, before pytest-timeout's handler, this one writes each asyncio task
of the running loop with the chain of coroutines it awaits, down to the one that waits.
"""

from __future__ import annotations

import asyncio
import signal
import traceback
from collections.abc import Generator, Iterator
from types import FrameType
from typing import Any

import pytest


def awaited_frames(awaitable: object) -> Iterator[FrameType]:
    """The frames of a coroutine (or generator) and of each one it awaits in turn, outermost first."""
    while awaitable is not None:
        frame = getattr(awaitable, "cr_frame", None) or getattr(awaitable, "gi_frame", None)
        if frame is not None:
            yield frame
        awaitable = getattr(awaitable, "cr_await", None) or getattr(awaitable, "gi_yieldfrom", None)


def task_stacks() -> str:
    """Every task of the event loop running in this thread, each with where it awaits ("" without a loop)."""
    try:
        tasks = asyncio.all_tasks(asyncio.get_running_loop())
    except RuntimeError:
        return ""
    parts = []
    for task in sorted(tasks, key=lambda task: task.get_name()):
        frames = traceback.StackSummary.extract(
            (frame, frame.f_lineno) for frame in awaited_frames(task.get_coro())
        )
        parts.append(f"asyncio task {task.get_name()!r}, awaiting:\n{''.join(frames.format())}")
    return "".join(parts)


@pytest.hookimpl(wrapper=True, optionalhook=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> Generator[None, object, object]:
    """Once pytest-timeout armed its SIGALRM handler, put one first that writes the asyncio tasks."""
    armed = yield
    handler = signal.getsignal(signal.SIGALRM)
    if callable(handler):

        def with_tasks(signum: int, frame: FrameType | None) -> None:
            __tracebackhide__ = True
            stacks = task_stacks()
            if stacks:
                terminal = item.config.get_terminal_writer()
                terminal.sep("+", title="asyncio tasks")
                terminal.write(stacks)
            handler(signum, frame)

        signal.signal(signal.SIGALRM, with_tasks)
    return armed
