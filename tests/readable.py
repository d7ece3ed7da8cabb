"""The suite-wide check that no message a person reads shows a Python object's default repr.

A default repr (`<ssl.SSLContext object at 0x7fa7ab588ef0>`) in a diagnostic, a condition
message, an Event or a log line is machinery showing through: the message should have said
in words what failed. `tests/conftest.py` applies this to everything the suite captures
(log records at INFO and above, stdout and stderr of every test phase) and to every Terraform
diagnostic made in-process; the Terraform harness applies it to each command's output. Pytest's
own assertion explanations are not held against a test (`record_pytest_explanations`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Final

#: what a default repr leaves in a text
OBJECT_REPR: Final = re.compile(r"object at 0x[0-9a-fA-F]+")


#: what rewritten assertions call, at each failure, to word it (a private name of pytest's, not re-exported)
_FORMATTER: Final = "_format_explanation"
#: lines of pytest's own assertion explanations that show a repr (pytest's text, not a message of ours)
_pytest_lines: set[str] = set()


def record_pytest_explanations() -> None:
    """From now on, note the lines of pytest's assertion explanations that show an object's repr.

    A rewritten `assert` words its failure with `_pytest.assertion.rewrite._format_explanation`
    (looked up at each failure), and those words show reprs of what the assertion evaluated
    (`<built-in method splitlines of str object at 0x...>`). When such an AssertionError is
    logged (a background task's check that failed and was retried), the lines are pytest's,
    not a message a person reads: `unreadable` leaves them out.
    """
    from _pytest.assertion import rewrite

    original: Callable[[str], str] = getattr(rewrite, _FORMATTER)

    def noting(explanation: str) -> str:
        text = original(explanation)
        _pytest_lines.update(line.strip() for line in text.splitlines() if OBJECT_REPR.search(line))
        return text

    setattr(rewrite, _FORMATTER, noting)


def forget_pytest_explanations() -> None:
    """Forget the explanations noted so far (a test is over)."""
    _pytest_lines.clear()


def unreadable(lines: Iterable[str]) -> list[str]:
    """The lines that show an object's default repr, outside pytest's own assertion explanations."""
    return [line.strip() for line in lines if OBJECT_REPR.search(_without_pytest_text(line))]


def _without_pytest_text(line: str) -> str:
    for text in _pytest_lines:
        line = line.replace(text, "")
    return line


def assert_readable(text: str, *, where: str) -> None:
    """Fail when `text` (what a person reads: `where`) shows an object's default repr."""
    found = unreadable(text.splitlines())
    assert not found, f"{where} shows a Python object's repr (object at 0x...), not words:\n" + "\n".join(
        found
    )
