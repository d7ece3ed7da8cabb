"""A node's routes to remote pod networks and its masquerade bypass, from the peerings' Configurations.

For each Configuration whose remote pod network is mapped (`status.remote`), traffic to it
goes to its peering's gateway pod: straight to the pod's address when the gateway runs on
this node, else to the node it runs on (whose own route then takes it to the pod). The
routes carry their own protocol number (`proto 147`), so the agent finds and removes the
ones no Configuration wants any more (unpeer) without touching anyone else's. The
masquerade bypass (`runtime.forge.fabricrules.node_rules`) is rewritten in one `nft -f`.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Final

from runtime.api import constants as c
from runtime.core import Informer, Request, Result, TemporaryError
from runtime.forge import fabricrules
from runtime.forge.networking import Cidrs

from .commands import CommandError, run

logger = logging.getLogger(__name__)

JSON = dict[str, Any]

ROUTE_PROTOCOL: Final = "147"
RESYNC = 30.0


def desired_routes(configurations: list[JSON], gateways: list[JSON], *, node_name: str) -> dict[str, str]:
    """Remote pod network -> next hop (pure)."""
    by_peer: dict[tuple[str, str], JSON] = {}
    for pod in gateways:
        meta = pod["metadata"]
        peer = (meta.get("labels") or {}).get(c.LABEL_REMOTE_CLUSTER_ID, "")
        status = pod.get("status") or {}
        if status.get("phase") == "Running" and status.get("podIP") and not meta.get("deletionTimestamp"):
            by_peer[(meta.get("namespace", ""), peer)] = pod
    routes: dict[str, str] = {}
    for configuration in configurations:
        namespace = configuration["metadata"].get("namespace", "")
        mapped = Cidrs.of((configuration.get("status") or {}).get("remote"))
        gateway = by_peer.get((namespace, (configuration.get("spec") or {}).get("remoteClusterID", "")))
        if gateway is None or not mapped.pod:
            continue
        here = (gateway.get("spec") or {}).get("nodeName") == node_name
        hop = gateway["status"]["podIP"] if here else (gateway["status"].get("hostIP") or "")
        if hop:
            for cidr in mapped.pod:
                routes[cidr] = hop
    return routes


class RoutesReconciler:
    def __init__(
        self, *, node_name: str, identity: Informer, configurations: Informer, gateways: Informer
    ) -> None:
        self._node = node_name
        self._identity = identity
        self._configurations = configurations
        self._gateways = gateways

    async def reconcile(self, request: Request) -> Result | None:
        data = (next(iter(self._identity.store), None) or {}).get("data") or {}
        pod_cidr = str(data.get(c.IDENTITY_POD_CIDR) or "")
        if not pod_cidr:
            raise TemporaryError(f"{self._node}: the cluster identity records no pod CIDR yet", delay=5.0)
        wanted = desired_routes(
            list(self._configurations.store.items()), list(self._gateways.store.items()), node_name=self._node
        )
        try:
            present = {
                str(route["dst"]): str(route.get("gateway", ""))
                for route in json.loads(
                    await run("ip", "-j", "route", "show", "proto", ROUTE_PROTOCOL) or "[]"
                )
            }
            for cidr, hop in wanted.items():
                if present.get(cidr) != hop:
                    await run("ip", "route", "replace", cidr, "via", hop, "proto", ROUTE_PROTOCOL)
                    logger.info("%s: %s via %s", self._node, cidr, hop)
            for cidr in set(present) - set(wanted):
                await run("ip", "route", "del", cidr, "proto", ROUTE_PROTOCOL)
                logger.info("%s: route to %s removed", self._node, cidr)
            await run(
                "nft",
                "-f",
                "-",
                stdin=fabricrules.node_rules(pod_cidr=pod_cidr, remote_cidrs=list(wanted)),
            )
        except CommandError as exc:
            raise TemporaryError(f"{self._node}: {exc}", delay=2.0) from None
        return Result(requeue_after=RESYNC)
