"""`python -m runtime controller-manager`: every controller of the runtime under one manager.

One `runtime.core.Manager` runs them all over shared informers, with leader election on
the Lease `liqo-controller-manager` in the runtime's namespace (`--leader-elect`) and
`/healthz`, `/readyz`, `/metrics` on `--health-address`:

| module | controller |
| --- | --- |
| `core.foreigncluster` | consumer: ForeignCluster -> credential, ResourceSlice, VirtualNode; unpeer |
| `authentication.identity` | consumer: credential renewal |
| `authentication.tenant` | provider: each consumer's Tenant, namespace and RBAC |
| `authentication.peeringtoken` | provider: token Secrets bound to their first consumer, collected once expired |
| `authentication.resourceslice` | provider: grants and Quotas |
| `offloading.virtualnode` | consumer: the virtual kubelet and the NamespaceMap of each VirtualNode |
| `offloading.namespaceoffloading` | consumer: which peered clusters get a twin of each offloaded namespace |
| `offloading.namespaceoffloadingset` | consumer: a NamespaceOffloading in every namespace a set's selector picks |
| `offloading.namespacemap` | consumer: each NamespaceMap carried to its provider, the answer back |
| `offloading.twinnamespace` | provider: the twin namespaces consumers ask for, and their RBAC |
| `offloading.shadowpod` | provider: a Pod for every ShadowPod (recreated, kept through partitions) |
| `offloading.quota` | provider: what each consumer's ShadowPods take, in its Quotas' status |
| `offloading.shadowendpointslice` | provider: an EndpointSlice for every ShadowEndpointSlice (reflected endpoints) |
| `networking.configuration` | both: each peering's Configuration, its remote pod networks mapped by the IPAM |
| `networking.gateway` | provider: gateway servers; consumer: gateway clients (key, Deployment, Service) |

Every field of `ControllerOptions` is a flag (`unpeer_timeout` -> `--unpeer-timeout`), so
a controller's new option is on the command line without touching this module; the
virtual kubelets' `reflection` options are the virtual kubelet's own flags
(`--<kind>-reflection-workers`, `--ingress-class`), passed on to every one it deploys. Logging
and signals belong to the dispatcher (`runtime.cmd.dispatch`): cancellation stops the
manager, which releases the Lease on its way out.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from runtime.core import Client, KubeconfigError, LeaderElectionSettings, Manager, ServerSettings, Settings
from runtime.forge import reflection
from runtime.forge.reflection import ReflectionOptions

from .authentication import identity, peeringtoken, resourceslice, servingkey, tenant
from .core import foreigncluster
from .networking import configuration, gateway
from .offloading import (
    namespacemap,
    namespaceoffloading,
    namespaceoffloadingset,
    quota,
    shadowendpointslice,
    shadowpod,
    twinnamespace,
    virtualnode,
)
from .options import ControllerOptions

logger = logging.getLogger(__name__)

Setup = Callable[[Manager, ControllerOptions], None]

#: the controllers, in the order they are registered
SETUPS: tuple[Setup, ...] = (
    foreigncluster.setup,
    identity.setup,
    tenant.setup,
    servingkey.setup,
    peeringtoken.setup,
    resourceslice.setup,
    virtualnode.setup,
    namespaceoffloading.setup,
    namespaceoffloadingset.setup,
    namespacemap.setup,
    twinnamespace.setup,
    shadowpod.setup,
    quota.setup,
    shadowendpointslice.setup,
    configuration.setup,
    gateway.setup_server,
    gateway.setup_client,
)
LEASE_NAME = "liqo-controller-manager"
DEFAULT_HEALTH_PORT = 8080


def setup_all(manager: Manager, options: ControllerOptions) -> None:
    """Register every controller with `manager`."""
    for setup in SETUPS:
        setup(manager, options)


def parse_address(text: str, *, default_port: int = DEFAULT_HEALTH_PORT) -> ServerSettings:
    """`host:port`, `[v6]:port`, `host` or `:port` as the endpoint's settings; ValueError otherwise."""
    host, port = text, str(default_port)
    if text.startswith("["):
        closing = text.find("]")
        if closing < 0:
            raise ValueError(f"{text!r}: an IPv6 address needs its closing ']'")
        host, rest = text[1:closing], text[closing + 1 :]
        if rest:
            if not rest.startswith(":"):
                raise ValueError(f"{text!r}: expected ':<port>' after the address")
            port = rest[1:]
    elif ":" in text:
        host, port = text.rsplit(":", 1)
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{text!r}: the port must be a number in 0..65535")
    return ServerSettings(host=host or "0.0.0.0", port=int(port))


def _converter(hint: Any) -> tuple[Callable[[str], Any], list[str] | None]:
    """How to read one option's flag value: a converter and, for Literal types, the choices."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) is Literal:
        return str, [str(a) for a in args]
    if isinstance(hint, types.UnionType) and type(None) in args:
        inner, choices = _converter(next(a for a in args if a is not type(None)))

        def optional(text: str) -> Any:
            return None if text.lower() in ("", "none") else inner(text)

        return optional, choices
    if hint in (int, float, str):
        return typing.cast(Callable[[str], Any], hint), None
    raise TypeError(f"no flag type for options of type {hint!r}")


def argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m runtime controller-manager",
        description="Run the runtime's controllers (peering, tenants, resource slices, virtual nodes, offloading).",
        allow_abbrev=False,
    )
    parser.add_argument(
        "--kubeconfig", type=Path, help="credentials for the API server (default: in-cluster)"
    )
    parser.add_argument(
        "--health-address",
        default=f"0.0.0.0:{DEFAULT_HEALTH_PORT}",
        help="host:port of /healthz, /readyz and /metrics (port 0: any free port)",
    )
    parser.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=False,
        help=f"run the controllers only while holding the Lease {LEASE_NAME} in the namespace",
    )
    hints = typing.get_type_hints(ControllerOptions)
    for option in dataclasses.fields(ControllerOptions):
        hint = hints[option.name]
        if hint is ReflectionOptions:
            reflection.add_arguments(parser)
            continue
        flag = "--" + option.name.replace("_", "-")
        # SUPPRESS: an option not given stays off the namespace, so the dataclass's default applies
        if hint is bool:
            parser.add_argument(
                flag, dest=option.name, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS
            )
            continue
        convert, choices = _converter(hint)
        parser.add_argument(flag, dest=option.name, type=convert, choices=choices, default=argparse.SUPPRESS)
    return parser


def options_from(args: argparse.Namespace) -> ControllerOptions:
    """The options the flags set (the dataclass's defaults for the others)."""
    given = {
        option.name: getattr(args, option.name)
        for option in dataclasses.fields(ControllerOptions)
        if hasattr(args, option.name)
    }
    return ControllerOptions(**given, reflection=reflection.from_arguments(args))


def settings_from(args: argparse.Namespace, options: ControllerOptions) -> Settings:
    election = (
        LeaderElectionSettings(
            lease_name=LEASE_NAME, lease_namespace=options.namespace, identity=os.environ.get("POD_NAME", "")
        )
        if args.leader_elect
        else None
    )
    return Settings(leader_election=election, server=parse_address(args.health_address))


async def main(argv: Sequence[str]) -> int:
    parser = argument_parser()
    args = parser.parse_args(list(argv))
    try:
        options = options_from(args)
        settings = settings_from(args, options)
    except (TypeError, ValueError) as exc:
        parser.error(str(exc))
    try:
        client = await (Client.from_kubeconfig(args.kubeconfig) if args.kubeconfig else Client.in_cluster())
    except KubeconfigError as exc:
        logger.error("cannot load credentials for the API server: %s", exc)
        return 1
    async with client:
        manager = Manager(client, settings=settings)
        setup_all(manager, options)
        logger.info(
            "%s: controller manager starting (%d controllers, leader election %s)",
            options.namespace,
            len(SETUPS),
            "on" if settings.leader_election else "off",
        )
        await manager.run()
    return 0
