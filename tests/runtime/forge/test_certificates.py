"""The one builder of serving certificates: SANs, validity, extensions, and chains that TLS clients accept."""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import ssl

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from runtime.core.kubeconfig.tls import load_cert_chain
from runtime.forge import certificates

NOW = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)


def test_hosts_become_ip_and_dns_names_in_order_without_repeats_or_unusable_ones() -> None:
    names = certificates.subject_alternative_names(
        ["10.0.0.1", "node-1", "", "0.0.0.0", "::", "[fd00::1]", "node-1", "10.0.0.1", "svc.ns.svc"]
    )
    assert names == [
        x509.IPAddress(ipaddress.ip_address("10.0.0.1")),
        x509.DNSName("node-1"),
        x509.IPAddress(ipaddress.ip_address("fd00::1")),
        x509.DNSName("svc.ns.svc"),
    ]


def test_a_self_signed_serving_certificate_for_the_key() -> None:
    key = certificates.new_key()
    cert = certificates.tls_certificate(
        key, common_name="liqo-auth", hosts=["127.0.0.1", "liqo-auth.liqo"], validity=DAY, now=NOW
    )
    assert cert.public_key() == key.public_key()
    assert cert.subject == cert.issuer
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "liqo-auth"
    cert.verify_directly_issued_by(cert)
    assert cert.not_valid_before_utc == NOW - certificates.BACKDATE
    assert cert.not_valid_after_utc == NOW + DAY
    constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints)
    assert constraints.critical and not constraints.value.ca
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert san.get_values_for_type(x509.DNSName) == ["liqo-auth.liqo"]
    with pytest.raises(x509.ExtensionNotFound):
        cert.extensions.get_extension_for_class(x509.KeyUsage)


def test_no_san_extension_when_no_host_is_usable() -> None:
    cert = certificates.tls_certificate(
        certificates.new_key(), common_name="x", hosts=["0.0.0.0", ""], validity=DAY
    )
    with pytest.raises(x509.ExtensionNotFound):
        cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)


def test_an_authority_signs_certificates_that_refer_to_it() -> None:
    ca_key = certificates.new_key()
    ca = certificates.tls_certificate(ca_key, common_name="webhook-ca", validity=DAY, authority=True, now=NOW)
    constraints = ca.extensions.get_extension_for_class(x509.BasicConstraints).value
    assert constraints.ca and constraints.path_length == 0
    key_usage = ca.extensions.get_extension_for_class(x509.KeyUsage)
    assert key_usage.critical and key_usage.value.key_cert_sign and key_usage.value.digital_signature
    key = certificates.new_key()
    leaf = certificates.tls_certificate(
        key,
        common_name="webhook",
        hosts=["webhook.liqo.svc"],
        validity=DAY,
        issuer=certificates.Issuer(certificate=ca, key=ca_key),
        now=NOW,
    )
    assert leaf.public_key() == key.public_key()
    assert leaf.issuer == ca.subject
    leaf.verify_directly_issued_by(ca)
    authority_key = leaf.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
    subject_key = ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    assert authority_key.key_identifier == subject_key.digest
    assert "key" not in repr(certificates.Issuer(certificate=ca, key=ca_key)).replace("<key redacted>", "")


def test_pem_encodings_load_back() -> None:
    key = certificates.new_key()
    cert = certificates.tls_certificate(key, common_name="x", hosts=["x"], validity=DAY)
    assert x509.load_pem_x509_certificate(certificates.certificate_pem(cert)) == cert
    assert certificates.key_pem(key).startswith(b"-----BEGIN PRIVATE KEY-----")


@pytest.mark.parametrize("authority", [False, True])
async def test_a_tls_client_trusting_the_self_signed_certificate_reaches_its_server(authority: bool) -> None:
    key = certificates.new_key()
    cert = certificates.tls_certificate(
        key, common_name="localhost", hosts=["localhost"], validity=DAY, authority=authority
    )
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    load_cert_chain(
        server_context, certificates.certificate_pem(cert), certificates.key_pem(key), label="test"
    )
    client_context = ssl.create_default_context(cadata=certificates.certificate_pem(cert).decode())

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.readline())
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=server_context)
    async with server:
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=client_context, server_hostname="localhost"
        )
        writer.write(b"hello\n")
        assert await reader.readline() == b"hello\n"
        writer.close()
        await writer.wait_closed()
