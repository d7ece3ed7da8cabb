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

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

# the repository root, so that the shared build helpers import as `tools.*` from a plain `python3`
if str(Path(__file__).resolve().parents[2]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.buildlock import locked
from tools.gobuild import BuildError, GoMissingError, go_environment, log, run
from tools.gobuild import main as build_main

HERE = Path(__file__).resolve().parent
MODULE = "github.com/opentofu/opentofu"
PACKAGE = f"{MODULE}/cmd/tofu"
BINARY = "tofu"
MANIFEST = "versions.json"
#: what OpenTofu's release build sets (`.goreleaser.yaml`): a release, not a `-dev` build
LDFLAGS = ("-s", "-w", f"-X {MODULE}/version.dev=no")


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
            env = go_environment(environ)
            started = time.monotonic()
            log(f"building OpenTofu {version} into {target} (a few minutes the first time) ...")
            run(
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
            go_version = run(["go", "env", "GOVERSION"], cwd=HERE, env=env).strip()
            record = {"opentofu": version, "go": go_version, "seconds": round(time.monotonic() - started)}
            (staging / MANIFEST).write_text(json.dumps(record, indent=2) + "\n")
            if target.exists():
                retired = root / f".{target.name}.tmp-retired-{os.getpid()}"
                target.rename(retired)
                shutil.rmtree(retired, ignore_errors=True)
            staging.rename(target)
            log(f"built in {time.monotonic() - started:.0f} s")
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    return build_main(
        argv,
        description=__doc__.split("\n\n")[0],
        cache="~/.cache/liqo-iac/opentofu",
        build=build,
        cache_root=cache_root,
        built_what="tofu",
        skipped="OpenTofu not built",
    )


if __name__ == "__main__":
    sys.exit(main())
