"""The health checker on looptime's fake clock, with a scripted remote."""

from __future__ import annotations

import asyncio

import pytest

from runtime.virtualkubelet.health import Health, HealthChecker, HealthSettings
from runtime.virtualkubelet.remote import RemoteError

pytestmark = pytest.mark.looptime


class FakeRemote:
    """Answers pings as `up` says; counts them; takes `delay` seconds per ping."""

    def __init__(self) -> None:
        self.up = True
        self.pings = 0
        self.delay = 0.0
        self.release = "v1.32.0"

    async def ping(self) -> None:
        self.pings += 1
        await asyncio.sleep(self.delay)
        if not self.up:
            raise RemoteError(
                "the API server of provider milan (https://10.0.0.1:6443) cannot be reached: the connection was refused"
            )

    async def version(self) -> str:
        return self.release


def checker(remote: FakeRemote, changes: list[Health], *, failure_threshold: int = 3) -> HealthChecker:
    settings = HealthSettings(interval=10.0, failure_threshold=failure_threshold, timeout=5.0)
    return HealthChecker(remote, provider="milan", settings=settings, on_change=changes.append)


def status_of(health: HealthChecker) -> str:
    """The Ready status now (a call, so mypy does not carry an earlier assert's narrowing past `check()`)."""
    return health.health.status


async def test_unknown_until_the_first_ping_then_ready_with_the_version() -> None:
    remote, changes = FakeRemote(), list[Health]()
    health = checker(remote, changes)
    assert status_of(health) == "Unknown"
    await health.check()
    assert health.checked.is_set()
    assert status_of(health) == "True"
    assert health.version == "v1.32.0"
    assert [change.status for change in changes] == ["True"]


async def test_not_ready_after_the_threshold_and_ready_again_on_recovery() -> None:
    remote, changes = FakeRemote(), list[Health]()
    health = checker(remote, changes)
    await health.check()
    remote.up = False
    await health.check()
    await health.check()
    assert status_of(health) == "True", "two failures are below the threshold"
    await health.check()
    assert status_of(health) == "False"
    assert health.health.reason == "ProviderUnreachable"
    assert health.health.message == (
        "3 or more consecutive health checks of provider milan failed, the last with: "
        "the API server of provider milan (https://10.0.0.1:6443) cannot be reached: the connection was refused"
    )
    await health.check()
    assert len(changes) == 2, "a failure with the same error changes nothing"
    remote.up, remote.release = True, "v1.33.0"
    await health.check()
    assert status_of(health) == "True"
    assert health.version == "v1.33.0", "the version is asked again on recovery"


async def test_a_success_resets_the_count() -> None:
    remote, changes = FakeRemote(), list[Health]()
    health = checker(remote, changes)
    for up in (False, False, True, False, False):
        remote.up = up
        await health.check()
    assert status_of(health) == "True"


async def test_a_ping_that_hangs_fails_after_the_timeout() -> None:
    remote, changes = FakeRemote(), list[Health]()
    remote.delay = 60.0
    health = checker(remote, changes, failure_threshold=1)
    await health.check()
    assert status_of(health) == "False"
    assert "no answer within 5 s" in health.health.message


async def test_pings_every_interval_and_at_once_when_asked() -> None:
    remote, changes = FakeRemote(), list[Health]()
    health = checker(remote, changes)
    task = asyncio.create_task(health.run())
    await asyncio.sleep(25)
    assert remote.pings == 3  # at 0, 10 and 20 s
    health.check_now()
    await asyncio.sleep(0.1)
    assert remote.pings == 4
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="threshold must be at least 1"):
        HealthSettings(failure_threshold=0).validate()
    with pytest.raises(ValueError, match="interval must be positive"):
        HealthSettings(interval=0).validate()
