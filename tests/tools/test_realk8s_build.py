"""tools/realk8s/build.py: the pins, the version flags, and a cache folder that is complete or absent.

No Go build here (minutes); `make real-k8s` and the real leg run it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "realk8s" / "build.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("realk8s_build", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


build = _load()


def test_the_pins_are_kubernetes_v1_36_3_and_etcd_v3_6_13() -> None:
    assert build.expected_manifest() == {"kubernetes": "v1.36.3", "etcd": "v3.6.13"}


def test_every_staging_module_is_replaced_by_the_release_of_the_same_patch() -> None:
    go_mod = (ROOT / "tools" / "realk8s" / "kubernetes" / "go.mod").read_text()
    replaced = dict(re.findall(r"^\s*(k8s\.io/\S+) => k8s\.io/\S+ (v\S+)$", go_mod, re.MULTILINE))
    staging = "v0." + build.KUBERNETES.version().removeprefix("v1.")
    assert len(replaced) >= 30, replaced
    assert {module: staging for module in replaced} == replaced
    # each module required at the placeholder v0.0.0 is one the replace block pins
    placeholders = re.findall(r"^\s*(k8s\.io/\S+) v0\.0\.0 // indirect$", go_mod, re.MULTILINE)
    assert set(placeholders) <= set(replaced)


def test_the_version_flags_are_those_hack_lib_version_sh_sets() -> None:
    flags = build.kubernetes_ldflags("v1.36.3", "2026-07-22T18:07:38Z")
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        assert f"-X {package}.gitVersion=v1.36.3" in flags
        assert f"-X {package}.gitMajor=1" in flags
        assert f"-X {package}.gitMinor=36" in flags
        assert f"-X {package}.buildDate=2026-07-22T18:07:38Z" in flags
        assert f"-X {package}.gitTreeState=archive" in flags


def _folder(path: Path, manifest: dict[str, str], binaries: tuple[str, ...]) -> Path:
    path.mkdir(parents=True)
    for name in binaries:
        (path / name).write_text("#!/bin/sh\n")
        (path / name).chmod(0o755)
    (path / build.MANIFEST).write_text(json.dumps(manifest))
    return path


def test_a_folder_is_complete_only_with_every_binary_of_the_pinned_versions(tmp_path: Path) -> None:
    expected = {"kubernetes": "v1.36.3", "etcd": "v3.6.13"}
    assert build.is_complete(_folder(tmp_path / "ok", expected, build.BINARIES), expected)
    assert not build.is_complete(_folder(tmp_path / "missing", expected, build.BINARIES[:-1]), expected)
    stale = {**expected, "etcd": "v3.6.12"}
    assert not build.is_complete(_folder(tmp_path / "stale", stale, build.BINARIES), expected)
    assert not build.is_complete(tmp_path / "absent", expected)


def test_a_complete_folder_is_used_without_go(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "v1.36.3", build.expected_manifest(), build.BINARIES)
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
