"""Components under Pulumi's mock runtime: each test gets a fresh runtime and the monitor that records its
registrations."""

from __future__ import annotations

from collections.abc import Iterator

import pulumi
import pytest

from .mocks import RecordingMonitor


@pytest.fixture
def monitor() -> Iterator[RecordingMonitor]:
    recording = RecordingMonitor()
    pulumi.runtime.set_mocks(recording.mocks, preview=False, monitor=recording)
    yield recording
    pulumi.runtime.settings.reset_options()
