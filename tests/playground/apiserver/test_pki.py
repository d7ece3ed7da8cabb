"""The cluster CA, its certificates and TLS contexts; kubeconfig files built from them."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import ipaddress
import json
import os
import shutil
import ssl
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509 import verification
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from playground.apiserver.kubeconfig import kubeconfig, write_kubeconfig
from playground.apiserver.pki import (
    CA_CERT_FILE,
    CA_KEY_FILE,
    CertificateAuthority,
    CSRError,
    subject_of,
)

KUBECTL = shutil.which("kubectl")


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority.generate("playground-ca")


@pytest.fixture(scope="module")
def server_pair(ca: CertificateAuthority) -> tuple[bytes, bytes]:
    return ca.issue_server(hosts=["localhost", "127.0.0.1", "kubernetes.default.svc"])


@pytest.fixture(scope="module")
def other_ca() -> CertificateAuthority:
    return CertificateAuthority.generate("someone-else")


def _cert(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


def _store(ca: CertificateAuthority) -> verification.Store:
    return verification.Store([ca.certificate])


def _client_verifier(ca: CertificateAuthority) -> verification.ClientVerifier:
    """RFC 5280 path validation for clientAuth; like Go, without requiring a SAN on client certificates."""
    ee_policy = verification.ExtensionPolicy.webpki_defaults_ee().may_be_present(
        x509.SubjectAlternativeName, verification.Criticality.AGNOSTIC, None
    )
    return (
        verification.PolicyBuilder()
        .store(_store(ca))
        .extension_policies(ca_policy=verification.ExtensionPolicy.webpki_defaults_ca(), ee_policy=ee_policy)
        .build_client_verifier()
    )


def _csr(common_name: str, organizations: list[str], *, dns: list[str] | None = None) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    names.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(names))
    if dns:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(d) for d in dns]), critical=False
        )
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


# -- the CA -------------------------------------------------------------------------------------


def test_ca_certificate_is_a_critical_ca_that_may_sign_certificates(ca: CertificateAuthority) -> None:
    constraints = ca.certificate.extensions.get_extension_for_class(x509.BasicConstraints)
    usage = ca.certificate.extensions.get_extension_for_class(x509.KeyUsage).value

    assert constraints.critical and constraints.value.ca
    assert usage.key_cert_sign
    assert ca.certificate.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
    assert ca.certificate.subject == ca.certificate.issuer


def test_save_then_load_gives_the_same_ca_with_a_private_key_file(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    ca.save(tmp_path)

    loaded = CertificateAuthority.load(tmp_path)

    assert loaded.certificate == ca.certificate
    assert (tmp_path / CA_CERT_FILE).read_bytes() == ca.cert_pem
    assert stat.S_IMODE(os.stat(tmp_path / CA_KEY_FILE).st_mode) == 0o600
    assert loaded.verify_issued(ca.issue_client("alice")[0])


def test_load_refuses_a_key_that_is_not_the_certificates(
    ca: CertificateAuthority, other_ca: CertificateAuthority, tmp_path: Path
) -> None:
    ca.save(tmp_path)
    other_ca.save(tmp_path / "other")
    (tmp_path / CA_KEY_FILE).write_bytes((tmp_path / "other" / CA_KEY_FILE).read_bytes())

    with pytest.raises(ValueError, match="is not the key of"):
        CertificateAuthority.load(tmp_path)


# -- issued certificates ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        x509.DNSName("localhost"),
        x509.DNSName("kubernetes.default.svc"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ],
)
def test_server_certificate_verifies_for_each_of_its_hosts(
    ca: CertificateAuthority, server_pair: tuple[bytes, bytes], name: Any
) -> None:
    verifier = verification.PolicyBuilder().store(_store(ca)).build_server_verifier(name)

    chain = verifier.verify(_cert(server_pair[0]), [])

    assert chain[-1] == ca.certificate


def test_server_certificate_does_not_verify_for_another_host(
    ca: CertificateAuthority, server_pair: tuple[bytes, bytes]
) -> None:
    verifier = (
        verification.PolicyBuilder().store(_store(ca)).build_server_verifier(x509.DNSName("example.com"))
    )

    with pytest.raises(verification.VerificationError):
        verifier.verify(_cert(server_pair[0]), [])


def test_client_certificate_carries_user_and_groups_and_verifies_for_client_auth(
    ca: CertificateAuthority,
) -> None:
    cert_pem, key_pem = ca.issue_client("alice", organizations=["system:masters", "devs"], days=30)
    cert = _cert(cert_pem)
    _client_verifier(ca).verify(cert, [])

    assert subject_of(cert.public_bytes(serialization.Encoding.DER)) == ("alice", ["system:masters", "devs"])
    assert (
        ExtendedKeyUsageOID.CLIENT_AUTH
        in cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    )
    assert cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier)
    assert b"PRIVATE KEY" in key_pem


def test_a_certificate_of_another_ca_does_not_verify_against_this_one(
    ca: CertificateAuthority, other_ca: CertificateAuthority
) -> None:
    assert not ca.verify_issued(other_ca.issue_client("mallory")[0])


# -- CSR signing --------------------------------------------------------------------------------


def test_signed_csr_keeps_the_subject_and_sans_and_authenticates_clients(ca: CertificateAuthority) -> None:
    pem = ca.sign_csr(
        _csr("bob", ["team-a"], dns=["bob.example"]),
        usages=["digital signature", "key encipherment", "client auth"],
        expiration_seconds=3600,
    )
    cert = _cert(pem)

    assert ca.verify_issued(pem)
    assert subject_of(cert.public_bytes(serialization.Encoding.DER)) == ("bob", ["team-a"])
    assert cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName
    ) == ["bob.example"]
    assert cert.extensions.get_extension_for_class(x509.KeyUsage).value.key_encipherment
    _client_verifier(ca).verify(cert, [])


@pytest.mark.parametrize(
    ("expiration_seconds", "expected"),
    [
        (600, dt.timedelta(seconds=600)),
        (None, dt.timedelta(days=365)),
        (10 * 365 * 86400, dt.timedelta(days=365)),
    ],
)
def test_signed_certificate_lifetime_is_the_requested_one_capped_at_a_year(
    ca: CertificateAuthority, expiration_seconds: int | None, expected: dt.timedelta
) -> None:
    cert = _cert(
        ca.sign_csr(_csr("carol", []), usages=["client auth"], expiration_seconds=expiration_seconds)
    )
    now = dt.datetime.now(dt.UTC)

    assert abs(cert.not_valid_after_utc - (now + expected)) < dt.timedelta(seconds=30)
    assert cert.not_valid_before_utc < now - dt.timedelta(minutes=4)


@pytest.mark.parametrize(
    ("usages", "message"),
    [
        (["digital signature"], "missing required usage for client certificate: client auth"),
        (["client auth", "server auth"], "invalid usage for client certificate: server auth"),
        ([], "missing required usage"),
    ],
)
def test_csr_with_usages_the_client_signer_refuses_is_not_signed(
    ca: CertificateAuthority, usages: list[str], message: str
) -> None:
    with pytest.raises(CSRError, match=message):
        ca.sign_csr(_csr("dave", []), usages=usages)


def test_csr_whose_signature_does_not_verify_is_not_signed(ca: CertificateAuthority) -> None:
    csr = x509.load_pem_x509_csr(_csr("eve", []))
    der = bytearray(csr.public_bytes(serialization.Encoding.DER))
    der[-5] ^= 0xFF
    tampered = b"-----BEGIN CERTIFICATE REQUEST-----\n" + base64.encodebytes(bytes(der))
    tampered += b"-----END CERTIFICATE REQUEST-----\n"

    with pytest.raises(CSRError, match="signature"):
        ca.sign_csr(tampered, usages=["client auth"])


def test_pem_that_is_not_a_certificate_request_is_refused(ca: CertificateAuthority) -> None:
    with pytest.raises(CSRError, match="PEM block type must be CERTIFICATE REQUEST"):
        ca.sign_csr(ca.cert_pem, usages=["client auth"])


# -- TLS ----------------------------------------------------------------------------------------


def _client_context(
    ca: CertificateAuthority, pair: tuple[bytes, bytes] | None, tmp_path: Path
) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=ca.cert_pem.decode())
    context.verify_flags |= ssl.VERIFY_X509_STRICT  # Python 3.13's default: AKI/SKI/CA flags enforced
    if pair is not None:
        (tmp_path / "c.crt").write_bytes(pair[0])
        (tmp_path / "c.key").write_bytes(pair[1])
        context.load_cert_chain(tmp_path / "c.crt", tmp_path / "c.key")
    return context


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _serve(context: ssl.SSLContext, handler: Handler) -> tuple[asyncio.Server, int]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=context)
    return server, server.sockets[0].getsockname()[1]


@dataclass
class Exchange:
    """What one TLS connection did: whether the server got to serve it, its peer cert, the reply."""

    served: bool
    peer_cert: bytes | None
    reply: bytes


async def _connect(server_context: ssl.SSLContext, client_context: ssl.SSLContext) -> Exchange:
    seen: list[bytes | None] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(writer.get_extra_info("ssl_object").getpeercert(binary_form=True))
        writer.write(b"ok")
        await writer.drain()
        writer.close()

    server, port = await _serve(server_context, handler)
    async with server:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=client_context, server_hostname="localhost"
        )
        try:
            reply = await asyncio.wait_for(reader.read(), 5)
        except (ssl.SSLError, ConnectionResetError):
            reply = b""
        writer.close()
    return Exchange(served=bool(seen), peer_cert=seen[0] if seen else None, reply=reply)


async def test_tls_server_sees_the_subject_of_the_client_certificate(
    ca: CertificateAuthority, server_pair: tuple[bytes, bytes], tmp_path: Path
) -> None:
    client = _client_context(ca, ca.issue_client("alice", organizations=["system:masters"]), tmp_path)

    exchange = await _connect(ca.ssl_server_context(*server_pair), client)

    assert exchange.reply == b"ok"
    assert exchange.peer_cert is not None
    assert subject_of(exchange.peer_cert) == ("alice", ["system:masters"])


async def test_tls_client_without_certificate_is_still_served(
    ca: CertificateAuthority, server_pair: tuple[bytes, bytes], tmp_path: Path
) -> None:
    exchange = await _connect(ca.ssl_server_context(*server_pair), _client_context(ca, None, tmp_path))

    assert exchange.reply == b"ok"
    assert exchange.served and exchange.peer_cert is None


async def test_tls_client_certificate_of_another_ca_is_refused(
    ca: CertificateAuthority, other_ca: CertificateAuthority, server_pair: tuple[bytes, bytes], tmp_path: Path
) -> None:
    client = _client_context(ca, other_ca.issue_client("mallory"), tmp_path)

    exchange = await _connect(ca.ssl_server_context(*server_pair), client)

    assert not exchange.served
    assert exchange.reply == b""


def test_server_context_refuses_tls_below_1_2(
    ca: CertificateAuthority, server_pair: tuple[bytes, bytes]
) -> None:
    context = ca.ssl_server_context(*server_pair)

    assert context.minimum_version == ssl.TLSVersion.TLSv1_2
    assert context.verify_mode == ssl.CERT_OPTIONAL


# -- kubeconfig ---------------------------------------------------------------------------------


def test_kubeconfig_inlines_the_ca_and_client_credentials(ca: CertificateAuthority) -> None:
    cert_pem, key_pem = ca.issue_client("alice")

    config = kubeconfig(
        server="https://127.0.0.1:6443",
        ca_pem=ca.cert_pem,
        cluster="playground",
        user="alice",
        client_cert_pem=cert_pem,
        client_key_pem=key_pem,
        namespace="team-a",
    )

    cluster = config["clusters"][0]["cluster"]
    user = config["users"][0]["user"]
    assert base64.b64decode(cluster["certificate-authority-data"]) == ca.cert_pem
    assert base64.b64decode(user["client-certificate-data"]) == cert_pem
    assert base64.b64decode(user["client-key-data"]) == key_pem
    assert config["current-context"] == "alice@playground"
    assert config["contexts"][0]["context"] == {
        "cluster": "playground",
        "user": "alice",
        "namespace": "team-a",
    }


def test_kubeconfig_refuses_a_certificate_without_its_key(ca: CertificateAuthority) -> None:
    with pytest.raises(ValueError, match="go together"):
        kubeconfig(server="https://x", ca_pem=ca.cert_pem, cluster="c", user="u", client_cert_pem=ca.cert_pem)


def test_write_kubeconfig_writes_owner_only_yaml_replacing_the_old_file(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    path = tmp_path / "kube" / "config"
    path.parent.mkdir()
    path.write_text("old")
    path.chmod(0o644)
    config = kubeconfig(server="https://x", ca_pem=ca.cert_pem, cluster="c", user="u", token="t0k")

    write_kubeconfig(path, config)

    assert yaml.safe_load(path.read_text()) == config
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert os.listdir(path.parent) == ["config"]


def test_kubernetes_client_loads_the_kubeconfig(ca: CertificateAuthority, tmp_path: Path) -> None:
    from kubernetes import client, config

    cert_pem, key_pem = ca.issue_client("alice")
    path = tmp_path / "config"
    write_kubeconfig(
        path,
        kubeconfig(
            server="https://127.0.0.1:6443",
            ca_pem=ca.cert_pem,
            cluster="c",
            user="alice",
            client_cert_pem=cert_pem,
            client_key_pem=key_pem,
        ),
    )
    configuration = client.Configuration()

    config.load_kube_config(config_file=str(path), client_configuration=configuration)

    assert configuration.host == "https://127.0.0.1:6443"
    assert configuration.cert_file is not None and configuration.ssl_ca_cert is not None
    assert Path(configuration.cert_file).read_bytes() == cert_pem
    assert Path(configuration.ssl_ca_cert).read_bytes() == ca.cert_pem


# -- Go's TLS, through kubectl ------------------------------------------------------------------

VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.0", "platform": "linux/amd64"}


async def _kubectl_version(
    ca: CertificateAuthority, server_pair: tuple[bytes, bytes], tmp_path: Path, **credentials: Any
) -> tuple[dict[str, Any], bytes | None, str]:
    seen: dict[str, Any] = {}

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen["cert"] = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        seen["authorization"] = next(
            (
                line.split(":", 1)[1].strip()
                for line in head.split("\r\n")
                if line.lower().startswith("authorization:")
            ),
            "",
        )
        body = json.dumps(VERSION).encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        writer.close()

    server, port = await _serve(ca.ssl_server_context(*server_pair), handler)
    path = tmp_path / "kubeconfig"
    write_kubeconfig(
        path,
        kubeconfig(
            server=f"https://localhost:{port}", ca_pem=ca.cert_pem, cluster="pg", user="u", **credentials
        ),
    )
    async with server:
        process = await asyncio.create_subprocess_exec(
            KUBECTL or "kubectl",
            f"--kubeconfig={path}",
            "version",
            "-o",
            "json",
            env={"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "")},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, err.decode()
    return json.loads(out), seen.get("cert"), seen.get("authorization", "")


@pytest.mark.kubectl
@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
async def test_kubectl_trusts_the_server_and_presents_its_client_certificate(
    ca: CertificateAuthority, server_pair: tuple[bytes, bytes], tmp_path: Path
) -> None:
    cert_pem, key_pem = ca.issue_client("kubectl-user", organizations=["system:masters"])

    output, der, _ = await _kubectl_version(
        ca, server_pair, tmp_path, client_cert_pem=cert_pem, client_key_pem=key_pem
    )

    assert output["serverVersion"]["gitVersion"] == "v1.32.0"
    assert der is not None and subject_of(der) == ("kubectl-user", ["system:masters"])


@pytest.mark.kubectl
@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
async def test_kubectl_sends_the_kubeconfig_bearer_token(
    ca: CertificateAuthority, server_pair: tuple[bytes, bytes], tmp_path: Path
) -> None:
    _, der, authorization = await _kubectl_version(ca, server_pair, tmp_path, token="abc.def.ghi")

    assert der is None
    assert authorization == "Bearer abc.def.ghi"
