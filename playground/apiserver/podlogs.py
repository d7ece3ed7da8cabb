"""`GET pods/{name}/log`: proxied to the kubelet of the pod's node, as kube-apiserver does.

kube-apiserver (`pkg/registry/core/pod/rest/log.go`, `strategy.go` LogLocation)
validates the PodLogOptions, picks the container (the only one, or the one named;
400 with the choices otherwise), and streams
`https://<node address>:<kubelet port>/containerLogs/<ns>/<pod>/<container>?<options>`
back as text/plain. A pod not yet bound to a node has no log: 204 No Content. The
kubelet's errors come back as kube-apiserver's response checker shapes them (400 with
the kubelet's text, 404 NotFound for `pods/log`, 500 for an unreachable kubelet).

The emulator authenticates to kubelets with a client certificate from its CA (CN
`kube-apiserver-kubelet-client`, O `system:masters`, like `--kubelet-client-certificate`)
and, like kube-apiserver without `--kubelet-certificate-authority`, does not verify the
kubelet's serving certificate. The node address is the first of InternalIP, ExternalIP,
Hostname, InternalDNS, ExternalDNS the Node reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
from aiohttp import web
from multidict import MultiMapping

from . import errors
from .identity import MASTERS_GROUP
from .pki import CertificateAuthority, write_file_atomically
from .resources.base import Obj
from .storage import Storage

KUBELET_CLIENT = "kube-apiserver-kubelet-client"
DEFAULT_KUBELET_PORT = 10250
ADDRESS_TYPES = ("InternalIP", "ExternalIP", "Hostname", "InternalDNS", "ExternalDNS")
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False", "")
#: how much of a kubelet's error body becomes the message
MAX_ERROR_BYTES = 16 * 1024


class PodLogs:
    def __init__(self, ca: CertificateAuthority, storage: Storage) -> None:
        self._ca = ca
        self._storage = storage
        self._ssl: ssl.SSLContext | None = None

    async def handle(self, request: web.Request, pod: Obj) -> web.StreamResponse:
        if request.method != "GET":
            raise errors.method_not_allowed()
        name = pod["metadata"]["name"]
        query = kubelet_query(request.query, name)
        container = choose_container(pod, request.query.get("container", ""))
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            return web.Response(status=204)
        node = self._storage.get("nodes", "", node_name)
        if node is None:
            raise errors.not_found("nodes", node_name)
        host, port = kubelet_endpoint(node)
        path = "/".join(quote(part, safe="") for part in (pod["metadata"]["namespace"], name, container))
        url = f"https://{_join(host, port)}/containerLogs/{path}"
        if query:
            url += "?" + urlencode(query)
        context = await self._client_ssl()
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30)
        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=context), timeout=timeout
        ) as session:
            try:
                upstream = await session.get(url)
            except aiohttp.ClientConnectorError as exc:
                number = exc.os_error.errno
                reason = f"connect: {os.strerror(number).lower()}" if number else str(exc)
                raise errors.APIError(
                    500, "", f'Get "{url}": dial tcp {_join(host, port)}: {reason}', {}
                ) from None
            except aiohttp.ClientError as exc:
                raise errors.APIError(500, "", f'Get "{url}": {exc}', {}) from None
            async with upstream:
                if upstream.status >= 300:
                    body = (await upstream.content.read(MAX_ERROR_BYTES)).decode(errors="replace")
                    raise kubelet_error(upstream.status, body, name)
                response = web.StreamResponse(headers={"Content-Type": "text/plain"})
                await response.prepare(request)
                with contextlib.suppress(aiohttp.ClientPayloadError, ConnectionResetError):
                    async for chunk in upstream.content.iter_any():
                        await response.write(chunk)
                await response.write_eof()
                return response

    async def _client_ssl(self) -> ssl.SSLContext:
        if self._ssl is None:
            cert, key = self._ca.issue_client(KUBELET_CLIENT, organizations=[MASTERS_GROUP])
            self._ssl = await asyncio.to_thread(_client_context, cert, key)
        return self._ssl


def _client_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with tempfile.TemporaryDirectory(prefix="apiserver-kubelet-client-") as tmp:
        cert_path, key_path = Path(tmp) / "client.crt", Path(tmp) / "client.key"
        cert_path.write_bytes(cert_pem)
        write_file_atomically(key_path, key_pem)
        context.load_cert_chain(cert_path, key_path)
    return context


def kubelet_query(query: MultiMapping[str], name: str) -> list[tuple[str, str]]:
    """Validate the PodLogOptions of the request and turn them into the kubelet's query."""
    forwarded: list[tuple[str, str]] = []
    for key in ("follow", "previous", "timestamps"):
        value = query.get(key, "")
        if value not in _TRUE and value not in _FALSE:
            raise errors.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax')
        if value in _TRUE:
            forwarded.append((key, "true"))
    numbers = {key: _integer(query, key) for key in ("sinceSeconds", "tailLines", "limitBytes")}
    since_time = query.get("sinceTime")
    causes = []
    if numbers["tailLines"] is not None and numbers["tailLines"] < 0:
        causes.append(
            errors.Cause(
                "tailLines", f"Invalid value: {numbers['tailLines']}: must be greater than or equal to 0"
            )
        )
    if numbers["limitBytes"] is not None and numbers["limitBytes"] < 1:
        causes.append(
            errors.Cause("limitBytes", f"Invalid value: {numbers['limitBytes']}: must be greater than 0")
        )
    if numbers["sinceSeconds"] is not None and since_time:
        causes.append(
            errors.Cause(
                "",
                "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified",
                "FieldValueForbidden",
            )
        )
    elif numbers["sinceSeconds"] is not None and numbers["sinceSeconds"] < 1:
        causes.append(
            errors.Cause("sinceSeconds", f"Invalid value: {numbers['sinceSeconds']}: must be greater than 0")
        )
    if causes:
        raise errors.invalid("PodLogOptions", name, causes)
    if numbers["sinceSeconds"] is not None:
        forwarded.append(("sinceSeconds", str(numbers["sinceSeconds"])))
    if since_time:
        forwarded.append(("sinceTime", _rfc3339(since_time)))
    for key in ("tailLines", "limitBytes"):
        if numbers[key] is not None:
            forwarded.append((key, str(numbers[key])))
    return forwarded


def _rfc3339(text: str) -> str:
    """An RFC 3339 time as kube re-formats it for the kubelet: whole seconds, here in UTC."""
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise errors.bad_request(f'parsing time "{text}" as "2006-01-02T15:04:05Z07:00": cannot parse')
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _integer(query: MultiMapping[str], key: str) -> int | None:
    value = query.get(key)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise errors.bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax') from None


def choose_container(pod: Obj, container: str) -> str:
    """The container a log request reads, as kube-apiserver's validateContainer picks it.

    Without a name the pod must have one container; otherwise the 400 lists every
    container to choose from, init containers first, then the containers, then the
    ephemeral ones.
    """
    spec = pod.get("spec") or {}
    name = pod["metadata"]["name"]
    containers = [str(c.get("name")) for c in spec.get("containers") or []]
    init = [str(c.get("name")) for c in spec.get("initContainers") or []]
    ephemeral = [str(c.get("name")) for c in spec.get("ephemeralContainers") or []]
    if not container:
        if len(containers) == 1:
            return containers[0]
        if not containers:
            raise errors.bad_request(f"a container name must be specified for pod {name}")
        every = " ".join([*init, *containers, *ephemeral])
        raise errors.bad_request(
            f"a container name must be specified for pod {name}, choose one of: [{every}]"
        )
    if container not in (*containers, *init, *ephemeral):
        raise errors.bad_request(f"container {container} is not valid for pod {name}")
    return container


def kubelet_endpoint(node: Obj) -> tuple[str, int]:
    status = node.get("status") or {}
    addresses = {a.get("type"): a.get("address") for a in reversed(status.get("addresses") or [])}
    host = next((addresses[t] for t in ADDRESS_TYPES if addresses.get(t)), None)
    if host is None:
        raise errors.bad_request(f"node {node['metadata']['name']} has no address")
    port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get(
        "Port"
    ) or DEFAULT_KUBELET_PORT
    return str(host), int(port)


def kubelet_error(code: int, body: str, name: str) -> errors.APIError:
    """A kubelet's error answer as kube-apiserver's GenericHttpResponseChecker turns it into a Status."""
    details: dict[str, Any] = {"name": name, "kind": "pods/log"}
    if code == 400:
        return errors.bad_request(body)
    if code == 500:
        return errors.internal(body)
    reason, message = {
        401: ("Unauthorized", "the server has asked for the client to provide credentials"),
        403: ("Forbidden", body),
        404: ("NotFound", "the server could not find the requested resource"),
    }.get(code, ("", f"the server responded with the status code {code} but did not return more information"))
    return errors.APIError(code, reason, f"{message} ( pods/log {name})", details)


def _join(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
