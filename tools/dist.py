"""Build the repository's distributions as wheels (`make dist`).

    python3 tools/dist.py [DISTRIBUTION ...] --out DIR

One repository, several installable parts: each distribution is a folder
`packaging/<distribution>/` holding its `pyproject.toml` (name, dependencies, entry
points, which packages it includes) and whatever else its build reads (its README).
The repository's root pyproject.toml is the development environment (`make venv`:
everything, editable, with the dev tools) and is never built into a wheel.

A distribution is built in a staging folder: its pyproject.toml and readme, the
repository paths its `[tool.liqo-iac] sources` lists (packages, without bytecode), and a
`VERSION` file holding runtime/version.py's `VERSION` (one version for every part of a
release), which its pyproject reads (`dynamic = ["version"]`, setuptools'
`version = { file = "VERSION" }`). A dependency on another distribution of the
repository is written bare (`"liqo-iac-runtime"`) and staged pinned to that same
version (`"liqo-iac-runtime==0.1.0"`): the parts of a release install together.
`pip wheel --no-deps` builds the wheel there
with `SOURCE_DATE_EPOCH` set, so the same sources give the same wheel. With no
DISTRIBUTION, every folder under packaging/ with a pyproject.toml is built. The wheels'
paths are printed on stdout, one per line.

Standard library only: it runs before any virtual environment exists (pip fetches the
build backend, setuptools, from the package index).
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGING = ROOT / "packaging"
VERSION_FILE = ROOT / "runtime" / "version.py"
#: the file a staged distribution's pyproject reads its version from
STAGED_VERSION = "VERSION"
#: 1980-01-01, the earliest time a zip file (a wheel) can record
SOURCE_DATE_EPOCH = "315532800"
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")


class DistError(Exception):
    """A distribution cannot be built; the message says why."""


def version(path: Path = VERSION_FILE) -> str:
    """`VERSION` of runtime/version.py, read without importing the runtime."""
    for node in ast.parse(path.read_text()).body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(target, "id", None) for target in node.targets] == ["VERSION"]
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    raise DistError(f"{path} has no VERSION = '<version>' assignment")


def distributions(packaging: Path = PACKAGING) -> list[str]:
    return sorted(path.parent.name for path in packaging.glob("*/pyproject.toml"))


def project(name: str, packaging: Path = PACKAGING) -> dict[str, object]:
    """The distribution's pyproject.toml, parsed."""
    path = packaging / name / "pyproject.toml"
    if not path.is_file():
        raise DistError(
            f"no distribution {name!r}: {path} does not exist (known: {', '.join(distributions(packaging))})"
        )
    return tomllib.loads(path.read_text())


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _project_table(document: dict[str, object]) -> dict[str, object]:
    table = document.get("project")
    return table if isinstance(table, dict) else {}


def pin_siblings(name: str, text: str, release: str, packaging: Path = PACKAGING) -> str:
    """The text of `name`'s pyproject.toml with each dependency on another distribution of the repository
    (written bare) pinned to `release`; everything else as it was."""
    document = tomllib.loads(text)
    ours = {
        _normalised(str(_project_table(project(other, packaging)).get("name", "")))
        for other in distributions(packaging)
        if other != name
    }
    listed = _project_table(document).get("dependencies", [])
    requirements = [str(item) for item in listed] if isinstance(listed, list) else []
    pinned = []
    for requirement in requirements:
        match = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(.*)", requirement)
        if match is None or _normalised(match.group(1)) not in ours:
            pinned.append(requirement)
            continue
        if match.group(2).strip():
            raise DistError(
                f"packaging/{name}/pyproject.toml: {requirement!r} is a distribution of this repository, "
                f"released with it: write it bare ({match.group(1)!r}), tools/dist.py pins it to the release"
            )
        pinned.append(f"{match.group(1)}=={release}")
        text = re.sub(rf"([\"']){re.escape(requirement)}\1", f'"{pinned[-1]}"', text)
    expected = {**document, "project": {**_project_table(document), "dependencies": pinned}}
    if pinned != requirements and tomllib.loads(text) != expected:
        raise DistError(
            f"packaging/{name}/pyproject.toml: a dependency on {', '.join(sorted(ours))} is also written "
            "outside the dependencies list, so it cannot be pinned there alone"
        )
    return text


def sources(name: str, packaging: Path = PACKAGING) -> list[str]:
    table = project(name, packaging).get("tool", {})
    listed = table.get("liqo-iac", {}).get("sources") if isinstance(table, dict) else None
    if not isinstance(listed, list) or not all(isinstance(item, str) for item in listed) or not listed:
        raise DistError(
            f"packaging/{name}/pyproject.toml: [tool.liqo-iac] sources must list the paths to copy in"
        )
    return listed


def stage(name: str, staging: Path, *, root: Path = ROOT, packaging: Path = PACKAGING) -> None:
    """Fill `staging` with what the distribution's build reads: its pyproject.toml and readme, and the
    repository paths it lists (other files of its packaging folder, such as the image's lists, stay out)."""
    staging.mkdir(parents=True, exist_ok=True)
    table = project(name, packaging).get("project", {})
    release = version(root / "runtime" / "version.py")
    (staging / "pyproject.toml").write_text(
        pin_siblings(name, (packaging / name / "pyproject.toml").read_text(), release, packaging)
    )
    if isinstance(table, dict) and isinstance(table.get("readme"), str):
        shutil.copyfile(packaging / name / table["readme"], staging / table["readme"])
    for source in sources(name, packaging):
        origin = root / source
        if origin.is_dir():
            shutil.copytree(origin, staging / source, ignore=_IGNORED)
        elif origin.is_file():
            (staging / source).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(origin, staging / source)
        else:
            raise DistError(
                f"packaging/{name}/pyproject.toml lists {source!r}, which is not in the repository"
            )
    dynamic = table.get("dynamic", []) if isinstance(table, dict) else []
    if "version" not in dynamic:
        raise DistError(
            f'packaging/{name}/pyproject.toml: its version must be dynamic = ["version"], read from '
            f"{STAGED_VERSION} (one version for every distribution)"
        )
    (staging / STAGED_VERSION).write_text(release + "\n")


def build(
    name: str, out: Path, *, python: str = sys.executable, environ: Mapping[str, str] = os.environ
) -> Path:
    """Build the distribution's wheel into `out`; its path."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"dist-{name}-") as folder:
        staging = Path(folder) / "src"
        stage(name, staging)
        wheels = Path(folder) / "wheels"
        env = {**environ, "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        completed = subprocess.run(
            [python, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheels), str(staging)],
            env=env,
            stdout=sys.stderr,
            check=False,
        )
        if completed.returncode != 0:
            raise DistError(
                f"pip wheel of packaging/{name} failed (exit {completed.returncode}; its output is above)"
            )
        (wheel,) = wheels.glob("*.whl")
        target = out / wheel.name
        shutil.copyfile(wheel, target)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "distributions", nargs="*", metavar="DISTRIBUTION", help="folders of packaging/ (default: all)"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="where the wheels go (default dist/)")
    args = parser.parse_args(argv)
    try:
        for name in args.distributions or distributions():
            print(build(name, args.out), flush=True)
    except DistError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
