"""The cache of built images: `$XDG_CACHE_HOME/liqo-iac/images/<key>/<archive>`, never committed.

The key is a digest of everything that went into an image (the recipe's sources, the
binaries, the package lists, the wheels' pins), so an unchanged image is found, not
built again, and a change to any input builds a new one beside the old. A build goes
into a temporary folder renamed into place when the archive is complete, so an
interrupted build never leaves an entry that looks complete; builds of the same key
wait for each other (a lock file).

What Debian's mirror serves is not part of the key (a recipe names packages, not their
versions): `--rebuild` builds again to pick up Debian's updates.

Each change to the runtime's sources is a new runtime image of about 46 MB, so the cache
keeps the `KEPT_BUILDS` most recently used entries of each archive name and removes the
others after a build (archives delivered elsewhere are hard links or copies: they stay).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from tools.buildlock import locked

#: what a key is made from: names to strings (digests, versions, package lists)
Inputs = Mapping[str, str]
HERE = Path(__file__).resolve().parent
#: the entries kept per archive name (the newest used): older ones are removed after a build
KEPT_BUILDS = 4
INPUTS = "inputs.json"


def cache_root(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "liqo-iac" / "images"


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def tree_digest(root: Path, *, suffixes: tuple[str, ...] = ()) -> str:
    """A digest of the files under `root` (their paths and contents; bytecode and caches left out)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
            continue
        if suffixes and path.suffix not in suffixes:
            continue
        digest.update(f"{path.relative_to(root)}\0{file_digest(path)}\n".encode())
    return digest.hexdigest()


def recipe_digest(*modules: str) -> str:
    """The sources of the builder's modules (`tools/images/<module>.py`) that make an image, and of the OCI
    writer every image goes through: a change to how an image is made makes a new key for it alone."""
    digest = hashlib.sha256()
    for module in sorted({"oci", *modules}):
        digest.update(f"{module}\0{file_digest(HERE / f'{module}.py')}\n".encode())
    return digest.hexdigest()


def key(inputs: Inputs) -> str:
    return hashlib.sha256(json.dumps(dict(inputs), sort_keys=True).encode()).hexdigest()[:32]


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cached(
    root: Path,
    inputs: Inputs,
    filename: str,
    build: Callable[[Path], None],
    *,
    rebuild: bool = False,
) -> Path:
    """The archive `filename` built from `inputs`: from the cache, or made by `build(folder)` (which
    writes `folder/filename`) and kept there."""
    entry = root / key(inputs)
    archive = entry / filename
    if archive.is_file() and not rebuild:
        return _used(entry, archive)
    with locked(root / f".{entry.name}.lock"):
        if archive.is_file() and not rebuild:
            return _used(entry, archive)
        for stale in root.glob(f".{entry.name}.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        staging = root / f".{entry.name}.tmp-{os.getpid()}"
        staging.mkdir(parents=True)
        try:
            build(staging)
            if not (staging / filename).is_file():
                raise RuntimeError(f"the build of {filename} wrote no {staging / filename}")
            (staging / INPUTS).write_text(json.dumps(dict(inputs), indent=2, sort_keys=True) + "\n")
            if entry.exists():
                retired = root / f".{entry.name}.tmp-retired-{os.getpid()}"
                entry.rename(retired)
                shutil.rmtree(retired, ignore_errors=True)
            staging.rename(entry)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    prune(root, filename, keep=KEPT_BUILDS)
    return archive


def _used(entry: Path, archive: Path) -> Path:
    """`archive`, its entry marked as just used (pruning keeps the most recently used)."""
    with contextlib.suppress(OSError):
        os.utime(entry / INPUTS)
    return archive


def prune(root: Path, filename: str, *, keep: int) -> list[Path]:
    """Remove all but the `keep` most recently used entries holding an archive `filename`; the removed ones."""

    def used(entry: Path) -> int:
        try:
            return (entry / INPUTS).stat().st_mtime_ns
        except OSError:
            return 0

    entries = sorted((path.parent for path in root.glob(f"[!.]*/{filename}")), key=used)
    removed = entries[: max(len(entries) - keep, 0)]
    for entry in removed:
        shutil.rmtree(entry, ignore_errors=True)
    return removed


def deliver(archive: Path, out: Path) -> Path:
    """A copy of `archive` in `out` (a hard link when they share a file system), replaced atomically."""
    out.mkdir(parents=True, exist_ok=True)
    target = out / archive.name
    if target.exists() and os.path.samefile(archive, target):
        return target
    temporary = out / f".{archive.name}.{os.getpid()}.tmp"
    temporary.unlink(missing_ok=True)
    try:
        os.link(archive, temporary)
    except OSError:
        shutil.copyfile(archive, temporary)
    os.replace(temporary, target)
    return target
