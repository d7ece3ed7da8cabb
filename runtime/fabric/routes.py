"""A node's routes to remote pod networks and its masquerade bypass, from the peerings' Configurations.

For each Configuration whose remote pod network is mapped (`status.remote`), traffic to it
goes to its peering's gateway pod: straight to the pod's address when the gateway runs on
this node, else to the node it runs on (whose own route then takes it to the pod). The
routes carry their own protocol number (`proto 147`), so the agent finds and removes the
ones no Configuration wants any more (unpeer) without touching anyone else's. The
masquerade bypass (`runtime.forge.fabricrules.node_rules`) is rewritten in one `nft -f`.

A Configuration's status can be patched by its peer, so the agent checks again before it
touches the host (the IPAM checked first): a network is routed only when it is one the IPAM
gave that Configuration (a `Network` it owns says so, and the peer cannot write Networks),
lies in the IPAM's pool, and overlaps neither this cluster's pod CIDR nor a route the host
already has (its own networks, the default route aside). Anything else is logged, never routed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from runtime.api import constants as c
from runtime.api.objects import JSON, nested
from runtime.core import Informer, Request, Result, TemporaryError
from runtime.forge import cidrs, fabricrules, ipam
from runtime.forge.networking import Cidrs

from .commands import CommandError, run

logger = logging.getLogger(__name__)


ROUTE_PROTOCOL: Final = "147"
RESYNC = 30.0


@dataclass(frozen=True)
class Routes:
    """Remote pod network -> next hop, and why each network a Configuration names is not routed."""

    hops: dict[str, str] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)


def host_reservations(listed: Sequence[JSON]) -> list[cidrs.Reservation]:
    """The host's own routes (`ip -j -4 route show`), but the default route and the agent's own, as reservations."""
    found = []
    for route in listed:
        dst, device = str(route.get("dst") or ""), route.get("dev") or "?"
        if dst == "default" or str(route.get("protocol") or "") == ROUTE_PROTOCOL:
            continue
        try:
            network = cidrs.Network(dst, strict=False)
        except ValueError:
            continue
        found.append(cidrs.Reservation(network, f"a route of this node (dev {device})"))
    return found


def given_networks(networks: list[JSON]) -> dict[str, set[str]]:
    """Configuration uid -> the networks the IPAM gave it (its Networks' status: the peer cannot write those)."""
    given: dict[str, set[str]] = {}
    for network in networks:
        cidr = str(nested(network, "status", "cidr") or "")
        for owner in network["metadata"].get("ownerReferences") or []:
            if cidr and owner.get("kind") == "Configuration" and owner.get("uid"):
                given.setdefault(str(owner["uid"]), set()).add(cidr)
    return given


def desired_routes(
    configurations: list[JSON],
    gateways: list[JSON],
    *,
    node_name: str,
    networks: list[JSON],
    reservations: Sequence[cidrs.Reservation] = (),
) -> Routes:
    """The routes this node wants (pure): each mapped remote network the checks let through, to its gateway."""
    by_peer: dict[tuple[str, str], JSON] = {}
    for pod in gateways:
        meta = pod["metadata"]
        peer = nested(meta, "labels", c.LABEL_REMOTE_CLUSTER_ID, default="")
        status = pod.get("status") or {}
        if status.get("phase") == "Running" and status.get("podIP") and not meta.get("deletionTimestamp"):
            by_peer[(meta.get("namespace", ""), peer)] = pod
    given = given_networks(networks)
    pool = ipam.pool_networks()
    routes = Routes()
    for configuration in configurations:
        meta = configuration["metadata"]
        where = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        remote = nested(configuration, "status", "remote")
        routes.refused.extend(f"{where}: {reason}" for reason in Cidrs.refused(remote))
        mapped = []
        for cidr in Cidrs.of(remote).pod:
            try:
                cidrs.peer_network(cidr, reservations=reservations, within=pool)
            except cidrs.CidrError as exc:
                routes.refused.append(f"{where}: {exc}")
                continue
            if cidr not in given.get(str(meta.get("uid") or ""), set()):
                routes.refused.append(f"{where}: {cidr} is not a network the IPAM gave this Configuration")
                continue
            mapped.append(cidr)
        gateway = by_peer.get(
            (meta.get("namespace", ""), nested(configuration, "spec", "remoteClusterID", default=""))
        )
        if gateway is None or not mapped:
            continue
        here = nested(gateway, "spec", "nodeName") == node_name
        hop = gateway["status"]["podIP"] if here else (gateway["status"].get("hostIP") or "")
        if hop:
            for cidr in mapped:
                routes.hops[cidr] = hop
    return routes


class RoutesReconciler:
    def __init__(
        self,
        *,
        node_name: str,
        identity: Informer,
        configurations: Informer,
        gateways: Informer,
        networks: Informer,
    ) -> None:
        self._node = node_name
        self._identity = identity
        self._configurations = configurations
        self._gateways = gateways
        self._networks = networks
        #: what was last refused (logged when it changes, not every resync)
        self._refused: list[str] = []

    async def reconcile(self, request: Request) -> Result | None:
        data = (next(iter(self._identity.store), None) or {}).get("data") or {}
        pod_cidr = str(data.get(c.IDENTITY_POD_CIDR) or "")
        if not pod_cidr:
            raise TemporaryError(f"{self._node}: the cluster identity records no pod CIDR yet", delay=5.0)
        try:
            reservations = [
                cidrs.Reservation(cidrs.network(pod_cidr), "this cluster's pod CIDR"),
                *host_reservations(json.loads(await run("ip", "-j", "-4", "route", "show") or "[]")),
            ]
        except (CommandError, cidrs.CidrError) as exc:
            raise TemporaryError(f"{self._node}: {exc}", delay=2.0) from None
        routes = desired_routes(
            list(self._configurations.store.items()),
            list(self._gateways.store.items()),
            node_name=self._node,
            networks=list(self._networks.store.items()),
            reservations=reservations,
        )
        if routes.refused != self._refused:
            for reason in routes.refused:
                logger.warning("%s: not routed: %s", self._node, reason)
            self._refused = routes.refused
        wanted = routes.hops
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
