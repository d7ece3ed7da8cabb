"""`liqo:index:Peer`: on the consumer cluster, an out-of-band peering with a provider, up to a Ready virtual
node (the `Peering` dynamic resource, `runtime.operations.peering`). Its arguments come from a Generate's
outputs on the provider (or plain values); deleting it unpeers, bounded, with the forced path."""

import functools
from collections.abc import Callable
from typing import Any, NotRequired, TypedDict

import pulumi

from runtime.api import validation
from runtime.forge import podsecurity
from runtime.forge.certificates import is_key_fingerprint
from runtime.forge.tokens import is_token
from runtime.operations.peering import CONTRACT, RESOURCE_ARGUMENTS

from . import _args
from .providers.peering import Peering

TYPE = "liqo:index:Peer"


class PeerArgs(TypedDict):
    """The arguments of a Peer (those of `liqo_peer`)."""

    kubeconfig: pulumi.Input[str]
    """A kubeconfig for the consumer cluster (its content, YAML or JSON). Kept secret."""
    cluster_id: pulumi.Input[str]
    """The provider's cluster ID (`Generate.cluster_id`). Changing it replaces the peering."""
    cluster_name: pulumi.Input[str]
    """The provider's cluster name (`Generate.cluster_name`); the virtual node is `liqo-<cluster_name>`.
    Changing it replaces the peering."""
    cluster_authurl: pulumi.Input[str]
    """URL of the provider's authentication service (`Generate.auth_ep`). Changing it replaces the peering."""
    cluster_token: pulumi.Input[str]
    """The peering token the provider issued (`Generate.local_token`). Kept secret; a new token updates its
    Secret in place."""
    context: NotRequired[pulumi.Input[str]]
    """The kubeconfig context to use (default: its current context)."""
    cpu: NotRequired[pulumi.Input[str]]
    """CPU to ask the provider for, as a Kubernetes quantity. Omitted (with every other amount): the
    provider's default share of its free resources. Changes renegotiate in place."""
    memory: NotRequired[pulumi.Input[str]]
    """Memory to ask the provider for, as a Kubernetes quantity. Changes renegotiate in place."""
    pods: NotRequired[pulumi.Input[str]]
    """Number of pods to ask the provider for, as a Kubernetes quantity. Changes renegotiate in place."""
    ephemeral_storage: NotRequired[pulumi.Input[str]]
    """Ephemeral storage to ask the provider for, as a Kubernetes quantity. Changes renegotiate in place."""
    extended_resources: NotRequired[pulumi.Input[dict[str, str]]]
    """Other resources to ask for (such as `nvidia.com/gpu`), name to quantity. Changes renegotiate in place."""
    node_labels: NotRequired[pulumi.Input[dict[str, str]]]
    """Extra labels of the virtual node. Changes apply in place."""
    networking_disabled: NotRequired[pulumi.Input[bool]]
    """Peer without the network fabric (liqoctl's `--networking-disabled`): no gateways and no tunnel, so
    offloaded pods and local pods do not reach each other. Changes apply in place."""
    pod_security: NotRequired[pulumi.Input[str]]
    """The Pod Security Standards level the provider holds this peering's offloaded pods to, in its twin
    namespaces and at admission: `baseline` (default) or `restricted`; never `privileged`. A pod that breaks it
    is not offloaded and says why. Changes apply in place."""
    auth_key_fingerprint: NotRequired[pulumi.Input[str]]
    """Fingerprint of the provider's authentication service key, `sha256:<hex>` (`Generate.auth_key_fingerprint`).
    When set, the consumer talks only to a service holding that key, from the first contact on: another key at
    the authURL is refused before the token is sent (reason AuthServiceKeyChanged, naming both fingerprints).
    Unset, the key met on the first contact is trusted. Changes apply in place."""
    namespace: NotRequired[pulumi.Input[str]]
    """Namespace of the Liqo runtime on this cluster, where the token Secret is kept (default `liqo`)."""
    force: NotRequired[pulumi.Input[bool]]
    """Let destroy drop the component when its cluster cannot be reached, leaving the ForeignCluster and its token Secret there; without
    it, such a destroy fails and the component stays. Run `pulumi up` with it before the destroy."""


class Peer(pulumi.ComponentResource):
    """Peers the consumer cluster with a provider cluster (its identity from a Generate there), up to a Ready
    virtual node standing for the provider."""

    virtual_node: pulumi.Output[str]
    """Name of the virtual node standing for the provider."""
    authentication_status: pulumi.Output[str]
    """Phase of the authentication with the provider (None, Pending, Established, Error)."""
    offloading_status: pulumi.Output[str]
    """Phase of the outgoing peering: resources and virtual node (None, Pending, Established, Disconnecting,
    Error)."""
    networking_status: pulumi.Output[str]
    """Phase of the network fabric towards the provider: Established once the tunnel between the gateways is up
    (None, Pending, Established, Error; None with `networking_disabled`)."""
    remote_version: pulumi.Output[str]
    """Version of the Liqo runtime on the provider."""

    def __init__(self, name: str, args: PeerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        # checked before anything is registered: a bad argument leaves no half-made component
        values = _args.defaulted(CONTRACT, _check(args))
        bounds = _args.timeouts("Peer", opts, CONTRACT.timeouts)
        super().__init__(TYPE, name, {}, opts)
        props: dict[str, Any] = {
            "kubeconfig": pulumi.Output.secret(values["kubeconfig"]),
            "context": values.get("context"),
            "timeouts": bounds,
            "force": bool(values.get("force")),
            "cluster_id": values["cluster_id"],
            "cluster_name": values["cluster_name"],
            "cluster_authurl": values["cluster_authurl"],
            "cluster_token": pulumi.Output.secret(values["cluster_token"]),
            "namespace": values["namespace"],
            "extended_resources": values.get("extended_resources") or {},
            "node_labels": values.get("node_labels") or {},
            "networking_disabled": values["networking_disabled"],
            "pod_security": values["pod_security"],
            # only when given: a peering made before the argument existed sees no change
            **(
                {"auth_key_fingerprint": values["auth_key_fingerprint"]}
                if values.get("auth_key_fingerprint")
                else {}
            ),
            **{argument: values.get(argument) for argument in RESOURCE_ARGUMENTS},
        }
        peering = Peering(f"{name}-peering", props, _args.child_options(self, opts))
        self.virtual_node = peering.virtual_node
        self.authentication_status = peering.authentication_status
        self.offloading_status = peering.offloading_status
        self.networking_status = peering.networking_status
        self.remote_version = peering.remote_version
        self.register_outputs(
            {
                "virtual_node": self.virtual_node,
                "authentication_status": self.authentication_status,
                "offloading_status": self.offloading_status,
                "networking_status": self.networking_status,
                "remote_version": self.remote_version,
            }
        )


def _check(args: PeerArgs) -> dict[str, Any]:
    rules: dict[str, Callable[[Any], str]] = {
        "cluster_id": _cluster_id_problem,
        "cluster_name": validation.cluster_name,
        "cluster_authurl": _authurl_problem,
        "cluster_token": _token_problem,
        **{
            argument: functools.partial(_quantity_problem, resource)
            for argument, resource in RESOURCE_ARGUMENTS.items()
        },
        "extended_resources": _extended_problem,
        "node_labels": _labels_problem,
        "namespace": validation.namespace,
        "pod_security": _pod_security_problem,
        "auth_key_fingerprint": _fingerprint_problem,
    }
    return _args.checked(
        "Peer",
        args,
        required=("kubeconfig", *CONTRACT.required),
        rules=rules,
    )


def _pod_security_problem(value: Any) -> str:
    try:
        podsecurity.level(value)
    except podsecurity.InvalidLevelError as exc:
        return f"{exc}."
    return ""


def _fingerprint_problem(value: Any) -> str:
    if is_key_fingerprint(str(value)):
        return ""
    return (
        f"{value!r} is not a key fingerprint (sha256: and 64 lowercase hexadecimal digits): use "
        "Generate.auth_key_fingerprint of the provider."
    )


def _cluster_id_problem(value: Any) -> str:
    return validation.cluster_id(str(value), source="Generate.cluster_id on the provider")


def _authurl_problem(value: Any) -> str:
    return validation.https_url(str(value), what="authentication URL")


def _token_problem(value: Any) -> str:
    if is_token(str(value).strip()):
        return ""
    return (
        "the value is not a peering token (64 hexadecimal digits): use Generate.local_token of the provider."
    )


def _quantity_problem(what: str, value: str) -> str:
    return validation.quantity(str(value), what=what)


def _extended_problem(resources: dict[str, str]) -> str:
    for key, value in resources.items():
        if key in RESOURCE_ARGUMENTS.values():
            return f"{key!r} has its own argument: set it instead of extended_resources[{key!r}]."
        problem = validation.label_key_problem(key)
        if problem:
            return f"{key!r} is not a resource name: {problem}."
        problem = validation.quantity(str(value), what=key)
        if problem:
            return problem
    return ""


def _labels_problem(labels: dict[str, str]) -> str:
    for key, value in labels.items():
        problem = validation.label_key(key) or validation.label_value(key, str(value))
        if problem:
            return problem
    return ""
