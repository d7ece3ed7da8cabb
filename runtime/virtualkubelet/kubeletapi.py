"""The virtual kubelet's kubelet API: what the API server proxies `kubectl logs` of offloaded pods to.

The Node's `status.daemonEndpoints.kubeletEndpoint` names this server's port and its
InternalIP the virtual kubelet's pod address, so the API server sends
`GET /containerLogs/{namespace}/{pod}/{container}?<PodLogOptions>` here, as to any kubelet.
The answer is the provider's `pods/log` of the pod in its twin namespace, with the same
options (`-c`, `--previous`, `-f`, `--tail`, `--since`, `--since-time`, `--timestamps`,
`--limit-bytes`), streamed chunk by chunk.

`kubectl exec` reaches `/exec/{namespace}/{pod}/{container}?command=...&input=1...` the
same way, asking to switch protocols (SPDY, or WebSocket); `kubectl attach` reaches
`/attach/{namespace}/{pod}/{container}?input=1&tty=1...` and `kubectl port-forward`
`/portForward/{namespace}/{pod}` (the ports are named in the stream's headers, or as
`port=` for WebSocket). The server opens the provider's `pods/exec`, `pods/attach` or
`pods/portforward` of the twin pod with the same options (the kubelet's `port` as the
API's `ports`) and the same upgrade headers and, once the provider switched (101),
answers 101 with its headers and passes the bytes on both ways as they come: the
stream's framing, a TTY's resize channel and port-forward's data and error streams
included, is between the consumer's API server and the provider's kubelet, which speak
it; the virtual kubelet only relays.

As virtual-kubelet's `node/api`, the server knows nothing of pods itself: it gets a plain
`Logs` function. Clients authenticate with a certificate of the cluster's CA (what
kube-apiserver presents with `--kubelet-client-certificate`) and are authorized the way a
kubelet authorizes them with webhook authorization: a SubjectAccessReview for `get` on
`nodes/proxy` of this node, whose answers are cached for a minute. Status codes are the
kubelet's: 401 without a certificate, 403 when the review says no, 404 for a pod that is
not offloaded through this node, and the provider's own error otherwise. The serving
certificate is self-signed, made at start (kube-apiserver does not verify kubelets'
certificates unless told to).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Protocol

from aiohttp import web

from runtime.api.kinds import SUBJECTACCESSREVIEWS
from runtime.api.objects import nested
from runtime.core import APIConnectionError, APIStatusError, Client, Upgraded
from runtime.core.failures import explain
from runtime.core.kubeconfig.tls import load_cert_chain
from runtime.forge import certificates

logger = logging.getLogger(__name__)


#: the PodLogOptions the API server passes on, forwarded to the provider as they are
LOG_OPTIONS = ("follow", "previous", "timestamps", "tailLines", "limitBytes", "sinceSeconds", "sinceTime")
#: (namespace, pod, container, options) -> the log's chunks; raises LogsError
Logs = Callable[[str, str, str, Sequence[tuple[str, str]]], AsyncIterator[bytes]]
#: the kubelet's exec and attach options and the PodExecOptions (PodAttachOptions) fields they come from
EXEC_OPTIONS = {"command": "command", "input": "stdin", "output": "stdout", "error": "stderr", "tty": "tty"}
#: the kubelet's port-forward option and the PodPortForwardOptions field it comes from
PORT_FORWARD_OPTIONS = {"port": "ports"}
#: the kubelet API's streaming paths and the pod subresource each one opens on the provider
STREAMS = {"exec": "exec", "attach": "attach", "portForward": "portforward"}
#: the headers of an upgrade, passed on to the provider and back
UPGRADE_HEADERS = (
    "Connection",
    "Upgrade",
    "X-Stream-Protocol-Version",
    "Sec-WebSocket-Key",
    "Sec-WebSocket-Version",
    "Sec-WebSocket-Protocol",
    "Sec-WebSocket-Accept",
)
#: (subresource, namespace, pod, its options, upgrade headers) -> the provider's switched stream; raises LogsError
Stream = Callable[[str, str, str, Sequence[tuple[str, str]], Sequence[tuple[str, str]]], Awaitable[Upgraded]]
RELAY_CHUNK = 2**16
#: how long an authorization decision is reused
AUTHORIZATION_TTL = 60.0
CERT_DAYS = 365


class LogsError(Exception):
    """The log (or a stream: exec, attach, port-forward) cannot be served: `status` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Authorizer(Protocol):
    async def allowed(self, user: str, groups: Sequence[str], verb: str = "get") -> bool:
        """Whether `user` (in `groups`) may `verb` this node's kubelet API (`nodes/proxy`)."""


class SubjectAccessAuthorizer:
    """Asks the API server whether a user may `get` `nodes/proxy` of this node (answers cached)."""

    def __init__(self, client: Client, *, node_name: str) -> None:
        self._client = client
        self._node_name = node_name
        self._decisions: dict[tuple[str, tuple[str, ...], str], tuple[float, bool]] = {}

    async def allowed(self, user: str, groups: Sequence[str], verb: str = "get") -> bool:
        key = (user, tuple(sorted(groups)), verb)
        cached = self._decisions.get(key)
        now = time.monotonic()
        if cached is not None and now - cached[0] < AUTHORIZATION_TTL:
            return cached[1]
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": user,
                "groups": list(groups),
                "resourceAttributes": {
                    "verb": verb,
                    "resource": "nodes",
                    "subresource": "proxy",
                    "name": self._node_name,
                },
            },
        }
        answer = await self._client.create(SUBJECTACCESSREVIEWS, review)
        allowed = bool(nested(answer, "status", "allowed"))
        self._decisions[key] = (now, allowed)
        return allowed


class KubeletAPI:
    """Serves the kubelet API until cancelled; `ready` is set and `port` known once it listens."""

    def __init__(
        self,
        logs: Logs,
        *,
        stream: Stream | None = None,
        authorizer: Authorizer,
        node_name: str,
        host: str,
        port: int,
        client_ca: bytes | None,
    ) -> None:
        self._logs = logs
        self._stream = stream
        self._authorizer = authorizer
        self._node_name = node_name
        self._host = host
        self.port = port
        self._client_ca = client_ca
        self.ready = asyncio.Event()

    async def run(self) -> None:
        context = await asyncio.to_thread(self._ssl_context)
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._container_logs)
        if self._stream is not None:
            # the API server sends SPDY upgrades as POST, WebSocket ones as GET, as to any kubelet
            for method in ("POST", "GET"):
                for path in ("exec", "attach"):
                    app.router.add_route(
                        method, f"/{path}/{{namespace}}/{{pod}}/{{container}}", self._stream_upgrade
                    )
                app.router.add_route(method, "/portForward/{namespace}/{pod}", self._stream_upgrade)
        runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self._host or None, self.port, ssl_context=context)
            await site.start()
            self.port = int(runner.addresses[0][1])
            logger.info("%s: kubelet API on https://%s:%d", self._node_name, self._host, self.port)
            self.ready.set()
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    def _ssl_context(self) -> ssl.SSLContext:
        key = certificates.new_key()
        now = dt.datetime.now(dt.UTC)
        hosts = [host for host in (self._host, self._node_name) if host and host not in ("0.0.0.0", "::")]
        cert = certificates.tls_certificate(
            key,
            common_name=f"{self._node_name}@{int(now.timestamp())}",
            hosts=hosts,
            validity=dt.timedelta(days=CERT_DAYS),
            now=now,
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        # optional at the TLS layer, so a missing certificate is an HTTP 401 as the kubelet answers
        context.verify_mode = ssl.CERT_OPTIONAL
        if self._client_ca:
            context.load_verify_locations(cadata=self._client_ca.decode("ascii"))
        context.set_alpn_protocols(["http/1.1"])
        load_cert_chain(
            context,
            certificates.certificate_pem(cert),
            certificates.key_pem(key),
            label="the kubelet API's certificate",
        )
        return context

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok", content_type="text/plain")

    async def _container_logs(self, request: web.Request) -> web.StreamResponse:
        denied = await self._authorize(request)
        if denied is not None:
            return denied
        namespace, pod = request.match_info["namespace"], request.match_info["pod"]
        container = request.match_info["container"]
        options = [(key, value) for key, value in request.query.items() if key in LOG_OPTIONS]
        chunks = self._logs(namespace, pod, container, options)
        try:
            first = await anext(chunks, b"")
        except LogsError as exc:
            return _text(exc.status, str(exc))
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        try:
            if first:
                await response.write(first)
            async for chunk in chunks:
                await response.write(chunk)
            await response.write_eof()
        except (ConnectionResetError, LogsError) as exc:
            logger.debug("%s/%s: log stream of %s ended: %s", namespace, pod, container, exc)
        finally:
            await chunks.aclose()  # type: ignore[attr-defined]
        return response

    async def _stream_upgrade(self, request: web.Request) -> web.StreamResponse:
        assert self._stream is not None
        denied = await self._authorize(request, verb="create" if request.method == "POST" else "get")
        if denied is not None:
            return denied
        path = request.path.split("/")[1]
        namespace, pod = request.match_info["namespace"], request.match_info["pod"]
        container = request.match_info.get("container")
        options = _stream_options(request.query.items(), port_forward=container is None)
        if container is not None:
            options.insert(0, ("container", container))
        # each protocol version the API server offers is a header line of its own (httpstream reads them so)
        upgrade = [(key, value) for key in UPGRADE_HEADERS for value in request.headers.getall(key, [])]
        if not request.headers.get("Upgrade"):
            return _text(400, f"{path} needs a connection upgrade (SPDY or WebSocket)")
        try:
            upstream = await self._stream(STREAMS[path], namespace, pod, options, upgrade)
        except LogsError as exc:
            return _text(exc.status, str(exc))
        try:
            response = web.StreamResponse(
                status=101,
                headers={
                    key: value
                    for key in UPGRADE_HEADERS
                    if (value := upstream.headers.get(key.lower())) is not None
                },
            )
            response.force_close()
            await response.prepare(request)
            await _relay(request, upstream)
        finally:
            upstream.writer.close()
        return response

    async def _authorize(self, request: web.Request, *, verb: str = "get") -> web.Response | None:
        ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if not der:
            return _text(401, "Unauthorized")
        user, groups = certificates.client_identity(der)
        try:
            allowed = await self._authorizer.allowed(user, groups, verb)
        except (APIConnectionError, APIStatusError) as exc:
            logger.warning("%s: cannot authorize %s: %s", self._node_name, user, explain(exc, advice=False))
            return _text(500, "the authorization check failed")
        if allowed:
            return None
        return _text(
            403,
            f"Forbidden (user={user}, verb={verb}, resource=nodes, subresource(s)=[proxy])",
        )


class _Forward:
    """What aiohttp feeds an upgraded connection's bytes to (as its WebSocket reader): the provider's stream."""

    def __init__(self, writer: asyncio.StreamWriter, closed: asyncio.Event) -> None:
        self._writer = writer
        self._closed = closed

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self._writer.write(data)
        return False, b""

    def feed_eof(self) -> None:
        self._closed.set()

    def set_exception(self, exc: BaseException, cause: BaseException | None = None) -> None:
        self._closed.set()


async def _relay(request: web.Request, upstream: Upgraded) -> None:
    """Pass the bytes of the switched connection on, both ways, until either side closes it."""
    transport = request.transport
    if transport is None:
        return
    closed = asyncio.Event()
    request.protocol.set_parser(_Forward(upstream.writer, closed))  # type: ignore[arg-type]

    async def back() -> None:
        while chunk := await upstream.reader.read(RELAY_CHUNK):
            transport.write(chunk)

    returning = asyncio.create_task(back(), name=f"stream relay of {request.path}")
    ended = asyncio.create_task(closed.wait(), name=f"stream client of {request.path}")
    try:
        await asyncio.wait((returning, ended), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (returning, ended):
            task.cancel()
        await asyncio.gather(returning, ended, return_exceptions=True)
        transport.close()


def _stream_options(query: Iterable[tuple[str, str]], *, port_forward: bool) -> list[tuple[str, str]]:
    """The kubelet's options of a stream as the provider's pod subresource takes them: exec's and attach's
    flags `true` when set (`1`, as the API server writes them), port-forward's `port` as `ports`."""
    if port_forward:
        return [(PORT_FORWARD_OPTIONS[key], value) for key, value in query if key in PORT_FORWARD_OPTIONS]
    return [
        (EXEC_OPTIONS[key], value if key == "command" else "true")
        for key, value in query
        if key in EXEC_OPTIONS and (key == "command" or value not in ("", "0", "false"))
    ]


def _text(status: int, message: str) -> web.Response:
    return web.Response(status=status, text=message, content_type="text/plain")
