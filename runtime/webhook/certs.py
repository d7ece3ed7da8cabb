"""The webhook's serving certificate: made at start-up, signed by a CA that lives only in memory.

The API server trusts exactly the `caBundle` of the webhook configuration, which the
webhook patches in itself (see `configuration.py`), so no cert-manager or Secret is
needed: every start makes a fresh CA and serving certificate, and a restart simply
patches the new CA in. The certificate names every address the API server may call:
the listen IP (URL mode, the playground) and the Service's DNS names (service mode).
Both are made by `runtime.forge.certificates`; their keys never touch disk.
"""

from __future__ import annotations

import datetime
import ssl
from collections.abc import Sequence
from dataclasses import dataclass

from runtime.core.kubeconfig.tls import load_cert_chain
from runtime.forge import certificates

#: how long a certificate is valid; the webhook makes a new one on every start
VALIDITY = datetime.timedelta(days=365)


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


def serving_certificate(*, hosts: Sequence[str], common_name: str) -> ServingCertificate:
    """A fresh CA and a serving certificate for `hosts` (IP addresses become IP SANs, the rest DNS SANs).

    CPU-bound (two key pairs, two signatures): call it in a thread from async code.
    """
    if not hosts:
        raise ValueError("a serving certificate needs at least one host name or IP address")
    now = datetime.datetime.now(datetime.UTC)
    ca_key = certificates.new_key()
    ca = certificates.tls_certificate(
        ca_key,
        common_name=f"{common_name}-ca@{int(now.timestamp())}",
        validity=VALIDITY,
        authority=True,
        now=now,
    )
    key = certificates.new_key()
    certificate = certificates.tls_certificate(
        key,
        common_name=common_name,
        hosts=hosts,
        validity=VALIDITY,
        issuer=certificates.Issuer(certificate=ca, key=ca_key),
        now=now,
    )
    return ServingCertificate(
        certificate=certificates.certificate_pem(certificate),
        key=certificates.key_pem(key),
        ca=certificates.certificate_pem(ca),
    )


def server_context(certificate: ServingCertificate) -> ssl.SSLContext:
    """A TLS server context presenting `certificate` (TLS 1.2 or newer)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    load_cert_chain(
        context, certificate.certificate, certificate.key, label="the webhook's serving certificate"
    )
    return context
