"""The webhook's serving certificate: made at start-up, signed by a CA that lives only in memory.

The API server trusts exactly the `caBundle` of the webhook configuration, which the
webhook patches in itself (see `configuration.py`), so no cert-manager or Secret is
needed: every start makes a fresh CA and serving certificate, and a restart simply
patches the new CA in. The certificate names every address the API server may call:
the listen IP (URL mode, the playground) and the Service's DNS names (service mode).
Keys are ECDSA P-256 (fast to make, accepted by every TLS stack) and never touch disk.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from runtime.core.kubeconfig.tls import load_cert_chain

#: how long a certificate is valid; the webhook makes a new one on every start
VALIDITY = datetime.timedelta(days=365)
#: accepted clock skew between this machine and the API server's
BACKDATE = datetime.timedelta(minutes=5)


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


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def serving_certificate(*, hosts: Sequence[str], common_name: str) -> ServingCertificate:
    """A fresh CA and a serving certificate for `hosts` (IP addresses become IP SANs, the rest DNS SANs).

    CPU-bound (two key pairs, two signatures): call it in a thread from async code.
    """
    if not hosts:
        raise ValueError("a serving certificate needs at least one host name or IP address")
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name(f"{common_name}-ca@{int(now.timestamp())}")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + VALIDITY)
        .add_extension(
            x509.SubjectAlternativeName([_san(host) for host in dict.fromkeys(hosts)]), critical=False
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return ServingCertificate(
        certificate=certificate.public_bytes(serialization.Encoding.PEM),
        key=key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
        ca=ca.public_bytes(serialization.Encoding.PEM),
    )


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return x509.DNSName(host)


def server_context(certificate: ServingCertificate) -> ssl.SSLContext:
    """A TLS server context presenting `certificate` (TLS 1.2 or newer)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    load_cert_chain(
        context, certificate.certificate, certificate.key, label="the webhook's serving certificate"
    )
    return context
