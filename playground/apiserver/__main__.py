"""`python -m playground.apiserver --listen 127.0.0.1:PORT --state-dir DIR`

Runs one API server in the foreground until SIGTERM or SIGINT; the admin kubeconfig
appears at DIR/kubeconfig once the server is ready.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import signal
import sys
from pathlib import Path

from .server import APIServer, Settings


def _listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host:
        raise argparse.ArgumentTypeError(f"--listen must be HOST:PORT, got {value!r}")
    try:
        ipaddress.ip_address(host)
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--listen must be an IP address and a port, got {value!r}"
        ) from None
    if not 0 <= number < 65536:
        raise argparse.ArgumentTypeError(f"--listen port must be between 0 and 65535, got {number}")
    return host, number


def _address(value: str) -> str:
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--advertise-address {value!r} is not an IP address") from None


def _cidr(value: str) -> str:
    try:
        network = ipaddress.ip_network(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--service-cidr: {exc}") from None
    if network.num_addresses < 8:
        raise argparse.ArgumentTypeError(f"--service-cidr {value} is too small: give at least a /29")
    return str(network)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m playground.apiserver", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--listen", type=_listen, default=("127.0.0.1", 6443), help="HOST:PORT (port 0: any free port)"
    )
    parser.add_argument(
        "--state-dir", type=Path, required=True, help="certificates, stored objects and kubeconfig"
    )
    parser.add_argument(
        "--service-cidr", type=_cidr, default="10.96.0.0/12", help="range for Service cluster IPs"
    )
    parser.add_argument(
        "--cluster-name", default="playground", help="cluster name written into the kubeconfig"
    )
    parser.add_argument(
        "--advertise-address",
        type=_address,
        help="the address the kubernetes Service's endpoints name (default: the --listen address)",
    )
    parser.add_argument(
        "--cert-san",
        action="append",
        default=[],
        metavar="NAME_OR_IP",
        help="another name or address for the serving certificate (repeatable)",
    )
    parser.add_argument("--no-persist", action="store_true", help="keep objects in memory only")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    return parser.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    host, port = args.listen
    server = APIServer(
        Settings(
            state_dir=args.state_dir,
            host=host,
            port=port,
            service_cidr=args.service_cidr,
            cluster_name=args.cluster_name,
            persist=not args.no_persist,
            advertise_address=args.advertise_address or "",
            extra_hosts=tuple(args.cert_san),
        )
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await server.start()
    print(f"serving on {server.url}; kubeconfig: {server.kubeconfig_path}", flush=True)
    try:
        await stop.wait()
    finally:
        await server.stop()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(asctime)s %(name)s %(message)s"
    )
    try:
        asyncio.run(serve(args))
    except OSError as exc:
        print(f"error: cannot serve on {args.listen[0]}:{args.listen[1]}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
