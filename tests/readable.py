"""The suite-wide check that no message a person reads shows a Python object's default repr.

A default repr (`<ssl.SSLContext object at 0x7fa7ab588ef0>`) in a diagnostic, a condition
message, an Event or a log line is machinery showing through: the message should have said
in words what failed. `tests/conftest.py` applies this to everything the suite captures
(log records at INFO and above, stdout and stderr of every test phase) and to every Terraform
diagnostic made in-process; the Terraform harness applies it to each command's output.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

#: what a default repr leaves in a text
OBJECT_REPR: Final = re.compile(r"object at 0x[0-9a-fA-F]+")


def unreadable(lines: Iterable[str]) -> list[str]:
    """The lines that show an object's default repr."""
    return [line.strip() for line in lines if OBJECT_REPR.search(line)]


def assert_readable(text: str, *, where: str) -> None:
    """Fail when `text` (what a person reads: `where`) shows an object's default repr."""
    found = unreadable(text.splitlines())
    assert not found, f"{where} shows a Python object's repr (object at 0x...), not words:\n" + "\n".join(
        found
    )
