"""`python -m playground.kubeproxy --kubeconfig PATH --hostname-override NODE --cluster-cidr CIDR`

One node's kube-proxy, as kind runs it (a DaemonSet pod on the host network of every
node, in nftables mode, with its own identity: kube-apiserver's bootstrap policy binds
`system:kube-proxy` to `system:node-proxier`, which may list and watch Services,
EndpointSlices and Nodes). The playground runs it in its node's network namespace,
where it programs that namespace's nftables (`rules.py`): ClusterIPs and NodePorts of
every Service lead to the ready endpoints of its EndpointSlices. Runs until SIGTERM or
SIGINT; the rules stay (a restart replaces them; they go with the node's namespace).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import logging
import signal
import sys
from pathlib import Path

from runtime.api.kinds import ENDPOINTSLICES, SERVICES
from runtime.core import Client, Controller, InformerFactory, QueueingSettings, Settings

from .proxier import NFTablesProxier

logger = logging.getLogger(__name__)

SERVICE_NAME_LABEL = "kubernetes.io/service-name"


def argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m playground.kubeproxy", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--kubeconfig", type=Path, required=True, help="kube-proxy's credentials")
    parser.add_argument(
        "--hostname-override", required=True, metavar="NODE", help="the node this proxy runs on"
    )
    parser.add_argument(
        "--cluster-cidr", required=True, help="the cluster's pod CIDR: traffic from outside it is masqueraded"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    return parser


async def run(kubeconfig: Path, *, node: str, cluster_cidr: str) -> None:
    settings = Settings(server=None, queueing=QueueingSettings(workers=1))
    async with await Client.from_kubeconfig(kubeconfig) as client:
        informers = InformerFactory(client, settings=settings.watching)
        services = informers.informer(SERVICES)
        slices = informers.informer(ENDPOINTSLICES, label_selector=SERVICE_NAME_LABEL)
        proxier = NFTablesProxier(
            node=node, cluster_cidr=cluster_cidr, services=services.store, slices=slices.store
        )
        controller = Controller("kube-proxy", proxier, primary=services, settings=settings)
        controller.watches(services, proxier.sync_key)
        controller.watches(slices, proxier.sync_key)
        async with asyncio.TaskGroup() as group:
            group.create_task(informers.run(), name="kube-proxy informers")
            await informers.wait_synced()
            group.create_task(controller.run(), name="kube-proxy sync")


def main(argv: list[str] | None = None) -> int:
    parser = argument_parser()
    args = parser.parse_args(argv)
    try:
        ipaddress.IPv4Network(args.cluster_cidr)
    except ValueError as exc:
        parser.error(f"--cluster-cidr {args.cluster_cidr}: {exc}")
    if not args.kubeconfig.is_file():
        parser.error(f"--kubeconfig {args.kubeconfig}: no such file")
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )

    async def serve() -> None:
        task = asyncio.create_task(
            run(args.kubeconfig, node=args.hostname_override, cluster_cidr=args.cluster_cidr)
        )
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
