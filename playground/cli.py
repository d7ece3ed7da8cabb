"""The `playground` command: local Kubernetes clusters, as `kind` makes them, for this project.

    playground up NAME [NAME...] [--nodes N] [--pod-cidr CIDR] [--service-cidr CIDR] [--network loopback]
                   [--agent-nodes]
    playground status [-o json]
    playground down [NAME...] [--keep]
    playground kubeconfig NAME [--raw] [--internal]
    playground load-image NAME ARCHIVE

Every command takes `--state-dir` (default `$PLAYGROUND_STATE_DIR`, else `.playground`).
`up` prints one kubeconfig path per cluster on stdout once every cluster is ready;
progress and errors go to stderr. Exit codes: 0 done, 1 a cluster could not be
started or found (the message says what to do), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from playground.cluster import (
    AGENT_NODES_ENV,
    READY_TIMEOUT,
    STATE_DIR_ENV,
    Cluster,
    ClusterError,
    ClusterStatus,
    clusters,
    default_state_dir,
    down,
    resolve,
    up,
)
from playground.spec import DEFAULT_POD_CIDR, DEFAULT_SERVICE_CIDR, NETWORKS, SpecError

STATUS_COLUMNS = ("NAME", "STATE", "MODE", "API SERVER", "NODES", "KUBECONFIG")


def display_path(path: Path) -> str:
    """`path` relative to the working directory when it lies below it (what a user would type)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _positive_seconds(value: str) -> float:
    number = float(value)
    if number <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {value}")
    return number


def argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="playground", description="Local Kubernetes clusters, like kind's.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help=f"where clusters keep their state (default ${STATE_DIR_ENV}, else .playground)",
    )
    common.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    start = commands.add_parser(
        "up", parents=[common], help="create or restart clusters and wait until they are ready"
    )
    start.add_argument("names", nargs="+", metavar="NAME", help="cluster names (DNS-1123 labels)")
    start.add_argument(
        "--nodes", type=int, help="nodes per cluster: one control plane, the rest workers (default 1)"
    )
    start.add_argument("--pod-cidr", help=f"pod CIDR, one /24 per node (default {DEFAULT_POD_CIDR})")
    start.add_argument("--service-cidr", help=f"Service CIDR (default {DEFAULT_SERVICE_CIDR})")
    start.add_argument(
        "--api-server-port",
        type=int,
        help="the API server's port on 127.0.0.1 (one cluster only; default: a free port)",
    )
    start.add_argument(
        "--network",
        choices=NETWORKS,
        help="netns (default): nodes and pods in network namespaces, as kind's; loopback: the emulator-only "
        "fallback without CAP_NET_ADMIN (no Services; see docs/playground.md)",
    )
    start.add_argument(
        "--agent-nodes",
        dest="real_nodes",
        action="store_const",
        const=False,
        help="with real binaries that could run real nodes (kubelet, containerd), run node agents instead "
        f"(as ${AGENT_NODES_ENV} does)",
    )
    start.add_argument(
        "--wait",
        type=_positive_seconds,
        default=READY_TIMEOUT,
        metavar="SECONDS",
        help="how long to wait for readiness (default %(default)g)",
    )

    status = commands.add_parser("status", parents=[common], help="list the clusters and their state")
    status.add_argument("-o", "--output", choices=("table", "json"), default="table")

    stop = commands.add_parser(
        "down", parents=[common], help="stop clusters (all when none is named) and remove their state"
    )
    stop.add_argument("names", nargs="*", metavar="NAME")
    stop.add_argument(
        "--keep", action="store_true", help="keep the state: `up` restarts the cluster with its objects"
    )

    config = commands.add_parser(
        "kubeconfig", parents=[common], help="print the path of a cluster's kubeconfig"
    )
    config.add_argument("name", metavar="NAME")
    config.add_argument("--raw", action="store_true", help="print the kubeconfig itself")
    config.add_argument(
        "--internal",
        action="store_true",
        help="the one at the control-plane node's address, for the cluster's nodes and pods (kind's --internal)",
    )
    load = commands.add_parser(
        "load-image",
        parents=[common],
        help="import an image archive into every node of a cluster (real nodes; kind load image-archive)",
    )
    load.add_argument("name", metavar="NAME")
    load.add_argument("archive", metavar="ARCHIVE", type=Path, help="an OCI or docker-save archive")
    return parser


def _info(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _up(args: argparse.Namespace, state_dir: Path) -> int:
    if args.api_server_port is not None and len(args.names) > 1:
        raise SpecError(["--api-server-port names one port: give it with one cluster name only"])
    specs = resolve(
        args.names,
        state_dir=state_dir,
        nodes=args.nodes,
        pod_cidr=args.pod_cidr,
        service_cidr=args.service_cidr,
        api_server_port=args.api_server_port,
        network=args.network,
        real_nodes=args.real_nodes,
    )
    for spec in specs:
        existing = Cluster(spec, state_dir=state_dir).exists
        verb = "Restarting" if existing else "Creating"
        _info(f"{verb} cluster {spec.name!r} ({spec.nodes} node{'s' * (spec.nodes > 1)}, {spec.mode}) ...")
    started = time.monotonic()
    ready = asyncio.run(up(specs, state_dir=state_dir, wait=args.wait))
    _info(f"Ready in {time.monotonic() - started:.1f} s. Reach a cluster with:")
    for cluster in ready:
        _info(f"  kubectl --kubeconfig {display_path(cluster.kubeconfig)} get nodes")
    for cluster in ready:
        print(display_path(cluster.kubeconfig))
    return 0


def status_table(statuses: Sequence[ClusterStatus]) -> str:
    rows = [STATUS_COLUMNS] + [
        (s.name, s.state, s.mode, s.api_server, s.nodes, display_path(Path(s.kubeconfig))) for s in statuses
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(STATUS_COLUMNS))]
    return "\n".join(
        "   ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def _status(args: argparse.Namespace, state_dir: Path) -> int:
    statuses = [cluster.status() for cluster in clusters(state_dir)]
    if args.output == "json":
        print(json.dumps([status.as_json() for status in statuses], indent=2))
    elif statuses:
        print(status_table(statuses))
    else:
        _info(f"No clusters in {display_path(state_dir.absolute())}. Create one with `playground up NAME`.")
    return 0


def _down(args: argparse.Namespace, state_dir: Path) -> int:
    stopped = asyncio.run(down(args.names, state_dir=state_dir, keep=args.keep))
    if not stopped:
        _info(f"No clusters in {display_path(state_dir.absolute())}.")
    for name in stopped:
        _info(
            f"Stopped cluster {name!r}" + (" (state kept: `playground up` restarts it)" if args.keep else "")
        )
    return 0


def _kubeconfig(args: argparse.Namespace, state_dir: Path) -> int:
    cluster = Cluster.load(args.name, state_dir=state_dir)
    path = cluster.paths.internal_kubeconfig if args.internal else cluster.kubeconfig
    if not path.exists():
        raise ClusterError(
            f"cluster {args.name} has no kubeconfig yet: start it with `playground up {args.name}`"
        )
    if args.raw:
        sys.stdout.write(path.read_text())
    else:
        print(display_path(path))
    return 0


def _load_image(args: argparse.Namespace, state_dir: Path) -> int:
    cluster = Cluster.load(args.name, state_dir=state_dir)
    started = time.monotonic()
    asyncio.run(cluster.load_image(args.archive.absolute()))
    _info(
        f"Loaded {display_path(args.archive)} into {', '.join(cluster.node_names)} "
        f"in {time.monotonic() - started:.1f} s"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = argument_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    state_dir = args.state_dir if args.state_dir is not None else default_state_dir(os.environ)
    handlers = {
        "up": _up,
        "status": _status,
        "down": _down,
        "kubeconfig": _kubeconfig,
        "load-image": _load_image,
    }
    try:
        return handlers[args.command](args, state_dir)
    except (ClusterError, SpecError) as exc:
        _info(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        _info("interrupted: whatever was started has been stopped")
        return 130
