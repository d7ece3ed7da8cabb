"""Fixtures every test folder may use, and the `cluster` marker.

`playground`: whole local clusters on demand.

    async def test_something(playground):
        (a, b) = await playground.up("a", "b", nodes=3)
        async with a.client() as api:
            ...

Clusters live in the test's temporary directory and are stopped and removed when the
test ends, passed or failed. With `KUBEBUILDER_ASSETS` set they run the real etcd and
kube-apiserver (and kube-controller-manager / kube-scheduler when present) instead of
the emulator, so the same tests hold the playground to real Kubernetes.

Every test is also held to `tests.readable`: a test whose captured output (log records at
INFO and above, stdout, stderr) or whose Terraform diagnostics show a Python object's
default repr (`object at 0x...`) fails, whatever it asserts. Two kinds of text do not
count. Pytest's own assertion explanations show reprs of what an assertion evaluated: they
are pytest's words, not ours. And asyncio's reports of a leak found by the garbage
collector ("Unclosed client session", "Task was destroyed but it is pending!", "Future
exception was never retrieved", with the objects' reprs) land in whichever test runs when
the collector does, not in the one that leaked: they become a `LeakReportWarning` in the
summary (first line only) instead of failing an unrelated test.

Every test that starts playground clusters is marked `cluster` at collection, so the
real leg of `make test` (`pytest -m cluster` with `KUBEBUILDER_ASSETS`) misses none:
see `tests/clustermarker.py` for how such a test is recognised.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import warnings
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from tf.utils import Diagnostics

from playground.cluster import real_nodes_by_default
from playground.testing import Playground
from tests import nodeimages
from tests.clustermarker import CLUSTER_MARKER, starts_clusters
from tests.readable import forget_pytest_explanations, record_pytest_explanations, unreadable

#: short temp paths when the suite runs on several workers (tests/parallel.py), hangs that fail with their
#: stacks (tests/timeouts.py)
pytest_plugins = ("tests.parallel", "tests.timeouts")

#: diagnostics made since the last report that show an object's repr
_unreadable_diagnostics: list[str] = []
#: asyncio's reports of resources garbage-collected unclosed since the last report (their first lines)
_leak_reports: list[str] = []


#: how asyncio's reports written when the garbage collector finds a leaked resource begin
_GC_REPORTS = (
    "Unclosed ",
    "Task was destroyed but it is pending",
    "Future exception was never retrieved",
    "Task exception was never retrieved",
)


class LeakReportWarning(pytest.PytestWarning):
    """asyncio reported a resource garbage-collected unclosed (a leak somewhere in the suite)."""


class _LeakReports(logging.Filter):
    """Keeps asyncio's "Unclosed ..." reports out of the captured output (see the module docstring)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if not message.startswith(_GC_REPORTS):
            return True
        _leak_reports.append(message.splitlines()[0])
        return False


@pytest.fixture(scope="session")
def node_images(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The images real nodes need for the tests' pods (tests/nodeimages.py), when clusters get real nodes
    (the real leg); none for agent nodes, which run any image name."""
    if not real_nodes_by_default():
        return []
    return nodeimages.build(tmp_path_factory.mktemp("node-images"), "test", "runtime")


@pytest.fixture
async def playground(tmp_path: Path, node_images: list[Path]) -> AsyncIterator[Playground]:
    """A `Playground` in this test's temporary directory; `await playground.up(*names, ...)` starts clusters
    (with `node_images` loaded into real nodes)."""
    async with Playground(tmp_path / "playground", images=node_images) as clusters:
        yield clusters


def _watched(add: Callable[..., Diagnostics]) -> Callable[..., Diagnostics]:
    """`Diagnostics.add_error`/`add_warning`, noting a summary or detail that shows an object's repr."""

    @functools.wraps(add)
    def watched_add(
        self: Diagnostics, summary: str, detail: str | None = None, *args: Any, **kwargs: Any
    ) -> Diagnostics:
        _unreadable_diagnostics.extend(f"diagnostic: {line}" for line in unreadable([summary, detail or ""]))
        return add(self, summary, detail, *args, **kwargs)

    return watched_add


def pytest_configure(config: pytest.Config) -> None:
    Diagnostics.add_error = _watched(Diagnostics.add_error)  # type: ignore[method-assign]
    Diagnostics.add_warning = _watched(Diagnostics.add_warning)  # type: ignore[method-assign]
    logging.getLogger("asyncio").addFilter(_LeakReports())
    record_pytest_explanations()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """Fail a test phase whose captured output or diagnostics show an object's repr."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    found = [
        f"{title}: {line}"
        for title, content in report.sections
        if title.endswith(f" {report.when}")
        for line in unreadable(content.splitlines())
    ]
    found += _unreadable_diagnostics
    _unreadable_diagnostics.clear()
    if report.when == "teardown":
        forget_pytest_explanations()
    for leak in _leak_reports:
        warnings.warn(
            f"{leak} (garbage-collected during this test: leaked by it or an earlier one)",
            LeakReportWarning,
            stacklevel=2,
        )
    _leak_reports.clear()
    if found and not report.failed:
        report.outcome = "failed"
        report.longrepr = (
            "A message a person reads shows a Python object's repr (object at 0x...) instead of words:\n  "
            + "\n  ".join(found)
        )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.Function) and starts_clusters(item):
            item.add_marker(CLUSTER_MARKER)


@pytest.fixture
def pulumi_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A current event loop for Pulumi's runtime, which takes `asyncio.get_event_loop()` (async tests before
    may have left none), closed after the test."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    asyncio.set_event_loop(None)
    loop.close()
