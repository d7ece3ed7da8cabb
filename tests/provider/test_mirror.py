"""The filesystem mirror: Terraform's unpacked layout, a shim that runs this virtualenv's provider."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from provider import mirror
from provider.server import NOT_A_PLUGIN


def test_the_mirror_has_the_unpacked_layout_and_an_executable_shim(tmp_path: Path) -> None:
    config = mirror.build(tmp_path / "mirror")

    executable = mirror.plugin_path(tmp_path / "mirror")
    relative = executable.relative_to(tmp_path / "mirror")
    version = mirror.version()
    assert relative.parts == (
        "registry.terraform.io",
        "liqo-iac",
        "liqo",
        version,
        mirror.target_platform(),
        f"terraform-provider-liqo_v{version}",
    )
    assert os.access(executable, os.X_OK)
    assert f"exec {sys.executable} -I -m provider" in executable.read_text()
    assert f'path    = "{tmp_path / "mirror"}"' in config.read_text()
    assert 'include = ["registry.terraform.io/liqo-iac/*"]' in config.read_text()


def test_the_shim_starts_the_provider(tmp_path: Path) -> None:
    mirror.build(tmp_path / "mirror")

    result = subprocess.run(
        [str(mirror.plugin_path(tmp_path / "mirror"))],
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert (result.returncode, result.stderr) == (1, NOT_A_PLUGIN)


def test_the_platform_is_terraforms_os_and_arch() -> None:
    os_name, arch = mirror.target_platform().split("_")
    assert os_name == sys.platform
    assert arch in {"amd64", "arm64", "386"}
