"""Client-side failures in a person's words: which cluster, what failed, and what to do.

A person who reads that a cluster "could not be reached" needs three things: which cluster
(its kubeconfig context and server URL), what failed (the connection refused, a name that
does not resolve, a certificate not trusted and why, no answer in time, credentials
refused), and what to do about it. Python's and aiohttp's own texts carry none of that and
some carry reprs (`ConnectionKey(..., ssl=<ssl.SSLContext object at 0x...>)`).

This module words them once. `transport_failure` classifies what went wrong on the way to a
server (used by the Kubernetes client and by the consumer's calls to a provider's
authentication service), and `explain` turns any failure a client raises into the sentence
every front end shows: Terraform diagnostics, Pulumi errors, Events and condition messages
all call it rather than formatting an exception themselves; log lines show the same words
(an `APIConnectionError`'s message is its `TransportFailure`).
"""

from __future__ import annotations

import errno
import socket
import ssl
from typing import Final
from urllib.parse import urlsplit

import aiohttp

from .errors import APIConnectionError, APIStatusError, ForbiddenError, KubeconfigError, UnauthorizedError
from .transport import Cause, Certificate, TransportFailure

#: OpenSSL verification results that mean "signed by a CA this client does not trust"
_UNTRUSTED_ISSUER: Final = frozenset({2, 18, 19, 20, 21})
_EXPIRED: Final = 10
_NOT_YET_VALID: Final = 9
_NAME_MISMATCH: Final = frozenset({62, 64})
_UNREACHABLE_ERRNOS: Final = frozenset({errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL})
#: the other side accepted the connection, then closed it before answering
_HUNG_UP: Final = (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)
#: OpenSSL's handshake failures when the other side does not speak TLS at all
_NOT_TLS: Final = frozenset(
    {"WRONG_VERSION_NUMBER", "HTTP_REQUEST", "UNKNOWN_PROTOCOL", "RECORD_LAYER_FAILURE"}
)

UNREACHABLE: Final = "cannot be reached"
NOT_TRUSTED: Final = "is not trusted"
_CHECK_RUNNING: Final = "Check that it is running and that its address (host and port) is right"


def address_of(url: str) -> str:
    """host:port of a server URL (the port its scheme implies when it names none)."""
    parts = urlsplit(url)
    host = parts.hostname or url
    host = f"[{host}]" if ":" in host else host
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{host}:{port or (80 if parts.scheme == 'http' else 443)}"


def transport_failure(
    exc: BaseException,
    *,
    address: str,
    timeout: float | None = None,
    certificate: Certificate | None = None,
    server_name: str | None = None,
) -> TransportFailure:
    """Classify a failure to reach `address` (host:port) and word it; `certificate` is the server's, when
    its verification failed and it could be read; `server_name` the name it was checked against, when it is
    not the address's host (a TLS server name)."""
    host = address.rpartition(":")[0].strip("[]")
    failure = _classify(
        exc, host=host, server_name=server_name or host, timeout=timeout, certificate=certificate
    )
    return TransportFailure(failure.cause, failure.headline, failure.detail, failure.advice, address=address)


def _classify(
    exc: BaseException, *, host: str, server_name: str, timeout: float | None, certificate: Certificate | None
) -> TransportFailure:
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        return TransportFailure(
            Cause.OTHER,
            UNREACHABLE,
            f"the proxy {exc.host}:{exc.port} cannot be reached ({_os_reason(exc.os_error)})",
            "Check the proxy settings (proxy-url, HTTPS_PROXY, NO_PROXY)",
        )
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return _untrusted(exc.certificate_error, host=server_name, certificate=certificate)
    if isinstance(exc, ssl.SSLCertVerificationError):
        return _untrusted(exc, host=server_name, certificate=certificate)
    if isinstance(exc, aiohttp.ClientConnectorSSLError | aiohttp.ClientSSLError):
        return _handshake(getattr(exc, "os_error", exc))
    if isinstance(exc, aiohttp.ClientConnectorError):
        return _connect(exc.os_error, host=exc.host)
    if isinstance(exc, TimeoutError | aiohttp.ServerTimeoutError):
        within = f" within {timeout:g} s" if timeout else " in time"
        return TransportFailure(
            Cause.TIMEOUT,
            "did not answer",
            f"nothing came back{within}",
            "Check that it is up and that no firewall drops the traffic to it (a timeout, unlike a refusal, "
            "means nothing answered at all)",
        )
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return _disconnected()
    if isinstance(exc, ssl.SSLError):
        return _handshake(exc)
    if isinstance(exc, OSError):
        return _connect(exc, host=host)
    plain = _plain(exc)
    return TransportFailure(
        Cause.OTHER, UNREACHABLE, f"{_name(exc)}{': ' + plain if plain else ''}", _CHECK_RUNNING
    )


def _connect(error: OSError, *, host: str) -> TransportFailure:
    if isinstance(error, ssl.SSLError):
        return _handshake(error)
    if isinstance(error, socket.gaierror):
        return TransportFailure(
            Cause.NAME_NOT_RESOLVED,
            UNREACHABLE,
            f"the name {host} does not resolve ({_os_reason(error)})",
            "Check the host name in its address, and this machine's DNS",
        )
    if isinstance(error, ConnectionRefusedError):
        return TransportFailure(
            Cause.REFUSED, UNREACHABLE, "the connection was refused (nothing listens there)", _CHECK_RUNNING
        )
    if isinstance(error, TimeoutError):
        return _classify(error, host=host, server_name=host, timeout=None, certificate=None)
    if isinstance(error, _HUNG_UP):
        return _disconnected()
    if error.errno in _UNREACHABLE_ERRNOS:
        return TransportFailure(
            Cause.UNREACHABLE,
            UNREACHABLE,
            f"there is no route to it from here ({_os_reason(error)})",
            "Check the network path to it (routes, VPN, firewall)",
        )
    return TransportFailure(
        Cause.OTHER, UNREACHABLE, f"the connection failed ({_os_reason(error)})", _CHECK_RUNNING
    )


def _disconnected() -> TransportFailure:
    """Something accepted the connection and hung up: what a port forwarder or load balancer in front of a
    server that is down does (kind's docker-proxy, the playground's host port, a cloud load balancer)."""
    return TransportFailure(
        Cause.DISCONNECTED,
        "closed the connection",
        "it hung up before it answered",
        "Check that the address is the server's own (not a load balancer or proxy in front of a server that "
        "is down) and that the server is healthy",
    )


def _handshake(error: BaseException) -> TransportFailure:
    reason = str(getattr(error, "reason", "") or "")
    if reason in _NOT_TLS:
        return TransportFailure(
            Cause.TLS_FAILED,
            "does not speak TLS",
            f"the TLS handshake failed ({reason.replace('_', ' ').lower()})",
            "Check that the address is its HTTPS port (an https:// URL on a plain-HTTP port fails so)",
        )
    detail = reason.replace("_", " ").lower() if reason else _plain(error) or _name(error)
    return TransportFailure(
        Cause.TLS_FAILED,
        UNREACHABLE,
        f"the TLS handshake failed ({detail})",
        "Check that the address is its HTTPS port and that client and server share a TLS version",
    )


def _untrusted(error: BaseException, *, host: str, certificate: Certificate | None) -> TransportFailure:
    code = getattr(error, "verify_code", None)
    message = str(getattr(error, "verify_message", "") or _plain(error))
    shown = (
        f"its certificate (subject {certificate.subject}, issued by {certificate.issuer})"
        if certificate is not None
        else "its certificate"
    )
    if code in _NAME_MISMATCH:
        names = (
            ", ".join(certificate.names) if certificate is not None and certificate.names else "other names"
        )
        return TransportFailure(
            Cause.CERTIFICATE_NOT_TRUSTED,
            NOT_TRUSTED,
            f"{shown} is valid for {names}, not for {host}",
            "Reach it by one of the names its certificate holds, or set the TLS server name (tls-server-name) "
            "to one of them",
        )
    if code in (_EXPIRED, _NOT_YET_VALID):
        when = f" (valid until {certificate.not_after:%Y-%m-%d %H:%M} UTC)" if certificate is not None else ""
        return TransportFailure(
            Cause.CERTIFICATE_NOT_TRUSTED,
            NOT_TRUSTED,
            f"{shown}: {message}{when}",
            "Renew its certificate, or check this machine's clock",
        )
    if code in _UNTRUSTED_ISSUER:
        return TransportFailure(
            Cause.CERTIFICATE_NOT_TRUSTED,
            NOT_TRUSTED,
            f"{shown} is not signed by a certificate authority this client trusts ({message})",
            "Set the cluster's CA certificate (certificate-authority-data in a kubeconfig) to the CA that "
            "signed it, or check that the address points at the cluster you mean",
        )
    return TransportFailure(
        Cause.CERTIFICATE_NOT_TRUSTED,
        NOT_TRUSTED,
        f"{shown} failed verification ({message})",
        "Check the cluster's CA certificate and its address",
    )


def explain(exc: BaseException, *, cluster: str | None = None, advice: bool = True) -> str:
    """The sentence a person reads for a failure to talk to a cluster: which cluster, what failed, what to do.

    Errors from `runtime.core.Client` name their cluster by its context and server URL;
    `cluster` names it otherwise ("the API server of provider milan (https://...)"). Any
    exception is accepted: those this module does not know keep their own message (their
    type's name when it is empty). This is what diagnostics, Pulumi errors, Events and
    condition messages show. Without `advice`, only what failed, as a clause to go inside
    another sentence ("the cluster at https://... cannot be reached: the connection was
    refused (nothing listens there)"); a log line may also show `str(exc)`, the same words
    with the request instead of the cluster (an `APIConnectionError`'s message is its
    `TransportFailure`).
    """
    what, todo = _story(exc, where=cluster or getattr(exc, "cluster", "") or "the cluster")
    if not advice:
        return what.rstrip(".")
    return f"{_capital(_sentence(what))} {_sentence(todo)}" if todo else _capital(_sentence(what))


def _story(exc: BaseException, *, where: str) -> tuple[str, str]:
    """(what failed, what to do) for `exc` at `where`; what to do may be "" (the message says it already)."""
    if isinstance(exc, KubeconfigError):
        return str(exc), ""
    if isinstance(exc, APIConnectionError):
        failure = exc.failure
        if failure is None:
            return f"{where} {UNREACHABLE}: {exc}", ""
        return f"{where} {failure.headline}: {failure.detail}", failure.advice
    if isinstance(exc, UnauthorizedError):
        whose = f" ({exc.user})" if exc.user else ""
        said = f" ({exc.message})" if exc.message and exc.message != "Unauthorized" else ""
        return (
            f"{where} does not accept the credentials{whose}: 401 Unauthorized{said}",
            "They may have expired or been revoked, or belong to another cluster: get fresh credentials for "
            "this cluster",
        )
    if isinstance(exc, ForbiddenError):
        whose = f" (these are {exc.user})" if exc.user else ""
        return (
            f"{where} forbids it: {exc.message or '403 Forbidden'}",
            f"Use credentials that may do this{whose}, or grant the permission with RBAC",
        )
    if isinstance(exc, APIStatusError):
        return f"{where} answered {exc.code} {exc.reason or 'Error'}: {exc.message}", ""
    if isinstance(exc, TimeoutError):
        return f"{where} did not answer in time{': ' + _plain(exc) if _plain(exc) else ''}", ""
    return _plain(exc) or _name(exc), ""


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "?", "!")) else text + "."


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _plain(exc: BaseException) -> str:
    return str(exc).strip()


def _name(exc: BaseException) -> str:
    return type(exc).__name__


def _os_reason(error: OSError | None) -> str:
    if error is None:
        return "no reason given"
    return str(error.strerror or _plain(error) or _name(error))
