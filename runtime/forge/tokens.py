"""Peering tokens: generation, hashing, and the Secret that lets the auth service recognise one.

A provider hands a consumer a random token (`liqo_generate` outputs it, marked
sensitive). The cluster keeps only its SHA-256, in a Secret labelled
`liqo.io/peering-token=true` in the runtime's namespace, with its expiry (24 hours unless
asked otherwise) as an annotation; the auth service compares hashes, so reading the
Secret never reveals a usable token, and deleting the Secret revokes it. The Secret's
name derives from the hash, so it is known at plan time and a token maps to exactly one
Secret.

A token is bound to the first consumer that uses it: the Tenant it creates names the
Secret, and the controller manager writes that consumer's cluster id onto the Secret
(`liqo.io/token-consumer`), where it stays after the Tenant is gone; another cluster id
presenting it is refused. A single-use token (`liqo.io/token-single-use: "true"`) is
refused to everyone once used. Expired token Secrets are deleted by the controller manager.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import secrets
from datetime import datetime, timedelta
from typing import Any

from runtime.api import constants as c
from runtime.api.objects import JSON, nested
from runtime.api.timestamps import parse_rfc3339, rfc3339

from .meta import metadata

TOKEN_BYTES = 32
#: how long a token is accepted when its issuer does not say (a kubeadm bootstrap token's default too): long
#: enough to apply the consumer's configuration, short enough that a leaked one soon stops working
DEFAULT_LIFETIME = timedelta(hours=24)
#: the key of the Secret's data holding the token's hex SHA-256
HASH_KEY = "sha256"
SECRET_PREFIX = "liqo-peering-token-"
_SHORT_ID = 10
_TOKEN = re.compile(rf"^[0-9a-f]{{{2 * TOKEN_BYTES}}}$")


def generate_token() -> str:
    """A fresh token: 32 random bytes as 64 lower-case hex digits."""
    return secrets.token_hex(TOKEN_BYTES)


def is_token(text: str) -> bool:
    """Whether `text` has the shape of a token (so anything else is refused without hashing it)."""
    return bool(_TOKEN.match(text))


def token_hash(token: str) -> str:
    """The hex SHA-256 the cluster stores instead of the token."""
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def token_secret_name(token: str) -> str:
    """`liqo-peering-token-<first 10 hex digits of the hash>`."""
    return SECRET_PREFIX + token_hash(token)[:_SHORT_ID]


def token_secret(
    token: str, *, namespace: str, expires_at: datetime | None = None, single_use: bool = False
) -> JSON:
    """The Secret holding the token's hash (and its expiry, if any) in the runtime's namespace."""
    meta = metadata(
        token_secret_name(token), namespace=namespace, component="auth", **{c.LABEL_PEERING_TOKEN: "true"}
    )
    annotations = {}
    if expires_at is not None:
        annotations[c.ANNOTATION_TOKEN_EXPIRES_AT] = rfc3339(expires_at)
    if single_use:
        annotations[c.ANNOTATION_TOKEN_SINGLE_USE] = "true"
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": meta,
        "type": "Opaque",
        "data": {HASH_KEY: base64.b64encode(token_hash(token).encode("ascii")).decode("ascii")},
    }


def stored_hash(secret: JSON) -> bytes | None:
    """The hex hash a token Secret holds (as bytes, for a constant-time comparison), or None if malformed."""
    encoded = nested(secret, "data", HASH_KEY)
    if not isinstance(encoded, str):
        return None
    try:
        return base64.b64decode(encoded, validate=True)
    except binascii.Error:
        return None


def token_expiry(secret: JSON) -> datetime | None:
    """When the Secret's token expires (None: never); ValueError if the annotation is not RFC 3339."""
    value = nested(secret, "metadata", "annotations", c.ANNOTATION_TOKEN_EXPIRES_AT)
    if value is None:
        return None
    return parse_rfc3339(str(value))


def _annotations(secret: JSON) -> dict[str, Any]:
    return dict(nested(secret, "metadata", "annotations") or {})


def bound_consumer(secret: JSON) -> str:
    """The cluster id the Secret's token is bound to ("": not used yet, as far as the Secret says)."""
    return str(_annotations(secret).get(c.ANNOTATION_TOKEN_CONSUMER) or "")


def is_single_use(secret: JSON) -> bool:
    return _annotations(secret).get(c.ANNOTATION_TOKEN_SINGLE_USE) == "true"


def tenant_token(tenant: JSON) -> list[str]:
    """Index function: the token Secret a Tenant's consumer last presented."""
    name = _annotations(tenant).get(c.ANNOTATION_TENANT_TOKEN)
    return [str(name)] if name else []
