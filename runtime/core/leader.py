"""Leader election through a `coordination.k8s.io/v1` Lease, with client-go's rules.

A candidate takes the Lease when nobody holds it, or when its record has not changed
for `leaseDurationSeconds` as measured by the candidate's own clock since it last saw
the record change (never by comparing timestamps written by another machine, so clock
skew does not matter). The leader renews every `retry_period`; if it has not renewed
within `renew_deadline` of sending its last successful renewal, or sees another holder,
it has lost. A standby saw that renewal no earlier than it was sent, and waits
`lease_duration` from then: the leader is told it lost `lease_duration - renew_deadline`
before anyone can take over (`LeaderElectionSettings` refuses timings without that
margin), and the manager stops its work at once. Every write is a replace with
the Lease's resourceVersion, so two candidates cannot both win. Releasing clears the
holder, so a standby takes over at its next try instead of after the lease duration.

Timestamps in the Lease are wall-clock; all waiting is on the event loop's clock.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import math
import socket
import uuid
from datetime import UTC, datetime

from runtime.api.objects import JSON, nested

from .client import Client, Resource
from .errors import AlreadyExistsError, APIError, ConflictError, NotFoundError
from .settings import LeaderElectionSettings

logger = logging.getLogger(__name__)

LEASES = Resource("coordination.k8s.io", "v1", "leases", namespaced=True, kind="Lease")
#: how often a release is tried again when the Lease changed since it was last seen
RELEASE_ATTEMPTS = 3


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, client: Client, *, settings: LeaderElectionSettings) -> None:
        self._client = client
        self._settings = settings
        self.identity = settings.identity or default_identity()
        self.is_leader = False
        #: the Lease as last read or written (its resourceVersion makes the next write conditional)
        self._lease: JSON | None = None
        #: the spec last seen, and when (loop time) it was first seen like that
        self._observed_spec: JSON | None = None
        self._observed_at = 0.0
        #: set when the last attempt found the Lease validly held by someone else
        self._held_elsewhere = False
        #: when (loop time) the last successful write of the Lease was sent
        self._renewed_at = 0.0

    @property
    def _ref(self) -> str:
        return f"{self._settings.lease_namespace}/{self._settings.lease_name}"

    async def acquire(self) -> None:
        """Return once this candidate holds the Lease, trying every `retry_period`."""
        while True:
            if await self._try_acquire_or_renew():
                break
            await asyncio.sleep(self._settings.retry_period)
        logger.info("%s: %s is the leader", self._ref, self.identity)

    async def hold(self) -> None:
        """Renew the Lease until leadership is lost, then return (`is_leader` is False by then).

        Lost means another holder, or no renewal within `renew_deadline` of the last one sent.
        """
        settings = self._settings
        renewed = True
        while renewed:
            await asyncio.sleep(settings.retry_period)
            try:
                async with asyncio.timeout_at(self._renewed_at + settings.renew_deadline):
                    renewed = await self._renew()
            except TimeoutError:
                renewed = False
        self.is_leader = False
        logger.warning("%s: %s lost the leadership", self._ref, self.identity)

    async def _renew(self) -> bool:
        """Try every `retry_period` until renewed (True) or someone else holds the Lease (False)."""
        while not await self._try_acquire_or_renew():
            if self._held_elsewhere:
                return False
            await asyncio.sleep(self._settings.retry_period)
        return True

    async def release(self) -> None:
        """Give the Lease up if held, so another candidate can take it at once; errors are logged.

        The Lease as last seen may be out of date: a renewal cancelled in flight (the leader
        shutting down) can have been written without its answer arriving. On a conflict the
        Lease is read again and cleared only while it still names this candidate.
        """
        if not self.is_leader or self._lease is None:
            return
        self.is_leader = False
        lease: JSON | None = self._lease
        try:
            for _ in range(RELEASE_ATTEMPTS):
                assert lease is not None
                if nested(lease, "spec", "holderIdentity") != self.identity:
                    return
                try:
                    self._lease = await self._client.replace(LEASES, self._released(lease))
                except ConflictError:
                    lease = await self._client.get(
                        LEASES, self._settings.lease_name, namespace=self._settings.lease_namespace
                    )
                    continue
                logger.info("%s: %s released the leadership", self._ref, self.identity)
                return
            logger.warning(
                "%s: %s could not release the Lease: it changed under every one of %d attempts; "
                "a standby takes it over after leaseDurationSeconds",
                self._ref,
                self.identity,
                RELEASE_ATTEMPTS,
            )
        except APIError as exc:
            logger.warning("%s: %s could not release the Lease: %s", self._ref, self.identity, exc)

    @staticmethod
    def _released(lease: JSON) -> JSON:
        released = copy.deepcopy(lease)
        now = _micro_time()
        spec = released.setdefault("spec", {})
        spec.update({"holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": now, "renewTime": now})
        return released

    async def _try_acquire_or_renew(self) -> bool:
        try:
            acquired = await self._attempt()
        except APIError as exc:
            logger.warning("%s: %s could not acquire or renew: %s", self._ref, self.identity, exc)
            acquired = False
        if not acquired and self._held_elsewhere:
            self.is_leader = False
        return acquired

    async def _attempt(self) -> bool:
        settings = self._settings
        loop = asyncio.get_running_loop()
        sent = loop.time()
        now = _micro_time()
        self._held_elsewhere = False
        try:
            lease = await self._client.get(LEASES, settings.lease_name, namespace=settings.lease_namespace)
        except NotFoundError:
            body: JSON = {
                "apiVersion": LEASES.api_version,
                "kind": LEASES.kind,
                "metadata": {"name": settings.lease_name, "namespace": settings.lease_namespace},
                "spec": self._spec(acquire_time=now, renew_time=now, transitions=0),
            }
            try:
                created = await self._client.create(LEASES, body)
            except AlreadyExistsError:
                return False
            return self._won(created, loop.time(), sent=sent)
        spec: JSON = lease.get("spec") or {}
        if spec != self._observed_spec:
            self._observed_spec = spec
            self._observed_at = loop.time()
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or settings.lease_duration)
        if holder and holder != self.identity and loop.time() < self._observed_at + duration:
            self._held_elsewhere = True
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        updated = copy.deepcopy(lease)
        if holder == self.identity:
            updated["spec"] = self._spec(
                acquire_time=str(spec.get("acquireTime") or now), renew_time=now, transitions=transitions
            )
        else:
            updated["spec"] = self._spec(acquire_time=now, renew_time=now, transitions=transitions + 1)
        try:
            written = await self._client.replace(LEASES, updated)
        except ConflictError:
            return False
        return self._won(written, loop.time(), sent=sent)

    def _spec(self, *, acquire_time: str, renew_time: str, transitions: int) -> JSON:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, math.ceil(self._settings.lease_duration)),
            "acquireTime": acquire_time,
            "renewTime": renew_time,
            "leaseTransitions": transitions,
        }

    def _won(self, lease: JSON, at: float, *, sent: float) -> bool:
        self._lease = lease
        self._renewed_at = sent
        self._observed_spec = lease.get("spec") or {}
        self._observed_at = at
        self.is_leader = True
        return True
