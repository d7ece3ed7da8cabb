"""Fixtures of the peering suite: `clusters`, the test's own clusters with the runtime running in-process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from .harness import Clusters


@pytest.fixture
async def clusters(tmp_path: Path) -> AsyncIterator[Clusters]:
    async with Clusters(tmp_path) as running:
        yield running
