"""Builds the provider's release zip for this machine: a self-contained executable, cached by content.

The provider is frozen with PyInstaller as one folder (`terraform-provider-liqo_v<version>`
and `_internal/`, the interpreter and every dependency): Terraform starts a provider
several times per command, and a one-folder bundle starts as fast as the interpreter
(a one-file bundle unpacks itself into a temporary folder at every start, twice as slow).
Nothing is unpacked or written at start, under `$HOME` or elsewhere.

What goes in decides everything, so it is the cache key: the sources the provider runs
(`provider/`, `runtime/`, and `pyproject.toml`/`README.md` for its wheel), the pinned
build environment (`requirements.txt`), this package's code and the build interpreter.
The zip lands in `<cache>/terraform-provider/<version>-<digest>/` with the manifest and
SHA256SUMS beside it (`$XDG_CACHE_HOME/liqo-iac`, default `~/.cache/liqo-iac`); a folder
that is there is used as it is. A build runs in a sibling folder renamed into place at
the end, under a lock: an interrupted build never looks complete, and concurrent builds
(two checkouts, two test sessions) wait for each other.

Reproducible: the interpreter bundled is Debian's (`/usr/bin/python3.11`, whose paths are
the system's, not this machine's); dependencies come as pinned wheels only (an sdist built
here would carry its build paths); PyInstaller runs with a fixed hash seed (its module
lists are sets) and without zlib compression of the Python code (so a `grep` of the bundle
sees everything); the zip is written by `artifacts.write_zip`. Two builds of the same
inputs give the same zip, whatever folder they ran in, and every build is checked to
carry no path of the build machine (the checkout, the cache, the build environment, the
development interpreter).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Final

from provider.server import NOT_A_PLUGIN
from tools.buildlock import locked

from . import ROOT, executable_name, target_platform, version, zip_name
from .artifacts import write_release, write_zip

HERE: Final = Path(__file__).resolve().parent
REQUIREMENTS: Final = HERE / "requirements.txt"
ENTRY: Final = HERE / "entry.py"
#: the interpreter frozen into the executable (Debian's python3.11, with its shared libpython)
BUILD_PYTHON: Final = Path("/usr/bin/python3.11")
#: the distribution the provider's wheel is: the repository's root project (pyproject.toml)
PROJECT: Final = "liqo-iac"
#: what the provider's wheel is built from, relative to the repository root
SOURCES: Final = ("pyproject.toml", "README.md", "provider", "runtime")
RECORD: Final = "BUILD.json"
#: how many builds the cache keeps (each about 27 MB; a build is the sources of one moment)
KEPT_BUILDS: Final = 8


class BuildError(Exception):
    """The build cannot go on; the message says why and what to do."""


def cache_root(environ: Mapping[str, str] = os.environ) -> Path:
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "liqo-iac" / "terraform-provider"


def source_files(root: Path = ROOT) -> list[Path]:
    """The files the provider's wheel is built from, relative to `root`, sorted (no bytecode caches)."""
    files: list[Path] = []
    for name in SOURCES:
        path = root / name
        candidates = [path] if path.is_file() else path.rglob("*")
        files += [
            item.relative_to(root)
            for item in candidates
            if item.is_file() and "__pycache__" not in item.parts and item.suffix != ".pyc"
        ]
    return sorted(files)


def _interpreter_version(python: Path) -> str:
    if not os.access(python, os.X_OK):
        raise BuildError(
            f"{python} is missing: the provider's executable bundles Debian's Python 3.11 "
            "(apt-get install python3.11 python3.11-venv libpython3.11)"
        )
    return subprocess.run([str(python), "-VV"], capture_output=True, text=True, check=True).stdout.strip()


def environment_digest(python: Path = BUILD_PYTHON) -> str:
    """What decides the build environment: the pinned requirements and the interpreter."""
    digest = hashlib.sha256(REQUIREMENTS.read_bytes())
    digest.update(_interpreter_version(python).encode())
    return digest.hexdigest()[:16]


def inputs_digest(root: Path = ROOT, python: Path = BUILD_PYTHON) -> str:
    """What decides the zip: the sources, the build environment and this package's code."""
    digest = hashlib.sha256(environment_digest(python).encode())
    recipe = sorted(path.relative_to(HERE.parent.parent) for path in HERE.glob("*.py"))
    for relative, base in [
        *((path, root) for path in source_files(root)),
        *((path, ROOT) for path in recipe),
    ]:
        content = (base / relative).read_bytes()
        digest.update(f"{relative.as_posix()}\0{len(content)}\0".encode())
        digest.update(content)
    return digest.hexdigest()[:16]


def release_dir(*, environ: Mapping[str, str] = os.environ) -> Path:
    """Where the release files of this checkout's provider are (complete once `BUILD.json` is there)."""
    return cache_root(environ) / f"{version()}-{inputs_digest()}"


def built(*, environ: Mapping[str, str] = os.environ) -> Path | None:
    folder = release_dir(environ=environ)
    return folder if (folder / RECORD).is_file() else None


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _run(command: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None) -> None:
    completed = subprocess.run(
        list(command), cwd=cwd, env=None if env is None else dict(env), capture_output=True, text=True
    )
    if completed.returncode != 0:
        raise BuildError(
            f"`{' '.join(command)}` in {cwd} failed with exit code {completed.returncode}:\n"
            f"{completed.stdout[-4000:]}{completed.stderr[-4000:]}"
        )


def _pip(python: Path, *args: str) -> list[str]:
    """pip (this environment's) acting on the environment of `python`."""
    return [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check", *args]


def _staging(final: Path) -> Path:
    """A fresh sibling of `final` to build in (leftovers of interrupted builds removed: the caller holds the lock)."""
    for stale in final.parent.glob(f".{final.name}.tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    staging = final.parent / f".{final.name}.tmp-{os.getpid()}"
    staging.mkdir(parents=True)
    return staging


def build_environment(root: Path, python: Path) -> Path:
    """The virtual environment the build runs in (PyInstaller and the pinned dependencies), made once."""
    final = root / f"build-env-{environment_digest(python)}"
    if (final / "bin" / "pyinstaller").is_file():
        return final
    staging = _staging(final)
    try:
        _run([str(python), "-m", "venv", "--without-pip", str(staging)], cwd=root)
        pip = _pip(staging / "bin" / "python", "install", "--quiet", "--no-deps", "--no-compile")
        _run([*pip, "--only-binary=:all:", "--requirement", str(REQUIREMENTS)], cwd=root)
        # venv scripts name their interpreter by path: made for the final folder, not the staging one
        for script in (staging / "bin").iterdir():
            if script.is_file() and not script.is_symlink() and script.read_bytes().startswith(b"#!"):
                script.write_text(script.read_text().replace(str(staging), str(final)))
        staging.rename(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


def _copy_sources(target: Path) -> None:
    for relative in source_files(ROOT):
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / relative, target / relative)


def _metadata_dir(site: Path, distribution: str, release: str) -> Path:
    """The `.dist-info` folder of `distribution` under `site` (what importlib.metadata reads)."""
    name = distribution.replace("-", "_")
    found = sorted(site.glob(f"{name}-{release}.dist-info"))
    if len(found) != 1:
        raise BuildError(f"{site} has no single {name}-{release}.dist-info: found {found}")
    return found[0]


def _freeze(env: Path, staging: Path, release: str) -> Path:
    """The provider's wheel installed beside the build, then frozen; the bundle's folder."""
    python = env / "bin" / "python"
    _copy_sources(staging / "src")
    wheels, site = staging / "wheels", staging / "site"
    pip_wheel = _pip(python, "wheel", "--quiet", "--no-deps", "--no-build-isolation")
    _run([*pip_wheel, "--wheel-dir", str(wheels), str(staging / "src")], cwd=staging)
    pip_install = _pip(python, "install", "--quiet", "--no-deps", "--no-index", "--no-compile")
    _run(
        [*pip_install, "--find-links", str(wheels), "--target", str(site), f"{PROJECT}=={release}"],
        cwd=staging,
    )
    # The distribution's METADATA alone is bundled, so importlib.metadata knows the provider's version (RECORD
    # lists the console scripts, whose first line names the build environment).
    metadata = _metadata_dir(site, PROJECT, release)
    name = executable_name(release)
    env_vars = {
        **os.environ,
        "PYTHONHASHSEED": "0",
        "PYINSTALLER_ZLIB_COMPRESSION_LEVEL": "0",
        "PYINSTALLER_CONFIG_DIR": str(staging / "pyinstaller-config"),
    }
    _run(
        [
            str(env / "bin" / "pyinstaller"),
            "--noconfirm",
            "--clean",
            "--log-level=WARN",
            "--onedir",
            "--name",
            name,
            "--paths",
            str(site),
            "--add-data",
            f"{metadata / 'METADATA'}:{metadata.name}",
            "--distpath",
            str(staging / "bundle"),
            "--workpath",
            str(staging / "work"),
            "--specpath",
            str(staging / "spec"),
            str(ENTRY),
        ],
        cwd=staging,
        env=env_vars,
    )
    return staging / "bundle" / name


def _smoke_test(bundle: Path, release: str, scratch: Path) -> None:
    """The executable starts with nothing but itself: no environment, a folder outside the checkout."""
    scratch.mkdir()
    completed = subprocess.run(
        [str(bundle / executable_name(release))],
        cwd=scratch,
        env={"PATH": "/usr/bin:/bin", "HOME": str(scratch)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    if (completed.returncode, completed.stderr) != (1, NOT_A_PLUGIN):
        raise BuildError(
            f"{bundle}: the frozen provider does not start (exit {completed.returncode}):\n{completed.stderr}"
        )
    if any(scratch.iterdir()):
        raise BuildError(
            f"{bundle}: the frozen provider wrote into $HOME at start: {sorted(scratch.iterdir())}"
        )


def _contents(path: Path) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of a file, and of each member when it is a zip archive."""
    data = path.read_bytes()
    yield str(path), data
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                yield f"{path}!{member}", archive.read(member)


def leaked_paths(folder: Path, paths: Iterable[str]) -> list[str]:
    """`file: path` for every file under `folder` (and member of a zip there) that contains one of `paths`."""
    needles = {path: path.encode() for path in paths if path and path != "/"}
    found = []
    for file in sorted(item for item in folder.rglob("*") if item.is_file()):
        for name, data in _contents(file):
            found += [f"{name}: {path}" for path, needle in needles.items() if needle in data]
    return found


def build_machine_paths(*extra: Path) -> list[str]:
    """The paths of this machine a build could leak: the checkout, the caches, the interpreters' prefixes."""
    return sorted({str(ROOT), str(cache_root()), sys.prefix, sys.base_prefix, *(str(path) for path in extra)})


def prune(root: Path, *, keep: int) -> list[Path]:
    """Remove all but the `keep` newest builds under `root` (the caller holds the lock); the removed folders.

    A mirror made from a removed build keeps working: its zips are hard links or copies.
    """
    builds = sorted((path for path in root.glob("*/" + RECORD)), key=lambda path: path.stat().st_mtime)
    removed = [path.parent for path in builds[: max(len(builds) - keep, 0)]]
    for folder in removed:
        shutil.rmtree(folder, ignore_errors=True)
    return removed


def build(*, environ: Mapping[str, str] = os.environ, python: Path = BUILD_PYTHON) -> Path:
    """The folder of this checkout's release files for this machine's platform, built first when missing."""
    done = built(environ=environ)
    if done is not None:
        return done
    release = version()
    final = release_dir(environ=environ)
    with locked(final.parent / ".lock"):
        if (final / RECORD).is_file():
            return final
        started = time.monotonic()
        _log(f"building the provider's executable {release} for {target_platform()} into {final} ...")
        env = build_environment(final.parent, python)
        staging = _staging(final)
        try:
            bundle = _freeze(env, staging, release)
            _smoke_test(bundle, release, staging / "smoke")
            leaks = leaked_paths(bundle, build_machine_paths(staging, env))
            if leaks:
                raise BuildError("the bundle carries paths of the build machine:\n" + "\n".join(leaks[:20]))
            out = staging / "out"
            out.mkdir()
            write_zip(bundle, out / zip_name(release, target_platform()))
            files = write_release(out, release=release)
            record = {
                "version": release,
                "platform": target_platform(),
                "python": _interpreter_version(python),
                "inputs": final.name.rsplit("-", 1)[-1],
                "files": [path.name for path in files],
                "seconds": round(time.monotonic() - started, 1),
            }
            (out / RECORD).write_text(json.dumps(record, indent=2) + "\n")
            out.rename(final)
            prune(final.parent, keep=KEPT_BUILDS)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        _log(f"built in {time.monotonic() - started:.0f} s")
    return final
