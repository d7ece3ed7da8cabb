"""A node's heartbeat: the Lease `kube-node-lease/<node>`, renewed every `renew_interval` seconds.

This is the kubelet's node lease controller (pkg/kubelet/nodelease; virtual-kubelet's
`node/lease_controller_v1.go`), generic over any node: holderIdentity is the node
name, leaseDurationSeconds the configured duration, renewTime moves on every renewal,
and the Lease is owned by its Node (so it goes with a deleted Node). The node
lifecycle controller reads it for liveness, so a node's status is written far less
often than the Lease.

`node_lease()` builds the object (pure); `LeaseHeartbeat` keeps it renewed. Renewals
are replaces carrying the Lease's resourceVersion; after a conflict, or when the Lease
vanished, the next try reads (or creates) it again. Failures are retried after
`retry_delay`, doubling up to the renew interval, as the kubelet does.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from runtime.api.kinds import LEASES, NODES
from runtime.api.objects import JSON
from runtime.core import AlreadyExistsError, APIError, Client, ConflictError, NotFoundError

logger = logging.getLogger(__name__)

NODE_LEASE_NAMESPACE = "kube-node-lease"


@dataclass(frozen=True)
class LeaseSettings:
    #: the Lease's leaseDurationSeconds: the node counts as gone this long after the last renewal
    duration: int = 40
    #: seconds between renewals (the kubelet's default: a quarter of the duration)
    renew_interval: float = 10.0
    #: first delay after a failed renewal; it doubles up to `renew_interval`
    retry_delay: float = 0.2

    def validate(self) -> None:
        if self.duration < 1:
            raise ValueError(f"the lease duration must be at least 1 second, not {self.duration}")
        if not 0 < self.renew_interval < self.duration:
            raise ValueError(
                f"the lease renew interval ({self.renew_interval} s) must be positive and shorter than its "
                f"duration ({self.duration} s), or the Lease expires between renewals"
            )


def lease_time(at: datetime) -> str:
    """A Lease's MicroTime: RFC 3339 in UTC with microseconds."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def node_lease(
    node_name: str, *, duration: int, renew_time: str, node_uid: str | None, current: JSON | None = None
) -> JSON:
    """The Lease of `node_name` renewed at `renew_time`; built on `current` (its resourceVersion) when given."""
    body = copy.deepcopy(current) if current is not None else {}
    metadata: JSON = body.setdefault("metadata", {})
    metadata.update({"name": node_name, "namespace": NODE_LEASE_NAMESPACE})
    if node_uid:
        metadata["ownerReferences"] = [
            {"apiVersion": NODES.api_version, "kind": NODES.kind, "name": node_name, "uid": node_uid}
        ]
    spec: JSON = body.setdefault("spec", {})
    spec.update({"holderIdentity": node_name, "leaseDurationSeconds": duration, "renewTime": renew_time})
    body["apiVersion"] = LEASES.api_version
    body["kind"] = LEASES.kind
    return body


class LeaseHeartbeat:
    """Renews a node's Lease until cancelled; `node_uid()` gives the Node's uid for the owner reference."""

    def __init__(
        self, client: Client, *, node_name: str, settings: LeaseSettings, node_uid: Callable[[], str | None]
    ) -> None:
        settings.validate()
        self._client = client
        self._node_name = node_name
        self._settings = settings
        self._node_uid = node_uid
        #: the Lease as last written (its resourceVersion makes the next renewal conditional)
        self._lease: JSON | None = None

    async def run(self) -> None:
        delay = self._settings.retry_delay
        while True:
            try:
                await self.renew()
            except APIError as exc:
                self._lease = None
                logger.warning(
                    "%s/%s: could not renew the node Lease (%s); retrying in %.3g s",
                    NODE_LEASE_NAMESPACE,
                    self._node_name,
                    exc,
                    delay,
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._settings.renew_interval)
                continue
            delay = self._settings.retry_delay
            await asyncio.sleep(self._settings.renew_interval)

    async def renew(self) -> None:
        """One renewal (creating the Lease if it is missing)."""
        name = self._node_name
        lease = self._lease
        if lease is None:
            try:
                lease = await self._client.get(LEASES, name, namespace=NODE_LEASE_NAMESPACE)
            except NotFoundError:
                try:
                    self._lease = await self._client.create(LEASES, self._desired(None))
                except AlreadyExistsError:
                    return  # created by somebody else a moment ago: renewed next time
                logger.info("%s/%s: created the node Lease", NODE_LEASE_NAMESPACE, name)
                return
        try:
            self._lease = await self._client.replace(LEASES, self._desired(lease))
        except (ConflictError, NotFoundError):
            self._lease = None
            raise

    def _desired(self, current: JSON | None) -> JSON:
        return node_lease(
            self._node_name,
            duration=self._settings.duration,
            renew_time=lease_time(datetime.now(UTC)),
            node_uid=self._node_uid(),
            current=current,
        )
