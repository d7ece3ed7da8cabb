"""The consumer's calls to a provider's authentication service, with every failure classified.

A ForeignCluster's condition must say what the user has to fix, so each way a call can
fail becomes its own error class: the URL does not answer at all (`ProviderUnreachableError`),
something answers that is not this runtime's authentication service (`RuntimeNotInstalledError`:
no TLS, a 404, or a body without the contract's shape), the service belongs to another cluster
(`ClusterIDMismatchError`), it refused the token or signature (`AuthenticationFailedError`), it
throttles us (`RateLimitedError`, with Retry-After), or it refused the request for another
reason it names (`RequestRefusedError`: a cluster name taken by another cluster id, a tenant
being deleted). Messages carry the service's own `message`, never the token.

TLS: the authentication service serves a self-signed certificate that nothing distributes to
consumers, so no CA can vouch for it. Instead the service's public key is trusted on first use:
the first successful contact records the SHA-256 fingerprint of the key in the leaf certificate
(`sha256:<hex>` of its DER SubjectPublicKeyInfo; the ForeignCluster keeps it in
`status.authServiceKeyFingerprint`), and every later connection whose certificate holds another
key is closed right after the TLS handshake, before any byte of the request (the peering token,
a signed renewal) is sent (`KeyPinMismatchError`). The provider keeps that key across restarts
(`runtime.auth.servingkey`); the certificate around it is signed anew at each start, which is
why the key is pinned rather than the certificate.

What this protects against: after the first contact, an impostor at the authURL (DNS or
routing hijacked, a man in the middle) cannot take the renewal and unpeer calls or a
re-authentication, nor be handed a peering token. What it does not: the first contact itself
is unauthenticated (an attacker in the path then is trusted; the peering token, being
single-purpose and revocable, limits the damage), a stolen provider key defeats it, and a
provider that legitimately replaced its key is refused until a user re-trusts it (the
ForeignCluster's `liqo.io/trust-auth-service-key` annotation names the new key, see
`trusted_key`). The issued credential is then used against the provider's API server with
the CA bundle the service returned, verified as usual. Each call
opens its own short-lived HTTP session with bounded timeouts: calls are rare (peering, renewal,
unpeer), and nothing is left open when a controller stops. Answers are read bounded in size
(`MAX_ANSWER`) and depth (`runtime.core.jsonbody`): whatever answers at the URL is not trusted
before it proved its key, and even then is only a peer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar
from urllib.parse import urlsplit

import aiohttp
from cryptography import x509

from runtime.api import constants as c
from runtime.api.objects import JSON, nested
from runtime.core import jsonbody
from runtime.core.failures import UNREACHABLE, address_of, transport_failure
from runtime.forge import certificates
from runtime.forge import credential as contract
from runtime.forge.peering import trusted_key_of

logger = logging.getLogger(__name__)

Signer = Callable[[bytes], bytes]

#: how much of the answer's text goes into a message when it is not the contract's JSON
_EXCERPT = 120
#: the largest answer read: a credential (a token, the API server's CA bundle, cluster labels) is a few KiB
MAX_ANSWER = 1024 * 1024


class AuthServiceError(Exception):
    """A call to a provider's authentication service failed; `reason` is the ForeignCluster condition reason."""

    default_reason: ClassVar[str] = c.REASON_AUTHENTICATION_FAILED

    def __init__(
        self, url: str, detail: str, *, retry_after: float | None = None, reason: str | None = None
    ) -> None:
        super().__init__(f"{url}: {detail}")
        self.url = url
        self.detail = detail
        self.reason = reason or self.default_reason
        #: seconds the service asked us to wait (429), if it said
        self.retry_after = retry_after


class InvalidAuthURLError(AuthServiceError):
    """The ForeignCluster's authURL cannot be called at all (not an https:// URL with a host)."""

    default_reason = c.REASON_INVALID_SPEC


class ProviderUnreachableError(AuthServiceError):
    """Nothing answered (refused, timed out, name not found), or the service failed (5xx)."""

    default_reason = c.REASON_PROVIDER_UNREACHABLE

    def __init__(self, url: str, detail: str, *, headline: str = UNREACHABLE) -> None:
        super().__init__(url, detail)
        #: how the failure follows the service's name: "cannot be reached", "did not answer"
        self.headline = headline


class RuntimeNotInstalledError(AuthServiceError):
    """Something answered that is not this runtime's authentication service."""

    default_reason = c.REASON_RUNTIME_NOT_INSTALLED


class ClusterIDMismatchError(AuthServiceError):
    """The service belongs to another cluster than the ForeignCluster names."""

    default_reason = c.REASON_CLUSTER_ID_MISMATCH

    def __init__(self, url: str, detail: str, *, found: contract.ClusterInfo) -> None:
        super().__init__(url, detail)
        self.found = found


class AuthenticationFailedError(AuthServiceError):
    """The service refused the peering token (401 InvalidToken) or a signed request (401 InvalidSignature)."""

    default_reason = c.REASON_AUTHENTICATION_FAILED

    def __init__(self, url: str, detail: str, *, service_reason: str) -> None:
        super().__init__(url, detail)
        self.service_reason = service_reason


class KeyPinMismatchError(AuthServiceError):
    """The service's certificate holds another key than the one trusted on the first contact."""

    default_reason = c.REASON_AUTH_SERVICE_KEY_CHANGED

    def __init__(self, url: str, detail: str, *, pinned: str, found: str) -> None:
        super().__init__(url, detail)
        self.pinned = pinned
        self.found = found


class RateLimitedError(AuthServiceError):
    """429: too many failed attempts from this address; retry after `retry_after`."""

    default_reason = contract.TOO_MANY_REQUESTS


class RequestRefusedError(AuthServiceError):
    """Any other refusal (400, 403, 409, ...); `reason` is the one the service gave."""

    def __init__(self, url: str, detail: str, *, service_reason: str) -> None:
        super().__init__(url, detail, reason=service_reason)


@dataclass(frozen=True)
class Provider:
    """What `GET /v1/cluster` told about the provider."""

    info: contract.ClusterInfo
    #: the provider's cluster labels, when its service advertises them (`clusterLabels`)
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Answer:
    status: int
    body: object
    text: str
    retry_after: float | None


def check_url(url: str) -> None:
    """Raise InvalidAuthURLError unless `url` is an https:// URL with a host."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - parsing the port validates it
    except ValueError as exc:
        raise InvalidAuthURLError(url, f"not a URL: {exc}") from None
    if parts.scheme != "https" or not host:
        raise InvalidAuthURLError(url, "the authentication URL must be https://<host>[:port]")


def trusted_key(foreign_cluster: Mapping[str, Any], identity: Mapping[str, Any] | None = None) -> str | None:
    """The auth service key fingerprint a peering trusts; None before the first contact.

    A user's explicit trust (the ForeignCluster's `liqo.io/trust-auth-service-key` annotation)
    comes first; then the key pinned on the first contact, as the Identity keeps it (the status
    is only a report of it, and a stale cache may lag behind), then as the status reports it.
    """
    explicit = trusted_key_of(foreign_cluster)
    if explicit:
        return explicit
    pinned = str(nested(identity, "spec", c.AUTH_KEY_FINGERPRINT_FIELD) or "")
    return pinned or str(nested(foreign_cluster, "status", c.AUTH_KEY_FINGERPRINT_FIELD) or "") or None


def key_fingerprint(certificate: bytes) -> str:
    """`sha256:<hex>` of the SubjectPublicKeyInfo (DER) of a DER certificate: what a consumer pins."""
    return certificates.key_fingerprint(x509.load_der_x509_certificate(certificate).public_key())


class _KeyPin(aiohttp.Fingerprint):
    """aiohttp's check of a server right after the TLS handshake, on the certificate's key instead of its bytes.

    aiohttp connects without verifying the chain when `ssl` is a Fingerprint, then calls `check(transport)`
    before it sends the request; a mismatch closes the connection. `seen` is the key fingerprint found.
    """

    def __init__(self, pinned: str | None) -> None:
        super().__init__(bytes(32))
        self.pinned = pinned
        self.seen: str | None = None

    def check(self, transport: asyncio.Transport) -> None:
        ssl_object = transport.get_extra_info("ssl_object")
        certificate = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if not certificate:
            raise aiohttp.ServerFingerprintMismatch(b"", b"", *_peer(transport))
        self.seen = key_fingerprint(certificate)
        if self.pinned is not None and self.seen != self.pinned:
            raise aiohttp.ServerFingerprintMismatch(
                self.pinned.encode(), self.seen.encode(), *_peer(transport)
            )


def _peer(transport: asyncio.Transport) -> tuple[str, int]:
    host, port, *_ = transport.get_extra_info("peername") or ("?", 0)
    return str(host), int(port)


class AuthClient:
    """Calls to the authentication service at one URL; `__init__` does no I/O.

    `pinned` is the key fingerprint trusted earlier (None: trust whatever answers, the first contact);
    after a call, `key_fingerprint` is the fingerprint of the key the service presented.
    """

    def __init__(self, url: str, *, timeout: float, pinned: str | None = None) -> None:
        self.url = url.rstrip("/")
        self._timeout = timeout
        self._pinned = pinned or None
        self.key_fingerprint: str | None = None

    async def cluster(self, *, expected_cluster_id: str | None = None) -> Provider:
        """`GET /v1/cluster`: who answers here; ClusterIDMismatchError if it is not `expected_cluster_id`."""
        answer = await self._call("GET", contract.CLUSTER_PATH)
        if answer.status >= 500:
            raise ProviderUnreachableError(self.url, f"the service failed ({_describe(answer)})")
        if answer.status != 200:
            raise RuntimeNotInstalledError(
                self.url, f"GET {contract.CLUSTER_PATH} answered {_describe(answer)}"
            )
        try:
            info = contract.parse_cluster_info(answer.body)
        except contract.CredentialResponseError as exc:
            raise RuntimeNotInstalledError(
                self.url,
                f"GET {contract.CLUSTER_PATH} answered something else than the runtime's cluster info ({exc})",
            ) from None
        if expected_cluster_id is not None and info.cluster_id != expected_cluster_id:
            raise ClusterIDMismatchError(
                self.url,
                f"the service belongs to cluster {info.cluster_name} ({info.cluster_id}), not {expected_cluster_id}",
                found=info,
            )
        return Provider(info=info, labels=_labels(answer.body))

    async def identity(
        self, *, token: str, cluster_id: str, cluster_name: str, public_key: bytes
    ) -> contract.Credential:
        """`POST /v1/identity`: exchange the peering token and our identity for a credential."""
        body = contract.identity_request(
            token=token, cluster_id=cluster_id, cluster_name=cluster_name, public_key=public_key
        )
        return self._credential(await self._call("POST", contract.IDENTITY_PATH, body))

    async def renew(self, *, cluster_id: str, sign: Signer) -> contract.Credential:
        """`POST /v1/identity/renew`, signed with our private key: a fresh credential."""
        body = contract.signed_request(
            contract.RENEW, cluster_id=cluster_id, timestamp=datetime.now(UTC), sign=sign
        )
        return self._credential(await self._call("POST", contract.RENEW_PATH, body))

    async def revoke(self, *, cluster_id: str, sign: Signer) -> None:
        """`POST /v1/identity/revoke`, signed: the provider deletes our tenant and everything in it."""
        body = contract.signed_request(
            contract.REVOKE, cluster_id=cluster_id, timestamp=datetime.now(UTC), sign=sign
        )
        answer = await self._call("POST", contract.REVOKE_PATH, body)
        if answer.status != 200:
            raise self._refusal(answer, contract.REVOKE_PATH)

    def _credential(self, answer: _Answer) -> contract.Credential:
        if answer.status != 200:
            raise self._refusal(answer, contract.IDENTITY_PATH)
        try:
            return contract.parse_identity_response(answer.body)
        except contract.CredentialResponseError as exc:
            raise RuntimeNotInstalledError(self.url, f"the answer is not a credential ({exc})") from None

    def _refusal(self, answer: _Answer, path: str) -> AuthServiceError:
        fields = answer.body if isinstance(answer.body, Mapping) else {}
        reason = str(fields.get("reason") or "")
        message = str(fields.get("message") or "") or _describe(answer)
        if answer.status == 401:
            return AuthenticationFailedError(
                self.url, message, service_reason=reason or contract.INVALID_TOKEN
            )
        if answer.status == 429:
            return RateLimitedError(self.url, message, retry_after=answer.retry_after)
        if answer.status >= 500:
            return ProviderUnreachableError(self.url, f"the service failed ({_describe(answer)})")
        if not reason or answer.status == 404:
            return RuntimeNotInstalledError(self.url, f"POST {path} answered {_describe(answer)}")
        return RequestRefusedError(self.url, message, service_reason=reason)

    async def _call(self, method: str, path: str, body: JSON | None = None) -> _Answer:
        check_url(self.url)
        limits = aiohttp.ClientTimeout(total=self._timeout, sock_connect=min(self._timeout, 5.0))
        # the certificate's key is checked against the pin instead of a CA (see the module docstring)
        pin = _KeyPin(self._pinned)
        connector = aiohttp.TCPConnector(ssl=pin, limit=1)
        try:
            async with (
                aiohttp.ClientSession(connector=connector, timeout=limits) as session,
                session.request(
                    method, self.url + path, json=body, headers={"Accept": "application/json"}
                ) as response,
            ):
                data = await _bounded_body(response, self.url)
                retry_after = _seconds(response.headers.get("Retry-After"))
                status = response.status
        except aiohttp.ServerFingerprintMismatch:
            if pin.seen is None:
                raise RuntimeNotInstalledError(self.url, "it presented no TLS certificate") from None
            raise KeyPinMismatchError(
                self.url,
                f"the service presents a key with fingerprint {pin.seen}, but {self._pinned} was trusted on the"
                " first contact",
                pinned=str(self._pinned),
                found=pin.seen,
            ) from None
        except aiohttp.ClientSSLError as exc:
            failure = transport_failure(exc, address=address_of(self.url))
            raise RuntimeNotInstalledError(
                self.url, f"it does not speak TLS as the runtime's service does ({failure.detail})"
            ) from None
        except aiohttp.InvalidURL as exc:
            raise InvalidAuthURLError(self.url, f"not a URL: {exc}") from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            failure = transport_failure(exc, address=address_of(self.url), timeout=self._timeout)
            raise ProviderUnreachableError(self.url, failure.detail, headline=failure.headline) from None
        self.key_fingerprint = pin.seen
        text = data.decode(errors="replace")
        try:
            parsed: object = jsonbody.parse(text) if text else None
        except jsonbody.JSONBodyError:
            parsed = None
        logger.debug("%s %s%s: %d", method, self.url, path, status)
        return _Answer(status=status, body=parsed, text=text, retry_after=retry_after)


async def _bounded_body(response: aiohttp.ClientResponse, url: str) -> bytes:
    """The answer's body, read up to `MAX_ANSWER` bytes; RuntimeNotInstalledError past that (no service of
    ours answers that much, and reading on would let whatever answers fill this process's memory)."""
    if (response.content_length or 0) > MAX_ANSWER:
        raise RuntimeNotInstalledError(
            url, f"the answer announces {response.content_length} bytes, more than {MAX_ANSWER}"
        )
    data = bytearray()
    async for chunk in response.content.iter_chunked(64 * 1024):
        data += chunk
        if len(data) > MAX_ANSWER:
            raise RuntimeNotInstalledError(url, f"the answer is larger than {MAX_ANSWER} bytes")
    return bytes(data)


def _describe(answer: _Answer) -> str:
    excerpt = " ".join(answer.text.split())[:_EXCERPT]
    return f"HTTP {answer.status}" + (f": {excerpt}" if excerpt else "")


def _seconds(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


def _labels(body: object) -> dict[str, str]:
    labels = body.get(c.IDENTITY_CLUSTER_LABELS) if isinstance(body, Mapping) else None
    if not isinstance(labels, Mapping):
        return {}
    return {str(key): str(value) for key, value in labels.items() if isinstance(value, str)}
