"""The virtual kubelet's kubelet API alone: who may read logs, and what it forwards of the request."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import tempfile
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import aiohttp
import pytest

from playground.apiserver.pki import CertificateAuthority
from runtime.core import APIConnectionError, Client
from runtime.core.kubeconfig import load_kubeconfig_dict
from runtime.virtualkubelet.kubelet import logs_error
from runtime.virtualkubelet.kubeletapi import KubeletAPI, LogsError
from tests import broken_servers


class Verdicts:
    """Allows the users it names; remembers who asked."""

    def __init__(self, *allowed: str) -> None:
        self.allowed_users = set(allowed)
        self.asked: list[tuple[str, list[str]]] = []

    async def allowed(self, user: str, groups: Sequence[str]) -> bool:
        self.asked.append((user, list(groups)))
        return user in self.allowed_users


class Provider:
    """The provider's logs: what it was asked for, and chunks back (or an error)."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, str, list[tuple[str, str]]]] = []
        self.error: LogsError | None = None

    async def logs(
        self, namespace: str, pod: str, container: str, options: Sequence[tuple[str, str]]
    ) -> AsyncIterator[bytes]:
        self.asked.append((namespace, pod, container, list(options)))
        if self.error is not None:
            raise self.error
        for chunk in (b"line 1\n", b"line 2\n"):
            yield chunk


@pytest.fixture
def ca() -> CertificateAuthority:
    return CertificateAuthority.generate("test-ca")


def client(ca: CertificateAuthority, user: str | None, groups: Sequence[str] = ()) -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if user is not None:
        cert, key = ca.issue_client(user, organizations=list(groups))
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "c.pem").write_bytes(cert)
            (Path(tmp) / "k.pem").write_bytes(key)
            context.load_cert_chain(Path(tmp) / "c.pem", Path(tmp) / "k.pem")
    return context


@pytest.fixture
async def served(ca: CertificateAuthority) -> AsyncIterator[tuple[KubeletAPI, Verdicts, Provider]]:
    verdicts, provider = Verdicts("kube-apiserver-kubelet-client"), Provider()
    api = KubeletAPI(
        provider.logs,
        authorizer=verdicts,
        node_name="liqo-milan",
        host="127.0.0.1",
        port=0,
        client_ca=ca.cert_pem,
    )
    task = asyncio.create_task(api.run())
    await asyncio.wait_for(api.ready.wait(), 10)
    yield api, verdicts, provider
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def get(api: KubeletAPI, path: str, context: ssl.SSLContext) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session,
        session.get(f"https://127.0.0.1:{api.port}{path}") as response,
    ):
        return response.status, await response.text()


async def test_the_api_server_reads_the_providers_log_with_the_options_it_passed(
    served: tuple[KubeletAPI, Verdicts, Provider], ca: CertificateAuthority
) -> None:
    api, verdicts, provider = served
    path = "/containerLogs/demo/web/app?follow=true&tailLines=5&sinceSeconds=60&previous=false&bogus=1"
    context = client(ca, "kube-apiserver-kubelet-client", ["system:masters"])
    assert await get(api, path, context) == (200, "line 1\nline 2\n")
    assert provider.asked == [
        (
            "demo",
            "web",
            "app",
            [("follow", "true"), ("tailLines", "5"), ("sinceSeconds", "60"), ("previous", "false")],
        )
    ]
    assert verdicts.asked == [("kube-apiserver-kubelet-client", ["system:masters"])]


async def test_no_certificate_is_401_and_a_user_the_review_refuses_is_403(
    served: tuple[KubeletAPI, Verdicts, Provider], ca: CertificateAuthority
) -> None:
    api, _, provider = served
    assert await get(api, "/containerLogs/demo/web/app", client(ca, None)) == (401, "Unauthorized")
    status, body = await get(api, "/containerLogs/demo/web/app", client(ca, "mallory"))
    assert (status, body) == (
        403,
        "Forbidden (user=mallory, verb=get, resource=nodes, subresource(s)=[proxy])",
    )
    assert provider.asked == []


async def test_a_pod_not_offloaded_here_is_the_providers_error(
    served: tuple[KubeletAPI, Verdicts, Provider], ca: CertificateAuthority
) -> None:
    api, _, provider = served
    provider.error = LogsError(404, 'pod "web" in namespace "demo" is not offloaded through liqo-milan')
    context = client(ca, "kube-apiserver-kubelet-client")
    assert await get(api, "/containerLogs/demo/web/app", context) == (
        404,
        'pod "web" in namespace "demo" is not offloaded through liqo-milan',
    )


async def test_logs_of_a_provider_that_cannot_be_reached_say_which_and_why() -> None:
    """What `kubectl logs` shows of an offloaded pod whose provider is down: `failures.explain`'s words."""
    url = broken_servers.refused_url()
    config = load_kubeconfig_dict(
        {
            "clusters": [{"name": "milan", "cluster": {"server": url}}],
            "users": [{"name": "rome", "user": {"token": "t"}}],
            "contexts": [{"name": "milan", "context": {"cluster": "milan", "user": "rome"}}],
            "current-context": "milan",
        }
    )
    async with await Client.from_config(config, request_timeout=10) as client:
        with pytest.raises(APIConnectionError) as failed:
            await client.get_path("/version")
    error = logs_error(failed.value, provider="milan", host=url)
    assert error.status == 503
    assert str(error) == (
        f"the API server of provider milan ({url}) cannot be reached: the connection was refused (nothing "
        "listens there)"
    )
