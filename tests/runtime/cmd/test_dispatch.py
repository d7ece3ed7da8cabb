"""`python -m runtime`: the component table, help, usage errors, logging, signals and exit codes."""

from __future__ import annotations

import asyncio
import importlib.util
import io
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from runtime.cmd.dispatch import COMPONENTS, Component, main, supervise
from runtime.cmd.logs import setup_logging

ROOT = Path(__file__).resolve().parents[3]


def python_m_runtime(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runtime", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


def test_help_lists_every_component() -> None:
    result = python_m_runtime("--help")
    assert result.returncode == 0
    for name in ("controller-manager", "auth", "webhook", "virtual-kubelet"):
        assert name in result.stdout
    assert "--log-level" in result.stdout


def test_an_unknown_component_is_a_usage_error_listing_the_components() -> None:
    result = python_m_runtime("scheduler")
    assert result.returncode == 2
    assert (
        "unknown component 'scheduler'; the components are: controller-manager, auth, webhook, virtual-kubelet"
        in result.stderr
    )
    assert python_m_runtime().returncode == 2


@pytest.mark.parametrize("name", list(COMPONENTS))
def test_each_component_has_help(name: str) -> None:
    module = COMPONENTS[name].module
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not written yet")
    result = python_m_runtime(name, "--help")
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout
    assert "common options (any component): --log-level" in result.stdout


@pytest.fixture
def fake_components(tmp_path: Path) -> Iterator[dict[str, Component]]:
    """Components in a package written here: one that sleeps until cancelled, one that fails, one absent."""
    package = tmp_path / "fakecomponents"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "sleeper.py").write_text(
        textwrap.dedent(
            """
            import asyncio, logging
            async def main(argv):
                logging.getLogger("sleeper").info("started with %s", list(argv))
                await asyncio.Event().wait()
            """
        )
    )
    (package / "failing.py").write_text("async def main(argv):\n    raise RuntimeError('boom')\n")
    (package / "broken.py").write_text("import not_a_module_anywhere\n")
    sys.path.insert(0, str(tmp_path))
    try:
        yield {
            "sleeper": Component("fakecomponents.sleeper", "sleeps"),
            "failing": Component("fakecomponents.failing", "fails"),
            "absent": Component("fakecomponents.absent.main", "not written"),
            "broken": Component("fakecomponents.broken", "imports something missing"),
        }
    finally:
        sys.path.remove(str(tmp_path))
        for module in [m for m in sys.modules if m.startswith("fakecomponents")]:
            del sys.modules[module]


def test_a_missing_component_module_exits_2(
    fake_components: dict[str, Component], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["absent"], components=fake_components) == 2
    assert "the absent component is not part of this installation (no module fakecomponents.absent.main)" in (
        capsys.readouterr().err
    )


def test_a_missing_dependency_is_a_crash_not_a_missing_component(
    fake_components: dict[str, Component],
) -> None:
    with pytest.raises(ModuleNotFoundError, match="not_a_module_anywhere"):
        main(["broken"], components=fake_components)


def test_a_crash_exits_1_and_is_logged(
    fake_components: dict[str, Component], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["failing", "--log-format=json"], components=fake_components) == 1
    record = json.loads(capsys.readouterr().err.strip().splitlines()[0])
    assert record["level"] == "error"
    assert record["msg"] == "failing: crashed"
    assert "RuntimeError: boom" in record["error"]


async def test_sigterm_cancels_the_component_and_exits_0() -> None:
    started = asyncio.Event()

    async def component(argv: Sequence[str]) -> int:
        started.set()
        await asyncio.Event().wait()
        return 3

    task = asyncio.create_task(supervise(component, [], name="test"))
    await started.wait()
    os.kill(os.getpid(), signal.SIGTERM)
    assert await task == 0


def test_common_options_are_taken_out_before_the_component_parses_its_own(
    fake_components: dict[str, Component],
) -> None:
    script = (
        "import sys; from runtime.cmd.dispatch import main, Component;"
        "sys.exit(main(sys.argv[1:], components={'sleeper': Component('fakecomponents.sleeper', '')}))"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script, "--log-format=json", "sleeper", "--flag", "--log-level=debug", "x"],
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])},
    )
    assert process.stderr is not None
    records = [json.loads(process.stderr.readline())]
    while records[-1]["logger"] != "sleeper":
        records.append(json.loads(process.stderr.readline()))
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0
    assert records[-1]["msg"] == "started with ['--flag', 'x']"
    assert any(r["level"] == "debug" for r in records)


def test_key_value_lines_quote_what_needs_quoting() -> None:
    stream = io.StringIO()
    setup_logging(level="info", log_format="text", stream=stream)
    try:
        logging.getLogger("runtime.test").info('ns/name: said "hi"')
        logging.getLogger("runtime.test").debug("not shown")
    finally:
        setup_logging()
    [line] = stream.getvalue().splitlines()
    assert line.endswith('level=info logger=runtime.test msg="ns/name: said \\"hi\\""')
    assert line.startswith("time=")
