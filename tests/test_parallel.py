"""tests/parallel.py: on several workers, a test's temp dir still holds a provider's unix socket."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent

#: a test named as long as the suite's longest, making its socket where Terraform's harness has the provider
#: make it (provider/server.py under the working directory's TMPDIR, tests/terraform/conftest.py)
INNER_TEST = """
    import socket
    import tempfile
    from pathlib import Path

    def test_a_name_as_long_as_the_longest_of_the_suite_starting_a_provider(tmp_path):
        Path({seen!r}).write_text(str(tmp_path))
        (tmp_path / "tmp").mkdir()
        socket_dir = tempfile.mkdtemp(prefix="tfplugin-liqo-", dir=tmp_path / "tmp")
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(Path(socket_dir) / "plugin.sock"))
"""


@pytest.mark.slow
def test_a_parallel_run_makes_its_unix_sockets_under_a_short_temp_dir_removed_after(tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    (tmp_path / "conftest.py").write_text('pytest_plugins = ("tests.parallel",)\n')
    (tmp_path / "test_it.py").write_text(textwrap.dedent(INNER_TEST.format(seen=str(seen))))

    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "test_it.py"],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-2000:]
    worker = Path(seen.read_text()).parent
    assert worker.name.startswith("popen-gw") and worker.parent.name.startswith("pt-"), worker
    assert not worker.parent.exists(), "a run whose tests all passed leaves its temp dir behind"
