"""Short temporary paths when the suite runs on several workers (pytest-xdist, `-n N`).

A unix socket's path has at most 107 bytes, and tests make sockets under `tmp_path`:
Terraform and OpenTofu start the provider (and every other plugin) with its socket under
`$TMPDIR`, which the Terraform harness sets to the test's temp dir. pytest's default base
temp dir is `/tmp/pytest-of-<user>/pytest-<n>/`, and xdist puts each worker one level
deeper (`popen-gw<i>/`): with a long test name, the provider's socket path passes the
limit there and every command of that test fails. So a parallel run that names no
`--basetemp` gets a new, short one, `/tmp/pt-<random>/` (its workers `popen-gw<i>/` under
it), shorter than the serial default; it is removed when every test passed and kept,
for its logs and cluster state, when one failed.
"""

from __future__ import annotations

import shutil
import tempfile

import pytest

#: where a parallel run's base temp dir is made (short on purpose, see the module docstring)
SHORT_TEMP_ROOT = "/tmp"
_made: list[str] = []


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Before pytest's temp dir factory reads it: a short `--basetemp` for a parallel run naming none."""
    if config.getoption("numprocesses", None) and config.option.basetemp is None:
        config.option.basetemp = tempfile.mkdtemp(prefix="pt-", dir=SHORT_TEMP_ROOT)
        _made.append(config.option.basetemp)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Remove the base temp dir made here once every test passed."""
    if exitstatus == pytest.ExitCode.OK:
        for path in _made:
            shutil.rmtree(path, ignore_errors=True)
