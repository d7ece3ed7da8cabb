"""`containerd`: a throwaway containerd (Debian's) on its own root, state and socket, for import tests.

Nothing of the machine's own containerd (if one runs) is touched: the daemon this starts
keeps everything in a temporary folder, its CRI plugin off, and is stopped and removed
when the test ends.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

NAMESPACE = "k8s.io"


@dataclass(frozen=True)
class Containerd:
    address: str

    def ctr(self, *args: str, timeout: float = 120) -> str:
        completed = subprocess.run(
            ["ctr", "--address", self.address, "--namespace", NAMESPACE, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert completed.returncode == 0, f"ctr {' '.join(args)}: {completed.stderr.strip()}"
        return completed.stdout

    def image_names(self) -> set[str]:
        return {
            name for name in self.ctr("images", "ls", "--quiet").split() if not name.startswith("sha256:")
        }


@pytest.fixture
def containerd() -> Iterator[Containerd]:
    missing = [tool for tool in ("containerd", "ctr", "runc") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"no {', '.join(missing)} on PATH (Debian: apt-get install containerd runc)")
    if os.geteuid() != 0:
        pytest.skip("containerd needs root")
    # a short folder: the socket's path must fit a unix socket address
    folder = Path(tempfile.mkdtemp(prefix="ctrd-"))
    address = str(folder / "sock")
    config = folder / "config.toml"
    config.write_text(
        "version = 2\n"
        f'root = "{folder / "root"}"\n'
        f'state = "{folder / "state"}"\n'
        'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
        f'[grpc]\n  address = "{address}"\n'
        f'[plugins."io.containerd.internal.v1.opt"]\n  path = "{folder / "opt"}"\n'
    )
    with (folder / "log").open("wb") as log:
        process = subprocess.Popen(
            ["containerd", "--config", str(config)], stdout=log, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 30
        while not Path(address).exists():
            assert process.poll() is None, f"containerd exited: {(folder / 'log').read_text()[-2000:]}"
            assert time.monotonic() < deadline, "containerd did not open its socket in 30 s"
            time.sleep(0.1)
        yield Containerd(address)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(folder, ignore_errors=True)
