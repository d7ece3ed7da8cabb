"""`python -m runtime gateway`: one peering's gateway, the WireGuard end of its tunnel.

Run by the GatewayServer (provider) or GatewayClient (consumer) controller as a pod in the
peering's tenant namespace; it reads its peering's objects there (by name: the remote
cluster's) and keeps the tunnel as they say (`tunnel.py`). The private key is a file of
its key Secret's volume. On exit the interface goes (with wireguard-go, or removed).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
from collections.abc import Sequence

from runtime.api.crds import CONFIGURATIONS, GATEWAYCLIENTS, GATEWAYSERVERS, NETWORKS, PUBLICKEYS
from runtime.core import Client, KubeconfigError, Manager, Request, ServerSettings, Settings
from runtime.forge import cidrs
from runtime.forge.networking import PROBE_PORT, TUNNEL_ADDRESSES, GatewayMode

from .latency import LatencyProbe
from .tunnel import GatewaySettings, TunnelReconciler
from .wireguard import Device

logger = logging.getLogger(__name__)


def address(text: str) -> ServerSettings:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not host:port")
    return ServerSettings(host=host.strip("[]") or "0.0.0.0", port=int(port))


def pod_cidr(text: str) -> str:
    try:
        return str(cidrs.network(text))
    except cidrs.CidrError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m runtime gateway",
        description="Keep one peering's WireGuard tunnel.",
        allow_abbrev=False,
    )
    parser.add_argument("--mode", choices=("server", "client"), required=True)
    parser.add_argument(
        "--name", required=True, help="the remote cluster's name: the peering's objects are named so"
    )
    parser.add_argument("--remote-cluster-id", required=True)
    parser.add_argument("--interface", required=True, help="the tunnel interface's name (unique on the host)")
    parser.add_argument("--key-file", required=True, help="file with this gateway's WireGuard private key")
    parser.add_argument("--listen-port", type=int, default=51840)
    parser.add_argument(
        "--pod-cidr", type=pod_cidr, required=True, help="this cluster's pod CIDR (the NAT's target)"
    )
    parser.add_argument("--implementation", choices=("auto", "kernel", "wireguard-go"), default="auto")
    parser.add_argument("--namespace", default=os.environ.get("POD_NAMESPACE", ""))
    parser.add_argument("--kubeconfig", help="credentials for the API server (default: in-cluster)")
    parser.add_argument("--health-address", type=address, default=ServerSettings(host="0.0.0.0", port=8087))
    return parser


async def main(argv: Sequence[str]) -> int:
    parser = argument_parser()
    args = parser.parse_args(list(argv))
    if not args.namespace:
        parser.error("--namespace (or POD_NAMESPACE) is required")
    settings = GatewaySettings(
        mode=args.mode,
        name=args.name,
        namespace=args.namespace,
        remote_cluster_id=args.remote_cluster_id,
        key_file=args.key_file,
        listen_port=args.listen_port,
        pod_cidr=args.pod_cidr,
    )
    try:
        client = await (Client.from_kubeconfig(args.kubeconfig) if args.kubeconfig else Client.in_cluster())
    except KubeconfigError as exc:
        logger.error("cannot load credentials for the API server: %s", exc)
        return 1
    device = Device(args.interface, implementation=args.implementation)
    async with client:
        manager = Manager(client, settings=Settings(server=args.health_address))
        named = f"metadata.name={args.name}"
        informers = {
            resource.plural: manager.informer(resource, namespace=args.namespace, field_selector=named)
            for resource in (
                CONFIGURATIONS,
                PUBLICKEYS,
                GATEWAYSERVERS if args.mode == "server" else GATEWAYCLIENTS,
            )
        }
        informers[NETWORKS.plural] = manager.informer(NETWORKS, namespace=args.namespace)
        remote_mode: GatewayMode = "client" if args.mode == "server" else "server"
        probe = LatencyProbe(remote=TUNNEL_ADDRESSES[remote_mode], port=PROBE_PORT)
        reconciler = TunnelReconciler(client, device, settings=settings, informers=informers, probe=probe)
        key = Request(args.namespace, args.name)
        controller = manager.controller("gateway", reconciler, primary=informers["configurations"])
        for informer in informers.values():
            controller.watches(informer, lambda _: [key])
        logger.info(
            "%s/%s: gateway (%s) starting on %s", args.namespace, args.name, args.mode, args.interface
        )
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(probe.run(), name="latency probe")
                group.create_task(manager.run(), name="gateway")
        finally:
            await device.close()
    return 0
