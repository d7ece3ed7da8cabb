"""Components under Pulumi's mock runtime: each test gets a fresh runtime, on an event loop of its own, and
the monitor that records its registrations."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import pulumi
import pytest
from pulumi.runtime.stack import wait_for_rpcs

from .mocks import RecordingMonitor


@pytest.fixture
def monitor(pulumi_loop: asyncio.AbstractEventLoop) -> Iterator[RecordingMonitor]:
    recording = RecordingMonitor()
    pulumi.runtime.set_mocks(recording.mocks, preview=False, monitor=recording)
    yield recording
    # what a test that failed at construction left in flight (the stack's registration) ends here
    with contextlib.suppress(Exception):
        pulumi_loop.run_until_complete(wait_for_rpcs())
    pulumi.runtime.settings.reset_options()
