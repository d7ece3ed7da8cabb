"""The node's kubelet API: the read-only slice the API server proxies `kubectl logs` to.

An aiohttp HTTPS server on the node's address (`status.daemonEndpoints.kubeletEndpoint`
names its port) serving `GET /containerLogs/{namespace}/{pod}/{container}` with the
kubelet's query (`follow`, `previous`, `timestamps`, `tailLines`, `limitBytes`,
`sinceSeconds`, `sinceTime`), streamed chunk by chunk, and `/healthz`.

Like virtual-kubelet's `node/api`, it knows nothing of pods itself: a plain callable
finds the runner and the pod for a namespace/name. The serving certificate is
self-signed per node (kubelet's `kubelet.crt` when no serving certificate is given),
kept in the agent's state dir. Clients must present a certificate signed by the
cluster CA; only the API server's kubelet client (CN `kube-apiserver-kubelet-client`)
and `system:masters` are authorized. (A real kubelet would ask the API server with a
SubjectAccessReview for `nodes/proxy`; those two identities are what it would allow
by default.) Status codes are the kubelet's: 401 without a client certificate, 403
for anyone else, 404 for an unknown pod or container, 400 when the container has no
log to show (waiting to start, no previous instance).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web
from cryptography import x509

from runtime.api.objects import JSON
from runtime.forge import certificates

from .containers import LogOptions, LogUnavailableError, Runner

logger = logging.getLogger(__name__)

#: (namespace, name) -> the runner that runs the pod and the pod, or None when the pod is not on this node
FindPod = Callable[[str, str], tuple[Runner, JSON] | None]

APISERVER_CLIENT = "kube-apiserver-kubelet-client"
MASTERS_GROUP = "system:masters"
CERT_FILE = "kubelet.crt"
KEY_FILE = "kubelet.key"
CERT_DAYS = 365
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


class KubeletAPI:
    """Serves the kubelet API until cancelled; `ready` is set and `port` known once it listens."""

    def __init__(
        self,
        find_pod: FindPod,
        *,
        node_name: str,
        address: str,
        port: int = 0,
        ca_pem: bytes,
        pki_dir: Path,
    ) -> None:
        self._find_pod = find_pod
        self._node_name = node_name
        self._address = address
        self.port = port
        self._ca_pem = ca_pem
        self._pki_dir = pki_dir
        self.ready = asyncio.Event()

    async def run(self) -> None:
        context = await asyncio.to_thread(self._ssl_context)
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._container_logs)
        runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self._address, self.port, ssl_context=context)
            await site.start()
            self.port = int(runner.addresses[0][1])
            logger.info("node %s: kubelet API on https://%s:%d", self._node_name, self._address, self.port)
            self.ready.set()
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    def _ssl_context(self) -> ssl.SSLContext:
        cert, key = serving_certificate(self._pki_dir, hosts=[self._address, self._node_name])
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        # optional at the TLS layer so that a missing certificate is an HTTP 401, as the kubelet answers
        context.verify_mode = ssl.CERT_OPTIONAL
        context.load_verify_locations(cadata=self._ca_pem.decode("ascii"))
        context.set_alpn_protocols(["http/1.1"])
        context.load_cert_chain(cert, key)
        return context

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok", content_type="text/plain")

    async def _container_logs(self, request: web.Request) -> web.StreamResponse:
        denied = _authorize(request)
        if denied is not None:
            return denied
        namespace, name = request.match_info["namespace"], request.match_info["pod"]
        container = request.match_info["container"]
        try:
            options = log_options(request.query)
        except ValueError as exc:
            return _text(400, str(exc))
        found = self._find_pod(namespace, name)
        if found is None:
            return _text(404, f'pod "{name}" does not exist')
        runner, pod = found
        spec = pod.get("spec") or {}
        names = [
            str(c.get("name")) for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
        ]
        if container not in names:
            return _text(404, f'container "{container}" not found in pod "{name}"')
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        if runner.report(uid) is None:
            return _text(
                400, f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating'
            )
        try:
            # a runner may refuse at once or on the first chunk (an async generator)
            chunks = runner.logs(uid, container, options)
            first = await anext(chunks, b"")
        except LogUnavailableError as exc:
            return _text(400, str(exc))
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        try:
            if first:
                await response.write(first)
            async for chunk in chunks:
                await response.write(chunk)
            await response.write_eof()
        except (ConnectionResetError, LogUnavailableError) as exc:
            logger.debug("%s/%s: log stream of %s ended: %s", namespace, name, container, exc)
        finally:
            close = getattr(chunks, "aclose", None)
            if close is not None:
                await close()
        return response


def log_options(query: Any) -> LogOptions:
    """The kubelet's log query as `LogOptions`; ValueError with a message for a malformed value."""

    def flag(key: str) -> bool:
        value = query.get(key)
        if value is None or value in _FALSE:
            return False
        if value in _TRUE:
            return True
        raise ValueError(f"invalid value {value!r} for {key}: want true or false")

    def number(key: str, minimum: int) -> int | None:
        value = query.get(key)
        if value is None:
            return None
        try:
            parsed = int(value)
        except ValueError:
            raise ValueError(f"invalid value {value!r} for {key}: want an integer") from None
        if parsed < minimum:
            raise ValueError(f"{key}: Invalid value: {parsed}: must be greater than or equal to {minimum}")
        return parsed

    return LogOptions(
        follow=flag("follow"),
        previous=flag("previous"),
        timestamps=flag("timestamps"),
        tail_lines=number("tailLines", 0),
        limit_bytes=number("limitBytes", 1),
        since_seconds=number("sinceSeconds", 1),
        since_time=query.get("sinceTime") or None,
    )


def _text(status: int, message: str) -> web.Response:
    return web.Response(status=status, text=message, content_type="text/plain")


def _authorize(request: web.Request) -> web.Response | None:
    """None for the API server's kubelet client or a system:masters user; the kubelet's 401/403 otherwise."""
    ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return _text(401, "Unauthorized")
    user, groups = certificates.client_identity(der)
    if user == APISERVER_CLIENT or MASTERS_GROUP in groups:
        return None
    return _text(403, f"Forbidden (user={user}, verb=get, resource=nodes, subresource(s)=[proxy])")


def serving_certificate(directory: Path, *, hosts: list[str]) -> tuple[Path, Path]:
    """A self-signed serving certificate for `hosts` in `directory` (kept while it covers them and is valid)."""
    cert_path, key_path = directory / CERT_FILE, directory / KEY_FILE
    if cert_path.exists() and key_path.exists() and _covers(cert_path.read_bytes(), hosts):
        return cert_path, key_path
    key = certificates.new_key()
    now = dt.datetime.now(dt.UTC)
    cert = certificates.tls_certificate(
        key,
        common_name=f"{hosts[-1]}@{int(now.timestamp())}",
        hosts=hosts,
        validity=dt.timedelta(days=CERT_DAYS),
        now=now,
    )
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    _write(key_path, certificates.key_pem(key))
    _write(cert_path, certificates.certificate_pem(cert))
    return cert_path, key_path


def _covers(cert_pem: bytes, hosts: list[str]) -> bool:
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, x509.ExtensionNotFound):
        return False
    present = {str(ip) for ip in san.get_values_for_type(x509.IPAddress)} | set(
        san.get_values_for_type(x509.DNSName)
    )
    fresh = cert.not_valid_after_utc > dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
    return fresh and all(host in present for host in hosts)


def _write(path: Path, data: bytes) -> None:
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as handle:
        handle.write(data)
    Path(handle.name).chmod(0o600)
    Path(handle.name).replace(path)
