"""`python -m playground.nodeagent --kubeconfig PATH --node NAME --pod-cidr CIDR [...]`

Runs one node's agent in the foreground until SIGTERM or SIGINT, logging to stderr.
Bad flags fail at once with a message naming the flag (exit code 2); a Node that
exists with another pod CIDR fails with what to do about it (exit code 1).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path

from runtime.core import Client

from .agent import NodeAgent
from .node import NodeConflictError
from .options import NodeAgentOptions, Taint, parse_label, parse_taint


def argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m playground.nodeagent",
        description="Run one playground node's agent (its kubelet) until SIGTERM or SIGINT.",
    )
    parser.add_argument(
        "--kubeconfig", type=Path, required=True, help="the kubelet's credentials (system:node:<node>)"
    )
    parser.add_argument("--node", required=True, help="the Node's name")
    parser.add_argument("--pod-cidr", required=True, help="the node's pod CIDR, e.g. 10.244.1.0/24")
    parser.add_argument(
        "--address",
        help="the node's InternalIP (default: the first address of the loopback /24 the agent claims)",
    )
    parser.add_argument(
        "--pod-netns-prefix",
        help="give each pod a network namespace named this plus its uid, on the node's bridge cni0 "
        "(run the agent in its node's namespace); default: the loopback fallback",
    )
    parser.add_argument("--cpu", default="8", help="CPU capacity (default %(default)s)")
    parser.add_argument("--memory", default="16Gi", help="memory capacity (default %(default)s)")
    parser.add_argument("--pods", type=int, default=110, help="pod capacity (default %(default)s)")
    parser.add_argument(
        "--ephemeral-storage", default="100Gi", help="ephemeral-storage capacity (default %(default)s)"
    )
    parser.add_argument(
        "--label", action="append", default=[], metavar="KEY=VALUE", help="a node label (repeatable)"
    )
    parser.add_argument(
        "--taint",
        action="append",
        default=[],
        metavar="KEY=VALUE:EFFECT",
        help="a taint set at registration (repeatable)",
    )
    parser.add_argument("--kubelet-port", type=int, default=0, help="kubelet API port (0: any free port)")
    parser.add_argument(
        "--client-ca-file",
        type=Path,
        help="CA of the API server's kubelet client certificate (default: the cluster CA)",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        help="where pods' files and the kubelet API certificate are kept (default: a temporary directory)",
    )
    parser.add_argument(
        "--lease-duration", type=int, default=40, help="node Lease duration in seconds (default %(default)s)"
    )
    parser.add_argument(
        "--heartbeat",
        type=float,
        default=10.0,
        help="Lease renewal interval in seconds (default %(default)s)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    return parser


def options_from(args: argparse.Namespace) -> NodeAgentOptions:
    """The options the flags describe; ValueError naming the flag when one is wrong."""
    labels = dict(parse_label(text) for text in args.label)
    taints: tuple[Taint, ...] = tuple(parse_taint(text) for text in args.taint)
    return NodeAgentOptions(
        node_name=args.node,
        pod_cidr=args.pod_cidr,
        address=args.address,
        pod_netns_prefix=args.pod_netns_prefix,
        cpu=args.cpu,
        memory=args.memory,
        pods=args.pods,
        ephemeral_storage=args.ephemeral_storage,
        labels=labels,
        taints=taints,
        kubelet_port=args.kubelet_port,
        state_dir=args.state_dir,
        client_ca_file=args.client_ca_file,
        lease_duration=args.lease_duration,
        heartbeat=args.heartbeat,
    )


async def serve(kubeconfig: Path, options: NodeAgentOptions) -> None:
    async with await Client.from_kubeconfig(kubeconfig) as client:
        agent = asyncio.create_task(NodeAgent(client, options).run(), name=f"node agent {options.node_name}")
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, agent.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await agent


def main(argv: list[str] | None = None) -> int:
    parser = argument_parser()
    args = parser.parse_args(argv)
    try:
        options = options_from(args)
    except ValueError as exc:
        parser.error(str(exc))
    for flag, path in (("--kubeconfig", args.kubeconfig), ("--client-ca-file", args.client_ca_file)):
        if path is not None and not path.is_file():
            parser.error(f"{flag} {path}: no such file")
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    try:
        asyncio.run(serve(args.kubeconfig, options))
    except BaseExceptionGroup as group:
        conflicts = group.subgroup(NodeConflictError)
        if conflicts is None:
            raise
        for conflict in conflicts.exceptions:
            logging.getLogger(__name__).error("%s", conflict)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
