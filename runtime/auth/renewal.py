"""Signed requests (renew, revoke): Ed25519 signatures, a timestamp window and replay protection.

Once peered, a consumer proves who it is with the private key whose public half is on
its Tenant, not with the peering token (which may be gone by then). It signs
`<action>\\n<clusterID>\\n<timestamp>` (`runtime.forge.credential.signed_message`);
the provider accepts the request when the signature verifies, the timestamp is within
`window` seconds of its clock, and it is strictly newer than the last one accepted from
that consumer. The last accepted timestamp is kept on the Tenant (an annotation),
written with the Tenant's resourceVersion as a precondition, so two copies of one
request racing each other cannot both pass: the loser re-reads and sees a replay.

The signature is checked against the cached Tenant first, so a forged request costs no
API call; only a good signature leads to the fresh read and the write.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from runtime.api import constants as c
from runtime.api.crds import TENANTS
from runtime.api.objects import JSON, nested
from runtime.api.timestamps import parse_rfc3339, rfc3339
from runtime.core import Client, ConflictError, Informer, NotFoundError
from runtime.forge.credential import SignedAction, signed_message

from .errors import InvalidSignatureError
from .identities import CLUSTER_ID_INDEX, is_deleting
from .signatures import is_signed_by
from .tokens import utc_now

logger = logging.getLogger(__name__)


#: how many times a signed request is re-checked when the Tenant changed under it
_ATTEMPTS = 3


def timestamp_problem(
    timestamp: datetime, *, now: datetime, last: datetime | None, window: float
) -> str | None:
    """Why a signed request's timestamp is refused, or None when it is fresh and newer than the last one."""
    if abs(now - timestamp) > timedelta(seconds=window):
        return f"timestamp {rfc3339(timestamp, precise=True)} is more than {window:g} s from the provider's clock"
    if last is not None and timestamp <= last:
        return f"timestamp {rfc3339(timestamp, precise=True)} is not newer than the last accepted one (a replay?)"
    return None


@dataclass(frozen=True)
class SignedRequest:
    """A renew or revoke request, as validated by the app."""

    action: SignedAction
    cluster_id: str
    #: the timestamp exactly as sent (it is what was signed)
    timestamp_text: str
    timestamp: datetime
    signature: bytes

    @property
    def message(self) -> bytes:
        return signed_message(self.action, cluster_id=self.cluster_id, timestamp=self.timestamp_text)


class SignedRequests:
    def __init__(
        self,
        client: Client,
        tenants: Informer,
        *,
        window: float,
        now: Callable[[], datetime] = utc_now,
    ) -> None:
        self._client = client
        self._tenants = tenants
        self._window = window
        self._now = now

    async def authenticate(self, request: SignedRequest) -> JSON:
        """The consumer's Tenant, with the request's timestamp recorded; InvalidSignatureError otherwise."""
        cached = self._tenant(request.cluster_id)
        if cached is None:
            raise self._refusal(request, "no Tenant has this cluster id")
        if not is_signed_by(str(cached["spec"].get("publicKey", "")), request.message, request.signature):
            raise self._refusal(request, "the signature does not verify with the Tenant's public key")
        meta = cached["metadata"]
        for _ in range(_ATTEMPTS):
            try:
                current = await self._client.get(TENANTS, meta["name"], namespace=meta["namespace"])
            except NotFoundError:
                raise self._refusal(request, "the Tenant is gone") from None
            if is_deleting(current) or current["spec"].get("clusterID") != request.cluster_id:
                raise self._refusal(request, "the Tenant is being deleted")
            if current["spec"].get("publicKey") != cached["spec"].get("publicKey") and not is_signed_by(
                str(current["spec"].get("publicKey", "")), request.message, request.signature
            ):
                raise self._refusal(request, "the signature does not verify with the Tenant's new public key")
            problem = timestamp_problem(
                request.timestamp, now=self._now(), last=_last_accepted(current), window=self._window
            )
            if problem is not None:
                raise self._refusal(request, problem)
            patch = {
                "metadata": {
                    "annotations": {
                        c.ANNOTATION_LAST_SIGNED_REQUEST: rfc3339(request.timestamp, precise=True)
                    },
                    "resourceVersion": current["metadata"]["resourceVersion"],
                }
            }
            try:
                return await self._client.patch(
                    TENANTS,
                    meta["name"],
                    patch,
                    namespace=meta["namespace"],
                    field_manager=c.FIELD_MANAGER_AUTH,
                )
            except ConflictError:
                continue
        raise self._refusal(request, "the Tenant kept changing while the request was checked")

    def _tenant(self, cluster_id: str) -> JSON | None:
        for candidate in self._tenants.store.by_index(CLUSTER_ID_INDEX, cluster_id):
            if not is_deleting(candidate):
                return candidate
        return None

    @staticmethod
    def _refusal(request: SignedRequest, why: str) -> InvalidSignatureError:
        logger.info("cluster %s: refused a signed %s request: %s", request.cluster_id, request.action, why)
        return InvalidSignatureError()


def _last_accepted(tenant: JSON) -> datetime | None:
    value = nested(tenant, "metadata", "annotations", c.ANNOTATION_LAST_SIGNED_REQUEST)
    if value is None:
        return None
    try:
        return parse_rfc3339(str(value))
    except ValueError:
        logger.warning(
            "%s/%s: the annotation %s is unreadable; treating every timestamp as new",
            tenant["metadata"].get("namespace"),
            tenant["metadata"].get("name"),
            c.ANNOTATION_LAST_SIGNED_REQUEST,
        )
        return None
