"""The node's heartbeat: the Lease `kube-node-lease/<node>`, renewed every `heartbeat` seconds.

This is the kubelet's node lease controller (pkg/kubelet/nodelease, client-go's
component-helpers/apimachinery/lease): holderIdentity is the node name,
leaseDurationSeconds the configured duration, renewTime moves on every renewal, and
the Lease is owned by the Node (so it goes with a deleted Node, and comes back with a
re-registered one, pointing at the new Node's uid). The node lifecycle controller
reads it for liveness; the Node's own status is written far less often.

Renewals are replaces with the Lease's resourceVersion; on a conflict, or when the
Lease vanished, the next try reads (or creates) it again. Failures are retried after
200 ms, doubling up to the heartbeat interval, as the kubelet does.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from datetime import UTC, datetime
from typing import Any

from runtime.api.kinds import LEASES, NODES
from runtime.core import AlreadyExistsError, APIError, Client, ConflictError, NotFoundError, Store

from .options import NodeAgentOptions

logger = logging.getLogger(__name__)

JSON = dict[str, Any]
NODE_LEASE_NAMESPACE = "kube-node-lease"
#: the first retry delay after a failed renewal; it doubles up to the heartbeat interval
RETRY_DELAY = 0.2


class LeaseHeartbeat:
    def __init__(self, client: Client, options: NodeAgentOptions, *, nodes: Store) -> None:
        self._client = client
        self._options = options
        self._nodes = nodes
        #: the Lease as last written (its resourceVersion makes the next renewal conditional)
        self._lease: JSON | None = None

    async def run(self) -> None:
        """Renew until cancelled."""
        delay = RETRY_DELAY
        while True:
            try:
                await self.renew()
            except APIError as exc:
                self._lease = None
                logger.warning(
                    "%s/%s: could not renew the node Lease (%s); retrying in %.3g s",
                    NODE_LEASE_NAMESPACE,
                    self._options.node_name,
                    exc,
                    delay,
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._options.heartbeat)
                continue
            delay = RETRY_DELAY
            await asyncio.sleep(self._options.heartbeat)

    async def renew(self) -> None:
        name = self._options.node_name
        lease = self._lease
        if lease is None:
            try:
                lease = await self._client.get(LEASES, name, namespace=NODE_LEASE_NAMESPACE)
            except NotFoundError:
                try:
                    self._lease = await self._client.create(LEASES, self._desired({}))
                except AlreadyExistsError:
                    return  # somebody else made it a moment ago: renew it next time
                logger.info("%s/%s: created the node Lease", NODE_LEASE_NAMESPACE, name)
                return
        try:
            self._lease = await self._client.replace(LEASES, self._desired(lease))
        except (ConflictError, NotFoundError):
            self._lease = None
            raise

    def _desired(self, lease: JSON) -> JSON:
        name = self._options.node_name
        body = copy.deepcopy(lease)
        metadata: JSON = body.setdefault("metadata", {})
        metadata.update({"name": name, "namespace": NODE_LEASE_NAMESPACE})
        node = self._nodes.get(name)
        if node is not None:
            metadata["ownerReferences"] = [
                {
                    "apiVersion": NODES.api_version,
                    "kind": NODES.kind,
                    "name": name,
                    "uid": node["metadata"]["uid"],
                }
            ]
        spec: JSON = body.setdefault("spec", {})
        spec.update(
            {
                "holderIdentity": name,
                "leaseDurationSeconds": self._options.lease_duration,
                "renewTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            }
        )
        body["apiVersion"] = LEASES.api_version
        body["kind"] = LEASES.kind
        return body
