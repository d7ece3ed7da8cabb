"""Peering tokens on a provider cluster: issue one, tell whether it still works (drift), revoke it.

Each token is issued for one consumer (`runtime.forge.tokens`): the cluster keeps only
its SHA-256 in a Secret, so the token itself exists only with the caller (in Terraform
state, or as a Pulumi secret output). Deleting the Secret revokes the token. A token
expires after `DEFAULT_LIFETIME` (24 hours) unless the caller gives another lifetime, and
binds to the first consumer that uses it (or, `single_use`, serves one exchange). A token
whose Secret is gone, changed (no longer its hash) or expired no longer works, and
`observe` says so, so a front end issues a new one (a token bound to its consumer still
works: that consumer may need it again).

With the token goes the fingerprint of the authentication service's key, as the service
publishes it (`authKeyFingerprint` in the identity ConfigMap): the consumer pins it
(`liqo_peer`'s `auth_key_fingerprint`), so even its first contact with the service is
authenticated.
"""

from __future__ import annotations

import hmac
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from runtime.api import constants as c
from runtime.api.kinds import SECRETS
from runtime.api.timestamps import rfc3339
from runtime.core import APIConnectionError, Client, NotFoundError
from runtime.forge.tokens import (
    DEFAULT_LIFETIME,
    generate_token,
    stored_hash,
    token_expiry,
    token_hash,
    token_secret,
    token_secret_name,
)

from .contract import Change, Contract, Input, Refusal
from .identity import NotInstalledError, published
from .unreachable import unreachable
from .waits import NEVER, Stop, wait_until

logger = logging.getLogger(__name__)


#: `liqo_generate` and `Generate`: a token is never changed, only issued anew (both inputs replace it)
CONTRACT: Final = Contract(
    "generate",
    (
        Input("namespace", Change.REPLACE, default=c.DEFAULT_NAMESPACE),
        Input("expires_in", Change.REPLACE),
        Input("single_use", Change.REPLACE),
        Input("force", Change.UPDATE, default=False),
    ),
    timeouts={"create": 120.0, "delete": 60.0},
    refusals=(
        Refusal(
            NotInstalledError,
            "Liqo runtime not installed",
            "The Liqo runtime is not installed in the cluster at {host} (namespace {namespace}): {create} {install} "
            "on this (provider) cluster first, and make {this} depend on it.",
        ),
    ),
)


@dataclass(frozen=True)
class Issued:
    """A token just stored in the cluster, and the identity it lets a consumer peer with."""

    secret_name: str
    token: str
    #: RFC 3339
    expires_at: str
    cluster_id: str
    cluster_name: str
    auth_ep: str
    #: `sha256:<hex>` of the authentication service's key (`runtime.controllers.core.authclient`)
    auth_key_fingerprint: str


async def issue(
    client: Client,
    *,
    namespace: str,
    lifetime: float | None,
    seconds: float,
    field_manager: str,
    single_use: bool = False,
    stop: Stop = NEVER,
) -> Issued:
    """Store a new token's hash in `namespace` and return the token, once the runtime published its identity.

    `lifetime` is in seconds (None: `DEFAULT_LIFETIME`). Waits up to `seconds` for the auth
    service to publish its URL and key fingerprint; raises NotInstalledError when the runtime
    is not installed in `namespace`.
    """
    if await published(client, namespace=namespace) is None:
        raise NotInstalledError(namespace)

    async def ready() -> tuple[dict[str, str] | None, str]:
        identity = await published(client, namespace=namespace) or {}
        if all(
            identity.get(key) for key in (c.IDENTITY_CLUSTER_ID, c.IDENTITY_AUTH_URL, c.IDENTITY_AUTH_KEY)
        ):
            return identity, "published"
        return None, "the auth service has not published its URL and key in the identity ConfigMap yet"

    identity = await wait_until(
        ready, what=f"the Liqo identity in namespace {namespace}", seconds=seconds, stop=stop
    )
    token = generate_token()
    expires_at = datetime.now(UTC) + (timedelta(seconds=lifetime) if lifetime else DEFAULT_LIFETIME)
    await client.create(
        SECRETS,
        token_secret(token, namespace=namespace, expires_at=expires_at, single_use=single_use),
        namespace=namespace,
        field_manager=field_manager,
    )
    return Issued(
        secret_name=token_secret_name(token),
        token=token,
        expires_at=rfc3339(expires_at),
        cluster_id=identity[c.IDENTITY_CLUSTER_ID],
        cluster_name=identity.get(c.IDENTITY_CLUSTER_NAME) or "",
        auth_ep=identity[c.IDENTITY_AUTH_URL],
        auth_key_fingerprint=identity[c.IDENTITY_AUTH_KEY],
    )


async def observe(client: Client, *, namespace: str, name: str, token: str) -> dict[str, str] | None:
    """The identity the token in Secret `name` lets a consumer peer with; None when the token no longer works."""
    try:
        secret = await client.get(SECRETS, name, namespace=namespace)
    except NotFoundError:
        logger.info("%s/%s: the token Secret is gone", namespace, name)
        return None
    stored = stored_hash(secret)
    if stored is None or not hmac.compare_digest(stored, token_hash(token).encode("ascii")):
        logger.info("%s/%s: the token Secret holds another token", namespace, name)
        return None
    try:
        expiry = token_expiry(secret)
    except ValueError:
        expiry = None
    if expiry is not None and expiry <= datetime.now(UTC):
        logger.info("%s/%s: the token expired at %s", namespace, name, expiry)
        return None
    return await published(client, namespace=namespace) or {}


async def revoke(client: Client, *, namespace: str, name: str, force: bool) -> str:
    """Delete the token Secret `name`; why the cluster cannot be reached, in words ("" when it was reached),
    when `force` lets the token go without deleting it (else `unreachable.UnreachableError`)."""
    try:
        await client.delete(SECRETS, name, namespace=namespace)
    except NotFoundError:
        pass
    except APIConnectionError as exc:
        return unreachable(exc, force=force)
    return ""
