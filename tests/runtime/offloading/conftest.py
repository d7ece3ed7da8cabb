"""Fixtures of the offloading suite: the test's own clusters with the runtime (webhook included) in-process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.runtime.peering.harness import Clusters


@pytest.fixture
async def clusters(tmp_path: Path) -> AsyncIterator[Clusters]:
    async with Clusters(tmp_path, webhook=True) as running:
        yield running
