"""The provider's health as the virtual node shows it: periodic pings, a failure threshold, recovery.

One failed ping is no outage (a dropped connection, a slow answer), so the node turns
NotReady only after `failure_threshold` consecutive failures, and Ready again on the
first success, as kubelet's node status does for its own checks. Until the first ping
the health is Unknown. Every change of the health (its status, or the error while
failing) is handed to `on_change`, which the node controller turns into a reconcile;
the provider's version is asked whenever the provider becomes healthy, so a provider
upgraded while unreachable shows its new version on recovery.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from .remote import Remote, RemoteError

logger = logging.getLogger(__name__)

ConditionStatus = Literal["True", "False", "Unknown"]

REASON_READY = "ProviderReady"
REASON_UNREACHABLE = "ProviderUnreachable"
REASON_PENDING = "ProviderPending"


@dataclass(frozen=True)
class HealthSettings:
    #: seconds between pings of the provider's API server
    interval: float = 10.0
    #: consecutive failed pings that turn the node NotReady
    failure_threshold: int = 3
    #: seconds a ping may take before it counts as failed
    timeout: float = 10.0

    def validate(self) -> None:
        if self.interval <= 0:
            raise ValueError(f"the ping interval must be positive, not {self.interval}")
        if self.failure_threshold < 1:
            raise ValueError(f"the ping failure threshold must be at least 1, not {self.failure_threshold}")
        if self.timeout <= 0:
            raise ValueError(f"the ping timeout must be positive, not {self.timeout}")


@dataclass(frozen=True)
class Health:
    """The provider's health as the node's Ready condition says it."""

    status: ConditionStatus
    reason: str
    message: str


class HealthChecker:
    def __init__(
        self,
        remote: Remote,
        *,
        provider: str,
        settings: HealthSettings,
        on_change: Callable[[Health], None] = lambda health: None,
    ) -> None:
        settings.validate()
        self._remote = remote
        self._provider = provider
        self._settings = settings
        self._on_change = on_change
        self._failures = 0
        self._wake = asyncio.Event()
        self.health = Health(
            "Unknown", REASON_PENDING, f"the health of provider {provider} has not been checked yet"
        )
        #: the provider's Kubernetes version, once a ping succeeded ("" until then)
        self.version = ""
        #: set once the first ping is done, whatever its outcome
        self.checked = asyncio.Event()

    def check_now(self) -> None:
        """Ping at once instead of waiting out the interval (a new credential, say)."""
        self._wake.set()

    async def run(self) -> None:
        """Ping every `interval` until cancelled."""
        while True:
            self._wake.clear()
            await self.check()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._settings.interval)

    async def check(self) -> None:
        """One ping; updates `health` (and `version`) and reports a change."""
        try:
            async with asyncio.timeout(self._settings.timeout):
                await self._remote.ping()
                if self.health.status != "True" or not self.version:
                    self.version = await self._remote.version()
        except (RemoteError, TimeoutError) as exc:
            error = str(exc) or f"no answer within {self._settings.timeout:g} s"
            self._failed(error)
        else:
            self._failures = 0
            self._set(
                Health(
                    "True", REASON_READY, f"the API server of provider {self._provider} answers health checks"
                )
            )
        self.checked.set()

    def _failed(self, error: str) -> None:
        self._failures += 1
        threshold = self._settings.failure_threshold
        logger.info("%s: health check %d/%d failed: %s", self._provider, self._failures, threshold, error)
        if self._failures < threshold:
            return
        self._set(
            Health(
                "False",
                REASON_UNREACHABLE,
                f"{threshold} or more consecutive health checks of provider {self._provider} failed, the last "
                f"with: {error}",
            )
        )

    def _set(self, health: Health) -> None:
        if health == self.health:
            return
        if health.status != self.health.status:
            log = logger.warning if health.status == "False" else logger.info
            log("%s: provider health %s: %s", self._provider, health.status, health.message)
        self.health = health
        self._on_change(health)
