"""What the virtual kubelets reflect, and how many objects of each kind at once: `ReflectionOptions`.

One options object travels the whole way: `liqo_install` (and the Pulumi `Install`) put it
in `InstallOptions.reflection`, the install writes it as flags of the controller manager,
the controller manager hands the same flags to every virtual kubelet it deploys
(`runtime.forge.virtualnode.deployment`), and the virtual kubelet builds one reflector per
kind with its worker count. The flags are Liqo's (`--<kind>-reflection-workers`); 0 workers
turn a kind's reflection off (Liqo's `reflection.<kind>.workers=0`).

The defaults are higher than Liqo's (3 to 10): a worker here is a coroutine waiting on two
API servers, and a burst of a thousand edits is reflected within a second or two only with
about twenty in flight (bench/reflection.py).

`ingress_classes` maps a consumer's ingress class to the provider's: a reflected Ingress
keeps no class (the provider's default serves it, as Liqo does) unless its class is mapped.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

#: the reflected kinds, in the order their flags are written (Liqo's names)
KINDS: Final = ("pod", "configmap", "secret", "service", "endpointslice", "ingress", "event")
INGRESS_CLASS_FLAG: Final = "--ingress-class"
_WORKERS_SUFFIX: Final = "_workers"
_FLAG_SUFFIX: Final = "-reflection-workers"
_DNS_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
#: a sane ceiling: each worker is a coroutine waiting on both API servers
MAX_WORKERS: Final = 1000


class ReflectionOptionsError(ValueError):
    """A reflection option is invalid; `option` names it (the attribute of the same name in `reflection`)."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"{option}: {message}")
        self.option = option


@dataclass(frozen=True)
class ReflectionOptions:
    #: pods offloaded at once (their ShadowPods, token Secrets and status); 0: no pod is offloaded
    pod_workers: int = 20
    #: ConfigMaps reflected at once (`kube-root-ca.crt` under a name of its own); 0: none
    configmap_workers: int = 20
    #: Secrets reflected at once (ServiceAccount token Secrets as Opaque); 0: none (the pods' own token Secrets
    #: still go with their pods)
    secret_workers: int = 20
    #: Services reflected at once; 0: none
    service_workers: int = 10
    #: EndpointSlices reflected at once (as ShadowEndpointSlices); 0: none
    endpointslice_workers: int = 20
    #: Ingresses reflected at once; 0: none
    ingress_workers: int = 5
    #: provider Events brought back at once, onto the objects they speak of; 0: none
    event_workers: int = 10
    #: consumer ingress class -> the provider's (an Ingress of another class is reflected without a class)
    ingress_classes: Mapping[str, str] = field(default_factory=dict)

    def workers(self, kind: str) -> int:
        """The worker count of one of `KINDS`."""
        return int(getattr(self, kind + _WORKERS_SUFFIX))

    def validate(self) -> None:
        """Raise ReflectionOptionsError naming the first invalid option."""
        for kind in KINDS:
            count = self.workers(kind)
            if isinstance(count, bool) or not 0 <= count <= MAX_WORKERS:
                raise ReflectionOptionsError(
                    kind + _WORKERS_SUFFIX,
                    f"{count!r} is not a worker count in 0..{MAX_WORKERS} (0 turns it off)",
                )
        for local, remote in self.ingress_classes.items():
            for name in (local, remote):
                if not _DNS_SUBDOMAIN.match(name) or len(name) > 253:
                    raise ReflectionOptionsError(
                        "ingress_classes", f"{name!r} is not an ingress class name (a DNS subdomain)"
                    )

    def args(self) -> list[str]:
        """The options as the virtual kubelet's (and the controller manager's) flags, every one spelt out."""
        flags = [f"--{kind}{_FLAG_SUFFIX}={self.workers(kind)}" for kind in KINDS]
        flags += [
            f"{INGRESS_CLASS_FLAG}={local}={remote}" for local, remote in sorted(self.ingress_classes.items())
        ]
        return flags


def worker_flag(kind: str) -> str:
    """`--<kind>-reflection-workers`."""
    return f"--{kind}{_FLAG_SUFFIX}"


def parse_ingress_class(text: str) -> tuple[str, str]:
    """`<consumer class>=<provider class>` as a pair; ValueError otherwise."""
    local, sep, remote = text.partition("=")
    if not sep or not local or not remote:
        raise ValueError(f"{text!r} is not <consumer class>=<provider class>")
    return local, remote


def from_flags(workers: Mapping[str, int], ingress_classes: Sequence[str] = ()) -> ReflectionOptions:
    """The options from parsed flags: worker counts by kind (missing: the default) and `a=b` class pairs.

    ReflectionOptionsError when a value is invalid.
    """
    unknown = set(workers) - set(KINDS)
    if unknown:
        raise ReflectionOptionsError("workers", f"no reflected kind {', '.join(sorted(unknown))}")
    classes: dict[str, str] = {}
    for text in ingress_classes:
        try:
            local, remote = parse_ingress_class(text)
        except ValueError as exc:
            raise ReflectionOptionsError("ingress_classes", str(exc)) from None
        classes[local] = remote
    given = {kind + _WORKERS_SUFFIX: count for kind, count in workers.items()}
    options = ReflectionOptions(**given, ingress_classes=classes)
    options.validate()
    return options


def from_values(values: Mapping[str, Any]) -> ReflectionOptions:
    """The options from plain values, as a front end holds them (`<kind>_workers`, `ingress_classes`; missing
    or None: the default), the shape `dataclasses.asdict` gives back.

    ReflectionOptionsError names the first value that is not an option or not valid.
    """
    fields = {kind + _WORKERS_SUFFIX for kind in KINDS}
    for name in values:
        if name not in fields and name != "ingress_classes":
            raise ReflectionOptionsError(
                name, f"not a reflection option (options: {', '.join(sorted(fields))}, ingress_classes)"
            )
    given: dict[str, Any] = {}
    for name in sorted(fields):
        count = values.get(name)
        if count is None:
            continue
        if isinstance(count, bool) or not isinstance(count, int | float) or count != int(count):
            raise ReflectionOptionsError(name, f"{count!r} is not a whole number of workers")
        given[name] = int(count)
    classes = values.get("ingress_classes")
    if classes is not None and not isinstance(classes, Mapping):
        raise ReflectionOptionsError("ingress_classes", f"{classes!r} is not a map of ingress class names")
    mapped = {str(local): str(remote) for local, remote in (classes or {}).items()}
    options = ReflectionOptions(**given, ingress_classes=mapped)
    options.validate()
    return options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The reflection flags, for a component's command line (virtual kubelet, controller manager)."""
    defaults = ReflectionOptions()
    for kind in KINDS:
        parser.add_argument(
            worker_flag(kind),
            dest=kind + _WORKERS_SUFFIX,
            type=int,
            default=defaults.workers(kind),
            help=f"{kind} reflection workers; 0 turns {kind} reflection off (default {defaults.workers(kind)})",
        )
    parser.add_argument(
        INGRESS_CLASS_FLAG,
        dest="ingress_classes",
        action="append",
        default=[],
        metavar="CONSUMER=PROVIDER",
        help="reflect Ingresses of this ingress class with the provider's class (repeatable); other Ingresses "
        "are reflected without a class",
    )


def from_arguments(args: argparse.Namespace) -> ReflectionOptions:
    """The options `add_arguments` parsed; ReflectionOptionsError when one is invalid."""
    return from_flags({kind: getattr(args, kind + _WORKERS_SUFFIX) for kind in KINDS}, args.ingress_classes)


def from_command_line(argv: Sequence[str]) -> ReflectionOptions:
    """The reflection options a component's command line holds (other flags ignored; missing ones: defaults).

    How an installation's options are read back from its controller manager's arguments.
    """
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    add_arguments(parser)
    try:
        known, _ = parser.parse_known_args(list(argv))
    except argparse.ArgumentError as exc:
        raise ReflectionOptionsError(exc.argument_name or "reflection", exc.message) from None
    return from_arguments(known)
