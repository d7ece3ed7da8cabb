"""TLS certificates for the servers this project runs, built in memory (pure: no I/O).

One builder for every serving certificate: the authentication service's (self-signed
with its kept key), the webhook's (signed by a CA made with the same builder), the
Terraform provider's (a self-signed authority, as go-plugin's AutoMTLS makes it) and
the playground kubelet API's (self-signed per node). Keys are ECDSA P-256: fast to
make and accepted by every TLS stack, Go's and BoringSSL's included.

Host names become subject alternative names: IP addresses (brackets allowed, as in
URLs) become IP SANs and the rest DNS SANs, in order and without repeats; empty names
and unspecified addresses (`0.0.0.0`, `::`, what a server listens on, never what a
client dials) are left out.

The Terraform provider imports this module while it starts: keep its imports to
`cryptography` and the standard library.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import CertificatePublicKeyTypes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_FINGERPRINT = re.compile(r"^sha256:[0-9a-f]{64}$")

#: how far back a certificate's validity starts, for clocks behind this machine's
BACKDATE = dt.timedelta(minutes=5)


@dataclass(frozen=True, repr=False)
class Issuer:
    """The authority that signs a certificate: its certificate and its key."""

    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    def __repr__(self) -> str:
        return f"Issuer({self.certificate.subject.rfc4514_string()}, <key redacted>)"


def new_key() -> ec.EllipticCurvePrivateKey:
    """A new ECDSA P-256 private key."""
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    """`key` as unencrypted PKCS#8 PEM."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def key_fingerprint(public_key: CertificatePublicKeyTypes) -> str:
    """`sha256:<hex>` of a public key's SubjectPublicKeyInfo (DER): what a consumer pins of the auth service."""
    spki = public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return "sha256:" + hashlib.sha256(spki).hexdigest()


def is_key_fingerprint(value: str) -> bool:
    """Whether `value` reads as a key fingerprint: `sha256:` and 64 lowercase hexadecimal digits."""
    return bool(_FINGERPRINT.match(value))


def certificate_pem(certificate: x509.Certificate) -> bytes:
    """`certificate` as PEM."""
    return certificate.public_bytes(serialization.Encoding.PEM)


def subject_alternative_names(hosts: Iterable[str]) -> list[x509.GeneralName]:
    """The SANs naming `hosts` (see the module's docstring for the rules)."""
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(h for h in hosts if h):
        try:
            address = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            names.append(x509.DNSName(host))
            continue
        if not address.is_unspecified:
            names.append(x509.IPAddress(address))
    return names


def tls_certificate(
    key: ec.EllipticCurvePrivateKey,
    *,
    common_name: str,
    validity: dt.timedelta,
    hosts: Iterable[str] = (),
    authority: bool = False,
    issuer: Issuer | None = None,
    now: dt.datetime | None = None,
) -> x509.Certificate:
    """A server certificate for `key`, valid from `now` (less `BACKDATE`) for `validity`.

    Self-signed unless `issuer` signs it. Its extended key usage is server authentication;
    its SANs name `hosts` (no SAN extension when none is left). An `authority` may also
    sign certificates (no intermediates below it) and carries its key identifier, which
    the certificates it signs refer to.
    """
    now = now if now is not None else dt.datetime.now(dt.UTC)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer.certificate.subject if issuer is not None else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + validity)
        .add_extension(
            x509.BasicConstraints(ca=authority, path_length=0 if authority else None), critical=True
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    )
    names = subject_alternative_names(hosts)
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    if authority:
        builder = builder.add_extension(_authority_key_usage(), critical=True).add_extension(
            x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
        )
    if issuer is not None:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer.key.public_key()), critical=False
        )
    return builder.sign(issuer.key if issuer is not None else key, hashes.SHA256())


def _authority_key_usage() -> x509.KeyUsage:
    """Signing TLS handshakes, certificates and CRLs."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=True,
        crl_sign=True,
        encipher_only=False,
        decipher_only=False,
    )


def client_identity(der: bytes) -> tuple[str, list[str]]:
    """The Kubernetes user and groups a client certificate (DER) stands for: its CN and its Os."""
    subject = x509.load_der_x509_certificate(der).subject
    names = subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    user = str(names[0].value) if names else ""
    return user, [str(a.value) for a in subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
