"""What the builds of test dependencies from Go modules share (tools/realk8s, tools/opentofu): their errors,
the Go environment they build in, running a step, and the command line that prints the built folder.

Standard library only: the build scripts run before any virtual environment exists.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path


class BuildError(Exception):
    """The build cannot go on; the message says why and what to do."""


class GoMissingError(BuildError):
    """There is no Go toolchain to build with."""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def go_environment(environ: Mapping[str, str]) -> dict[str, str]:
    env = dict(environ)
    env["CGO_ENABLED"] = "0"
    # go.sum is committed: a build never changes it, and a missing sum is an error, not a lookup
    env["GOFLAGS"] = f"{env.get('GOFLAGS', '')} -mod=readonly".strip()
    return env


def run(command: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> str:
    completed = subprocess.run(list(command), cwd=cwd, env=dict(env), stdout=subprocess.PIPE, text=True)
    if completed.returncode != 0:
        raise BuildError(f"`{' '.join(command)}` in {cwd} failed with exit code {completed.returncode}")
    return completed.stdout


def main(
    argv: Sequence[str] | None,
    *,
    description: str,
    cache: str,
    build: Callable[[Path, Mapping[str, str]], Path],
    cache_root: Callable[[Mapping[str, str]], Path],
    built_what: str,
    skipped: str,
) -> int:
    """`build.py [--cache-dir DIR] [--skip-without-go]`: print the folder `build` fills (or finds complete).

    Without Go, `--skip-without-go` prints `skipped: <why>` on stderr and nothing on stdout, and succeeds.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--cache-dir", type=Path, help=f"where versioned folders go (default {cache})")
    parser.add_argument(
        "--skip-without-go",
        action="store_true",
        help=f"when {built_what} must be built and there is no Go, say so on one line and succeed with no output",
    )
    args = parser.parse_args(argv)
    try:
        print(build(args.cache_dir or cache_root(os.environ), os.environ))
    except GoMissingError as exc:
        if args.skip_without_go:
            log(f"{skipped}: {exc}")
            return 0
        log(f"error: {exc}")
        return 1
    except BuildError as exc:
        log(f"error: {exc}")
        return 1
    return 0
