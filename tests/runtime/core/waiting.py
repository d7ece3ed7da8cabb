"""Waiting for conditions in real time, for tests against the emulator subprocess."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def until(condition: Callable[[], bool], *, within: float = 10) -> None:
    """Poll `condition` every 10 ms; TimeoutError if it is not true `within` seconds."""
    async with asyncio.timeout(within):
        while True:
            if condition():
                return
            await asyncio.sleep(0.01)
