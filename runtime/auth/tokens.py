"""Peering token verification: the presented token's SHA-256 against the token Secrets' hashes.

The Secrets labelled `liqo.io/peering-token=true` in the runtime's namespace are read
through an informer, so refusing a wrong token costs no API request (failures are what
an attacker can produce at will). Every cached hash is compared in constant time, with
no early exit. Only a match is confirmed with one fresh read of its Secret, so a token
revoked a moment ago (its Secret deleted, not yet seen by the watch) or one whose expiry
was just set is refused at once. The token itself is never logged; the Secret's name is.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from runtime.api.kinds import SECRETS
from runtime.api.objects import JSON
from runtime.core import Client, Informer, NotFoundError
from runtime.forge.tokens import is_token, stored_hash, token_expiry, token_hash

from .errors import InvalidTokenError

logger = logging.getLogger(__name__)


def utc_now() -> datetime:
    return datetime.now(UTC)


class PeeringTokens:
    def __init__(
        self,
        client: Client,
        secrets: Informer,
        *,
        namespace: str,
        now: Callable[[], datetime] = utc_now,
    ) -> None:
        self._client = client
        self._secrets = secrets
        self._namespace = namespace
        self._now = now

    async def verify(self, token: str) -> JSON:
        """The token's Secret, as read just now; InvalidTokenError if the token is unknown, revoked or expired.

        Whether the token is bound to another consumer is the issuer's check (it knows the Tenants)."""
        if not is_token(token):
            logger.info("%s: refused a peering token that is not 64 hex digits", self._namespace)
            raise InvalidTokenError()
        digest = token_hash(token).encode("ascii")
        match: JSON | None = None
        for secret in self._secrets.store:
            stored = stored_hash(secret)
            if stored is not None and hmac.compare_digest(stored, digest) and match is None:
                match = secret
        if match is None:
            logger.info("%s: refused a peering token that matches no token Secret", self._namespace)
            raise InvalidTokenError()
        name = str(match["metadata"]["name"])
        try:
            fresh = await self._client.get(SECRETS, name, namespace=self._namespace)
        except NotFoundError:
            logger.info("%s/%s: refused a revoked peering token (the Secret is gone)", self._namespace, name)
            raise InvalidTokenError() from None
        stored = stored_hash(fresh)
        if stored is None or not hmac.compare_digest(stored, digest):
            logger.info("%s/%s: refused a peering token whose Secret changed", self._namespace, name)
            raise InvalidTokenError()
        self._check_expiry(fresh, name)
        return fresh

    def _check_expiry(self, secret: JSON, name: str) -> None:
        try:
            expiry = token_expiry(secret)
        except ValueError as exc:
            logger.warning(
                "%s/%s: refused its peering token: the expiry annotation is unreadable (%s); "
                "fix the annotation or create a new token",
                self._namespace,
                name,
                exc,
            )
            raise InvalidTokenError() from None
        if expiry is not None and expiry <= self._now():
            logger.info("%s/%s: refused an expired peering token (expired %s)", self._namespace, name, expiry)
            raise InvalidTokenError()
