"""tools/opentofu/build.py: the pin, the release flags, and a cache folder that is complete or absent.

No Go build here (minutes); `make opentofu` and the real leg run it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "opentofu" / "build.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("opentofu_build", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


build = _load()


def test_the_pin_is_opentofu_v1_10_with_its_hcl_fork() -> None:
    assert build.pinned_version() == "v1.10.10"
    go_mod = (ROOT / "tools" / "opentofu" / "go.mod").read_text()
    # OpenTofu's go.mod replaces HCL with its fork; only the main module's replace directives apply
    upstream = "github.com/hashicorp/hcl/v2 v2.20.1 => github.com/opentofu/hcl/v2 "
    assert f"replace {upstream}" in go_mod
    assert "godebug tlsmlkem=0" in go_mod


def test_the_flags_are_those_of_opentofus_release_build() -> None:
    assert build.LDFLAGS == ("-s", "-w", "-X github.com/opentofu/opentofu/version.dev=no")


def _folder(path: Path, version: str, *, binary: bool = True) -> Path:
    path.mkdir(parents=True)
    if binary:
        (path / build.BINARY).write_text("#!/bin/sh\n")
        (path / build.BINARY).chmod(0o755)
    (path / build.MANIFEST).write_text(json.dumps({"opentofu": version}))
    return path


def test_a_folder_is_complete_only_with_tofu_of_the_pinned_version(tmp_path: Path) -> None:
    assert build.is_complete(_folder(tmp_path / "ok", "v1.10.10"), "v1.10.10")
    assert not build.is_complete(_folder(tmp_path / "missing", "v1.10.10", binary=False), "v1.10.10")
    assert not build.is_complete(_folder(tmp_path / "stale", "v1.10.6"), "v1.10.10")
    assert not build.is_complete(tmp_path / "absent", "v1.10.10")


def test_a_complete_folder_is_used_without_go(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "v1.10.10", "v1.10.10")
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--cache-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": "/nonexistent"},
        check=False,
    )
    assert (result.returncode, result.stdout) == (0, f"{folder}\n"), result.stderr


@pytest.mark.parametrize(("flag", "code"), [("--skip-without-go", 0), (None, 1)])
def test_without_go_the_build_says_so_in_one_line(tmp_path: Path, flag: str | None, code: int) -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--cache-dir", str(tmp_path), *([flag] if flag else [])],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": "/nonexistent"},
        check=False,
    )
    assert (result.returncode, result.stdout) == (code, "")
    assert len(result.stderr.splitlines()) == 1 and "no `go` on PATH" in result.stderr, result.stderr
    assert not any(tmp_path.iterdir()), "nothing is left in the cache"
