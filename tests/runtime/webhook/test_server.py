"""The webhook's HTTP side, certificate and configuration patching, without an API server."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import ssl
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from cryptography import x509
from prometheus_client import CollectorRegistry, generate_latest

from runtime.api import constants as c
from runtime.forge.install import InstallOptions, validating_webhook_configuration
from runtime.webhook.app import ReviewMetrics, application, validators
from runtime.webhook.certs import (
    authority_of,
    authority_secret,
    new_authority,
    server_context,
    service_dns_names,
    serving_certificate,
)
from runtime.webhook.configuration import configured
from runtime.webhook.main import main
from runtime.webhook.server import host_url


def refuse_every_shadow_pod(request: dict[str, Any]) -> list[str]:
    return ["spec.pod: Forbidden: not here"]


@pytest.fixture
async def server() -> AsyncIterator[tuple[TestServer, CollectorRegistry]]:
    registry = CollectorRegistry()
    test_server = TestServer(
        application(
            validators(namespace="liqo", shadow_pods=refuse_every_shadow_pod), metrics=ReviewMetrics(registry)
        )
    )
    await test_server.start_server()
    yield test_server, registry
    await test_server.close()


def admission_review(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": "core.liqo.io", "version": "v1beta1", "kind": "ForeignCluster"},
            "operation": "CREATE",
            "object": {"kind": "ForeignCluster", "metadata": {"name": "milan"}, "spec": spec},
        },
    }


async def test_reviews_are_routed_by_path_and_answered(server: tuple[TestServer, CollectorRegistry]) -> None:
    test_server, registry = server
    url = test_server.make_url("/validate/foreignclusters")
    async with aiohttp.ClientSession() as http:
        good = admission_review({"clusterID": str(uuid.uuid4())})
        async with http.post(url, json=good) as answer:
            assert answer.status == 200
            assert (await answer.json())["response"] == {"uid": good["request"]["uid"], "allowed": True}
        bad = admission_review({"clusterID": "nope"})
        async with http.post(url, json=bad) as answer:
            body = await answer.json()
        assert body["response"]["allowed"] is False
        assert body["response"]["status"]["message"] == (
            'ForeignCluster milan is invalid: spec.clusterID: Invalid value: "nope": must be a UUID '
            "(the remote cluster's id)"
        )
        async with http.post(url, data=b"{not json") as answer:
            assert answer.status == 400
        async with http.post(test_server.make_url("/validate/pods"), json=good) as answer:
            assert answer.status == 404
    metrics = generate_latest(registry).decode()
    assert 'webhook_admission_reviews_total{path="/validate/foreignclusters",verdict="denied"} 1.0' in metrics
    assert 'webhook_admission_reviews_total{path="/validate/foreignclusters",verdict="error"} 1.0' in metrics


def test_the_serving_certificate_names_every_address_and_chains_to_its_ca() -> None:
    names = ["127.0.0.7", *service_dns_names("liqo-webhook", "liqo")]
    authority = new_authority(common_name="liqo-webhook")
    certificate = serving_certificate(authority, hosts=names, common_name="liqo-webhook")
    parsed = x509.load_pem_x509_certificate(certificate.certificate)
    sans = parsed.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.7")]
    assert sans.get_values_for_type(x509.DNSName) == [
        "liqo-webhook",
        "liqo-webhook.liqo",
        "liqo-webhook.liqo.svc",
        "liqo-webhook.liqo.svc.cluster.local",
    ]
    ca = x509.load_pem_x509_certificate(certificate.ca)
    parsed.verify_directly_issued_by(ca)
    assert "key" not in repr(certificate).replace("<key redacted>", "")
    assert isinstance(server_context(certificate), ssl.SSLContext)


def test_every_replica_signs_with_the_ca_kept_in_the_secret() -> None:
    """Two replicas (or a restart) read one CA from the Secret: both certificates chain to the one caBundle."""
    secret = authority_secret(new_authority(common_name="liqo-webhook"), namespace="liqo")
    assert secret["metadata"]["name"] == c.WEBHOOK_CA_SECRET
    first = serving_certificate(authority_of(secret), hosts=["10.0.0.1"], common_name="liqo-webhook")
    second = serving_certificate(authority_of(secret), hosts=["10.0.0.2"], common_name="liqo-webhook")
    assert first.ca == second.ca and first.key != second.key
    ca = x509.load_pem_x509_certificate(first.ca)
    for certificate in (first, second):
        x509.load_pem_x509_certificate(certificate.certificate).verify_directly_issued_by(ca)
    assert "key" not in repr(authority_of(secret)).replace("<key redacted>", "")


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({}, "no key"),
        ({c.WEBHOOK_CA_CERTIFICATE: "bm9wZQ==", c.WEBHOOK_CA_KEY: "bm9wZQ=="}, "not a PEM certificate"),
        ("other-key", "is not the key of"),
        ("expiring", "the CA expires at"),
    ],
    ids=["empty", "garbage", "mismatched-key", "expiring"],
)
def test_a_secret_without_a_usable_ca_says_why(data: Any, problem: str) -> None:
    secret = authority_secret(new_authority(common_name="liqo-webhook"), namespace="liqo")
    if data == "other-key":
        other = authority_secret(new_authority(common_name="liqo-webhook"), namespace="liqo")
        secret["data"][c.WEBHOOK_CA_KEY] = other["data"][c.WEBHOOK_CA_KEY]
    elif data == "expiring":
        old = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=3640)
        secret = authority_secret(new_authority(common_name="liqo-webhook", now=old), namespace="liqo")
    else:
        secret["data"] = data
    with pytest.raises(ValueError, match=problem):
        authority_of(secret)


async def test_https_clients_trusting_the_ca_reach_the_webhook() -> None:
    authority = new_authority(common_name="liqo-webhook")
    certificate = serving_certificate(authority, hosts=["127.0.0.1"], common_name="liqo-webhook")
    app = application(
        validators(namespace="liqo", shadow_pods=refuse_every_shadow_pod),
        metrics=ReviewMetrics(CollectorRegistry()),
    )
    runner = aiohttp.web.AppRunner(app)
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_context(certificate))
    await site.start()
    try:
        port = runner.addresses[0][1]
        trust = ssl.create_default_context(cadata=certificate.ca.decode())
        async with (
            aiohttp.ClientSession() as http,
            http.post(
                f"{host_url('127.0.0.1', port)}/validate/foreignclusters",
                json=admission_review({"clusterID": str(uuid.uuid4())}),
                ssl=trust,
            ) as answer,
        ):
            assert (await answer.json())["response"]["allowed"] is True
    finally:
        await runner.cleanup()


def install_configuration(mode: str) -> dict[str, Any]:
    options = InstallOptions(
        cluster_id=str(uuid.uuid4()),
        cluster_name="rome",
        api_server_url="https://127.0.0.1:6443",
        pod_cidr="10.0.0.0/16",
        service_cidr="10.96.0.0/12",
        webhook_mode=mode,  # type: ignore[arg-type]
    )
    return validating_webhook_configuration(options)


def test_url_mode_points_every_webhook_at_the_listen_address_keeping_its_path() -> None:
    original = install_configuration("url")
    patched = configured(original, ca_bundle=b"CA", mode="url", base_url="https://127.0.0.9:9443")
    assert [w["clientConfig"] for w in patched["webhooks"]] == [
        {
            "url": "https://127.0.0.9:9443/validate/foreignclusters",
            "caBundle": base64.b64encode(b"CA").decode(),
        },
        {
            "url": "https://127.0.0.9:9443/validate/resourceslices",
            "caBundle": base64.b64encode(b"CA").decode(),
        },
        {
            "url": "https://127.0.0.9:9443/validate/namespaceoffloadings",
            "caBundle": base64.b64encode(b"CA").decode(),
        },
        {
            "url": "https://127.0.0.9:9443/validate/namespaceoffloadingsets",
            "caBundle": base64.b64encode(b"CA").decode(),
        },
        {
            "url": "https://127.0.0.9:9443/validate/shadowpods",
            "caBundle": base64.b64encode(b"CA").decode(),
        },
        {
            "url": "https://127.0.0.9:9443/validate/gatewayservers",
            "caBundle": base64.b64encode(b"CA").decode(),
        },
    ]
    assert original["webhooks"][0]["clientConfig"] == {
        "url": "https://liqo-webhook.invalid/validate/foreignclusters"
    }
    assert configured(patched, ca_bundle=b"CA", mode="url", base_url="https://127.0.0.9:9443") == patched


def test_service_mode_only_sets_the_ca() -> None:
    original = install_configuration("service")
    patched = configured(original, ca_bundle=b"CA", mode="service", base_url="https://10.0.0.1:9443")
    for before, after in zip(original["webhooks"], patched["webhooks"], strict=True):
        assert after["clientConfig"] == {**before["clientConfig"], "caBundle": "Q0E="}


def test_host_urls_bracket_ipv6() -> None:
    assert host_url("::1", 9443) == "https://[::1]:9443"
    assert host_url("10.0.0.1", 9443) == "https://10.0.0.1:9443"


async def test_url_mode_refuses_to_listen_on_every_interface(caplog: pytest.LogCaptureFixture) -> None:
    assert await main(["--mode=url", "--listen=0.0.0.0:9443", "--kubeconfig=/nonexistent"]) == 1
    assert "URL mode writes the listen address into the webhook configuration" in caplog.text
