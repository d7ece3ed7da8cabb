"""bench/offloading.py around its clusters: whatever fails, both are brought down."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from bench import offloading
from bench.harness import Run
from playground.cluster import ClusterError


async def test_clusters_that_fail_to_come_up_are_brought_down(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    downed: list[list[str]] = []

    async def failing_up(specs: Any, *, state_dir: Path) -> Any:
        raise ClusterError("cluster milan: the node/milan-worker process exited")

    async def down(names: list[str], *, state_dir: Path) -> list[str]:
        downed.append(list(names))
        return []

    monkeypatch.setattr(offloading, "resolve", lambda names, **_: list(names))
    monkeypatch.setattr(offloading, "up", failing_up)
    monkeypatch.setattr(offloading, "down", down)
    args = argparse.Namespace(sizes="1", nodes=1, real=False, hold=0)
    with pytest.raises(ClusterError):
        await offloading.measure(tmp_path, args, Run(), print)
    assert downed == [[offloading.CONSUMER, offloading.PROVIDER]]
