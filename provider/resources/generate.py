"""`resource "liqo_generate"`: on the provider, a peering token for one consumer, with what the consumer
needs to use it (`cluster_id`, `cluster_name`, `auth_ep`, `local_token`).

Each resource issues its own token (`runtime.forge.tokens`): the cluster keeps only its
SHA-256 in a Secret, the token itself exists only in the Terraform state (sensitive).
Destroying the resource deletes the Secret, which revokes the token. Read treats a
token whose Secret is gone, changed (no longer its hash) or expired as gone, so the next
apply issues a new one (and a `liqo_peer` using it gets the new token in place).
A token cannot be imported: the cluster never knew it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, ClassVar, Final

from tf.iface import ImportContext, ReadContext, UpgradeContext
from tf.schema import Schema
from tf.types import String
from tf.utils import Diagnostics

from runtime.api import constants as c

from ..framework import timeouts
from ..framework.resource import ApplyContext, PlanContext, Resource, State, call
from ..framework.schema import Attribute
from ..framework.timeouts import block as timeouts_block
from . import checks

if TYPE_CHECKING:
    from runtime.core import Client

logger = logging.getLogger(__name__)

TIMEOUTS: Final = {"create": 120.0, "delete": 60.0}
READ_SECONDS: Final = 60.0


@dataclass(frozen=True)
class Issued:
    """A token just stored in the cluster, and the identity it lets a consumer peer with."""

    secret_name: str
    token: str
    expires_at: str
    cluster_id: str
    cluster_name: str
    auth_ep: str


@dataclass(frozen=True)
class _NotInstalled:
    pass


class GenerateResource(Resource):
    name: ClassVar[str] = "generate"
    timeouts: ClassVar[Mapping[str, float]] = TIMEOUTS
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
                optional=True,
                computed=True,
                requires_replace=True,
                default=c.DEFAULT_NAMESPACE,
                description=f"Namespace of the Liqo runtime on the provider (default `{c.DEFAULT_NAMESPACE}`).",
            ),
            Attribute(
                "expires_in",
                String(),
                optional=True,
                requires_replace=True,
                description=(
                    'How long the token is accepted for new peerings, as a duration such as "24h" (default: '
                    "until the resource is destroyed). An expired token is issued again on the next apply; "
                    "established peerings are not affected."
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
                description='When the token expires (RFC 3339), "" when it does not.',
            ),
        ],
        block_types=[timeouts_block(TIMEOUTS)],
    )

    def upgrade(self, ctx: UpgradeContext, version: int, old: State) -> State:
        """Schema version 0 is the only one: a stored state needs no upgrade."""
        return old

    def check(self, diags: Diagnostics, config: State) -> None:
        checks.namespace(diags, config.get("namespace"), path=["namespace"])
        expires_in = config.get("expires_in")
        if checks.known(expires_in):
            try:
                timeouts.parse_duration(str(expires_in))
            except timeouts.DurationError as exc:
                diags.add_error("Invalid expires_in", f"{exc}.", path=["expires_in"])

    def plan(self, ctx: PlanContext, current: State | None, planned: State) -> State:  # type: ignore[override]
        if ctx.config.get("namespace") is None:
            planned = {**planned, "namespace": c.DEFAULT_NAMESPACE}
        return planned

    def create(self, ctx: ApplyContext, planned: State) -> State | None:  # type: ignore[override]
        namespace = str(planned["namespace"])
        seconds = self.seconds(ctx.config, "create")
        expires_in = planned.get("expires_in")
        lifetime = timeouts.parse_duration(str(expires_in)) if expires_in else None

        issued = call(
            ctx.diagnostics,
            self.provider.kube,
            lambda client: _issue(client, namespace, lifetime=lifetime, seconds=seconds, ctx=ctx),
            what=f"issue a peering token in namespace {namespace}",
            seconds=seconds + 10,
        )
        if isinstance(issued, _NotInstalled):
            _not_installed(ctx.diagnostics, host=self.provider.kube.host, namespace=namespace)
            return None
        if issued is None:
            return None
        return {
            **planned,
            "id": issued.secret_name,
            "cluster_id": issued.cluster_id,
            "cluster_name": issued.cluster_name,
            "auth_ep": issued.auth_ep,
            "local_token": issued.token,
            "expires_at": issued.expires_at,
        }

    def update(self, ctx: ApplyContext, current: State, planned: State) -> State | None:  # type: ignore[override]
        # every input but the timeouts forces a new token: nothing to change in the cluster
        return {**current, "timeouts": planned.get("timeouts")}

    def read(self, ctx: ReadContext, current: State) -> State | None:
        namespace = str(current.get("namespace") or c.DEFAULT_NAMESPACE)
        name = str(current.get("id") or "")
        found = call(
            ctx.diagnostics,
            self.provider.kube,
            lambda client: _observe(client, namespace, name, token=str(current.get("local_token") or "")),
            what=f"read the peering token Secret {namespace}/{name}",
            seconds=READ_SECONDS,
        )
        if ctx.diagnostics.has_errors():
            return current
        if found is None:
            return None
        identity = found
        return {
            **current,
            "cluster_id": identity.get(c.IDENTITY_CLUSTER_ID) or "",
            "cluster_name": identity.get(c.IDENTITY_CLUSTER_NAME) or "",
            "auth_ep": identity.get(c.IDENTITY_AUTH_URL) or "",
        }

    def delete(self, ctx: ApplyContext, current: State) -> None:  # type: ignore[override]
        namespace = str(current.get("namespace") or c.DEFAULT_NAMESPACE)
        name = str(current.get("id") or "")
        if not name:
            return
        unreachable = call(
            ctx.diagnostics,
            self.provider.kube,
            lambda client: _revoke(client, namespace, name),
            what=f"revoke the peering token (delete Secret {namespace}/{name})",
            seconds=self.seconds(current, "delete"),
        )
        if unreachable:
            ctx.diagnostics.add_warning(
                "Cluster unreachable: token dropped from the state",
                f"The cluster at {self.provider.kube.host} cannot be reached ({unreachable}), so the token "
                f"Secret {namespace}/{name} was not deleted; it is removed from the state as the cluster is "
                "gone. If the cluster comes back, delete that Secret to revoke the token.",
            )

    def import_(self, ctx: ImportContext, id: str) -> State | None:
        ctx.diagnostics.add_error(
            "liqo_generate cannot be imported",
            "The cluster keeps only a hash of each peering token, so an existing token cannot be read back into "
            "the state. Let Terraform issue a new one (apply without import); to revoke a token made "
            "elsewhere, delete its Secret (label liqo.io/peering-token=true) in the runtime's namespace.",
        )
        return None


async def _published(client: Client, namespace: str) -> dict[str, str] | None:
    """The identity ConfigMap's data, or None when the runtime is not installed in `namespace`."""
    from runtime.api.kinds import CONFIGMAPS
    from runtime.core import NotFoundError

    try:
        configmap = await client.get(CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace=namespace)
    except NotFoundError:
        return None
    return {str(k): str(v) for k, v in (configmap.get("data") or {}).items()}


async def _issue(
    client: Client, namespace: str, *, lifetime: float | None, seconds: float, ctx: ApplyContext
) -> Issued | _NotInstalled:
    from runtime.api.kinds import SECRETS
    from runtime.forge.credential import rfc3339
    from runtime.forge.tokens import generate_token, token_secret, token_secret_name

    from ..framework.waits import wait_until

    if await _published(client, namespace) is None:
        return _NotInstalled()

    async def published() -> tuple[dict[str, str] | None, str]:
        identity = await _published(client, namespace) or {}
        if identity.get(c.IDENTITY_CLUSTER_ID) and identity.get(c.IDENTITY_AUTH_URL):
            return identity, "published"
        return None, "the auth service has not published its URL in the identity ConfigMap yet"

    identity = await wait_until(
        published, what=f"the Liqo identity in namespace {namespace}", seconds=seconds, stop=ctx.stop
    )
    token = generate_token()
    expires_at = datetime.now(UTC) + timedelta(seconds=lifetime) if lifetime else None
    await client.create(
        SECRETS,
        token_secret(token, namespace=namespace, expires_at=expires_at),
        namespace=namespace,
        field_manager=c.FIELD_MANAGER_TERRAFORM,
    )
    return Issued(
        secret_name=token_secret_name(token),
        token=token,
        expires_at=rfc3339(expires_at) if expires_at is not None else "",
        cluster_id=identity[c.IDENTITY_CLUSTER_ID],
        cluster_name=identity.get(c.IDENTITY_CLUSTER_NAME) or "",
        auth_ep=identity[c.IDENTITY_AUTH_URL],
    )


async def _observe(client: Client, namespace: str, name: str, *, token: str) -> dict[str, str] | None:
    """The identity the token lets a consumer peer with; None when the token no longer works."""
    import hmac

    from runtime.api.kinds import SECRETS
    from runtime.core import NotFoundError
    from runtime.forge.tokens import stored_hash, token_expiry, token_hash

    try:
        secret = await client.get(SECRETS, name, namespace=namespace)
    except NotFoundError:
        logger.info("%s/%s: the token Secret is gone; the token is issued again", namespace, name)
        return None
    stored = stored_hash(secret)
    if stored is None or not hmac.compare_digest(stored, token_hash(token).encode("ascii")):
        logger.info("%s/%s: the token Secret holds another token; the token is issued again", namespace, name)
        return None
    try:
        expiry = token_expiry(secret)
    except ValueError:
        expiry = None
    if expiry is not None and expiry <= datetime.now(UTC):
        logger.info("%s/%s: the token expired at %s; it is issued again", namespace, name, expiry)
        return None
    return await _published(client, namespace) or {}


async def _revoke(client: Client, namespace: str, name: str) -> str:
    """Delete the token Secret; the error when the cluster cannot be reached ("" otherwise)."""
    from runtime.api.kinds import SECRETS
    from runtime.core import APIConnectionError, NotFoundError

    try:
        await client.delete(SECRETS, name, namespace=namespace)
    except NotFoundError:
        pass
    except APIConnectionError as exc:
        return str(exc)
    return ""


def _not_installed(diagnostics: Diagnostics, *, host: str, namespace: str) -> None:
    diagnostics.add_error(
        "Liqo runtime not installed",
        f"The Liqo runtime is not installed in the cluster at {host} (namespace {namespace}): apply a "
        "liqo_install resource on this (provider) cluster first, and make liqo_generate depend on it.",
    )
