"""What a person reads when a cluster cannot be talked to: one case per way it fails, on real sockets.

Each case makes the client fail for real (a port nothing listens on, a name under `.invalid`,
a server whose certificate another CA signed or that names other hosts, a server that never
answers, one that speaks plain HTTP, the playground API server refusing a token or a
permission) and checks the whole sentence `failures.explain` gives: which cluster (context
and server URL), what failed, and what to do.
"""

from __future__ import annotations

import asyncio
import base64
import re

import pytest
import yaml

from runtime.api.kinds import NAMESPACES, PODS, SERVICEACCOUNTS
from runtime.api.objects import JSON
from runtime.core import APIConnectionError, APIError, Client, ForbiddenError, UnauthorizedError
from runtime.core.failures import explain
from runtime.core.kubeconfig import load_kubeconfig_dict
from runtime.core.transport import Cause
from tests import broken_servers
from tests.runtime.serviceaccounts import service_account_kubeconfig

from .conftest import Emulator


def _kubeconfig(server: str, *, ca: bytes | None = None, token: str = "not-checked") -> JSON:
    cluster: JSON = {"server": server}
    if ca is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "rome", "cluster": cluster}],
        "users": [{"name": "alice", "user": {"token": token}}],
        "contexts": [{"name": "rome", "context": {"cluster": "rome", "user": "alice"}}],
        "current-context": "rome",
    }


async def _failure(config: JSON, *, request_timeout: float = 10.0) -> APIError:
    loaded = load_kubeconfig_dict(config)
    async with await Client.from_config(loaded, request_timeout=request_timeout) as client:
        with pytest.raises(APIError) as failed:
            await client.list(NAMESPACES)
    return failed.value


def _port(url: str) -> str:
    return url.rpartition(":")[2]


async def test_a_refused_connection_names_the_context_and_says_the_cluster_is_not_running() -> None:
    url = broken_servers.refused_url()
    error = await _failure(_kubeconfig(url))
    assert isinstance(error, APIConnectionError) and error.failure is not None
    assert error.failure.cause is Cause.REFUSED
    assert explain(error) == (
        f"The cluster of context 'rome' ({url}) cannot be reached: the connection was refused (nothing listens "
        "there). Check that it is running and that its address (host and port) is right."
    )
    assert (
        str(error)
        == f"GET /api/v1/namespaces: 127.0.0.1:{_port(url)} cannot be reached: the connection was refused (nothing listens there)"
    )


async def test_a_name_that_does_not_resolve_says_so() -> None:
    error = await _failure(_kubeconfig(broken_servers.UNRESOLVABLE_URL))
    assert isinstance(error, APIConnectionError) and error.failure is not None
    assert error.failure.cause is Cause.NAME_NOT_RESOLVED
    message = explain(error)
    assert message.startswith(
        f"The cluster of context 'rome' ({broken_servers.UNRESOLVABLE_URL}) cannot be reached: the name "
        "no-such-cluster.invalid does not resolve ("
    ), message
    assert message.endswith("Check the host name in its address, and this machine's DNS."), message


async def test_a_certificate_another_ca_signed_is_named_with_its_subject_and_issuer() -> None:
    trusted, impostor = broken_servers.authority("rome-ca"), broken_servers.authority("impostor-ca")
    async with broken_servers.tls_server(impostor, common_name="kube-apiserver", hosts=("127.0.0.1",)) as url:
        error = await _failure(_kubeconfig(url, ca=trusted.pem))
    assert isinstance(error, APIConnectionError) and error.failure is not None
    assert error.failure.cause is Cause.CERTIFICATE_NOT_TRUSTED
    assert explain(error) == (
        f"The cluster of context 'rome' ({url}) is not trusted: its certificate (subject CN=kube-apiserver, "
        "issued by CN=impostor-ca) is not signed by a certificate authority this client trusts (unable to get "
        "local issuer certificate). Set the cluster's CA certificate (certificate-authority-data in a "
        "kubeconfig) to the CA that signed it, or check that the address points at the cluster you mean."
    )


async def test_a_certificate_for_other_hosts_names_the_hosts_it_is_valid_for() -> None:
    trusted = broken_servers.authority("rome-ca")
    async with broken_servers.tls_server(
        trusted, common_name="kube-apiserver", hosts=("milan.example", "10.0.0.1")
    ) as url:
        error = await _failure(_kubeconfig(url, ca=trusted.pem))
    assert explain(error) == (
        f"The cluster of context 'rome' ({url}) is not trusted: its certificate (subject CN=kube-apiserver, "
        "issued by CN=rome-ca) is valid for milan.example, 10.0.0.1, not for 127.0.0.1. Reach it by one of the "
        "names its certificate holds, or set the TLS server name (tls-server-name) to one of them."
    )


async def test_an_expired_certificate_says_until_when_it_was_valid() -> None:
    trusted = broken_servers.authority("rome-ca")
    async with broken_servers.tls_server(
        trusted, common_name="kube-apiserver", hosts=("127.0.0.1",), expired=True
    ) as url:
        error = await _failure(_kubeconfig(url, ca=trusted.pem))
    assert re.fullmatch(
        rf"The cluster of context 'rome' \({re.escape(url)}\) is not trusted: its certificate \(subject "
        r"CN=kube-apiserver, issued by CN=rome-ca\): certificate has expired \(valid until "
        r"\d{4}-\d\d-\d\d \d\d:\d\d UTC\)\. Renew its certificate, or check this machine's clock\.",
        explain(error),
    ), explain(error)


async def test_a_server_that_never_answers_times_out_with_the_bound_in_the_message() -> None:
    async with broken_servers.silent_server() as url:
        error = await _failure(_kubeconfig(url), request_timeout=0.5)
    assert isinstance(error, APIConnectionError) and error.failure is not None
    assert error.failure.cause is Cause.TIMEOUT
    assert explain(error) == (
        f"The cluster of context 'rome' ({url}) did not answer: nothing came back within 0.5 s. Check that it "
        "is up and that no firewall drops the traffic to it (a timeout, unlike a refusal, means nothing "
        "answered at all)."
    )


async def test_a_port_forwarder_in_front_of_a_server_that_is_down_hangs_up() -> None:
    """kind's docker-proxy and the playground's host port accept, then close when the API server is down."""
    async with broken_servers.hanging_up_server() as url:
        error = await _failure(_kubeconfig(url))
    assert isinstance(error, APIConnectionError) and error.failure is not None
    assert error.failure.cause is Cause.DISCONNECTED
    assert explain(error) == (
        f"The cluster of context 'rome' ({url}) closed the connection: it hung up before it answered. Check that "
        "the address is the server's own (not a load balancer or proxy in front of a server that is down) and "
        "that the server is healthy."
    )


async def test_a_plain_http_port_does_not_speak_tls() -> None:
    async with broken_servers.plain_http_server() as url:
        error = await _failure(_kubeconfig(url))
    assert explain(error) == (
        f"The cluster of context 'rome' ({url}) does not speak TLS: the TLS handshake failed (wrong version "
        "number). Check that the address is its HTTPS port (an https:// URL on a plain-HTTP port fails so)."
    )


async def _emulator_config(emulator: Emulator) -> JSON:
    config: JSON = yaml.safe_load(emulator.kubeconfig.read_text())
    return config


async def test_a_refused_token_names_the_user_whose_credentials_they_are(emulator: Emulator) -> None:
    config = await _emulator_config(emulator)
    context = config["current-context"]
    user = next(c["context"]["user"] for c in config["contexts"] if c["name"] == context)
    config["users"] = [{"name": user, "user": {"token": "not-a-token"}}]
    error = await _failure(config)
    assert isinstance(error, UnauthorizedError)
    server = config["clusters"][0]["cluster"]["server"]
    assert explain(error) == (
        f"The cluster of context '{context}' ({server}) does not accept the credentials (user '{user}' in "
        "in-memory kubeconfig, a bearer token): 401 Unauthorized. They may have expired or been revoked, or belong "
        "to another cluster: get fresh credentials for this cluster."
    )


async def test_a_forbidden_request_quotes_the_api_server_and_says_whose_rights_are_missing(
    emulator: Emulator,
) -> None:
    async with await Client.from_kubeconfig(emulator.kubeconfig) as admin:
        await admin.apply(
            SERVICEACCOUNTS,
            {"metadata": {"name": "nobody", "namespace": "default"}},
            field_manager="test",
        )
        config = await service_account_kubeconfig(admin, emulator.kubeconfig, "nobody", namespace="default")
    error = await _failure(config)
    assert isinstance(error, ForbiddenError)
    message = explain(error)
    assert re.fullmatch(
        r"The cluster of context '[^']+' \(https://[^)]+\) forbids it: namespaces is forbidden: User "
        r'"system:serviceaccount:default:nobody" cannot list resource "namespaces" in API group "" at the '
        r"cluster scope\. Use credentials that may do this \(these are user '[^']+' in in-memory kubeconfig, a "
        r"bearer token\), or grant the permission with RBAC\.",
        message,
    ), message


async def test_a_stream_that_breaks_mid_body_says_so_in_words() -> None:
    """A log stream whose server hangs up halfway: the same words as any other transport failure."""

    async def half_an_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 1000\r\n\r\nfirst line\n"
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(half_an_answer, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        loaded = load_kubeconfig_dict(_kubeconfig(url))
        async with await Client.from_config(loaded, request_timeout=10.0) as client:
            chunks = client.stream(PODS, "web", namespace="default", subresource="log")
            with pytest.raises(APIConnectionError) as failed:
                async for _ in chunks:
                    pass
            await chunks.aclose()
    finally:
        server.close()
        await server.wait_closed()
    assert failed.value.failure is not None and failed.value.failure.cause == Cause.DISCONNECTED
    assert explain(failed.value) == (
        f"The cluster of context 'rome' ({url}) closed the connection: it hung up before it answered. Check that "
        "the address is the server's own (not a load balancer or proxy in front of a server that is down) and "
        "that the server is healthy."
    )


async def test_a_request_the_server_asks_to_retry_later_is_sent_again_after_retry_after() -> None:
    """kube-apiserver answers 429 `storage is (re)initializing` with Retry-After: 1 just after a restart; client-go
    waits and sends the request again, and so do we (a 429 without Retry-After stands)."""
    answers = [
        b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\ncontent-type: application/json\r\n"
        b"content-length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 41\r\n\r\n"
        b'{"kind": "NamespaceList", "items": [{}]}\n',
        b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
    ]
    requests: list[bytes] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while answers:
            try:
                requests.append(await reader.readuntil(b"\r\n\r\n"))
            except asyncio.IncompleteReadError:
                break
            writer.write(answers.pop(0))
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        loaded = load_kubeconfig_dict(_kubeconfig(url))
        async with await Client.from_config(loaded, request_timeout=10.0) as client:
            assert len((await client.list(NAMESPACES)).items) == 1
            with pytest.raises(APIError) as failed:
                await client.list(NAMESPACES)
    finally:
        server.close()
        await server.wait_closed()
    assert len(requests) == 3
    assert getattr(failed.value, "code", None) == 429
