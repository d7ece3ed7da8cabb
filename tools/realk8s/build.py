"""Build the real control plane the playground's real-binary mode runs (`make real-k8s`).

    python3 tools/realk8s/build.py [--cache-dir DIR] [--skip-without-go]

Builds etcd and kube-apiserver, kube-controller-manager and kube-scheduler from the Go
modules pinned next to this script (`kubernetes/go.mod`, `etcd/go.mod`; two modules so
that each binary is built with exactly the dependencies its release pins) into
`<cache>/kubernetes/<kubernetes version>/`, the envtest layout `KUBEBUILDER_ASSETS` names,
and prints that folder on stdout. The cache is `$XDG_CACHE_HOME/liqo-iac` (default
`~/.cache/liqo-iac`); nothing there is ever committed.

A folder that holds the pinned versions is used as it is (the build runs once per
version). A build goes into a temporary folder beside it and is renamed into place when
every binary is built and reports its version, so an interrupted build never leaves a
folder that looks complete; builds of the same version wait for each other (a lock file).

The binaries are built as Kubernetes' release builds them (`CGO_ENABLED=0`, `-trimpath`,
stripped), with the version fields `hack/lib/version.sh` sets: `gitVersion` (so the API
server's `/version` and `--version` say v1.36.3), `gitMajor`, `gitMinor`, `buildDate` (the
module's release time, so builds are reproducible) and `gitTreeState` `archive`, kube's
word for a source without its git history (a module zip from the proxy). `gitCommit`
keeps its placeholder: the module proxy does not record the tag's commit.

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
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
KUBERNETES_MODULE = "k8s.io/kubernetes"
ETCD_MODULE = "go.etcd.io/etcd/server/v3"
#: the packages `hack/lib/version.sh` sets the version of, and the fields it sets
VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
MANIFEST = "versions.json"


class BuildError(Exception):
    """The build cannot go on; the message says why and what to do."""


class GoMissingError(BuildError):
    """There is no Go toolchain to build with."""


@dataclass(frozen=True)
class Binary:
    name: str
    #: the Go package of its command
    package: str


@dataclass(frozen=True)
class GoModule:
    """One module of ours under tools/realk8s and the commands it builds."""

    directory: Path
    #: the module whose version the binaries carry
    pinned: str
    binaries: tuple[Binary, ...]

    def version(self) -> str:
        return pinned_version(self.directory / "go.mod", self.pinned)


KUBERNETES = GoModule(
    HERE / "kubernetes",
    KUBERNETES_MODULE,
    tuple(
        Binary(name, f"{KUBERNETES_MODULE}/cmd/{name}")
        for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
    ),
)
ETCD = GoModule(HERE / "etcd", ETCD_MODULE, (Binary("etcd", ETCD_MODULE),))
BINARIES = tuple(binary.name for module in (ETCD, KUBERNETES) for binary in module.binaries)


def pinned_version(go_mod: Path, module: str) -> str:
    """The version `go_mod` requires `module` at (a `require` line or a line of a `require` block)."""
    pattern = re.compile(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)\s*(?://.*)?$")
    for line in go_mod.read_text().splitlines():
        match = pattern.match(line)
        if match:
            return match.group(1)
    raise BuildError(f"{go_mod} does not require {module}")


def kubernetes_ldflags(version: str, build_date: str) -> list[str]:
    """The `-X` flags `hack/lib/version.sh` gives a release build of `version`."""
    major, minor = version.removeprefix("v").split(".")[:2]
    fields = {
        "gitVersion": version,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "archive",
        "buildDate": build_date,
    }
    return [f"-X {package}.{key}={value}" for package in VERSION_PACKAGES for key, value in fields.items()]


def cache_root(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "liqo-iac" / "kubernetes"


def expected_manifest() -> dict[str, str]:
    return {"kubernetes": KUBERNETES.version(), "etcd": ETCD.version()}


def is_complete(folder: Path, expected: Mapping[str, str]) -> bool:
    """Whether `folder` holds every binary, built from the versions `expected` pins."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (FileNotFoundError, ValueError):
        return False
    if any(manifest.get(key) != value for key, value in expected.items()):
        return False
    return all(os.access(folder / name, os.X_OK) for name in BINARIES)


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


def module_time(module: GoModule, env: Mapping[str, str]) -> str:
    """When the pinned module was released (the proxy's time of its version), as `buildDate` wants it."""
    info = json.loads(_run(["go", "list", "-m", "-json", module.pinned], cwd=module.directory, env=env))
    released = time.strptime(info["Time"], "%Y-%m-%dT%H:%M:%SZ")
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", released)


def build_module(module: GoModule, output: Path, *, ldflags: Sequence[str], env: Mapping[str, str]) -> None:
    flags = " ".join(["-s", "-w", *ldflags])
    for binary in module.binaries:
        started = time.monotonic()
        _run(
            [
                "go",
                "build",
                "-trimpath",
                f"-ldflags={flags}",
                "-o",
                str(output / binary.name),
                binary.package,
            ],
            cwd=module.directory,
            env=env,
        )
        _log(f"  {binary.name}: built in {time.monotonic() - started:.0f} s")


def check_versions(folder: Path, expected: Mapping[str, str]) -> None:
    """Every binary reports the version it was built from (a wrong ldflag fails here, not in a test)."""
    wanted = {
        "kube-apiserver": f"Kubernetes {expected['kubernetes']}",
        "kube-controller-manager": f"Kubernetes {expected['kubernetes']}",
        "kube-scheduler": f"Kubernetes {expected['kubernetes']}",
        "etcd": f"etcd Version: {expected['etcd'].removeprefix('v')}",
    }
    for name, text in wanted.items():
        reported = subprocess.run(
            [str(folder / name), "--version"], capture_output=True, text=True, check=False
        ).stdout
        if text not in reported.splitlines():
            raise BuildError(f"{folder / name} --version says {reported.strip()!r}, not {text!r}")


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
    """The folder of the pinned binaries under `root`, built first when it is missing or stale."""
    expected = expected_manifest()
    target = root / expected["kubernetes"]
    if is_complete(target, expected):
        return target
    if shutil.which("go") is None:
        raise GoMissingError(
            "no `go` on PATH: the real Kubernetes binaries are built from Go modules (install Go 1.26 or later)"
        )
    with locked(root / f".{target.name}.lock"):
        if is_complete(target, expected):
            return target
        # Holding the lock, any temporary folder of this version is what an interrupted build left.
        for stale in root.glob(f".{target.name}.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        staging = root / f".{target.name}.tmp-{os.getpid()}"
        staging.mkdir(parents=True)
        try:
            env = _go_environment(environ)
            started = time.monotonic()
            _log(
                f"building etcd {expected['etcd']} and Kubernetes {expected['kubernetes']} into {target} "
                "(a few minutes the first time) ..."
            )
            build_module(ETCD, staging, ldflags=[], env=env)
            build_module(
                KUBERNETES,
                staging,
                ldflags=kubernetes_ldflags(expected["kubernetes"], module_time(KUBERNETES, env)),
                env=env,
            )
            check_versions(staging, expected)
            (staging / MANIFEST).write_text(json.dumps(expected, indent=2) + "\n")
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
        "--cache-dir", type=Path, help="where versioned folders go (default ~/.cache/liqo-iac/kubernetes)"
    )
    parser.add_argument(
        "--skip-without-go",
        action="store_true",
        help="when the binaries must be built and there is no Go, say so on one line and succeed with no output",
    )
    args = parser.parse_args(argv)
    try:
        print(build(args.cache_dir or cache_root(os.environ), os.environ))
    except GoMissingError as exc:
        if args.skip_without_go:
            _log(f"real-binary test leg skipped: {exc}")
            return 0
        _log(f"error: {exc}")
        return 1
    except BuildError as exc:
        _log(f"error: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
