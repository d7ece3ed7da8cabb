"""Build the Pulumi engine our end-to-end tests run, from Go modules at pinned versions (`make pulumi-engine`).

Our machines reach the Go module proxy but no download site, so the Pulumi CLI and
pulumi-kubernetes' provider plugin are compiled from two small modules of ours,
`tools/pulumi-engine/cli` and `tools/pulumi-engine/kubernetes` (their go.mod/go.sum pin
every dependency, with the `replace` directives the upstream go.mod files need; two,
because the provider needs the pulumi/pkg release its own go.mod names, v3.215.0, and
does not compile against the CLI's). The result goes to a versioned cache,
`~/.cache/liqo-iac/pulumi/<version>/` (beside the real Kubernetes binaries), never into
the repository:

    bin/pulumi                          the CLI (engine, file backend, passphrase secrets)
    bin/pulumi-resource-kubernetes      pulumi-kubernetes' provider plugin
    bin/pulumi-resource-pulumi-python   the dynamic provider's launcher (a script of the Python SDK's tree)
    bin/pulumi-language-python-exec     the Python program runner (same)
    BUILD.json                          what was built, from which versions, in how long

`<version>` is the CLI's version and a digest of the modules' files and this script, so
any change builds a new folder. The build happens in a sibling folder renamed into place
at the end (an atomic rename): an interrupted build never looks complete, and its
leftovers are removed by the next build.

Not built: Pulumi's Python language host (`pulumi-language-python`), whose Go module
(`github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3`) the proxy refuses
(403, "This module version is not available"). See docs/pulumi/engine.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

MODULE: Final = Path(__file__).resolve().parent / "pulumi-engine"
PULUMI_VERSION: Final = "v3.274.1"
PULUMI_PKG: Final = "github.com/pulumi/pulumi/pkg/v3"
PULUMI_SDK: Final = "github.com/pulumi/pulumi/sdk/v3"
KUBERNETES_PROVIDER: Final = "github.com/pulumi/pulumi-kubernetes/provider/v4"
#: the version the plugin reports: its module's pseudo-version (the proxy serves no tagged provider/v4)
KUBERNETES_VERSION: Final = "4.0.0-20260115033456-f47bc2d6f199"
LANGUAGE_HOST_MODULE: Final = "github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3"
#: the modules, and the files of each that decide what is built
MODULES: Final = ("cli", "kubernetes")
_INPUTS: Final = ("go.mod", "go.sum", "tools.go")


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "liqo-iac" / "pulumi"


def version() -> str:
    """The cache folder's name: the CLI's version and a digest of what decides the build."""
    digest = hashlib.sha256()
    for module in MODULES:
        for name in _INPUTS:
            digest.update((MODULE / module / name).read_bytes())
    digest.update(Path(__file__).read_bytes())
    return f"{PULUMI_VERSION}-{digest.hexdigest()[:12]}"


def engine_dir() -> Path:
    """Where the engine of this checkout is (complete only once `BUILD.json` is there)."""
    return cache_root() / version()


def built() -> Path | None:
    """The engine's folder when it is built, else None."""
    folder = engine_dir()
    return folder if (folder / "BUILD.json").is_file() else None


def build(*, verbose: bool = False) -> Path:
    """Build the engine unless it is built; its folder."""
    done = built()
    if done is not None:
        return done
    final = engine_dir()
    final.parent.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(final)
    staging = final.parent / f".{final.name}.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    started = time.monotonic()
    timings: dict[str, float] = {}
    try:
        sources = {module: staging / "src" / module for module in MODULES}
        for module, src in sources.items():
            src.mkdir(parents=True)
            for name in _INPUTS:
                shutil.copy2(MODULE / module / name, src / name)
        cli = _Go(sources["cli"], verbose=verbose)
        kubernetes = _Go(sources["kubernetes"], verbose=verbose)
        step = time.monotonic()
        cli.run("mod", "download")
        kubernetes.run("mod", "download")
        timings["download"] = time.monotonic() - step

        step = time.monotonic()
        bin_dir = staging / "bin"
        bin_dir.mkdir()
        cli.run(
            "build",
            "-trimpath",
            "-ldflags",
            f"-s -w -X {PULUMI_SDK}/go/common/version.Version={PULUMI_VERSION}",
            "-o",
            str(bin_dir / "pulumi"),
            f"{PULUMI_PKG}/cmd/pulumi",
        )
        timings["pulumi"] = time.monotonic() - step

        step = time.monotonic()
        _kubernetes_main(kubernetes, sources["kubernetes"])
        kubernetes.run(
            "build",
            "-trimpath",
            "-ldflags",
            f"-s -w -X {KUBERNETES_PROVIDER}/pkg/version.Version={KUBERNETES_VERSION}",
            "-o",
            str(bin_dir / "pulumi-resource-kubernetes"),
            "./cmd/pulumi-resource-kubernetes",
        )
        timings["pulumi-resource-kubernetes"] = time.monotonic() - step

        sdk = Path(cli.output("list", "-m", "-f", "{{.Dir}}", PULUMI_SDK))
        for script in (
            sdk / "python" / "dist" / "pulumi-resource-pulumi-python",
            sdk / "python" / "cmd" / "pulumi-language-python-exec",
        ):
            target = bin_dir / script.name
            shutil.copyfile(script, target)
            target.chmod(0o755)
        go_version = cli.output("env", "GOVERSION")
        shutil.rmtree(staging / "src")
        record = {
            "pulumi": PULUMI_VERSION,
            "pulumi-kubernetes": KUBERNETES_VERSION,
            "go": go_version,
            "seconds": {name: round(value, 1) for name, value in timings.items()},
            "total_seconds": round(time.monotonic() - started, 1),
            "not_built": {
                "pulumi-language-python": (
                    f"{LANGUAGE_HOST_MODULE}@{PULUMI_VERSION}: the Go module proxy answers 403 "
                    "(This module version is not available)"
                )
            },
        }
        (staging / "BUILD.json").write_text(json.dumps(record, indent=2) + "\n")
        staging.rename(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


def _kubernetes_main(go: _Go, src: Path) -> None:
    """The provider plugin's main package, in our module: its files plus the schema its `go generate` embeds.

    The module ships `main.go` with `//go:embed schema-embed.json`, a file `go generate`
    makes (upstream's `generate.go`: the schema with its version set) and that is not in
    the module; so the package is copied next to our go.mod and generated there.
    """
    upstream = Path(go.output("list", "-m", "-f", "{{.Dir}}", KUBERNETES_PROVIDER)) / "cmd"
    package = src / "cmd" / "pulumi-resource-kubernetes"
    package.mkdir(parents=True)
    for path in (upstream / "pulumi-resource-kubernetes").iterdir():
        if path.is_file():
            shutil.copyfile(path, package / path.name)
    _Go(package, verbose=go.verbose).run("run", "generate.go", env={"VERSION": KUBERNETES_VERSION})


class _Go:
    def __init__(self, cwd: Path, *, verbose: bool) -> None:
        self.cwd = cwd
        self.verbose = verbose

    def run(self, *args: str, env: dict[str, str] | None = None) -> None:
        command = ["go", *args]
        if self.verbose:
            print("+", " ".join(command), file=sys.stderr, flush=True)
        subprocess.run(command, cwd=self.cwd, env={**os.environ, **(env or {})}, check=True)

    def output(self, *args: str) -> str:
        return subprocess.run(
            ["go", *args], cwd=self.cwd, check=True, capture_output=True, text=True
        ).stdout.strip()


def _remove_leftovers(final: Path) -> None:
    """Remove the staging folders of interrupted builds whose process is gone."""
    for stale in final.parent.glob(f".{final.name}.partial-*"):
        pid = stale.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(stale, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--print-dir", action="store_true", help="print the engine's folder and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="show each go command")
    args = parser.parse_args(argv)
    if args.print_dir:
        print(engine_dir())
        return 0
    folder = build(verbose=args.verbose)
    print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
