"""The consumer's calls to an auth service, against scripted HTTPS servers: every failure classified."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.auth.servingkey import serving_certificate
from runtime.controllers.core import authclient, keys, objects
from runtime.controllers.core.authenticate import messages
from runtime.controllers.core.peering import PeeringSpec, SpecError
from runtime.core.kubeconfig.tls import load_cert_chain
from runtime.forge import credential as contract
from tests import broken_servers

PROVIDER_ID = "0b7c3b5e-2f0a-4c1e-9a51-3c0d6f0f5a10"
INFO = contract.ClusterInfo(cluster_id=PROVIDER_ID, cluster_name="milan", version="0.1.0")
CREDENTIAL = contract.Credential(
    cluster_id=PROVIDER_ID,
    cluster_name="milan",
    version="0.1.0",
    api_server_url="https://10.0.0.1:6443",
    ca_data=base64.b64encode(b"-----BEGIN CERTIFICATE-----").decode(),
    namespace="liqo-tenant-rome",
    token="sa-token",
    expires_at=datetime(2030, 1, 1, tzinfo=UTC),
)


@dataclass
class Scripted:
    """An HTTPS server answering each (method, path) as scripted, recording the bodies it got."""

    answers: dict[tuple[str, str], tuple[int, object, dict[str, str]]] = field(default_factory=dict)
    received: list[tuple[str, JSON]] = field(default_factory=list)
    url: str = ""

    def answer(self, method: str, path: str, status: int, body: object, **headers: str) -> None:
        self.answers[(method, path)] = (status, body, headers)

    async def handle(self, request: web.Request) -> web.Response:
        if request.can_read_body:
            self.received.append((request.path, await request.json()))
        scripted = self.answers.get((request.method, request.path))
        if scripted is None:
            return web.Response(status=404, text="404 page not found")
        status, body, headers = scripted
        if isinstance(body, str):
            return web.Response(status=status, text=body, headers=headers)
        return web.json_response(body, status=status, headers=headers)


async def _serve(app: web.Application, context: ssl.SSLContext | None) -> AsyncIterator[str]:
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"{'https' if context else 'http'}://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


#: the scripted service's certificate and key (PEM)
CERTIFICATE, KEY = serving_certificate(["127.0.0.1"])


def _tls() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    load_cert_chain(context, CERTIFICATE, KEY, label="test server")
    return context


def _spki_sha256(certificate_pem: bytes) -> str:
    public_key = x509.load_pem_x509_certificate(certificate_pem).public_key()
    spki = public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return "sha256:" + hashlib.sha256(spki).hexdigest()


@pytest.fixture
async def service() -> AsyncIterator[Scripted]:
    scripted = Scripted()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", scripted.handle)
    async for url in _serve(app, _tls()):
        scripted.url = url
        yield scripted


async def test_cluster_info_is_read_with_the_advertised_labels(service: Scripted) -> None:
    service.answer(
        "GET", "/v1/cluster", 200, {**contract.cluster_info(INFO), "clusterLabels": {"region": "north"}}
    )
    provider = await authclient.AuthClient(service.url, timeout=5).cluster(expected_cluster_id=PROVIDER_ID)
    assert provider.info == INFO and provider.labels == {"region": "north"}


@pytest.mark.parametrize(
    ("status", "body", "error", "words"),
    [
        (404, "404 page not found", authclient.RuntimeNotInstalledError, "HTTP 404"),
        (
            200,
            {"clusterID": PROVIDER_ID, "clusterName": "milan", "version": "1"},
            authclient.RuntimeNotInstalledError,
            "runtime",
        ),
        (401, {"kind": "Status", "code": 401}, authclient.RuntimeNotInstalledError, "HTTP 401"),
        (503, "unavailable", authclient.ProviderUnreachableError, "the service failed"),
        (
            200,
            contract.cluster_info(
                contract.ClusterInfo("d1f5c6a0-1111-4e0a-9b61-2c8d7e6f5a41", "florence", "1")
            ),
            authclient.ClusterIDMismatchError,
            "belongs to cluster florence",
        ),
    ],
    ids=["not-found", "not-our-runtime", "a-kube-apiserver", "server-error", "other-cluster"],
)
async def test_who_answers_is_classified(
    service: Scripted, status: int, body: object, error: type[authclient.AuthServiceError], words: str
) -> None:
    service.answer("GET", "/v1/cluster", status, body)
    with pytest.raises(error, match=words):
        await authclient.AuthClient(service.url, timeout=5).cluster(expected_cluster_id=PROVIDER_ID)


async def test_a_credential_is_issued_for_the_token_and_the_public_key(service: Scripted) -> None:
    service.answer("POST", "/v1/identity", 200, contract.identity_response(CREDENTIAL))
    key = Ed25519PrivateKey.generate()
    issued = await authclient.AuthClient(service.url + "/", timeout=5).identity(
        token="t0ken", cluster_id="rome-id", cluster_name="rome", public_key=keys.public_key_bytes(key)
    )
    assert issued == CREDENTIAL
    ((path, body),) = service.received
    assert path == "/v1/identity"
    assert body == {
        "token": "t0ken",
        "clusterID": "rome-id",
        "clusterName": "rome",
        "publicKey": base64.b64encode(keys.public_key_bytes(key)).decode(),
    }


@pytest.mark.parametrize(
    ("status", "body", "headers", "error", "reason"),
    [
        (
            401,
            contract.error_body("InvalidToken", "the token is not valid"),
            {},
            authclient.AuthenticationFailedError,
            c.REASON_AUTHENTICATION_FAILED,
        ),
        (
            429,
            contract.error_body("TooManyRequests", "slow down"),
            {"Retry-After": "7"},
            authclient.RateLimitedError,
            "TooManyRequests",
        ),
        (
            409,
            contract.error_body("ClusterIDConflict", "rome is taken"),
            {},
            authclient.RequestRefusedError,
            "ClusterIDConflict",
        ),
        (404, "404 page not found", {}, authclient.RuntimeNotInstalledError, c.REASON_RUNTIME_NOT_INSTALLED),
        (200, {"hello": "world"}, {}, authclient.RuntimeNotInstalledError, c.REASON_RUNTIME_NOT_INSTALLED),
        (500, "boom", {}, authclient.ProviderUnreachableError, c.REASON_PROVIDER_UNREACHABLE),
    ],
    ids=["invalid-token", "rate-limited", "conflict", "no-such-route", "not-a-credential", "server-error"],
)
async def test_refusals_are_classified(
    service: Scripted,
    status: int,
    body: object,
    headers: dict[str, str],
    error: type[authclient.AuthServiceError],
    reason: str,
) -> None:
    service.answer("POST", "/v1/identity", status, body, **headers)
    with pytest.raises(error) as caught:
        await authclient.AuthClient(service.url, timeout=5).identity(
            token="t", cluster_id="id", cluster_name="rome", public_key=b"k" * 32
        )
    assert caught.value.reason == reason
    if status == 429:
        assert caught.value.retry_after == 7
    if isinstance(body, dict) and "message" in body:
        assert caught.value.detail == body["message"]


async def test_renew_and_revoke_are_signed_with_the_consumer_key(service: Scripted) -> None:
    service.answer("POST", "/v1/identity/renew", 200, contract.identity_response(CREDENTIAL))
    service.answer("POST", "/v1/identity/revoke", 200, {})
    key = Ed25519PrivateKey.generate()
    client = authclient.AuthClient(service.url, timeout=5)
    assert await client.renew(cluster_id="rome-id", sign=key.sign) == CREDENTIAL
    await client.revoke(cluster_id="rome-id", sign=key.sign)
    for (path, body), action in zip(service.received, ("renew", "revoke"), strict=True):
        assert path == f"/v1/identity/{action}" and body["clusterID"] == "rome-id"
        message = contract.signed_message(action, cluster_id="rome-id", timestamp=body["timestamp"])  # type: ignore[arg-type]
        key.public_key().verify(base64.b64decode(body["signature"]), message)


@pytest.mark.parametrize("shape", ["announced", "streamed", "nested"])
async def test_a_huge_or_deeply_nested_answer_is_not_read_whole(shape: str) -> None:
    """Whatever answers at the authURL (before or after its key is checked) cannot fill the consumer's memory
    nor crash it with recursion: the answer is refused as not the runtime's."""
    huge = b'{"clusterID": "' + b"0" * (2 * authclient.MAX_ANSWER) + b'"}'

    async def handle(request: web.Request) -> web.StreamResponse:
        if shape == "nested":
            return web.Response(body=b"[" * 100_000 + b"]" * 100_000, content_type="application/json")
        if shape == "announced":
            return web.Response(body=huge, content_type="application/json")
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for start in range(0, len(huge), 65536):
            await response.write(huge[start : start + 65536])
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    async for url in _serve(app, _tls()):
        with pytest.raises(authclient.RuntimeNotInstalledError) as refused:
            await authclient.AuthClient(url, timeout=10).cluster(expected_cluster_id=PROVIDER_ID)
    words = "answered something else" if shape == "nested" else f"{authclient.MAX_ANSWER}"
    assert words in str(refused.value)


async def test_the_first_contact_reports_the_key_and_a_pinned_key_is_accepted(service: Scripted) -> None:
    service.answer("GET", "/v1/cluster", 200, contract.cluster_info(INFO))
    first = authclient.AuthClient(service.url, timeout=5)
    await first.cluster(expected_cluster_id=PROVIDER_ID)
    assert first.key_fingerprint == _spki_sha256(CERTIFICATE)

    pinned = authclient.AuthClient(service.url, timeout=5, pinned=first.key_fingerprint)
    assert (await pinned.cluster(expected_cluster_id=PROVIDER_ID)).info == INFO
    assert pinned.key_fingerprint == first.key_fingerprint


async def test_another_key_is_refused_before_the_token_is_sent(service: Scripted) -> None:
    service.answer("POST", "/v1/identity", 200, contract.identity_response(CREDENTIAL))
    trusted = "sha256:" + "ab" * 32
    client = authclient.AuthClient(service.url, timeout=5, pinned=trusted)
    with pytest.raises(authclient.KeyPinMismatchError) as refused:
        await client.identity(
            token="secret-token", cluster_id="rome-id", cluster_name="rome", public_key=b"k" * 32
        )
    assert (refused.value.pinned, refused.value.found) == (trusted, _spki_sha256(CERTIFICATE))
    assert refused.value.reason == c.REASON_AUTH_SERVICE_KEY_CHANGED
    assert service.received == []


async def test_nothing_listening_is_unreachable_and_the_condition_says_the_connection_was_refused() -> None:
    url = broken_servers.refused_url()
    with pytest.raises(authclient.ProviderUnreachableError) as failed:
        await authclient.AuthClient(url, timeout=5).cluster()
    assert messages(failed.value, provider="milan").message == (
        f"the authentication service at {url} cannot be reached: the connection was refused (nothing listens "
        "there) — check that milan is up and that its auth_url is reachable from this cluster; retrying"
    )


async def test_a_name_that_does_not_resolve_is_unreachable_and_the_condition_names_it() -> None:
    with pytest.raises(authclient.ProviderUnreachableError) as failed:
        await authclient.AuthClient(broken_servers.UNRESOLVABLE_URL, timeout=5).cluster()
    message = messages(failed.value, provider="milan").message
    assert message.startswith(
        f"the authentication service at {broken_servers.UNRESOLVABLE_URL} cannot be reached: the name "
        "no-such-cluster.invalid does not resolve ("
    ), message


async def test_a_server_without_tls_is_not_the_runtime() -> None:
    app = web.Application()
    async for url in _serve(app, None):
        with pytest.raises(authclient.RuntimeNotInstalledError, match="TLS"):
            await authclient.AuthClient(url.replace("http://", "https://"), timeout=5).cluster()


async def test_a_server_that_never_answers_is_unreachable_after_the_timeout() -> None:
    async def stall(request: web.Request) -> web.Response:
        await asyncio.sleep(30)
        return web.Response()

    app = web.Application()
    app.router.add_get("/v1/cluster", stall)
    async for url in _serve(app, _tls()):
        with pytest.raises(authclient.ProviderUnreachableError) as failed:
            await authclient.AuthClient(url, timeout=0.3).cluster()
    assert messages(failed.value, provider="milan").message == (
        f"the authentication service at {url} did not answer: nothing came back within 0.3 s — check that milan "
        "is up and that its auth_url is reachable from this cluster; retrying"
    )


@pytest.mark.parametrize("url", ["http://10.0.0.1", "https://", "10.0.0.1:8443", "https://[::1"])
def test_urls_that_cannot_be_called_are_spec_errors(url: str) -> None:
    with pytest.raises(authclient.InvalidAuthURLError):
        authclient.check_url(url)


def test_each_failure_message_says_what_to_do() -> None:
    cases = {
        authclient.AuthenticationFailedError("https://a:1", "bad token", service_reason="InvalidToken"): (
            c.REASON_AUTHENTICATION_FAILED,
            "generate a new token on milan (liqo_generate) and update cluster_token",
        ),
        authclient.ProviderUnreachableError("https://a:1", "refused"): (
            c.REASON_PROVIDER_UNREACHABLE,
            "check that milan is up",
        ),
        authclient.RuntimeNotInstalledError("https://a:1", "HTTP 404"): (
            c.REASON_RUNTIME_NOT_INSTALLED,
            "is the runtime installed on milan",
        ),
        authclient.ClusterIDMismatchError("https://a:1", "other", found=INFO): (
            c.REASON_CLUSTER_ID_MISMATCH,
            "check cluster_id and auth_url",
        ),
        authclient.KeyPinMismatchError("https://a:1", "other key", pinned="sha256:aa", found="sha256:bb"): (
            c.REASON_AUTH_SERVICE_KEY_CHANGED,
            "set liqo_peer's auth_key_fingerprint to it, or run kubectl annotate foreignclusters.core.liqo.io milan"
            " liqo.io/trust-auth-service-key=sha256:bb --overwrite",
        ),
    }
    for error, (reason, words) in cases.items():
        step = messages(error, provider="milan")
        assert step.reason == reason and step.failed and words in step.message
        assert "https://a:1" in step.message


FINGERPRINT_A = "sha256:" + "a" * 64
FINGERPRINT_B = "sha256:" + "b" * 64
FINGERPRINT_C = "sha256:" + "c" * 64


@pytest.mark.parametrize(
    ("annotation", "identity", "status", "trusted"),
    [
        (None, None, None, None),
        (None, None, FINGERPRINT_C, FINGERPRINT_C),
        (None, FINGERPRINT_B, FINGERPRINT_C, FINGERPRINT_B),
        (FINGERPRINT_A, FINGERPRINT_B, FINGERPRINT_C, FINGERPRINT_A),
    ],
    ids=["first-contact", "status", "identity-over-status", "annotation-over-all"],
)
def test_the_trusted_key_is_the_annotation_then_the_identitys_pin_then_the_status(
    annotation: str | None, identity: str | None, status: str | None, trusted: str | None
) -> None:
    foreign_cluster = {
        "metadata": {"name": "milan", "annotations": {c.ANNOTATION_TRUST_AUTH_SERVICE_KEY: annotation}},
        "status": {c.AUTH_KEY_FINGERPRINT_FIELD: status},
    }
    held = {"spec": {c.AUTH_KEY_FINGERPRINT_FIELD: identity}} if identity else None
    assert authclient.trusted_key(foreign_cluster, held) == trusted


def test_a_trust_annotation_that_is_no_fingerprint_is_a_spec_error() -> None:
    foreign_cluster = {
        "metadata": {"name": "milan", "annotations": {c.ANNOTATION_TRUST_AUTH_SERVICE_KEY: "sha256:AB"}},
        "spec": {"clusterID": PROVIDER_ID, "authURL": "https://a:1", "tokenSecretRef": {"name": "t"}},
    }
    with pytest.raises(SpecError, match="is not a key fingerprint"):
        PeeringSpec.parse(foreign_cluster, default_namespace="liqo")
    foreign_cluster["metadata"]["annotations"] = {c.ANNOTATION_TRUST_AUTH_SERVICE_KEY: FINGERPRINT_A}
    assert PeeringSpec.parse(foreign_cluster, default_namespace="liqo").trusted_key == FINGERPRINT_A


def test_key_pairs_and_credentials_round_trip_through_their_secrets() -> None:
    key = keys.generate()
    secret = keys.keys_secret("milan", namespace="liqo-tenant-milan", cluster_id=PROVIDER_ID, key=key)
    loaded = keys.private_key(secret)
    assert loaded is not None and keys.public_key_bytes(loaded) == keys.public_key_bytes(key)
    assert keys.private_key({"data": {keys.PRIVATE_KEY: "bm90IGEga2V5"}}) is None
    assert keys.private_key(None) is None

    stored = objects.credential_secret("milan", namespace="liqo-tenant-milan", credential=CREDENTIAL)
    assert stored["metadata"]["name"] == "liqo-credential-milan"
    assert objects.kubeconfig_of(stored) == contract.kubeconfig(CREDENTIAL)

    issued = CREDENTIAL.expires_at - timedelta(hours=1)
    renew = objects.renew_after(CREDENTIAL, issued_at=issued, fraction=0.8)
    assert renew == issued + timedelta(minutes=48)
