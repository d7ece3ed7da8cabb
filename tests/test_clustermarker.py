"""tests/clustermarker.py finds every test that starts playground clusters, and only those."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from playground.cluster import up
from playground.testing import Playground, aclusters
from tests.clustermarker import function_starts_clusters

PLAYGROUND_CLI = [sys.executable, "-m", "playground"]


def _calls_aclusters() -> Any:
    return aclusters("a")


def _calls_up() -> Any:
    return up([], state_dir=Path("."))


def _nested() -> Any:
    return lambda: [Playground(Path(".")) for _ in range(1)]


class _Harness:
    async def __aenter__(self) -> Any:
        return Playground(Path("."))


def _through_a_helper_class() -> Any:
    return _Harness()


def _runs_the_demo() -> list[str]:
    return [sys.executable, "-m", "playground.demo"]


def run() -> Any:
    """A helper named like `subprocess.run`: only a global load of it counts."""
    return subprocess.run([*PLAYGROUND_CLI, "up", "x"], check=False)


def _runs_the_cli_through_a_helper() -> Any:
    return run()


def _calls_subprocess_run() -> Any:
    return subprocess.run(["true"], check=False)


def _runs_the_control_plane_module() -> list[str]:
    return [sys.executable, "-m", "playground.controlplane"]


def _names_playground_without_running_it() -> Path:
    return Path("playground")


@pytest.mark.parametrize(
    "function",
    [
        _calls_aclusters,
        _calls_up,
        _nested,
        _through_a_helper_class,
        _runs_the_demo,
        _runs_the_cli_through_a_helper,
    ],
)
def test_a_function_that_reaches_an_entry_point_starts_clusters(function: types.FunctionType) -> None:
    assert function_starts_clusters(function)


@pytest.mark.parametrize(
    "function",
    [_calls_subprocess_run, _runs_the_control_plane_module, _names_playground_without_running_it],
)
def test_a_function_that_does_not_is_left_alone(function: types.FunctionType) -> None:
    assert not function_starts_clusters(function)


def test_a_test_that_starts_no_cluster_is_not_marked(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("cluster") is None


async def test_a_test_using_the_playground_fixture_is_marked(
    playground: Playground, request: pytest.FixtureRequest
) -> None:
    assert request.node.get_closest_marker("cluster") is not None
