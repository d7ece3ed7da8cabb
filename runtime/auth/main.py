"""`python -m runtime auth [flags]`: the authentication service, until cancelled.

The dispatcher (`runtime.cmd.dispatch`) sets up logging and turns SIGTERM/SIGINT into
cancellation; `main` parses the flags, loads credentials and serves. Flags mirror what
the install manifests pass (`runtime.forge.install._auth_args`). The kubelet expands
`$(POD_IP)` in `--listen` and `--health-address`; outside a pod the `POD_IP`
environment variable fills it in, and without `--listen` the service binds
`$POD_IP:8443` (or every address when POD_IP is unset); `NODE_NAME` (the Deployment sets
it from `spec.nodeName`) is the default of `--node-name`. Credentials are the pod's
ServiceAccount unless `--kubeconfig` names a file. Bad flags exit with 2, a failure to
start with 1.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
from collections.abc import Sequence
from pathlib import Path

from runtime.api import constants as c
from runtime.core import Client, KubeconfigError, ServerSettings
from runtime.forge.install import AUTH_PORT

from .options import AuthOptions
from .server import AuthServer

logger = logging.getLogger(__name__)

POD_IP_REFERENCE = "$(POD_IP)"


def argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m runtime auth",
        description="Exchange peering tokens for consumer credentials (the provider's authentication service).",
    )
    parser.add_argument(
        "--namespace",
        default=os.environ.get("POD_NAMESPACE") or c.DEFAULT_NAMESPACE,
        help="the runtime's namespace (default: $POD_NAMESPACE, else %(default)s)",
    )
    parser.add_argument(
        "--listen",
        default=f"{POD_IP_REFERENCE}:{AUTH_PORT}",
        metavar="HOST:PORT",
        help="the HTTPS address to bind (default: $POD_IP, else 0.0.0.0, port %(default)s)",
    )
    parser.add_argument("--api-server-url", default="", help="the API server URL consumers are given")
    parser.add_argument(
        "--advertise-url",
        default="",
        help="this service's URL as consumers reach it (default: derived from the liqo-auth Service)",
    )
    parser.add_argument(
        "--node-name",
        default=os.environ.get("NODE_NAME") or "",
        help="the node this service runs on, preferred for a NodePort Service's address (default: $NODE_NAME)",
    )
    parser.add_argument(
        "--token-ttl",
        type=int,
        default=3600,
        help="lifetime of issued tokens in seconds (default %(default)s)",
    )
    parser.add_argument(
        "--health-address", metavar="HOST:PORT", help="serve /healthz, /readyz, /metrics here"
    )
    parser.add_argument("--kubeconfig", type=Path, help="credentials (default: the pod's ServiceAccount)")
    return parser


def host_port(text: str, *, flag: str) -> tuple[str, int]:
    """`HOST:PORT` or `[IPv6]:PORT`, with `$(POD_IP)` taken from the environment; ValueError naming the flag."""
    if POD_IP_REFERENCE in text:
        text = text.replace(POD_IP_REFERENCE, os.environ.get("POD_IP") or "0.0.0.0")
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{flag} {text!r}: expected HOST:PORT")
    return host.removeprefix("[").removesuffix("]") or "0.0.0.0", int(port)


def options_from(args: argparse.Namespace) -> AuthOptions:
    """The options the flags describe; ValueError naming the flag when one is wrong."""
    host, port = host_port(args.listen, flag="--listen")
    health = None
    if args.health_address:
        health_host, health_port = host_port(args.health_address, flag="--health-address")
        health = ServerSettings(host=health_host, port=health_port)
    options = AuthOptions(
        namespace=args.namespace,
        host=host,
        port=port,
        api_server_url=args.api_server_url,
        advertise_url=args.advertise_url,
        node_name=args.node_name,
        token_ttl=args.token_ttl,
        health=health,
    )
    try:
        options.validate()
    except ValueError as exc:
        option, _, problem = str(exc).partition(": ")
        raise ValueError(f"--{option.replace('_', '-')}: {problem}") from None
    return options


async def main(argv: Sequence[str]) -> int:
    parser = argument_parser()
    args = parser.parse_args(list(argv))
    try:
        options = options_from(args)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        client = await (Client.from_kubeconfig(args.kubeconfig) if args.kubeconfig else Client.in_cluster())
    except KubeconfigError as exc:
        logger.error("cannot load credentials: %s", exc)
        return 1
    async with client:
        try:
            await AuthServer(client, options).run()
        except asyncio.CancelledError:
            logger.info("%s: authentication service stopped", options.namespace)
            raise
    return 0
