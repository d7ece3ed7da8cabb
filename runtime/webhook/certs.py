"""The webhook's certificate authority and serving certificates (pure: no I/O).

The API server trusts exactly the `caBundle` of the webhook configurations, which the
webhook patches in itself (see `configuration.py`). Every replica of the webhook, and
every restart, must present a certificate that bundle trusts: while a rolling update runs
an old and a new pod behind one Service, a CA made afresh by the new pod would make the
API server refuse the old one (and with `failurePolicy: Fail`, refuse the objects under
review). So the CA is made once and kept in the Secret `liqo-webhook-ca` of the runtime's
namespace (`authority_secret`, as the auth service's serving key is kept), and each
replica signs a serving certificate of its own with it at start, naming every address the
API server may call: the listen IP (URL mode, the playground) and the Service's DNS names
(service mode). Deleting the Secret makes the next webhook to start make a new CA; the
configurations then trust the new one once it patches them in.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import ssl
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.core.kubeconfig.tls import load_cert_chain
from runtime.forge import certificates
from runtime.forge.meta import metadata

COMPONENT = "webhook"
#: how long the kept CA is valid; a webhook starting with less than `RENEW_BEFORE` of it left makes a new one
AUTHORITY_VALIDITY = datetime.timedelta(days=3650)
RENEW_BEFORE = datetime.timedelta(days=30)
#: how long a serving certificate is valid; every start signs a new one
VALIDITY = datetime.timedelta(days=365)


@dataclass(frozen=True, repr=False)
class Authority:
    """The CA every replica signs its serving certificate with: its certificate and key (PEM)."""

    certificate: bytes
    key: bytes

    def __repr__(self) -> str:
        return "Authority(<certificate>, <key redacted>)"


@dataclass(frozen=True, repr=False)
class ServingCertificate:
    """PEM bytes: the serving certificate, its key, and the CA that signed it (the configurations' caBundle)."""

    certificate: bytes
    key: bytes
    ca: bytes

    def __repr__(self) -> str:
        return "ServingCertificate(<certificate>, <key redacted>, <ca>)"


def service_dns_names(service: str, namespace: str) -> list[str]:
    """Every name the API server may use for a Service: `svc`, `svc.ns`, `svc.ns.svc`, `svc.ns.svc.cluster.local`."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]


def new_authority(*, common_name: str, now: datetime.datetime | None = None) -> Authority:
    """A new CA. CPU-bound (a key pair, a signature): call it in a thread from async code."""
    now = now or datetime.datetime.now(datetime.UTC)
    key = certificates.new_key()
    certificate = certificates.tls_certificate(
        key,
        common_name=f"{common_name}-ca@{int(now.timestamp())}",
        validity=AUTHORITY_VALIDITY,
        authority=True,
        now=now,
    )
    return Authority(certificate=certificates.certificate_pem(certificate), key=certificates.key_pem(key))


def authority_secret(authority: Authority, *, namespace: str) -> JSON:
    """The Secret keeping the CA (`ca.crt`, `ca.key`)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata(c.WEBHOOK_CA_SECRET, namespace=namespace, component=COMPONENT),
        "type": "Opaque",
        "data": {
            c.WEBHOOK_CA_CERTIFICATE: base64.b64encode(authority.certificate).decode("ascii"),
            c.WEBHOOK_CA_KEY: base64.b64encode(authority.key).decode("ascii"),
        },
    }


def _issuer(authority: Authority) -> certificates.Issuer:
    certificate = x509.load_pem_x509_certificate(authority.certificate)
    key = serialization.load_pem_private_key(authority.key, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{c.WEBHOOK_CA_KEY!r} is not an ECDSA key")
    if key.public_key() != certificate.public_key():
        raise ValueError(f"{c.WEBHOOK_CA_KEY!r} is not the key of {c.WEBHOOK_CA_CERTIFICATE!r}")
    return certificates.Issuer(certificate=certificate, key=key)


def authority_of(secret: JSON, *, now: datetime.datetime | None = None) -> Authority:
    """The CA the Secret keeps; ValueError saying what is wrong with it (missing, unreadable, expiring)."""
    data = secret.get("data") or {}
    try:
        authority = Authority(
            certificate=base64.b64decode(data[c.WEBHOOK_CA_CERTIFICATE], validate=True),
            key=base64.b64decode(data[c.WEBHOOK_CA_KEY], validate=True),
        )
        issuer = _issuer(authority)
    except KeyError as exc:
        raise ValueError(f"no key {exc}") from None
    except (binascii.Error, ValueError, TypeError) as exc:
        raise ValueError(f"not a PEM certificate and its unencrypted key ({exc})") from None
    now = now or datetime.datetime.now(datetime.UTC)
    if issuer.certificate.not_valid_after_utc - RENEW_BEFORE < now:
        raise ValueError(f"the CA expires at {issuer.certificate.not_valid_after_utc.isoformat()}")
    return authority


def serving_certificate(
    authority: Authority, *, hosts: Sequence[str], common_name: str, now: datetime.datetime | None = None
) -> ServingCertificate:
    """A serving certificate for `hosts` (IP addresses become IP SANs, the rest DNS SANs), signed by the CA.

    CPU-bound (a key pair, a signature): call it in a thread from async code.
    """
    if not hosts:
        raise ValueError("a serving certificate needs at least one host name or IP address")
    key = certificates.new_key()
    certificate = certificates.tls_certificate(
        key,
        common_name=common_name,
        hosts=hosts,
        validity=VALIDITY,
        issuer=_issuer(authority),
        now=now or datetime.datetime.now(datetime.UTC),
    )
    return ServingCertificate(
        certificate=certificates.certificate_pem(certificate),
        key=certificates.key_pem(key),
        ca=authority.certificate,
    )


def server_context(certificate: ServingCertificate) -> ssl.SSLContext:
    """A TLS server context presenting `certificate` (TLS 1.2 or newer)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    load_cert_chain(
        context, certificate.certificate, certificate.key, label="the webhook's serving certificate"
    )
    return context
