"""The virtual kubelet's kubelet API alone: who may read logs, exec, attach and port-forward, and what it
forwards of the request."""

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
from runtime.core import APIConnectionError, Client, Upgraded
from runtime.core.kubeconfig import load_kubeconfig_dict
from runtime.virtualkubelet.kubelet import logs_error
from runtime.virtualkubelet.kubeletapi import KubeletAPI, LogsError
from tests import broken_servers


class Verdicts:
    """Allows the users it names; remembers who asked."""

    def __init__(self, *allowed: str) -> None:
        self.allowed_users = set(allowed)
        self.asked: list[tuple[str, list[str]]] = []
        self.verbs: list[str] = []

    async def allowed(self, user: str, groups: Sequence[str], verb: str = "get") -> bool:
        self.asked.append((user, list(groups)))
        self.verbs.append(verb)
        return user in self.allowed_users


class Provider:
    """The provider's logs: what it was asked for, and chunks back (or an error); its streams (exec, attach,
    port-forward): one that answers every chunk with the chunk upper-cased, then ends on `bye`."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, str, list[tuple[str, str]]]] = []
        self.error: LogsError | None = None
        self.upgrades: list[list[tuple[str, str]]] = []
        self.streams: list[asyncio.Task[None]] = []

    async def stream(
        self,
        subresource: str,
        namespace: str,
        pod: str,
        options: Sequence[tuple[str, str]],
        upgrade: Sequence[tuple[str, str]],
    ) -> Upgraded:
        self.asked.append((subresource, namespace, pod, list(options)))
        self.upgrades.append(list(upgrade))
        if self.error is not None:
            raise self.error

        async def shout(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while (chunk := await reader.read(100)) and chunk != b"bye":
                writer.write(chunk.upper())
            writer.close()

        server = await asyncio.start_server(shout, "127.0.0.1", 0)
        self.streams.append(asyncio.create_task(server.serve_forever()))
        reader, writer = await asyncio.open_connection(*server.sockets[0].getsockname()[:2])
        return Upgraded(
            headers={"upgrade": "SPDY/3.1", "x-stream-protocol-version": "v4.channel.k8s.io"},
            reader=reader,
            writer=writer,
        )

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
        stream=provider.stream,
        authorizer=verdicts,
        node_name="liqo-milan",
        host="127.0.0.1",
        port=0,
        client_ca=ca.cert_pem,
    )
    task = asyncio.create_task(api.run())
    await asyncio.wait_for(api.ready.wait(), 10)
    yield api, verdicts, provider
    for running in (task, *provider.streams):
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running


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


EXEC_REQUEST = (
    "POST /exec/demo/web/app?command=ip&command=addr&input=1&output=1&error=1&tty=0 HTTP/1.1\r\n"
    "Host: liqo-milan\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
    "X-Stream-Protocol-Version: v4.channel.k8s.io\r\nX-Stream-Protocol-Version: channel.k8s.io\r\n"
    "Content-Length: 0\r\n\r\n"
)


async def test_exec_opens_the_providers_stream_and_relays_it_both_ways(
    served: tuple[KubeletAPI, Verdicts, Provider], ca: CertificateAuthority
) -> None:
    api, verdicts, provider = served
    context = client(ca, "kube-apiserver-kubelet-client", ["system:masters"])
    reader, writer = await asyncio.open_connection("127.0.0.1", api.port, ssl=context)
    writer.write(EXEC_REQUEST.encode())
    head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)).decode()
    assert head.startswith("HTTP/1.1 101 "), head
    assert "Upgrade: SPDY/3.1" in head and "X-Stream-Protocol-Version: v4.channel.k8s.io" in head, head
    for word in (b"spdy", b"frames"):
        writer.write(word)
        assert await asyncio.wait_for(reader.read(100), 10) == word.upper()
    writer.write(b"bye")
    assert await asyncio.wait_for(reader.read(100), 10) == b"", "the provider's end closes the stream"
    writer.close()
    # the kubelet's exec options as the PodExecOptions of pods/exec; each protocol version offered passed on
    assert provider.asked == [
        (
            "exec",
            "demo",
            "web",
            [
                ("container", "app"),
                ("command", "ip"),
                ("command", "addr"),
                ("stdin", "true"),
                ("stdout", "true"),
                ("stderr", "true"),
            ],
        )
    ]
    assert [value for key, value in provider.upgrades[0] if key == "X-Stream-Protocol-Version"] == [
        "v4.channel.k8s.io",
        "channel.k8s.io",
    ]
    # a POST to the kubelet API is a `create` on nodes/proxy, as the kubelet authorizes it
    assert verdicts.verbs == ["create"]


async def _switched(api: KubeletAPI, context: ssl.SSLContext, request: str) -> None:
    """Sends `request`, expects 101 and the provider's stream behind it, then closes it with `bye`."""
    reader, writer = await asyncio.open_connection("127.0.0.1", api.port, ssl=context)
    writer.write(request.encode())
    head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)).decode()
    assert head.startswith("HTTP/1.1 101 "), head
    writer.write(b"frames")
    assert await asyncio.wait_for(reader.read(100), 10) == b"FRAMES"
    writer.write(b"bye")
    assert await asyncio.wait_for(reader.read(100), 10) == b""
    writer.close()


async def test_attach_with_a_tty_opens_the_providers_attach(
    served: tuple[KubeletAPI, Verdicts, Provider], ca: CertificateAuthority
) -> None:
    api, verdicts, provider = served
    context = client(ca, "kube-apiserver-kubelet-client", ["system:masters"])
    await _switched(
        api,
        context,
        "POST /attach/demo/web/app?input=1&output=1&tty=1 HTTP/1.1\r\n"
        "Host: liqo-milan\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
        "X-Stream-Protocol-Version: v4.channel.k8s.io\r\nContent-Length: 0\r\n\r\n",
    )
    # the TTY's resize channel is in the relayed stream; the option that asks for it is passed on
    assert provider.asked == [
        (
            "attach",
            "demo",
            "web",
            [("container", "app"), ("stdin", "true"), ("stdout", "true"), ("tty", "true")],
        )
    ]
    assert verdicts.verbs == ["create"]


async def test_port_forward_opens_the_providers_portforward_with_its_ports(
    served: tuple[KubeletAPI, Verdicts, Provider], ca: CertificateAuthority
) -> None:
    api, verdicts, provider = served
    context = client(ca, "kube-apiserver-kubelet-client", ["system:masters"])
    # SPDY: the ports are in the streams' headers; WebSocket: in the query, as `port`
    await _switched(
        api,
        context,
        "POST /portForward/demo/web HTTP/1.1\r\nHost: liqo-milan\r\nConnection: Upgrade\r\n"
        "Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: portforward.k8s.io\r\nContent-Length: 0\r\n\r\n",
    )
    await _switched(
        api,
        context,
        "GET /portForward/demo/web?port=80&port=8443 HTTP/1.1\r\nHost: liqo-milan\r\n"
        "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n",
    )
    assert provider.asked == [
        ("portforward", "demo", "web", []),
        ("portforward", "demo", "web", [("ports", "80"), ("ports", "8443")]),
    ]
    assert ("X-Stream-Protocol-Version", "portforward.k8s.io") in provider.upgrades[0]
    assert ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==") in provider.upgrades[1]
    # a GET (WebSocket) is a `get` on nodes/proxy
    assert verdicts.verbs == ["create", "get"]


async def test_exec_of_a_pod_not_offloaded_here_or_without_an_upgrade_is_refused(
    served: tuple[KubeletAPI, Verdicts, Provider], ca: CertificateAuthority
) -> None:
    api, _, provider = served
    context = client(ca, "kube-apiserver-kubelet-client")
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session,
        session.post(f"https://127.0.0.1:{api.port}/exec/demo/web/app?command=ls") as response,
    ):
        assert (response.status, await response.text()) == (
            400,
            "exec needs a connection upgrade (SPDY or WebSocket)",
        )
    provider.error = LogsError(404, 'pod "web" in namespace "demo" is not offloaded through liqo-milan')
    reader, writer = await asyncio.open_connection("127.0.0.1", api.port, ssl=context)
    writer.write(EXEC_REQUEST.encode())
    head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)).decode()
    assert head.startswith("HTTP/1.1 404 "), head
    length = int(head.lower().split("content-length:")[1].split("\r\n")[0])
    body = (await asyncio.wait_for(reader.readexactly(length), 10)).decode()
    writer.close()
    assert body == 'pod "web" in namespace "demo" is not offloaded through liqo-milan'
