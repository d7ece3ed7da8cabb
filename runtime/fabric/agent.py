"""`python -m runtime fabric`: the fabric agent of one node (a DaemonSet pod on the host network).

It watches every peering's Configuration, the IPAM's Networks and every gateway pod, and keeps
this node's routes to remote pod networks and its masquerade bypass (`routes.py`). The cluster's pod
CIDR comes from the runtime's identity ConfigMap. Everything is read through informers, so
an API server not reachable yet (the agent starts with the node) is waited for, not fatal.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Sequence

from runtime.api import constants as c
from runtime.api.crds import CONFIGURATIONS, NETWORKS
from runtime.api.kinds import CONFIGMAPS, PODS
from runtime.core import Client, KubeconfigError, Manager, Request, Settings

from .gateway import address
from .routes import RoutesReconciler

logger = logging.getLogger(__name__)


def argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m runtime fabric",
        description="Keep this node's routes to remote pod networks.",
        allow_abbrev=False,
    )
    parser.add_argument("--node-name", default=os.environ.get("NODE_NAME", ""))
    parser.add_argument("--namespace", default=os.environ.get("POD_NAMESPACE", c.DEFAULT_NAMESPACE))
    parser.add_argument("--kubeconfig", help="credentials for the API server (default: in-cluster)")
    parser.add_argument("--health-address", type=address, default=address("0.0.0.0:8088"))
    return parser


async def main(argv: Sequence[str]) -> int:
    parser = argument_parser()
    args = parser.parse_args(list(argv))
    if not args.node_name:
        parser.error("--node-name (or NODE_NAME) is required")
    try:
        client = await (Client.from_kubeconfig(args.kubeconfig) if args.kubeconfig else Client.in_cluster())
    except KubeconfigError as exc:
        logger.error("cannot load credentials for the API server: %s", exc)
        return 1
    async with client:
        manager = Manager(client, settings=Settings(server=args.health_address))
        configurations = manager.informer(CONFIGURATIONS)
        networks = manager.informer(NETWORKS)
        gateways = manager.informer(PODS, label_selector=f"{c.LABEL_COMPONENT}=gateway")
        identity = manager.informer(
            CONFIGMAPS,
            namespace=args.namespace,
            field_selector=f"metadata.name={c.CLUSTER_IDENTITY_CONFIGMAP}",
        )
        reconciler = RoutesReconciler(
            node_name=args.node_name,
            identity=identity,
            configurations=configurations,
            gateways=gateways,
            networks=networks,
        )
        key = Request("", args.node_name)
        controller = manager.controller("fabric", reconciler, primary=identity)
        for informer in (configurations, networks, gateways, identity):
            controller.watches(informer, lambda _: [key])
        logger.info("%s: fabric agent starting", args.node_name)
        await manager.run()
    return 0
