"""`python -m runtime virtual-kubelet --virtual-node <ns>/<name>`: the node standing for one provider.

The controller manager runs one per VirtualNode (`runtime.forge.virtualnode.deployment`);
the pod's IP (`POD_IP`, from the downward API) becomes the Node's InternalIP, where the
kubelet API (`--kubelet-address`) serves `kubectl logs` of offloaded pods.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
from collections.abc import Sequence

from runtime.core import Client, KubeconfigError, Request, ServerSettings
from runtime.forge import reflection

from .health import HealthSettings
from .kubelet import VirtualKubelet, VirtualKubeletError, VirtualKubeletSettings
from .lease import LeaseSettings

logger = logging.getLogger(__name__)


def address(text: str) -> tuple[str, int]:
    """`host:port`, `[v6]:port` or `:port` (every interface) as (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not host:port")
    return host.strip("[]"), int(port)


def reference(text: str) -> Request:
    namespace, sep, name = text.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise argparse.ArgumentTypeError(f"{text!r} is not <namespace>/<name>")
    return Request(namespace, name)


def parser() -> argparse.ArgumentParser:
    defaults = VirtualKubeletSettings()
    parser = argparse.ArgumentParser(
        prog="python -m runtime virtual-kubelet",
        description="Register and keep the virtual node standing for one provider cluster.",
        allow_abbrev=False,
    )
    parser.add_argument(
        "--virtual-node",
        type=reference,
        required=True,
        help="the VirtualNode to stand for: <namespace>/<name>",
    )
    parser.add_argument(
        "--health-address",
        type=address,
        default=("0.0.0.0", 8080),
        help="host:port of /healthz, /readyz and /metrics (default 0.0.0.0:8080)",
    )
    parser.add_argument("--kubeconfig", help="kubeconfig of this cluster (default: the pod's ServiceAccount)")
    parser.add_argument(
        "--home-cluster-id",
        required=True,
        help="this cluster's id: what marks the objects it reflects to the provider",
    )
    parser.add_argument(
        "--home-api-server-url",
        default="",
        help="this cluster's API server as other clusters reach it: offloaded pods talk to it (default: leave "
        "their KUBERNETES_SERVICE_* environment alone)",
    )
    parser.add_argument(
        "--kubelet-address",
        type=address,
        default=(defaults.kubelet_host, defaults.kubelet_port),
        help=f"host:port of the kubelet API (kubectl logs) (default {defaults.kubelet_host}:{defaults.kubelet_port})",
    )
    reflection.add_arguments(parser)
    parser.add_argument(
        "--ping-interval",
        type=float,
        default=defaults.health.interval,
        help=f"seconds between health checks of the provider's API server (default {defaults.health.interval:g})",
    )
    parser.add_argument(
        "--ping-failures",
        type=int,
        default=defaults.health.failure_threshold,
        help="consecutive failed health checks that turn the node NotReady "
        f"(default {defaults.health.failure_threshold})",
    )
    parser.add_argument(
        "--lease-duration",
        type=int,
        default=defaults.lease.duration,
        help=f"seconds the node Lease holds (default {defaults.lease.duration})",
    )
    parser.add_argument(
        "--heartbeat",
        type=float,
        default=defaults.lease.renew_interval,
        help=f"seconds between renewals of the node Lease (default {defaults.lease.renew_interval:g})",
    )
    parser.add_argument(
        "--node-status-report-period",
        type=float,
        default=defaults.status_report_period,
        help="seconds between node status writes when nothing changed "
        f"(default {defaults.status_report_period:g})",
    )
    return parser


async def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    defaults = VirtualKubeletSettings()
    health_host, health_port = args.health_address
    kubelet_host, kubelet_port = args.kubelet_address
    settings = VirtualKubeletSettings(
        health=HealthSettings(
            interval=args.ping_interval,
            failure_threshold=args.ping_failures,
            timeout=max(1.0, min(args.ping_interval, defaults.health.timeout)),
        ),
        lease=LeaseSettings(duration=args.lease_duration, renew_interval=args.heartbeat),
        status_report_period=args.node_status_report_period,
        server=ServerSettings(host=health_host or "0.0.0.0", port=health_port),
        kubelet_host=kubelet_host or "0.0.0.0",
        kubelet_port=kubelet_port,
    )
    ref: Request = args.virtual_node
    try:
        settings.health.validate()
        settings.lease.validate()
        settings = dataclasses.replace(settings, reflection=reflection.from_arguments(args))
        client = await (Client.from_kubeconfig(args.kubeconfig) if args.kubeconfig else Client.in_cluster())
    except (ValueError, KubeconfigError) as exc:
        logger.error("%s: the virtual kubelet cannot start: %s", ref, exc)
        return 1
    async with client:
        try:
            await VirtualKubelet(
                client,
                virtual_node=ref,
                settings=settings,
                home_cluster_id=args.home_cluster_id,
                home_api_server=args.home_api_server_url,
                address=os.environ.get("POD_IP") or None,
            ).run()
        except VirtualKubeletError as exc:
            logger.error("%s", exc)
            return 1
    return 0
