"""The HTTP side of the authentication service: routes, request parsing, error rendering, rate limiting.

Routes (the contract is in `runtime.forge.credential`):

| route | handler |
| --- | --- |
| `GET /v1/cluster` | who this provider is, its version and cluster labels (no authentication) |
| `POST /v1/identity` | peering token + identity -> credential |
| `POST /v1/identity/renew` | signed request -> fresh credential |
| `POST /v1/identity/revoke` | signed request -> Tenant deleted |

Bodies are read bounded in size (`max_body`, 64 KiB) and depth (`runtime.core.jsonbody`):
too large, not JSON or nested too deep is a 400, never a 500. Parsing validates every field
before anything else happens and names the first bad one in a 400. Handlers raise the typed
errors of `errors.py`; one middleware renders them and counts failures (400, 401) per
source address. A request is throttled only when it fails: a failure from an address whose
budget is spent is answered 429 instead of 400/401, while a request that authenticates (a
valid peering token, a good signature) is served whatever its address did before. Checking
first costs little, as both checks read caches only (no API request before a token or a
signature is good), and it keeps one address from locking out the others: consumers behind
one NAT share it, and ten garbage requests from any of them must not stop a renewal. A
failing API server becomes a 503 that says to retry, with the details in the log only.
"""

from __future__ import annotations

import base64
import binascii
import logging
import math
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.api.timestamps import parse_rfc3339
from runtime.core import APIError, jsonbody
from runtime.forge import credential as contract
from runtime.forge.credential import ClusterInfo, cluster_info, error_body, identity_response

from .errors import AuthError, InvalidRequestError, TooManyRequestsError
from .identities import IdentityIssuer, IdentityRequest
from .ratelimit import FailureLimiter
from .renewal import SignedRequest, SignedRequests
from .signatures import load_public_key
from .tokens import PeeringTokens

logger = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: cluster names become `liqo-<name>` node names and `liqo-tenant-<name>` namespaces (as install validates)
_CLUSTER_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,56}[a-z0-9])?$")
_MAX_TOKEN = 256
_SIGNATURE_BYTES = 64
#: the contract's bodies are flat objects: anything nesting deeper is refused before a field is read
_MAX_DEPTH = 4
MAX_BODY = web.AppKey("max_body", int)
#: statuses that spend a source address's failure budget
_FAILURES = frozenset({400, 401})


def cluster_body(info: ClusterInfo, labels: dict[str, str]) -> JSON:
    """The body of `GET /v1/cluster`: the contract's cluster info plus `clusterLabels`, which the consumer's
    virtual node carries (`runtime.controllers.core.authclient` reads them)."""
    return {**cluster_info(info), c.IDENTITY_CLUSTER_LABELS: dict(labels)}


def parse_identity_request(body: object) -> tuple[str, IdentityRequest]:
    """(token, identity) from a `POST /v1/identity` body; InvalidRequestError naming the first bad field."""
    fields = _fields(body)
    token = _string(fields, "token")
    if len(token) > _MAX_TOKEN:
        raise InvalidRequestError("token", f"longer than {_MAX_TOKEN} characters")
    cluster_id = _cluster_id(fields)
    cluster_name = _string(fields, "clusterName")
    if not _CLUSTER_NAME.match(cluster_name):
        raise InvalidRequestError(
            "clusterName",
            f"{cluster_name!r} must be a DNS label of at most 58 characters (lower case letters, digits, '-')",
        )
    public_key = _string(fields, "publicKey")
    try:
        load_public_key(public_key)
    except ValueError as exc:
        raise InvalidRequestError("publicKey", f"not a base64 raw Ed25519 public key: {exc}") from None
    proof = _signature(fields, "keyChangeSignature") if fields.get("keyChangeSignature") is not None else None
    return token, IdentityRequest(
        cluster_id=cluster_id, cluster_name=cluster_name, public_key=public_key, key_change_signature=proof
    )


def parse_signed_request(body: object, action: contract.SignedAction) -> SignedRequest:
    """A renew or revoke request; InvalidRequestError naming the first bad field."""
    fields = _fields(body)
    cluster_id = _cluster_id(fields)
    stamp = _string(fields, "timestamp")
    try:
        timestamp = parse_rfc3339(stamp)
    except ValueError as exc:
        raise InvalidRequestError("timestamp", str(exc)) from None
    return SignedRequest(
        action=action,
        cluster_id=cluster_id,
        timestamp_text=stamp,
        timestamp=timestamp,
        signature=_signature(fields, "signature"),
    )


class Handlers:
    def __init__(
        self,
        *,
        cluster: ClusterInfo,
        cluster_labels: dict[str, str],
        tokens: PeeringTokens,
        issuer: IdentityIssuer,
        signed: SignedRequests,
    ) -> None:
        self._cluster = cluster
        self._cluster_labels = dict(cluster_labels)
        self._tokens = tokens
        self._issuer = issuer
        self._signed = signed

    async def cluster(self, request: web.Request) -> web.Response:
        return web.json_response(cluster_body(self._cluster, self._cluster_labels))

    async def identity(self, request: web.Request) -> web.Response:
        token, identity = parse_identity_request(await _body(request))
        secret = await self._tokens.verify(token)
        logger.info(
            "cluster %s (%s) presented peering token %s from %s",
            identity.cluster_id,
            identity.cluster_name,
            secret["metadata"]["name"],
            request.remote,
        )
        return web.json_response(identity_response(await self._issuer.issue(identity, token_secret=secret)))

    async def renew(self, request: web.Request) -> web.Response:
        signed = parse_signed_request(await _body(request), contract.RENEW)
        tenant = await self._signed.authenticate(signed)
        return web.json_response(identity_response(await self._issuer.reissue(tenant)))

    async def revoke(self, request: web.Request) -> web.Response:
        signed = parse_signed_request(await _body(request), contract.REVOKE)
        tenant = await self._signed.authenticate(signed)
        await self._issuer.revoke(tenant)
        return web.json_response({})


def auth_app(handlers: Handlers, *, limiter: FailureLimiter, max_body: int) -> web.Application:
    app = web.Application(middlewares=[_limited(limiter)], client_max_size=max_body)
    app[MAX_BODY] = max_body
    app.router.add_get(contract.CLUSTER_PATH, handlers.cluster)
    app.router.add_post(contract.IDENTITY_PATH, handlers.identity)
    app.router.add_post(contract.RENEW_PATH, handlers.renew)
    app.router.add_post(contract.REVOKE_PATH, handlers.revoke)
    return app


def _limited(limiter: FailureLimiter) -> Middleware:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        response = await _rendered(request, handler)
        if response.status not in _FAILURES:
            return response
        source = request.remote or "unknown"
        wait = limiter.retry_after(source)
        if wait <= 0:
            limiter.failed(source)
            return response
        seconds = max(1, math.ceil(wait))
        logger.info("%s: too many failed requests; answering 429 for %d s", source, seconds)
        return _render(
            TooManyRequestsError(
                f"too many failed requests from {source}; retry in {seconds} s",
                headers={"Retry-After": str(seconds)},
            )
        )

    return middleware


async def _rendered(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except AuthError as exc:
        return _render(exc)
    except web.HTTPRequestEntityTooLarge:
        return _render(InvalidRequestError("body", f"larger than {request.app[MAX_BODY]} bytes"))
    except APIError as exc:
        logger.warning("%s %s: the API server failed: %s", request.method, request.path, exc)
        return web.json_response(
            error_body(
                "ServiceUnavailable", "the provider's API server could not complete the request; retry later"
            ),
            status=503,
            headers={"Retry-After": "5"},
        )


def _render(error: AuthError) -> web.Response:
    return web.json_response(
        error_body(error.reason, error.message), status=error.status, headers=error.headers
    )


async def _body(request: web.Request) -> object:
    raw = await request.read()
    try:
        return jsonbody.parse(raw, max_depth=_MAX_DEPTH)
    except jsonbody.JSONBodyError as exc:
        raise InvalidRequestError("body", str(exc).removeprefix("is ")) from None


def _fields(body: object) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidRequestError("body", "not a JSON object")
    return body


def _string(fields: dict[str, Any], key: str) -> str:
    value = fields.get(key)
    if value is None or value == "":
        raise InvalidRequestError(key, "missing")
    if not isinstance(value, str):
        raise InvalidRequestError(key, "not a string")
    return value


def _signature(fields: dict[str, Any], key: str) -> bytes:
    encoded = _string(fields, key)
    try:
        signature = base64.b64decode(encoded, validate=True)
    except binascii.Error:
        raise InvalidRequestError(key, "not base64") from None
    if len(signature) != _SIGNATURE_BYTES:
        raise InvalidRequestError(
            key, f"an Ed25519 signature has {_SIGNATURE_BYTES} bytes, this one {len(signature)}"
        )
    return signature


def _cluster_id(fields: dict[str, Any]) -> str:
    value = _string(fields, "clusterID")
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        raise InvalidRequestError("clusterID", f"{value!r} is not a UUID") from None
    if str(parsed) != value:
        raise InvalidRequestError("clusterID", f"{value!r} is not a UUID in lower-case canonical form")
    return value
