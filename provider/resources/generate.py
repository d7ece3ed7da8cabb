"""`resource "liqo_generate"`: on the provider, a peering token for one consumer, with what the consumer
needs to use it (`cluster_id`, `cluster_name`, `auth_ep`, `auth_key_fingerprint`, `local_token`).

Each resource issues its own token (`runtime.operations.token`): the cluster keeps only
its SHA-256 in a Secret, the token itself exists only in the Terraform state (sensitive).
The token expires (24 hours unless `expires_in` says otherwise) and serves only the first
consumer that uses it (`single_use`: one exchange). Destroying the resource deletes the
Secret, which revokes the token. Read treats a token whose Secret is gone, changed (no
longer its hash) or expired as gone, so the next apply issues a new one (and a
`liqo_peer` using it gets the new token in place), and refreshes the auth service's key
fingerprint (a provider whose key was replaced hands the new one to `liqo_peer`).
A token cannot be imported: the cluster never knew it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, Final

from tf.schema import Schema
from tf.types import Bool, String
from tf.utils import Diagnostics

from runtime.api import constants as c
from runtime.api import validation
from runtime.operations import token
from runtime.operations.token import CONTRACT, Issued

from ..framework.contract import flags, refuse
from ..framework.diagnostics import dropped
from ..framework.resource import ApplyContext, ImportContext, PlanContext, ReadContext, Resource, State, call
from ..framework.schema import Attribute
from ..framework.timeouts import block as timeouts_block
from . import checks, force

if TYPE_CHECKING:
    from runtime.core import Client


logger = logging.getLogger(__name__)

TYPE_NAME: Final = "liqo_generate"


class GenerateResource(Resource):
    name: ClassVar[str] = "generate"
    timeouts: ClassVar[Mapping[str, float]] = CONTRACT.timeouts
    read_seconds: ClassVar[float] = CONTRACT.read_seconds
    schema: ClassVar[Schema] = Schema(
        description=(
            "On the provider cluster: issues a peering token for one consumer, revoked when the resource is "
            "destroyed, and exposes what `liqo_peer` on the consumer needs."
        ),
        attributes=[
            Attribute(
                "id",
                String(),
                computed=True,
                use_state_for_unknown=True,
                description="Name of the Secret that holds the token's hash in the provider cluster.",
            ),
            Attribute(
                "namespace",
                String(),
                **flags(CONTRACT, "namespace"),
                description=f"Namespace of the Liqo runtime on the provider (default `{c.DEFAULT_NAMESPACE}`).",
            ),
            Attribute(
                "expires_in",
                String(),
                **flags(CONTRACT, "expires_in"),
                description=(
                    'How long the token is accepted, as a duration such as "1h" or "720h" (default "24h", as a '
                    "kubeadm bootstrap token). An expired token is refused, its Secret deleted by the runtime, "
                    "and issued again on the next apply; established peerings are not affected (they renew "
                    "their credential with their own key)."
                ),
            ),
            Attribute(
                "single_use",
                Bool(),
                optional=True,
                requires_replace=True,
                description=(
                    "Whether the token serves one exchange only (default false: it serves the first consumer "
                    "that uses it, as often as that consumer needs it until it expires, and no other cluster)."
                ),
            ),
            Attribute(
                "cluster_id",
                String(),
                computed=True,
                use_state_for_unknown=True,
                description="The provider's cluster ID (for `liqo_peer.cluster_id`).",
            ),
            Attribute(
                "cluster_name",
                String(),
                computed=True,
                use_state_for_unknown=True,
                description="The provider's cluster name (for `liqo_peer.cluster_name`).",
            ),
            Attribute(
                "auth_ep",
                String(),
                computed=True,
                use_state_for_unknown=True,
                description="URL of the provider's authentication service (for `liqo_peer.cluster_authurl`).",
            ),
            Attribute(
                "auth_key_fingerprint",
                String(),
                computed=True,
                use_state_for_unknown=True,
                description=(
                    "Fingerprint of the provider's authentication service key, `sha256:<hex>` (for "
                    "`liqo_peer.auth_key_fingerprint`, which then refuses any other service even on its first "
                    "contact). Follows the key when the provider replaces it."
                ),
            ),
            Attribute(
                "local_token",
                String(),
                computed=True,
                sensitive=True,
                use_state_for_unknown=True,
                description=(
                    "The peering token (for `liqo_peer.cluster_token`). Sensitive; kept in the state only, "
                    "as the cluster stores its hash."
                ),
            ),
            Attribute(
                "expires_at",
                String(),
                computed=True,
                use_state_for_unknown=True,
                description='When the token expires (RFC 3339; "" for a token issued without expiry by an earlier version).',
            ),
            force.attribute(CONTRACT, "the token Secret (the token keeps working)"),
        ],
        block_types=[timeouts_block(CONTRACT.timeouts)],
    )

    def check(self, diags: Diagnostics, config: State) -> None:
        checks.namespace(diags, config.get("namespace"), path=["namespace"])
        expires_in = config.get("expires_in")
        if checks.known(expires_in):
            try:
                validation.parse_duration(str(expires_in))
            except validation.DurationError as exc:
                diags.add_error("Invalid expires_in", f"{exc}.", path=["expires_in"])

    def plan(self, ctx: PlanContext, current: State | None, planned: State) -> State:
        if ctx.config.get("namespace") is None:
            planned = {**planned, "namespace": c.DEFAULT_NAMESPACE}
        planned = {**planned, "force": force.planned(ctx.config, current)}
        return planned

    def create(self, ctx: ApplyContext, planned: State) -> State | None:
        namespace = str(planned["namespace"])
        seconds = self.seconds(ctx.config, "create")
        expires_in = planned.get("expires_in")
        lifetime = validation.parse_duration(str(expires_in)) if expires_in else None

        async def issue(client: Client) -> Issued | Exception:
            try:
                return await token.issue(
                    client,
                    namespace=namespace,
                    lifetime=lifetime,
                    seconds=seconds,
                    field_manager=c.FIELD_MANAGER_TERRAFORM,
                    single_use=planned.get("single_use") is True,
                    stop=ctx.stop,
                )
            except CONTRACT.refused as exc:
                return exc

        issued = call(
            ctx.diagnostics,
            self.provider.kube,
            issue,
            what=f"issue a peering token in namespace {namespace}",
            seconds=seconds + 10,
        )
        if isinstance(issued, Exception):
            refuse(
                ctx.diagnostics,
                CONTRACT,
                issued,
                TYPE_NAME,
                namespace=namespace,
                host=self.provider.kube.host,
            )
            return None
        if issued is None:
            return None
        return {
            **planned,
            "id": issued.secret_name,
            "cluster_id": issued.cluster_id,
            "cluster_name": issued.cluster_name,
            "auth_ep": issued.auth_ep,
            "auth_key_fingerprint": issued.auth_key_fingerprint,
            "local_token": issued.token,
            "expires_at": issued.expires_at,
        }

    def update(self, ctx: ApplyContext, current: State, planned: State) -> State | None:
        # every input but the timeouts and force forces a new token: nothing to change in the cluster
        return {**current, "timeouts": planned.get("timeouts"), "force": planned.get("force")}

    def read(self, ctx: ReadContext, current: State) -> State | None:
        namespace = str(current.get("namespace") or c.DEFAULT_NAMESPACE)
        name = str(current.get("id") or "")
        return self.refreshed(
            ctx,
            current,
            lambda client: token.observe(
                client, namespace=namespace, name=name, token=str(current.get("local_token") or "")
            ),
            what=f"read the peering token Secret {namespace}/{name}",
            gone=f"the token of Secret {namespace}/{name} no longer works; it is issued again",
            state=lambda identity: {
                **current,
                "cluster_id": identity.get(c.IDENTITY_CLUSTER_ID) or "",
                "cluster_name": identity.get(c.IDENTITY_CLUSTER_NAME) or "",
                "auth_ep": identity.get(c.IDENTITY_AUTH_URL) or "",
                "auth_key_fingerprint": identity.get(c.IDENTITY_AUTH_KEY) or "",
            },
        )

    def delete(self, ctx: ApplyContext, current: State) -> None:
        namespace = str(current.get("namespace") or c.DEFAULT_NAMESPACE)
        name = str(current.get("id") or "")
        if not name:
            return
        unreachable = call(
            ctx.diagnostics,
            self.provider.kube,
            lambda client: token.revoke(
                client, namespace=namespace, name=name, force=current.get("force") is True
            ),
            what=f"revoke the peering token (delete Secret {namespace}/{name})",
            seconds=self.seconds(current, "delete"),
        )
        if unreachable:
            dropped(
                ctx.diagnostics,
                summary="Cluster unreachable: token dropped from the state",
                error=unreachable,
                kept=f"the token Secret {namespace}/{name}",
                comes_back="delete that Secret to revoke the token",
            )

    def import_(self, ctx: ImportContext, id: str) -> State | None:
        ctx.diagnostics.add_error(
            "liqo_generate cannot be imported",
            "The cluster keeps only a hash of each peering token, so an existing token cannot be read back into "
            "the state. Let Terraform issue a new one (apply without import); to revoke a token made "
            "elsewhere, delete its Secret (label liqo.io/peering-token=true) in the runtime's namespace.",
        )
        return None
