"""Build the OpenTofu CLI the OpenTofu end-to-end test runs (`make opentofu`).

    python3 tools/opentofu/build.py [--cache-dir DIR] [--skip-without-go]

Builds `tofu` from the Go module pinned next to this script (`go.mod`: the module
`github.com/opentofu/opentofu` at its release tag, with the replace directive of
OpenTofu's own go.mod, which applies only in a main module) into
`<cache>/opentofu/<version>/tofu` and prints that folder on stdout. The cache is
`$XDG_CACHE_HOME/liqo-iac` (default `~/.cache/liqo-iac`), beside the real control plane;
nothing there is ever committed.

As tools/realk8s/build.py does for Kubernetes: a folder that holds the pinned version is
used as it is; a build goes into a temporary folder beside it and is renamed into place
once the binary is built and reports its version, so an interrupted build never leaves a
folder that looks complete; builds of the same version wait for each other (a lock file).

The binary is built as OpenTofu's release builds it (`.goreleaser.yaml`: `CGO_ENABLED=0`,
`-mod=readonly`, `-trimpath`, `-s -w`, and `version.dev=no`, so it reports `OpenTofu
v1.10.10` rather than a `-dev` build).

Standard library only: it runs before any virtual environment exists.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODULE = "github.com/opentofu/opentofu"
PACKAGE = f"{MODULE}/cmd/tofu"
BINARY = "tofu"
MANIFEST = "versions.json"
#: what OpenTofu's release build sets (`.goreleaser.yaml`): a release, not a `-dev` build
LDFLAGS = ("-s", "-w", f"-X {MODULE}/version.dev=no")


class BuildError(Exception):
    """The build cannot go on; the message says why and what to do."""


class GoMissingError(BuildError):
    """There is no Go toolchain to build with."""


def pinned_version(go_mod: Path = HERE / "go.mod") -> str:
    """The version `go_mod` requires OpenTofu at (a `require` line or a line of a `require` block)."""
    pattern = re.compile(rf"^\s*(?:require\s+)?{re.escape(MODULE)}\s+(v\S+)\s*(?://.*)?$")
    for line in go_mod.read_text().splitlines():
        match = pattern.match(line)
        if match:
            return match.group(1)
    raise BuildError(f"{go_mod} does not require {MODULE}")


def cache_root(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "liqo-iac" / "opentofu"


def is_complete(folder: Path, version: str) -> bool:
    """Whether `folder` holds `tofu`, built from `version`."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (FileNotFoundError, ValueError):
        return False
    return manifest.get("opentofu") == version and os.access(folder / BINARY, os.X_OK)


def built(environ: Mapping[str, str] = os.environ) -> Path | None:
    """The folder of the pinned `tofu` when it is built, else None (nothing is built here)."""
    folder = cache_root(environ) / pinned_version()
    return folder if is_complete(folder, pinned_version()) else None


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _go_environment(environ: Mapping[str, str]) -> dict[str, str]:
    env = dict(environ)
    env["CGO_ENABLED"] = "0"
    # go.sum is committed: a build never changes it, and a missing sum is an error, not a lookup
    env["GOFLAGS"] = f"{env.get('GOFLAGS', '')} -mod=readonly".strip()
    return env


def _run(command: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> str:
    completed = subprocess.run(list(command), cwd=cwd, env=dict(env), stdout=subprocess.PIPE, text=True)
    if completed.returncode != 0:
        raise BuildError(f"`{' '.join(command)}` in {cwd} failed with exit code {completed.returncode}")
    return completed.stdout


def check_version(binary: Path, version: str) -> None:
    """The binary reports the version it was built from (a wrong ldflag fails here, not in a test)."""
    wanted = f"OpenTofu {version}"
    # tofu reads a CLI configuration at start: an empty one, so the machine's does not matter here
    env = {"PATH": "/usr/bin:/bin", "HOME": str(binary.parent), "TF_CLI_CONFIG_FILE": os.devnull}
    reported = subprocess.run(
        [str(binary), "version"], capture_output=True, text=True, check=False, env=env
    ).stdout
    if wanted not in reported.splitlines():
        raise BuildError(f"{binary} version says {reported.strip()!r}, not {wanted!r}")


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path`, waiting for another build that holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _log(f"another build of the same version holds {path}: waiting for it")
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def build(root: Path, environ: Mapping[str, str]) -> Path:
    """The folder of the pinned `tofu` under `root`, built first when it is missing or stale."""
    version = pinned_version()
    target = root / version
    if is_complete(target, version):
        return target
    if shutil.which("go") is None:
        raise GoMissingError(
            "no `go` on PATH: OpenTofu is built from its Go module (install Go 1.24 or later)"
        )
    with locked(root / f".{target.name}.lock"):
        if is_complete(target, version):
            return target
        # Holding the lock, any temporary folder of this version is what an interrupted build left.
        for stale in root.glob(f".{target.name}.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        staging = root / f".{target.name}.tmp-{os.getpid()}"
        staging.mkdir(parents=True)
        try:
            env = _go_environment(environ)
            started = time.monotonic()
            _log(f"building OpenTofu {version} into {target} (a few minutes the first time) ...")
            _run(
                [
                    "go",
                    "build",
                    "-trimpath",
                    f"-ldflags={' '.join(LDFLAGS)}",
                    "-o",
                    str(staging / BINARY),
                    PACKAGE,
                ],
                cwd=HERE,
                env=env,
            )
            check_version(staging / BINARY, version)
            go_version = _run(["go", "env", "GOVERSION"], cwd=HERE, env=env).strip()
            record = {"opentofu": version, "go": go_version, "seconds": round(time.monotonic() - started)}
            (staging / MANIFEST).write_text(json.dumps(record, indent=2) + "\n")
            if target.exists():
                retired = root / f".{target.name}.tmp-retired-{os.getpid()}"
                target.rename(retired)
                shutil.rmtree(retired, ignore_errors=True)
            staging.rename(target)
            _log(f"built in {time.monotonic() - started:.0f} s")
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cache-dir", type=Path, help="where versioned folders go (default ~/.cache/liqo-iac/opentofu)"
    )
    parser.add_argument(
        "--skip-without-go",
        action="store_true",
        help="when tofu must be built and there is no Go, say so on one line and succeed with no output",
    )
    args = parser.parse_args(argv)
    try:
        print(build(args.cache_dir or cache_root(os.environ), os.environ))
    except GoMissingError as exc:
        if args.skip_without_go:
            _log(f"OpenTofu not built: {exc}")
            return 0
        _log(f"error: {exc}")
        return 1
    except BuildError as exc:
        _log(f"error: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
