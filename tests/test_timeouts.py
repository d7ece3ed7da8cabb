"""tests/timeouts.py: a hanging test fails on a worker, naming the await each asyncio task is stuck in."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent

#: an async test whose task, and a task it started, wait forever on an Event nobody sets, with a thread asleep
HANGING_TEST = """
    import asyncio
    import threading
    import time

    async def waits_for_nothing() -> None:
        await asyncio.Event().wait()

    async def test_hangs() -> None:
        threading.Thread(target=time.sleep, args=(60,), name="sleepy", daemon=True).start()
        asyncio.create_task(waits_for_nothing(), name="helper")
        await waits_for_nothing()

    def test_runs_after_it() -> None:
        pass
"""


@pytest.mark.slow
def test_a_hanging_async_test_fails_with_its_tasks_and_threads_stacks_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ("tests.timeouts",)\n')
    (tmp_path / "test_it.py").write_text(textwrap.dedent(HANGING_TEST))
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nasyncio_mode = auto\ntimeout = 2\ntimeout_method = signal\n"
    )

    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-n",
            "2",
            "-p",
            "no:randomly",
            "test_it.py",
        ],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )

    out = run.stdout
    assert "1 failed, 1 passed" in out and "Timeout (>2.0s) from pytest-timeout" in out, out[-3000:]
    assert "asyncio task 'helper', awaiting:" in out, out[-3000:]
    test_task = out.split("asyncio task 'Task-", 1)[1].split("asyncio task", 1)[0]
    assert "in test_hangs" in test_task and "in waits_for_nothing" in test_task, out[-3000:]
    assert "Stack of sleepy" in out, out[-3000:]
