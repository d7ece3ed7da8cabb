"""Typed refusals of the authentication service, each carrying its HTTP status and contract reason.

Handlers raise these; `app.py` renders them as `{"reason", "message"}` with the status
and headers they carry, so no handler builds an error response by hand. The messages of
401s are fixed: whatever the cause (a wrong, revoked or expired token; an unknown
cluster id, a bad signature or a stale timestamp), the answer is the same, so a caller
learns nothing about which tokens or cluster ids exist. The cause goes to the log.
"""

from __future__ import annotations

from typing import ClassVar

from runtime.forge import credential as contract

INVALID_TOKEN_MESSAGE = "the peering token is not valid (wrong, revoked or expired): ask the provider's administrator for a new one"
INVALID_SIGNATURE_MESSAGE = (
    "the request is not signed by a known consumer with a fresh timestamp: check the clock and the key, "
    "or peer again with a new peering token"
)


class AuthError(Exception):
    """A refusal: `status` and `reason` go on the wire with the message; `headers` too (Retry-After)."""

    status: ClassVar[int] = 500
    reason: ClassVar[str] = "InternalError"

    def __init__(self, message: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = headers or {}


class InvalidRequestError(AuthError):
    """400: the body is not what the contract says; the message names the field."""

    status = 400
    reason = contract.INVALID_REQUEST

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field


class InvalidTokenError(AuthError):
    """401: the peering token is not accepted (never says why)."""

    status = 401
    reason = contract.INVALID_TOKEN

    def __init__(self) -> None:
        super().__init__(INVALID_TOKEN_MESSAGE)


class InvalidSignatureError(AuthError):
    """401: a renew or revoke request is not accepted (never says why)."""

    status = 401
    reason = contract.INVALID_SIGNATURE

    def __init__(self) -> None:
        super().__init__(INVALID_SIGNATURE_MESSAGE)


class TenantDrainedError(AuthError):
    """403: the provider's administrator drained this consumer; no credential is issued."""

    status = 403
    reason = contract.TENANT_DRAINED


class ClusterIDConflictError(AuthError):
    """409: the cluster name is taken by another cluster id (or the id is peered under another name)."""

    status = 409
    reason = contract.CLUSTER_ID_CONFLICT


class KeyChangeRefusedError(AuthError):
    """409: the cluster id is peered with another public key, and the request does not prove the old one."""

    status = 409
    reason = contract.KEY_CHANGE_REFUSED


class TooManyRequestsError(AuthError):
    """429: too many failures from this source address; `Retry-After` says when to try again."""

    status = 429
    reason = contract.TOO_MANY_REQUESTS


class TenantTerminatingError(AuthError):
    """503: the consumer's previous tenant is still being removed; try again shortly."""

    status = 503
    reason = contract.TENANT_TERMINATING
