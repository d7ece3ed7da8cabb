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

The policy of each kind (Liqo's `reflection.<kind>.type`, flag `--<kind>-reflection-type`):
`DenyList` (the default) reflects every object of an offloaded namespace but those annotated
`liqo.io/skip-reflection`; `AllowList` reflects only those annotated `liqo.io/allow-reflection`.
ConfigMaps, Secrets, Services and Ingresses take a type; EndpointSlices follow their
Service (`service_type`) unless a slice carries one of the annotations itself; pods and
Events follow the reflection's own logic (a pod bound to the virtual node is offloaded),
as in Liqo. `labels_not_reflected` and `annotations_not_reflected` are keys never copied
to the provider, whatever the kind (Liqo's `reflection.skip.labels` and `.annotations`).

`ingress_classes` maps a consumer's ingress class to the provider's: a reflected Ingress
keeps no class (the provider's default serves it, as Liqo does) unless its class is mapped.

`api_server_support` (Liqo's `--api-server-support`) is what an offloaded pod's ServiceAccount
token is good for: `TokenAPI` (the default, Liqo's too) sends the provider tokens of the pod's
own ServiceAccount issued by its home API server, so it talks to its home cluster as at home
(`runtime.forge.serviceaccounts`); `Disabled` keeps every token home (no offloaded pod gets one).
A pod may still ask for a token of the provider's (`liqo.io/api-server-support: remote`) or for
none (`disabled`): see `runtime.forge.pods.api_server_support`. Liqo's `Legacy` (Secret-based
tokens, gone from Kubernetes since 1.24) is not offered.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.api.validation import label_key_problem

from .meta import is_allowed, is_skipped

#: the reflected kinds, in the order their flags are written (Liqo's names)
KINDS: Final = ("pod", "configmap", "secret", "service", "endpointslice", "ingress", "event")
#: the kinds whose reflection type can be set (Liqo's: the others follow their own logic)
TYPED_KINDS: Final = ("configmap", "secret", "service", "ingress")
ReflectionType = Literal["DenyList", "AllowList"]
REFLECTION_TYPES: Final[tuple[str, ...]] = get_args(ReflectionType)
APIServerSupport = Literal["TokenAPI", "Disabled"]
API_SERVER_SUPPORTS: Final[tuple[str, ...]] = get_args(APIServerSupport)
TOKEN_API: Final = "TokenAPI"
API_SERVER_SUPPORT_FLAG: Final = "--api-server-support"
DENY_LIST: Final = "DenyList"
ALLOW_LIST: Final = "AllowList"
INGRESS_CLASS_FLAG: Final = "--ingress-class"
LABELS_NOT_REFLECTED_FLAG: Final = "--labels-not-reflected"
ANNOTATIONS_NOT_REFLECTED_FLAG: Final = "--annotations-not-reflected"
_WORKERS_SUFFIX: Final = "_workers"
_TYPE_SUFFIX: Final = "_type"
_FLAG_SUFFIX: Final = "-reflection-workers"
_TYPE_FLAG_SUFFIX: Final = "-reflection-type"
_KEY_LISTS: Final = ("labels_not_reflected", "annotations_not_reflected")
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
    #: the policy of each of `TYPED_KINDS`: every object but the skipped ones, or only the allowed ones
    configmap_type: ReflectionType = "DenyList"
    secret_type: ReflectionType = "DenyList"
    service_type: ReflectionType = "DenyList"
    ingress_type: ReflectionType = "DenyList"
    #: label and annotation keys never copied to the provider (of any kind)
    labels_not_reflected: tuple[str, ...] = ()
    annotations_not_reflected: tuple[str, ...] = ()
    #: what offloaded pods' ServiceAccount tokens are for: their home API server (TokenAPI), or none (Disabled)
    api_server_support: APIServerSupport = "TokenAPI"

    def workers(self, kind: str) -> int:
        """The worker count of one of `KINDS`."""
        return int(getattr(self, kind + _WORKERS_SUFFIX))

    def type_of(self, kind: str) -> ReflectionType:
        """The policy of one of `KINDS` (EndpointSlices: their Services'; pods and Events: DenyList, as they
        are never skipped by annotation)."""
        if kind == "endpointslice":
            kind = "service"
        return getattr(self, kind + _TYPE_SUFFIX) if kind in TYPED_KINDS else DENY_LIST

    def reflects(self, kind: str, obj: JSON | None) -> bool:
        """Whether an object of `kind` is reflected under its kind's policy and its own annotations: never
        with `liqo.io/skip-reflection`, always with `liqo.io/allow-reflection`, else as its kind's type says."""
        if is_skipped(obj):
            return False
        return is_allowed(obj) or self.type_of(kind) == DENY_LIST

    def stripped(self, obj: JSON) -> JSON:
        """`obj` without the labels and annotations never reflected (a shallow copy; `obj` is left alone)."""
        meta = dict(obj.get("metadata") or {})
        for key, dropped in (
            ("labels", self.labels_not_reflected),
            ("annotations", self.annotations_not_reflected),
        ):
            if dropped and meta.get(key):
                meta[key] = {name: value for name, value in meta[key].items() if name not in dropped}
        return {**obj, "metadata": meta}

    def validate(self) -> None:
        """Raise ReflectionOptionsError naming the first invalid option."""
        for kind in KINDS:
            count = self.workers(kind)
            if isinstance(count, bool) or not 0 <= count <= MAX_WORKERS:
                raise ReflectionOptionsError(
                    kind + _WORKERS_SUFFIX,
                    f"{count!r} is not a worker count in 0..{MAX_WORKERS} (0 turns it off)",
                )
        for kind in TYPED_KINDS:
            kind_type = getattr(self, kind + _TYPE_SUFFIX)
            if kind_type not in REFLECTION_TYPES:
                raise ReflectionOptionsError(
                    kind + _TYPE_SUFFIX,
                    f"{kind_type!r} is not a reflection type (DenyList: every {kind} but those annotated "
                    f"{c.ANNOTATION_SKIP_REFLECTION}; AllowList: only those annotated {c.ANNOTATION_ALLOW_REFLECTION})",
                )
        for option in _KEY_LISTS:
            for key in getattr(self, option):
                problem = label_key_problem(str(key))
                if problem:
                    raise ReflectionOptionsError(
                        option, f"{key!r} is not a label or annotation key: {problem}"
                    )
        if self.api_server_support not in API_SERVER_SUPPORTS:
            raise ReflectionOptionsError(
                "api_server_support",
                f"{self.api_server_support!r} is not an API server support (TokenAPI: offloaded pods get tokens "
                "of their home API server; Disabled: no token leaves this cluster)",
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
        flags += [f"--{kind}{_TYPE_FLAG_SUFFIX}={getattr(self, kind + _TYPE_SUFFIX)}" for kind in TYPED_KINDS]
        flags += [
            f"{INGRESS_CLASS_FLAG}={local}={remote}" for local, remote in sorted(self.ingress_classes.items())
        ]
        flags += [f"{LABELS_NOT_REFLECTED_FLAG}={key}" for key in self.labels_not_reflected]
        flags += [f"{ANNOTATIONS_NOT_REFLECTED_FLAG}={key}" for key in self.annotations_not_reflected]
        flags.append(f"{API_SERVER_SUPPORT_FLAG}={self.api_server_support}")
        return flags


def annotated(obj: JSON | None) -> bool:
    """Whether an object says itself whether it is reflected (`liqo.io/skip-reflection` or
    `liqo.io/allow-reflection`)."""
    return is_skipped(obj) or is_allowed(obj)


def worker_flag(kind: str) -> str:
    """`--<kind>-reflection-workers`."""
    return f"--{kind}{_FLAG_SUFFIX}"


def parse_ingress_class(text: str) -> tuple[str, str]:
    """`<consumer class>=<provider class>` as a pair; ValueError otherwise."""
    local, sep, remote = text.partition("=")
    if not sep or not local or not remote:
        raise ValueError(f"{text!r} is not <consumer class>=<provider class>")
    return local, remote


def from_flags(
    workers: Mapping[str, int],
    ingress_classes: Sequence[str] = (),
    *,
    types: Mapping[str, str] | None = None,
    labels_not_reflected: Sequence[str] = (),
    annotations_not_reflected: Sequence[str] = (),
    api_server_support: str = TOKEN_API,
) -> ReflectionOptions:
    """The options from parsed flags: worker counts and types by kind (missing: the default), `a=b` class
    pairs, the keys never reflected and the API server support.

    ReflectionOptionsError when a value is invalid.
    """
    unknown = set(workers) - set(KINDS)
    if unknown:
        raise ReflectionOptionsError("workers", f"no reflected kind {', '.join(sorted(unknown))}")
    for kind in types or {}:
        _check_typed(kind)
    classes: dict[str, str] = {}
    for text in ingress_classes:
        try:
            local, remote = parse_ingress_class(text)
        except ValueError as exc:
            raise ReflectionOptionsError("ingress_classes", str(exc)) from None
        classes[local] = remote
    given: dict[str, Any] = {kind + _WORKERS_SUFFIX: count for kind, count in workers.items()}
    given |= {kind + _TYPE_SUFFIX: kind_type for kind, kind_type in (types or {}).items()}
    given["api_server_support"] = api_server_support
    options = ReflectionOptions(
        **given,
        ingress_classes=classes,
        labels_not_reflected=tuple(labels_not_reflected),
        annotations_not_reflected=tuple(annotations_not_reflected),
    )
    options.validate()
    return options


def _check_typed(kind: str) -> None:
    """ReflectionOptionsError unless `kind` takes a reflection type."""
    if kind in TYPED_KINDS:
        return
    option = kind + _TYPE_SUFFIX
    if kind == "endpointslice":
        why = "EndpointSlices follow their Service (service_type), or their own annotations"
    elif kind in KINDS:
        why = f"{kind}s follow the reflection's own logic, as in Liqo"
    else:
        why = f"{kind!r} is not a reflected kind"
    raise ReflectionOptionsError(
        option, f"{why}; the kinds that take a reflection type are {', '.join(TYPED_KINDS)}"
    )


def from_values(values: Mapping[str, Any]) -> ReflectionOptions:
    """The options from plain values, as a front end holds them (`<kind>_workers`, `<kind>_type`,
    `ingress_classes`, `labels_not_reflected`, `annotations_not_reflected`, `api_server_support`; missing or
    None: the default),
    the shape `dataclasses.asdict` gives back.

    ReflectionOptionsError names the first value that is not an option or not valid.
    """
    fields = {kind + _WORKERS_SUFFIX for kind in KINDS}
    types = {kind + _TYPE_SUFFIX for kind in TYPED_KINDS}
    for name in values:
        if name.endswith(_TYPE_SUFFIX) and name not in types:
            _check_typed(name.removesuffix(_TYPE_SUFFIX))
        if name not in fields | types | {"ingress_classes", "api_server_support", *_KEY_LISTS}:
            raise ReflectionOptionsError(
                name,
                f"not a reflection option (options: {', '.join(sorted(fields | types))}, ingress_classes, "
                f"{', '.join(_KEY_LISTS)}, api_server_support)",
            )
    given: dict[str, Any] = {}
    for name in sorted(fields):
        count = values.get(name)
        if count is None:
            continue
        if isinstance(count, bool) or not isinstance(count, int | float) or count != int(count):
            raise ReflectionOptionsError(name, f"{count!r} is not a whole number of workers")
        given[name] = int(count)
    for name in (*sorted(types), "api_server_support"):
        if values.get(name) is not None:
            given[name] = values[name]
    for name in _KEY_LISTS:
        keys = values.get(name)
        if keys is None:
            continue
        if isinstance(keys, str | bytes) or not isinstance(keys, Sequence):
            raise ReflectionOptionsError(name, f"{keys!r} is not a list of label or annotation keys")
        given[name] = tuple(str(key) for key in keys)
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
    for kind in TYPED_KINDS:
        parser.add_argument(
            f"--{kind}{_TYPE_FLAG_SUFFIX}",
            dest=kind + _TYPE_SUFFIX,
            default=defaults.type_of(kind),
            help=f"{kind} reflection type: DenyList (every {kind} but those annotated "
            f"{c.ANNOTATION_SKIP_REFLECTION}) or AllowList (only those annotated {c.ANNOTATION_ALLOW_REFLECTION}) "
            f"(default {defaults.type_of(kind)})",
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
    for flag, dest, what in (
        (LABELS_NOT_REFLECTED_FLAG, "labels_not_reflected", "label"),
        (ANNOTATIONS_NOT_REFLECTED_FLAG, "annotations_not_reflected", "annotation"),
    ):
        parser.add_argument(
            flag,
            dest=dest,
            action="append",
            default=[],
            metavar="KEY",
            help=f"a {what} key never copied to the provider, of any reflected object (repeatable)",
        )
    parser.add_argument(
        API_SERVER_SUPPORT_FLAG,
        dest="api_server_support",
        default=TOKEN_API,
        help="what offloaded pods' ServiceAccount tokens are for: TokenAPI (tokens of their home API server, "
        "issued for them) or Disabled (no token leaves this cluster); a pod's own "
        f"{c.ANNOTATION_API_SERVER_SUPPORT} annotation says remote or disabled (default {TOKEN_API})",
    )


def from_arguments(args: argparse.Namespace) -> ReflectionOptions:
    """The options `add_arguments` parsed; ReflectionOptionsError when one is invalid."""
    return from_flags(
        {kind: getattr(args, kind + _WORKERS_SUFFIX) for kind in KINDS},
        args.ingress_classes,
        types={kind: getattr(args, kind + _TYPE_SUFFIX) for kind in TYPED_KINDS},
        labels_not_reflected=args.labels_not_reflected,
        annotations_not_reflected=args.annotations_not_reflected,
        api_server_support=args.api_server_support,
    )


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
