"""`python -m playground.controlplane --kubeconfig PATH [--only a,b] [--disable a,b] [...]`

Runs a playground cluster's scheduler and controllers (kube-scheduler plus
kube-controller-manager, in one process) under one `Manager` until SIGTERM or SIGINT.
`--kubeconfig` is kube-controller-manager's identity (`system:kube-controller-manager`):
the shared informers read with it, and it makes each controller's ServiceAccount and
token (`credentials.py`; the tokens live in `DIR/tokens` with `--state-dir`, else in a
temporary directory); `--scheduler-kubeconfig` is kube-scheduler's
(`system:kube-scheduler`, default: `--kubeconfig`). The manager's `/healthz`, `/readyz`
and `/metrics` listen on `--bind-address` (default 127.0.0.1; the playground gives the
control-plane node's address) and `--health-port` (0: any free port); with
`--state-dir` the bound port is written to `DIR/health-port` once it listens, which is
how the cluster launcher finds it. The CA of the kubeconfig's cluster becomes every
namespace's `kube-root-ca.crt`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from runtime.core import Client, Manager, ServerSettings, Settings
from runtime.core.kubeconfig import KubeconfigError, load_kubeconfig

from .components import COMPONENTS, UnknownComponentError, load, select
from .credentials import ServiceAccountCredentials
from .options import ControlPlaneOptions

logger = logging.getLogger("playground.controlplane")

HEALTH_PORT_FILE = "health-port"
_DEFAULTS = ControlPlaneOptions()


def _names(value: str) -> list[str]:
    return [name.strip() for name in value.split(",") if name.strip()]


def _seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {value!r}") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {value!r}")
    return number


def argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m playground.controlplane",
        description="Run a playground cluster's scheduler and controllers until SIGTERM or SIGINT.",
        epilog=f"components: {', '.join(COMPONENTS)}",
    )
    parser.add_argument(
        "--kubeconfig", type=Path, required=True, help="kube-controller-manager's credentials"
    )
    parser.add_argument(
        "--scheduler-kubeconfig", type=Path, help="kube-scheduler's credentials (default: --kubeconfig)"
    )
    parser.add_argument("--only", type=_names, default=[], metavar="A,B", help="run only these components")
    parser.add_argument(
        "--disable", type=_names, default=[], metavar="A,B", help="do not run these components"
    )
    parser.add_argument(
        "--pod-cidr", default=_DEFAULTS.pod_cidr, help="the cluster's pod CIDR (default %(default)s)"
    )
    parser.add_argument(
        "--service-cidr",
        default=_DEFAULTS.service_cidr,
        help="the cluster's Service CIDR (default %(default)s)",
    )
    parser.add_argument(
        "--node-monitor-grace-period",
        type=_seconds,
        default=_DEFAULTS.node_monitor_grace_period,
        metavar="S",
        help="a node whose Lease was not renewed this long turns NotReady (default %(default)s)",
    )
    parser.add_argument(
        "--node-monitor-period",
        type=_seconds,
        default=_DEFAULTS.node_monitor_period,
        metavar="S",
        help="how often node Leases are checked (default %(default)s)",
    )
    parser.add_argument(
        "--pod-gc-quarantine",
        type=_seconds,
        default=_DEFAULTS.pod_gc_quarantine,
        metavar="S",
        help="pods of a node that is gone are deleted after this long (default %(default)s)",
    )
    parser.add_argument(
        "--health-port", type=int, default=0, help="port of /healthz, /readyz, /metrics (0: any free port)"
    )
    parser.add_argument(
        "--bind-address",
        default="127.0.0.1",
        help="address of /healthz, /readyz, /metrics (default %(default)s)",
    )
    parser.add_argument("--state-dir", type=Path, help="where the bound health port is written")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    return parser


def options_from(args: argparse.Namespace, *, root_ca: str) -> ControlPlaneOptions:
    return ControlPlaneOptions(
        pod_cidr=args.pod_cidr,
        service_cidr=args.service_cidr,
        node_monitor_grace_period=args.node_monitor_grace_period,
        node_monitor_period=args.node_monitor_period,
        pod_gc_quarantine=args.pod_gc_quarantine,
        root_ca=root_ca,
    )


def _write_port(state_dir: Path, port: int) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    tmp = state_dir / f".{HEALTH_PORT_FILE}.tmp"
    tmp.write_text(f"{port}\n")
    os.replace(tmp, state_dir / HEALTH_PORT_FILE)


async def _publish_port(manager: Manager, state_dir: Path) -> None:
    server = manager.server
    assert server is not None
    await server.started.wait()
    assert server.port is not None
    await asyncio.to_thread(_write_port, state_dir, server.port)
    logger.info("health port %d written to %s", server.port, state_dir / HEALTH_PORT_FILE)


async def serve(args: argparse.Namespace, *, names: list[str]) -> None:
    config = await asyncio.to_thread(load_kubeconfig, args.kubeconfig)
    scheduler_config = await asyncio.to_thread(load_kubeconfig, args.scheduler_kubeconfig or args.kubeconfig)
    root_ca = (config.certificate_authority or b"").decode("ascii", errors="replace")
    options = options_from(args, root_ca=root_ca)
    async with (
        await Client.from_config(config) as client,
        await Client.from_config(scheduler_config) as scheduler,
        _token_directory(args.state_dir) as tokens,
    ):
        credentials = ServiceAccountCredentials(client, scheduler=scheduler, directory=tokens)
        manager = Manager(
            client, settings=Settings(server=ServerSettings(host=args.bind_address, port=args.health_port))
        )
        for name in names:
            load(name)(manager, options, credentials)
        logger.info("running %s against %s", ", ".join(names) or "no component", client.host)
        loop = asyncio.get_running_loop()
        this = asyncio.current_task()
        assert this is not None
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, this.cancel)
        try:
            await credentials.prepare()
            async with asyncio.TaskGroup() as group:
                group.create_task(manager.run(), name="control plane manager")
                group.create_task(credentials.run(), name="controller tokens")
                if args.state_dir is not None:
                    group.create_task(_publish_port(manager, args.state_dir), name="publish health port")
        finally:
            await credentials.close()


@contextlib.asynccontextmanager
async def _token_directory(state_dir: Path | None) -> AsyncIterator[Path]:
    if state_dir is not None:
        yield state_dir / "tokens"
        return
    temporary = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="controlplane-tokens-"))
    try:
        yield temporary
    finally:
        await asyncio.to_thread(shutil.rmtree, temporary, True)


def main(argv: list[str] | None = None) -> int:
    parser = argument_parser()
    args = parser.parse_args(argv)
    try:
        names = select(only=args.only, disable=args.disable)
    except UnknownComponentError as exc:
        parser.error(str(exc))
    if not 0 <= args.health_port < 65536:
        parser.error(f"--health-port {args.health_port}: must be between 0 and 65535")
    for flag, path in (
        ("--kubeconfig", args.kubeconfig),
        ("--scheduler-kubeconfig", args.scheduler_kubeconfig),
    ):
        if path is not None and not path.is_file():
            parser.error(f"{flag} {path}: no such file")
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    try:
        with contextlib.suppress(asyncio.CancelledError):
            asyncio.run(serve(args, names=names))
    except KubeconfigError as exc:
        logger.error("%s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
