"""What went wrong on the way to a server, as data: the cause, the words and the certificate not trusted.

A leaf of `runtime.core`: `errors` carries a `TransportFailure` on `APIConnectionError`,
`failures` classifies exceptions into one, and neither needs the other for the types.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class Cause(StrEnum):
    """What went wrong on the way to a server (the first word of the story, for code and tests)."""

    REFUSED = "ConnectionRefused"
    NAME_NOT_RESOLVED = "NameNotResolved"
    UNREACHABLE = "NetworkUnreachable"
    CERTIFICATE_NOT_TRUSTED = "CertificateNotTrusted"
    TLS_FAILED = "TLSHandshakeFailed"
    TIMEOUT = "Timeout"
    DISCONNECTED = "Disconnected"
    OTHER = "ConnectionFailed"


@dataclass(frozen=True)
class Certificate:
    """What a person needs to know of a server certificate that was not trusted."""

    subject: str
    issuer: str
    #: the DNS names and IP addresses it is valid for
    names: tuple[str, ...]
    not_after: datetime

    @classmethod
    def of(cls, der: bytes) -> Certificate:
        from cryptography import x509

        certificate = x509.load_der_x509_certificate(der)
        try:
            extension = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            names = tuple(
                [str(name) for name in extension.get_values_for_type(x509.DNSName)]
                + [str(address) for address in extension.get_values_for_type(x509.IPAddress)]
            )
        except x509.ExtensionNotFound:
            names = ()
        return cls(
            subject=certificate.subject.rfc4514_string() or "(empty)",
            issuer=certificate.issuer.rfc4514_string() or "(empty)",
            names=names,
            not_after=certificate.not_valid_after_utc,
        )


@dataclass(frozen=True)
class TransportFailure:
    """A failure to get an answer from a server: its cause, and in words what happened and what to do.

    Worded to follow the server's name, whichever it is (`127.0.0.1:6443`, "the cluster of
    context 'rome' (https://...)", "the authentication service at https://..."):
    `f"{name} {headline}: {detail}"`, then the `advice`.
    """

    cause: Cause
    #: "cannot be reached", "is not trusted", "did not answer", "does not speak TLS"
    headline: str
    #: why: "the connection was refused (nothing listens there)"
    detail: str
    #: what to do about it, as an imperative sentence without the final full stop
    advice: str
    #: host:port it was trying
    address: str = ""

    def __str__(self) -> str:
        return f"{self.address or 'the server'} {self.headline}: {self.detail}"
