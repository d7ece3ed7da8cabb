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
consumers, so the certificate is NOT verified (as Liqo's own consumers do). The peering token
is what authenticates the exchange; the issued credential is then used against the provider's
API server with the CA bundle the service returned. Each call opens its own short-lived HTTP
session with bounded timeouts: calls are rare (peering, renewal, unpeer), and nothing is left
open when a controller stops.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar
from urllib.parse import urlsplit

import aiohttp

from runtime.api import constants as c
from runtime.forge import credential as contract

logger = logging.getLogger(__name__)

JSON = dict[str, Any]
Signer = Callable[[bytes], bytes]

#: how much of the answer's text goes into a message when it is not the contract's JSON
_EXCERPT = 120


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


class AuthClient:
    """Calls to the authentication service at one URL; `__init__` does no I/O."""

    def __init__(self, url: str, *, timeout: float) -> None:
        self.url = url.rstrip("/")
        self._timeout = timeout

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
        # ssl=False: the service's certificate is self-signed and not verified (see the module docstring)
        connector = aiohttp.TCPConnector(ssl=False, limit=1)
        try:
            async with (
                aiohttp.ClientSession(connector=connector, timeout=limits) as session,
                session.request(
                    method, self.url + path, json=body, headers={"Accept": "application/json"}
                ) as response,
            ):
                data = await response.read()
                retry_after = _seconds(response.headers.get("Retry-After"))
                status = response.status
        except aiohttp.ClientSSLError as exc:
            raise RuntimeNotInstalledError(
                self.url, f"it does not speak TLS as the runtime's service does ({exc})"
            ) from None
        except aiohttp.ClientConnectorError as exc:
            raise ProviderUnreachableError(self.url, f"cannot connect ({exc.os_error or exc})") from None
        except TimeoutError:
            raise ProviderUnreachableError(self.url, f"no answer within {self._timeout:g} s") from None
        except aiohttp.InvalidURL as exc:
            raise InvalidAuthURLError(self.url, f"not a URL: {exc}") from None
        except aiohttp.ClientError as exc:
            raise ProviderUnreachableError(self.url, f"the connection failed ({exc!r})") from None
        text = data.decode(errors="replace")
        try:
            parsed: object = json.loads(text) if text else None
        except ValueError:
            parsed = None
        logger.debug("%s %s%s: %d", method, self.url, path, status)
        return _Answer(status=status, body=parsed, text=text, retry_after=retry_after)


def _describe(answer: _Answer) -> str:
    excerpt = " ".join(answer.text.split())[:_EXCERPT]
    return f"HTTP {answer.status}" + (f": {excerpt}" if excerpt else "")


def _seconds(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


def _labels(body: object) -> dict[str, str]:
    labels = body.get("clusterLabels") if isinstance(body, Mapping) else None
    if not isinstance(labels, Mapping):
        return {}
    return {str(key): str(value) for key, value in labels.items() if isinstance(value, str)}
