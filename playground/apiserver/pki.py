"""The cluster's certificate authority: serving and client certificates, CSR signing, TLS contexts.

kube-apiserver serves TLS with a certificate its clients trust through the kubeconfig's
`certificate-authority-data`, and authenticates clients that present a certificate signed
by its client CA (CN = user name, O = groups). The emulator uses one CA for both roles.
It also signs CertificateSigningRequests for the `kubernetes.io/kube-apiserver-client`
signer, the way kube-controller-manager's csrsigning controller does, so the
certificates it hands out authenticate against this same server.

Certificates are built to pass Go's crypto/x509 (kubectl) and OpenSSL's strict checks:
the CA carries a critical BasicConstraints CA=true and keyCertSign, leaves carry
SubjectKeyIdentifier/AuthorityKeyIdentifier, serving certificates carry their names as
SANs. Leaf keys are EC P-256, which Go and OpenSSL clients both accept.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_CERT_FILE = "ca.crt"
CA_KEY_FILE = "ca.key"
KUBE_APISERVER_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"
#: kube-controller-manager's --cluster-signing-duration default (8760h).
DEFAULT_SIGNING_DURATION = dt.timedelta(days=365)
#: the csrsigning controller backdates NotBefore to tolerate clock skew.
BACKDATE = dt.timedelta(minutes=5)

USAGE_DIGITAL_SIGNATURE = "digital signature"
USAGE_KEY_ENCIPHERMENT = "key encipherment"
USAGE_CLIENT_AUTH = "client auth"
_CLIENT_SIGNER_OPTIONAL_USAGES = frozenset({USAGE_DIGITAL_SIGNATURE, USAGE_KEY_ENCIPHERMENT})

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey


class CSRError(ValueError):
    """A CertificateSigningRequest that cannot be signed; the message is kube's wording."""


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _new_leaf_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _load_private_key(pem: bytes) -> PrivateKey:
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
        raise ValueError(f"unsupported private key type {type(key).__name__}: need RSA or ECDSA")
    return key


def _public_key_of(csr: x509.CertificateSigningRequest) -> PublicKey:
    key = csr.public_key()
    if not isinstance(key, rsa.RSAPublicKey | ec.EllipticCurvePublicKey):
        raise CSRError(f"unsupported public key type {type(key).__name__}: need RSA or ECDSA")
    return key


def write_file_atomically(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Write `data` to `path` with `mode` (owner-only by default), replacing any old file atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _san(hosts: Sequence[str]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


def _key_usage(
    *, digital_signature: bool, key_encipherment: bool = False, cert_sign: bool = False
) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=digital_signature,
        content_commitment=False,
        key_encipherment=key_encipherment,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _subject(common_name: str, organizations: Sequence[str] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


def subject_of(der_cert: bytes) -> tuple[str, list[str]]:
    """The (CommonName, Organizations) of a DER certificate: kube's user name and groups."""
    subject = x509.load_der_x509_certificate(der_cert).subject
    names = subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    common_name = str(names[0].value) if names else ""
    organizations = [str(a.value) for a in subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    return common_name, organizations


def parse_csr(csr_pem: bytes) -> x509.CertificateSigningRequest:
    """Parse a PEM CSR and check its self-signature, as CertificateSigningRequest validation does."""
    if b"-----BEGIN CERTIFICATE REQUEST-----" not in csr_pem:
        raise CSRError("PEM block type must be CERTIFICATE REQUEST")
    try:
        csr = x509.load_pem_x509_csr(csr_pem)
    except ValueError as exc:
        raise CSRError(f"x509: malformed certificate request: {exc}") from exc
    if not csr.is_signature_valid:
        raise CSRError("x509: certificate request signature verification failure")
    return csr


def validate_client_usages(usages: Sequence[str]) -> None:
    """The usages the kube-apiserver-client signer accepts: `client auth`, optionally two key usages."""
    for usage in usages:
        if usage != USAGE_CLIENT_AUTH and usage not in _CLIENT_SIGNER_OPTIONAL_USAGES:
            raise CSRError(f"invalid usage for client certificate: {usage}")
    if USAGE_CLIENT_AUTH not in usages:
        raise CSRError(f"missing required usage for client certificate: {USAGE_CLIENT_AUTH}")


@dataclass(frozen=True)
class CertificateAuthority:
    """A CA certificate and its key; issues every certificate the emulated cluster uses."""

    certificate: x509.Certificate
    private_key: PrivateKey

    @classmethod
    def generate(cls, common_name: str, *, days: int = 3650) -> CertificateAuthority:
        key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
        cert = (
            x509.CertificateBuilder()
            .subject_name(_subject(common_name))
            .issuer_name(_subject(common_name))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(_key_usage(digital_signature=True, cert_sign=True), critical=True)
            .add_extension(ski, critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False
            )
            .sign(key, hashes.SHA256())
        )
        return cls(certificate=cert, private_key=key)

    @classmethod
    def load(cls, directory: Path, *, stem: str = "ca") -> CertificateAuthority:
        """The CA saved in `directory` as `<stem>.crt` and `<stem>.key`."""
        cert_path, key_path = directory / f"{stem}.crt", directory / f"{stem}.key"
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = _load_private_key(key_path.read_bytes())
        if cert.public_key() != key.public_key():
            raise ValueError(f"{key_path} is not the key of {cert_path}")
        return cls(certificate=cert, private_key=key)

    def save(self, directory: Path, *, stem: str = "ca") -> None:
        """Write `<stem>.key` (owner-only) and `<stem>.crt` into `directory` (kubeadm's names: `ca`,
        `front-proxy-ca`)."""
        write_file_atomically(directory / f"{stem}.key", _key_pem(self.private_key))
        write_file_atomically(directory / f"{stem}.crt", self.cert_pem, mode=0o644)

    @property
    def cert_pem(self) -> bytes:
        return _cert_pem(self.certificate)

    def _leaf(
        self,
        subject: x509.Name,
        public_key: PublicKey,
        *,
        not_before: dt.datetime,
        not_after: dt.datetime,
    ) -> x509.CertificateBuilder:
        ca_ski = self.certificate.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.certificate.subject)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before)
            .not_valid_after(min(not_after, self.certificate.not_valid_after_utc))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False
            )
        )

    def _sign(self, builder: x509.CertificateBuilder) -> x509.Certificate:
        return builder.sign(self.private_key, hashes.SHA256())

    def issue_server(self, *, hosts: Sequence[str], days: int = 365) -> tuple[bytes, bytes]:
        """A serving certificate for `hosts` (IP addresses and DNS names); returns (cert PEM, key PEM)."""
        if not hosts:
            raise ValueError("a serving certificate needs at least one host")
        key = _new_leaf_key()
        now = _now()
        builder = (
            self._leaf(
                _subject(hosts[0]),
                key.public_key(),
                not_before=now - BACKDATE,
                not_after=now + dt.timedelta(days=days),
            )
            .add_extension(_key_usage(digital_signature=True), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(_san(hosts), critical=False)
        )
        return _cert_pem(self._sign(builder)), _key_pem(key)

    def issue_client(
        self, common_name: str, *, organizations: Sequence[str] = (), days: int = 365
    ) -> tuple[bytes, bytes]:
        """A client certificate for user `common_name` in groups `organizations`; (cert PEM, key PEM)."""
        key = _new_leaf_key()
        now = _now()
        builder = (
            self._leaf(
                _subject(common_name, organizations),
                key.public_key(),
                not_before=now - BACKDATE,
                not_after=now + dt.timedelta(days=days),
            )
            .add_extension(_key_usage(digital_signature=True), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        )
        return _cert_pem(self._sign(builder)), _key_pem(key)

    def sign_csr(
        self, csr_pem: bytes, *, usages: Sequence[str], expiration_seconds: int | None = None
    ) -> bytes:
        """Sign an approved CSR for the kube-apiserver-client signer; returns the certificate PEM.

        The subject and SANs come from the CSR; the validity is `expiration_seconds`
        (default one year, never past the CA's own expiry), backdated five minutes.
        Raises `CSRError` for a malformed CSR, a bad self-signature or unusable usages.
        """
        csr = parse_csr(csr_pem)
        validate_client_usages(usages)
        duration = DEFAULT_SIGNING_DURATION
        if expiration_seconds is not None:
            duration = min(duration, dt.timedelta(seconds=expiration_seconds))
        now = _now()
        builder = self._leaf(
            csr.subject, _public_key_of(csr), not_before=now - BACKDATE, not_after=now + duration
        )
        key_usages = set(usages) & _CLIENT_SIGNER_OPTIONAL_USAGES
        if key_usages:
            key_usage = _key_usage(
                digital_signature=USAGE_DIGITAL_SIGNATURE in key_usages,
                key_encipherment=USAGE_KEY_ENCIPHERMENT in key_usages,
            )
            builder = builder.add_extension(key_usage, critical=True)
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
        try:
            san = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        except x509.ExtensionNotFound:
            pass
        else:
            builder = builder.add_extension(san, critical=False)
        return _cert_pem(self._sign(builder))

    def verify_issued(self, cert_pem: bytes) -> bool:
        """Whether `cert_pem` was signed by this CA's key."""
        cert = x509.load_pem_x509_certificate(cert_pem)
        try:
            cert.verify_directly_issued_by(self.certificate)
        except (InvalidSignature, ValueError, TypeError):
            return False
        return True

    def ssl_server_context(self, cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
        """A TLS 1.2+ server context serving `cert_pem`; clients MAY present a certificate of this CA.

        ALPN offers only http/1.1, so Go clients do not attempt HTTP/2.
        """
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.verify_mode = ssl.CERT_OPTIONAL
        context.load_verify_locations(cadata=self.cert_pem.decode("ascii"))
        context.set_alpn_protocols(["http/1.1"])
        _load_chain(context, cert_pem, key_pem)
        return context


def _load_chain(context: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    """`load_cert_chain` reads files only: stage the pair in a private temporary directory."""
    with tempfile.TemporaryDirectory(prefix="apiserver-tls-") as tmp:
        cert_path, key_path = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        cert_path.write_bytes(cert_pem)
        write_file_atomically(key_path, key_pem)
        context.load_cert_chain(cert_path, key_path)
