"""`python -m runtime webhook`: the admission webhook validating the runtime's own kinds.

Flags are those the install manifests pass (`runtime.forge.install._webhook_args`) plus
`--health-address` and `--kubeconfig` (default: the pod's ServiceAccount).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

from runtime.api import constants as c
from runtime.core import Client, KubeconfigError, ServerSettings
from runtime.forge.install import MUTATING_WEBHOOK, VALIDATING_WEBHOOK, WEBHOOK, WEBHOOK_PORT
from runtime.forge.services import EXPOSURES

from .server import WebhookOptions, WebhookServer

logger = logging.getLogger(__name__)


def address(text: str) -> tuple[str, int]:
    """`host:port`, `[v6]:port` or `:port` (every interface) as (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not host:port")
    return host.strip("[]"), int(port)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m runtime webhook",
        description="Admission webhook validating the runtime's kinds and admitting pods of offloaded namespaces.",
        allow_abbrev=False,
    )
    parser.add_argument("--namespace", default=c.DEFAULT_NAMESPACE, help="the runtime's namespace")
    parser.add_argument(
        "--listen",
        type=address,
        default=("0.0.0.0", WEBHOOK_PORT),
        help=f"HTTPS address (host:port) of the admission endpoint (default 0.0.0.0:{WEBHOOK_PORT})",
    )
    parser.add_argument(
        "--mode",
        choices=("service", "url"),
        default="service",
        help="how the API server calls the webhook: through its Service, or by URL (the listen address)",
    )
    parser.add_argument(
        "--configuration",
        action="append",
        help=f"a ValidatingWebhookConfiguration to patch with the CA (and URL); repeatable "
        f"(default {VALIDATING_WEBHOOK})",
    )
    parser.add_argument(
        "--mutating-configuration",
        action="append",
        help=f"a MutatingWebhookConfiguration to patch with the CA (and URL); repeatable (default {MUTATING_WEBHOOK})",
    )
    parser.add_argument(
        "--health-address",
        type=address,
        default=("0.0.0.0", 8080),
        help="host:port of /healthz, /readyz and /metrics (default 0.0.0.0:8080)",
    )
    parser.add_argument(
        "--max-consumer-service-type",
        choices=EXPOSURES,
        default="ClusterIP",
        help="the widest type a consumer's Services keep in its twin namespaces; wider ones are converted to it "
        "(default ClusterIP)",
    )
    parser.add_argument(
        "--shutdown-delay",
        type=float,
        default=5.0,
        help="seconds a stopping webhook keeps answering, not ready, while the API server stops calling it "
        "(default 5)",
    )
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: the pod's ServiceAccount)")
    return parser


async def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    listen_host, listen_port = args.listen
    health_host, health_port = args.health_address
    options = WebhookOptions(
        namespace=args.namespace,
        listen_host=listen_host,
        listen_port=listen_port,
        mode=args.mode,
        configurations=tuple(dict.fromkeys(args.configuration or [VALIDATING_WEBHOOK])),
        mutating_configurations=tuple(dict.fromkeys(args.mutating_configuration or [MUTATING_WEBHOOK])),
        service=f"liqo-{WEBHOOK}",
        health=ServerSettings(host=health_host or "0.0.0.0", port=health_port),
        max_consumer_service_type=args.max_consumer_service_type,
        shutdown_delay=args.shutdown_delay,
    )
    try:
        options.validate()
        client = await (Client.from_kubeconfig(args.kubeconfig) if args.kubeconfig else Client.in_cluster())
    except (ValueError, KubeconfigError) as exc:
        logger.error("webhook: cannot start: %s", exc)
        return 1
    async with client:
        await WebhookServer(client, options).run()
    return 0
