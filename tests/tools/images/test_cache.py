"""tools/images/cache.py: an image is built once per set of inputs, and a failed build leaves nothing."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tools.images import cache


def test_the_cache_lives_under_xdg_cache_home(tmp_path: Path) -> None:
    assert cache.cache_root({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "liqo-iac" / "images"


def test_a_second_build_of_the_same_inputs_is_the_cached_archive(tmp_path: Path) -> None:
    builds: list[Path] = []

    def build(folder: Path) -> None:
        builds.append(folder)
        (folder / "image.tar").write_bytes(b"archive")

    first = cache.cached(tmp_path, {"image": "x:1"}, "image.tar", build)
    second = cache.cached(tmp_path, {"image": "x:1"}, "image.tar", build)
    assert first == second and first.read_bytes() == b"archive"
    assert len(builds) == 1
    other = cache.cached(tmp_path, {"image": "x:2"}, "image.tar", build)
    assert other != first and len(builds) == 2
    cache.cached(tmp_path, {"image": "x:1"}, "image.tar", build, rebuild=True)
    assert len(builds) == 3


def test_a_failed_build_leaves_no_entry(tmp_path: Path) -> None:
    def build(folder: Path) -> None:
        (folder / "image.tar").write_bytes(b"half")
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        cache.cached(tmp_path, {"image": "x:1"}, "image.tar", build)
    assert [path.name for path in tmp_path.iterdir() if not path.name.endswith(".lock")] == []


def test_the_key_covers_every_input(tmp_path: Path) -> None:
    assert cache.key({"a": "1", "b": "2"}) == cache.key({"b": "2", "a": "1"})
    assert cache.key({"a": "1"}) != cache.key({"a": "2"})


def test_deliver_puts_the_archive_in_the_folder_and_is_idempotent(tmp_path: Path) -> None:
    archive = tmp_path / "cache" / "image.tar"
    archive.parent.mkdir()
    archive.write_bytes(b"archive")
    out = tmp_path / "out"
    assert cache.deliver(archive, out) == out / "image.tar"
    assert cache.deliver(archive, out) == out / "image.tar"
    assert sorted(path.name for path in out.iterdir()) == ["image.tar"]
    assert (out / "image.tar").read_bytes() == b"archive"


def test_a_recipe_is_the_sources_of_its_modules_and_the_oci_writer() -> None:
    assert cache.recipe_digest("pause") == cache.recipe_digest("pause", "oci")
    assert cache.recipe_digest("pause") != cache.recipe_digest("coredns")
    assert cache.recipe_digest("runtimeimage", "debian") == cache.recipe_digest("debian", "runtimeimage")


def _build_as(data: bytes, filename: str = "image.tar") -> Callable[[Path], None]:
    def build(folder: Path) -> None:
        (folder / filename).write_bytes(data)

    return build


def test_the_cache_keeps_the_most_recently_used_entries_of_each_archive(tmp_path: Path) -> None:
    archives = []
    for number in range(cache.KEPT_BUILDS):
        archives.append(cache.cached(tmp_path, {"image": f"x:{number}"}, "image.tar", _build_as(b"x")))
        # last used in this order, a second apart
        stamp = 1_000_000 + number
        os.utime(archives[-1].parent / cache.INPUTS, (stamp, stamp))
    other = cache.cached(tmp_path, {"image": "y:1"}, "other.tar", _build_as(b"y", "other.tar"))
    os.utime(other.parent / cache.INPUTS, (1, 1))
    # the oldest is used again, then one more is built: the second oldest goes
    assert cache.cached(tmp_path, {"image": "x:0"}, "image.tar", _build_as(b"x")) == archives[0]
    newest = cache.cached(tmp_path, {"image": "x:new"}, "image.tar", _build_as(b"x"))
    assert set(tmp_path.glob("*/image.tar")) == {archives[0], *archives[2:], newest}
    assert other.is_file(), "another archive's entries are not counted"
