"""The suite's own check: a test whose captured output or diagnostics show an object's repr fails."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.readable import unreadable

CONFTEST = Path(__file__).with_name("conftest.py")
ROOT = CONFTEST.parent.parent


def test_default_reprs_are_found_and_words_are_not() -> None:
    lines = [
        "ClientConnectorError(ConnectionKey(host='127.0.0.1', port=1, ssl=<ssl.SSLContext object at 0x7fa7ab588ef0>))",
        "the connection was refused (nothing listens there)",
    ]
    assert unreadable(lines) == [lines[0]]


@pytest.mark.slow
@pytest.mark.parametrize(
    "body",
    [
        "logging.getLogger('x').info('failed: %s', object())",
        "print(object())",
        "Diagnostics().add_error('Failed', f'detail {object()!r}')",
    ],
    ids=["info-log", "stdout", "diagnostic"],
)
def test_a_test_that_shows_an_object_repr_fails(tmp_path: Path, body: str) -> None:
    """Run in a pytest of its own, whose output stays out of this test's (it shows the repr, on purpose)."""
    (tmp_path / "conftest.py").write_text(CONFTEST.read_text())
    (tmp_path / "test_it.py").write_text(
        textwrap.dedent(
            f"""
            import logging
            from tf.utils import Diagnostics

            def test_it():
                {body}
            """
        )
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "log_level=INFO", "test_it.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1 and "1 failed" in run.stdout, run.stdout[-2000:]
    assert "shows a Python object's repr (object at 0x...) instead of words" in run.stdout


@pytest.mark.slow
def test_pytests_own_assertion_explanations_are_not_held_against_a_test(tmp_path: Path) -> None:
    """An assertion that failed in a background task is logged with pytest's explanation, which shows reprs
    (`<built-in method splitlines of str object at 0x...>`): that is pytest's text, not a message of ours.
    A repr of ours logged next to it is still found."""
    (tmp_path / "conftest.py").write_text(CONFTEST.read_text())
    (tmp_path / "test_it.py").write_text(
        textwrap.dedent(
            """
            import logging

            def check(text):
                assert "expected" in text.splitlines()

            def test_pytests_text():
                try:
                    check("something else")
                except AssertionError:
                    logging.getLogger("background").exception("a background check failed")

            def test_ours_next_to_it():
                try:
                    check("something else")
                except AssertionError:
                    logging.getLogger("background").exception("failed talking to %r", object())
            """
        )
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "log_level=INFO", "test_it.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "1 failed, 1 passed" in run.stdout, run.stdout[-3000:]
    assert "FAILED test_it.py::test_ours_next_to_it" in run.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("report", "first_line"),
    [
        ("Unclosed client session\\nclient_session: %r", "Unclosed client session"),
        ("Task was destroyed but it is pending!\\ntask: %r", "Task was destroyed but it is pending!"),
        ("Future exception was never retrieved\\nfuture: %r", "Future exception was never retrieved"),
    ],
    ids=["unclosed", "pending-task", "unretrieved-exception"],
)
def test_asyncio_leak_reports_are_warnings_not_failures_of_whichever_test_runs_then(
    tmp_path: Path, report: str, first_line: str
) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST.read_text())
    (tmp_path / "test_it.py").write_text(
        textwrap.dedent(
            f"""
            import logging

            def test_it():
                logging.getLogger("asyncio").error("{report}", object())
            """
        )
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "log_level=INFO", "test_it.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-2000:]
    assert f"LeakReportWarning: {first_line} (garbage-collected during this test" in run.stdout
