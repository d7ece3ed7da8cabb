"""`liqo:index:Generate`: on the provider cluster, a peering token for one consumer, with what the consumer
needs to use it. The token is a secret Output, issued by the `Token` dynamic resource
(`runtime.operations.token`); destroying the component revokes it."""

from typing import NotRequired, TypedDict

import pulumi

from runtime.api import validation
from runtime.operations.token import CONTRACT

from . import _args
from .providers.token import Token

TYPE = "liqo:index:Generate"


class GenerateArgs(TypedDict):
    """The arguments of a Generate (those of `liqo_generate`)."""

    kubeconfig: pulumi.Input[str]
    """A kubeconfig for the provider cluster (its content, YAML or JSON). Kept secret."""
    context: NotRequired[pulumi.Input[str]]
    """The kubeconfig context to use (default: its current context)."""
    namespace: NotRequired[pulumi.Input[str]]
    """Namespace of the Liqo runtime on the provider (default `liqo`)."""
    expires_in: NotRequired[pulumi.Input[str]]
    """How long the token is accepted, as a duration such as "1h" or "720h" (default "24h", as a kubeadm
    bootstrap token); the runtime deletes an expired token's Secret. Changing it issues a new token."""
    single_use: NotRequired[pulumi.Input[bool]]
    """Whether the token serves one exchange only (default false: it serves the first consumer that uses it, as
    often as that consumer needs it until it expires, and no other cluster). Changing it issues a new token."""
    force: NotRequired[pulumi.Input[bool]]
    """Let destroy drop the component when its cluster cannot be reached, leaving the token Secret (the token keeps working) there; without
    it, such a destroy fails and the component stays. Run `pulumi up` with it before the destroy."""


def _duration_problem(text: str) -> str:
    try:
        validation.parse_duration(text)
    except validation.DurationError as exc:
        return f"{exc}."
    return ""


class Generate(pulumi.ComponentResource):
    """Issues a peering token on the provider cluster for one consumer, revoked when the component is
    destroyed, and exposes what a Peer on the consumer needs."""

    cluster_id: pulumi.Output[str]
    """The provider's cluster ID (for `PeerArgs.cluster_id`)."""
    cluster_name: pulumi.Output[str]
    """The provider's cluster name (for `PeerArgs.cluster_name`)."""
    auth_ep: pulumi.Output[str]
    """URL of the provider's authentication service (for `PeerArgs.cluster_authurl`)."""
    auth_key_fingerprint: pulumi.Output[str]
    """Fingerprint of the provider's authentication service key, `sha256:<hex>` (for
    `PeerArgs.auth_key_fingerprint`, which then refuses any other service even on its first contact)."""
    local_token: pulumi.Output[str]
    """The peering token (for `PeerArgs.cluster_token`). Secret."""
    expires_at: pulumi.Output[str]
    """When the token expires (RFC 3339)."""

    def __init__(self, name: str, args: GenerateArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        # checked before anything is registered: a bad argument leaves no half-made component
        values = _args.defaulted(
            CONTRACT,
            _args.checked(
                "Generate",
                args,
                required=("kubeconfig", *CONTRACT.required),
                rules={"namespace": validation.namespace, "expires_in": _duration_problem},
            ),
        )
        bounds = _args.timeouts("Generate", opts, CONTRACT.timeouts)
        super().__init__(TYPE, name, {}, opts)
        token = Token(
            f"{name}-token",
            {
                "kubeconfig": pulumi.Output.secret(values["kubeconfig"]),
                "context": values.get("context"),
                "timeouts": bounds,
                "force": bool(values.get("force")),
                "namespace": values["namespace"],
                "expires_in": values.get("expires_in") or "",
                "single_use": bool(values.get("single_use")),
            },
            _args.child_options(self, opts),
        )
        self.cluster_id = token.cluster_id
        self.cluster_name = token.cluster_name
        self.auth_ep = token.auth_ep
        self.auth_key_fingerprint = token.auth_key_fingerprint
        self.local_token = pulumi.Output.secret(token.local_token)
        self.expires_at = token.expires_at
        self.register_outputs(
            {
                "cluster_id": self.cluster_id,
                "cluster_name": self.cluster_name,
                "auth_ep": self.auth_ep,
                "auth_key_fingerprint": self.auth_key_fingerprint,
                "local_token": self.local_token,
                "expires_at": self.expires_at,
            }
        )
