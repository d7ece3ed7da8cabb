"""Pin the runtime image's Python dependencies: `python3 tools/images/lock.py` rewrites the lock file.

The image's Python is Debian bookworm's python3 (3.11), so its dependencies are cp311
wheels for glibc (manylinux). This resolves the runtime distribution's dependencies
(packaging/runtime/pyproject.toml) for that interpreter with `pip download`, once per
architecture an image is built for, and writes each wheel's version and the sha256 of
every wheel file it chose to packaging/runtime/requirements.txt. `make image` and the
Dockerfile install exactly those (`pip install --require-hashes --only-binary=:all:`).
Run it to take newer releases; commit the result.

Standard library only (pip is the interpreter's own).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "packaging" / "runtime" / "pyproject.toml"
LOCK = ROOT / "packaging" / "runtime" / "requirements.txt"
#: Debian bookworm's python3
PYTHON_VERSION = "3.11"
#: glibc 2.36 (bookworm) runs every manylinux wheel up to 2.36; the tags wheels are published for
MANYLINUX = ("manylinux_2_36", "manylinux_2_34", "manylinux_2_28", "manylinux_2_17", "manylinux2014")
#: the architectures the image is built for (uname -m), so the lock serves each of them
ARCHITECTURES = ("x86_64", "aarch64")
HEADER = """\
# The runtime image's Python packages: what packaging/runtime's dependencies resolve to for
# Debian bookworm's python3 (cp311, manylinux wheels, x86_64 and aarch64), pinned with the
# hashes of their wheels so the image is reproducible. tools/images (make image) and the
# Dockerfile both install exactly this file:
#   pip install --require-hashes --only-binary=:all: --no-deps -r requirements.txt
# Made by `python3 tools/images/lock.py`; run it again to take newer releases.
"""


def dependencies(pyproject: Path = PYPROJECT) -> list[str]:
    listed = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    return [str(item) for item in listed]


def platform_flags(architecture: str) -> list[str]:
    flags = ["--python-version", PYTHON_VERSION, "--implementation", "cp", "--only-binary=:all:"]
    for abi in ("cp311", "abi3", "none"):
        flags += ["--abi", abi]
    for tag in MANYLINUX:
        flags += ["--platform", f"{tag}_{architecture}"]
    return [*flags, "--platform", "any"]


def wheel_pin(filename: str) -> tuple[str, str]:
    """(normalised project name, version) of a wheel file name."""
    name, version = filename.split("-")[:2]
    return re.sub(r"[-_.]+", "-", name).lower(), version


def render(pins: Mapping[tuple[str, str], Iterable[str]]) -> str:
    lines = [HEADER]
    for (name, version), hashes in sorted(pins.items()):
        ordered = sorted(set(hashes))
        lines.append(
            f"{name}=={version} \\\n" + " \\\n".join(f"    --hash=sha256:{digest}" for digest in ordered)
        )
    return "\n".join(lines) + "\n"


def download(requirements: Sequence[str], architecture: str, folder: Path) -> list[Path]:
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(folder)]
    subprocess.run([*command, *platform_flags(architecture), *requirements], check=True)
    return sorted(folder.glob("*.whl"))


def lock(requirements: Sequence[str]) -> str:
    pins: dict[tuple[str, str], list[str]] = {}
    for architecture in ARCHITECTURES:
        with tempfile.TemporaryDirectory() as folder:
            for wheel in download(requirements, architecture, Path(folder)):
                pins.setdefault(wheel_pin(wheel.name), []).append(
                    hashlib.sha256(wheel.read_bytes()).hexdigest()
                )
    versions: dict[str, set[str]] = {}
    for name, version in pins:
        versions.setdefault(name, set()).add(version)
    split = {name: found for name, found in versions.items() if len(found) > 1}
    if split:
        raise SystemExit(
            f"the architectures resolved to different versions: {split}; pin them in the pyproject"
        )
    return render(pins)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=LOCK)
    args = parser.parse_args(argv)
    args.out.write_text(lock(dependencies()))
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
