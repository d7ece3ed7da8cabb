"""tools/dist.py: how a distribution of the repository is staged (its version, its siblings' pins)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tools import dist

RUNTIME = """\
[project]
name = "liqo-iac-runtime"
dynamic = ["version"]
dependencies = ["aiohttp>=3.9"]

[tool.liqo-iac]
sources = ["runtime"]
"""


def _packaging(tmp_path: Path, **pyprojects: str) -> Path:
    packaging = tmp_path / "packaging"
    for name, text in {"runtime": RUNTIME, **pyprojects}.items():
        (packaging / name).mkdir(parents=True)
        (packaging / name / "pyproject.toml").write_text(text)
    return packaging


def _provider(dependencies: str, *, description: str = "the provider") -> str:
    return (
        f'[project]\nname = "liqo-iac-provider"\ndescription = "{description}"\ndynamic = ["version"]\n'
        f'dependencies = [\n{dependencies}]\n\n[tool.liqo-iac]\nsources = ["provider"]\n'
    )


def test_a_dependency_on_another_distribution_is_pinned_to_the_release(tmp_path: Path) -> None:
    text = _provider('    "Liqo_IAC.runtime",\n    "PyYAML>=6.0",\n')
    packaging = _packaging(tmp_path, provider=text)
    staged = dist.pin_siblings("provider", text, "1.2.3", packaging)
    assert tomllib.loads(staged)["project"]["dependencies"] == ["Liqo_IAC.runtime==1.2.3", "PyYAML>=6.0"]
    assert staged.replace("Liqo_IAC.runtime==1.2.3", "Liqo_IAC.runtime") == text


def test_a_distribution_without_siblings_is_staged_as_written(tmp_path: Path) -> None:
    packaging = _packaging(tmp_path)
    assert dist.pin_siblings("runtime", RUNTIME, "1.2.3", packaging) == RUNTIME


def test_a_sibling_with_a_version_of_its_own_is_refused(tmp_path: Path) -> None:
    text = _provider('    "liqo-iac-runtime>=0.1",\n')
    packaging = _packaging(tmp_path, provider=text)
    with pytest.raises(dist.DistError, match=r"write it bare \('liqo-iac-runtime'\)"):
        dist.pin_siblings("provider", text, "1.2.3", packaging)


def test_a_sibling_named_outside_the_dependencies_as_well_is_refused(tmp_path: Path) -> None:
    text = _provider('    "liqo-iac-runtime",\n', description="liqo-iac-runtime")
    packaging = _packaging(tmp_path, provider=text)
    with pytest.raises(dist.DistError, match="outside the dependencies list"):
        dist.pin_siblings("provider", text, "1.2.3", packaging)


def test_staging_pins_siblings_and_stamps_the_version(tmp_path: Path) -> None:
    packaging = _packaging(tmp_path, provider=_provider('    "liqo-iac-runtime",\n'))
    root = tmp_path / "repo"
    (root / "runtime").mkdir(parents=True)
    (root / "runtime" / "version.py").write_text('VERSION = "4.5.6"\n')
    (root / "provider").mkdir()
    (root / "provider" / "__init__.py").write_text("")
    dist.stage("provider", tmp_path / "staging", root=root, packaging=packaging)
    staged = tomllib.loads((tmp_path / "staging" / "pyproject.toml").read_text())
    assert staged["project"]["dependencies"] == ["liqo-iac-runtime==4.5.6"]
    assert (tmp_path / "staging" / "VERSION").read_text() == "4.5.6\n"
    assert (tmp_path / "staging" / "provider" / "__init__.py").is_file()


def test_an_unknown_distribution_is_named_in_the_error() -> None:
    with pytest.raises(dist.DistError, match="no distribution 'nope'"):
        dist.project("nope")


def test_a_distribution_with_a_version_of_its_own_is_refused(tmp_path: Path) -> None:
    packaging = _packaging(
        tmp_path,
        other='[project]\nname = "other"\nversion = "9.9"\n\n[tool.liqo-iac]\nsources = ["runtime"]\n',
    )
    with pytest.raises(dist.DistError, match=r'dynamic = \["version"\]'):
        dist.stage("other", tmp_path / "staging", packaging=packaging)
