"""tools/images/debian.py: what mmdebstrap is asked for, and what of its folder goes into a layer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.images import debian


def test_a_list_file_is_one_item_a_line_with_comments(tmp_path: Path) -> None:
    path = tmp_path / "packages.txt"
    path.write_text("# the header\npython3   # the interpreter\n\n  nftables\n")
    assert debian.read_list(path) == ("python3", "nftables")


@pytest.mark.parametrize(
    ("variant", "merged"),
    [("essential", True), ("minbase", True), ("extract", False)],
    ids=["essential", "minbase", "extract"],
)
def test_the_command_installs_the_packages_of_the_variant_with_usr_merged(variant: str, merged: bool) -> None:
    spec = debian.Bootstrap(
        packages=("python3", "nftables"), variant=variant, dpkg_config=Path("/x/dpkg.cfg")
    )
    command = spec.command(Path("/target"))
    assert command[:4] == ["mmdebstrap", "--quiet", f"--variant={variant}", "--mode=root"]
    assert command[-2:] == ["bookworm", "/target"]
    assert "--include=python3,nftables" in command and "--dpkgopt=/x/dpkg.cfg" in command
    assert (f"--hook-dir={debian.MERGED_USR_HOOK}" in command) is merged


def test_the_build_leftovers_go_and_their_folders_stay(tmp_path: Path) -> None:
    (tmp_path / "var" / "log" / "apt").mkdir(parents=True)
    (tmp_path / "var" / "log" / "apt" / "history.log").write_text("Start-Date: today\n")
    (tmp_path / "var" / "log" / "dpkg.log").write_text("today\n")
    (tmp_path / "var" / "lib" / "dpkg").mkdir(parents=True)
    (tmp_path / "var" / "lib" / "dpkg" / "status").write_text("Package: python3\n")
    (tmp_path / "var" / "lib" / "dpkg" / "status-old").write_text("Package: python3\n")
    debian.remove_build_leftovers(tmp_path)
    remaining = sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*"))
    assert remaining == ["var", "var/lib", "var/lib/dpkg", "var/lib/dpkg/status", "var/log", "var/log/apt"]


def test_a_user_gets_an_account_and_a_home_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (tmp_path / "etc" / "group").write_text("root:x:0:\n")
    debian.add_user(tmp_path, "nonroot", 65532, home="/home/nonroot")
    assert (tmp_path / "etc" / "passwd").read_text().splitlines()[-1] == (
        "nonroot:x:65532:65532:nonroot:/home/nonroot:/usr/sbin/nologin"
    )
    assert (tmp_path / "etc" / "group").read_text().splitlines()[-1] == "nonroot:x:65532:"
    home = os.stat(tmp_path / "home" / "nonroot")
    assert (home.st_uid, home.st_gid, home.st_mode & 0o777) == (65532, 65532, 0o750)


def test_the_layer_leaves_out_what_the_container_runtime_mounts_and_what_is_excluded(tmp_path: Path) -> None:
    for folder in ("dev", "proc", "sys", "usr/bin", "skip/inner"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "dev" / "console").write_text("")
    (tmp_path / "usr" / "bin" / "python3").write_text("")
    (tmp_path / "skip" / "inner" / "file").write_text("")
    names = debian.layer(tmp_path, exclude=["skip"]).names()
    assert names == ["dev", "proc", "sys", "usr", "usr/bin", "usr/bin/python3"]
