"""The one module that talks HTTP to Kubernetes: generic JSON-dict operations on any resource.

Objects stay JSON-shaped dicts with the API's camelCase keys (no generated model
classes), so one code path serves built-in kinds and our CRDs alike and what goes over
the wire is exactly what the caller wrote. A `Resource` value says where a kind lives
(group, version, plural, scope); `Client.resource_for` finds it through discovery.

Credentials come from our own loader (`kubeconfig/`: kubeconfig files, in-cluster
ServiceAccount files, provider attributes, exec plugins, token file refresh); the
transport is a plain aiohttp session whose every request carries the loader's TLS
context, Authorization header, `tls-server-name` and proxy. A 401 drops cached
credentials and the request is sent once more when fresh ones differ (a rotated token
file, an exec plugin's new token). Every error `Status` becomes a typed exception from
`errors.py`, and transport failures become `APIConnectionError` with their cause in words
(`failures.transport_failure`; for a certificate that is not trusted, the client reads it
once more without verifying it, so the message can name its subject and issuer). Every
error carries the cluster's name (context and server URL) and whose credentials were
used, for `failures.explain`. Credentials and kubeconfig contents are never logged.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import ssl
import urllib.request
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, TypedDict
from urllib.parse import urlencode, urlsplit

import aiohttp

from runtime.api.objects import JSON, nested
from runtime.api.resource import Resource as Resource

from .errors import APIConnectionError, APIStatusError, GoneError, NotFoundError, status_error
from .failures import address_of, transport_failure
from .kubeconfig import (
    SERVICE_ACCOUNT_DIR,
    Authenticator,
    ClusterConfig,
    load_incluster_config,
    load_kubeconfig,
    load_kubeconfig_dict,
)
from .transport import Certificate

logger = logging.getLogger(__name__)

JSONList = list[JSON]
Query = list[tuple[str, str]]
PatchType = Literal["merge", "json", "strategic"]

USER_AGENT = "liqo-runtime"
#: simultaneous connections to the API server (watches hold one each)
CONNECTION_LIMIT = 100
#: client-go's `maxRetries`: how often a request the server asked to retry later (429, or 5xx with
#: Retry-After) is sent again, waiting what Retry-After says (capped at `RETRY_AFTER_CAP` seconds)
MAX_RETRIES = 10
RETRY_AFTER_CAP = 10.0
#: a watch event is one line; objects up to etcd's 1.5 MiB request limit must fit in the read buffer
READ_BUFFER = 2**21
#: how long reading an untrusted server certificate (for the error message) may take
CERTIFICATE_PROBE_SECONDS = 5.0
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
_PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}


@dataclass
class Upgraded:
    """A connection the API server switched to another protocol (101): its answer's headers, and the raw byte
    streams both ways (SPDY or WebSocket frames, for the caller to pass on or speak)."""

    headers: Mapping[str, str]
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter


class WatchEvent(TypedDict):
    """One raw watch event: ADDED, MODIFIED, DELETED, BOOKMARK (object: a stub), ERROR (object: a Status)."""

    type: str
    object: JSON


@dataclass(frozen=True)
class ObjectList:
    """Items of a list (each with apiVersion and kind filled in), its resourceVersion, and the next page's token."""

    items: JSONList
    resource_version: str
    continue_token: str | None = None


#: told the verb (the API's: get, list, watch, create, update, patch, delete) and the status code of each request
RequestObserver = Callable[[str, int], None]
_VERBS: Final = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


class Client:
    """An async client for one cluster. `__init__` does no I/O; the `from_*` constructors load credentials."""

    def __init__(self, config: ClusterConfig, *, timeout: float = 60.0) -> None:
        self._config = config
        self._auth = Authenticator(config)
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None
        self._closed = False
        #: told of every request this client sends (its owner's metrics); None: nobody
        self.on_request: RequestObserver | None = None
        #: the proxy the environment names for the server (HTTPS_PROXY, NO_PROXY, ...), found once per server
        self._env_proxy = _env_proxy(config.server)
        #: discovery results by apiVersion: stable for a server's life, refreshed on a miss (new CRDs)
        self._discovery: dict[str, JSONList] = {}

    @classmethod
    async def from_config(cls, config: ClusterConfig, *, request_timeout: float = 60.0) -> Client:
        """A client for a loaded config; its TLS context is built now, so bad certificates fail here."""
        client = cls(config, timeout=request_timeout)
        await client._auth.prepare()
        return client

    @classmethod
    async def from_kubeconfig(cls, path: Path | str, *, context: str | None = None) -> Client:
        """Credentials from a kubeconfig file (relative certificate paths resolve next to it)."""
        config = await asyncio.to_thread(load_kubeconfig, path, context=context)
        return await cls.from_config(config)

    @classmethod
    async def from_kubeconfig_dict(
        cls, config: Mapping[str, Any], *, context: str | None = None, base_path: Path | None = None
    ) -> Client:
        """Credentials from a parsed kubeconfig; relative paths resolve against `base_path` (else the cwd)."""
        loaded = await asyncio.to_thread(load_kubeconfig_dict, config, base_path=base_path, context=context)
        return await cls.from_config(loaded)

    @classmethod
    async def in_cluster(cls, *, service_account_dir: Path = SERVICE_ACCOUNT_DIR) -> Client:
        """The pod's ServiceAccount credentials (the token file is re-read as kubelet rotates it)."""
        config = await asyncio.to_thread(load_incluster_config, service_account_dir=service_account_dir)
        return await cls.from_config(config)

    async def close(self) -> None:
        self._closed = True
        if self._session is not None:
            await self._session.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def reconfigure(self, config: ClusterConfig) -> None:
        """Use `config`'s credentials from the next request on (a renewed credential, say).

        Requests and watches in flight finish with the credentials they started with; an
        informer's next watch request carries the new ones, so nothing built on this client
        has to be rebuilt when its credential changes.
        """
        auth = Authenticator(config)
        await auth.prepare()
        self._config, self._auth, self._env_proxy = config, auth, _env_proxy(config.server)

    @property
    def host(self) -> str:
        return self._config.server

    @property
    def config(self) -> ClusterConfig:
        return self._config

    # reads

    async def get(
        self, resource: Resource, name: str, *, namespace: str | None = None, subresource: str | None = None
    ) -> JSON:
        path = resource.path(namespace=_scope(resource, namespace), name=name, subresource=subresource)
        return await self._json("GET", path)

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 0,
    ) -> ObjectList:
        """All matching objects, following continue tokens transparently (`page_size` 0: one request).

        When a continue token expires mid-way (410), it starts over with one unpaginated
        list, as client-go's pager does, so the result is always one consistent snapshot.
        """
        pages = functools.partial(
            self.list_page,
            resource,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
        )
        items: JSONList = []
        token: str | None = None
        while True:
            try:
                page = await pages(limit=page_size, continue_token=token)
            except GoneError:
                if token is None:
                    raise
                logger.info("%s: continue token expired, listing again in one request", resource.plural)
                return await pages()
            items.extend(page.items)
            if not page.continue_token:
                return ObjectList(items=items, resource_version=page.resource_version)
            token = page.continue_token

    async def list_page(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = 0,
        continue_token: str | None = None,
        resource_version: str | None = None,
    ) -> ObjectList:
        """One page of a list: up to `limit` items (0: all) and the token for the next page, if any."""
        query: Query = []
        _add(query, "labelSelector", label_selector)
        _add(query, "fieldSelector", field_selector)
        _add(query, "limit", str(limit) if limit else None)
        _add(query, "continue", continue_token)
        _add(query, "resourceVersion", resource_version)
        body = await self._json("GET", resource.path(namespace=namespace), query=query, verb="list")
        meta = body.get("metadata") or {}
        kind = resource.kind or str(body.get("kind", "")).removesuffix("List")
        api_version = body.get("apiVersion") or resource.api_version
        items = [{"apiVersion": api_version, "kind": kind, **item} for item in body.get("items") or []]
        return ObjectList(
            items=items,
            resource_version=str(meta.get("resourceVersion", "")),
            continue_token=meta.get("continue") or None,
        )

    async def watch(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: float | None = None,
        allow_bookmarks: bool = False,
        client_timeout: float | None = None,
        connect_timeout: float | None = None,
    ) -> AsyncGenerator[WatchEvent, None]:
        """The raw events of one watch request, until the server ends the stream.

        ERROR events are yielded as they come (their object is a Status); the caller
        decides what a 410 means. The stream fails with `APIConnectionError` when it
        breaks, or stays silent for `client_timeout` seconds.
        """
        query: Query = [("watch", "true")]
        _add(query, "labelSelector", label_selector)
        _add(query, "fieldSelector", field_selector)
        _add(query, "resourceVersion", resource_version)
        # the API takes whole seconds, and 0 would mean the server's default (30 min or more)
        _add(
            query,
            "timeoutSeconds",
            str(max(1, round(timeout_seconds))) if timeout_seconds is not None else None,
        )
        _add(query, "allowWatchBookmarks", "true" if allow_bookmarks else None)
        limits = aiohttp.ClientTimeout(
            total=None, sock_connect=connect_timeout or self._timeout, sock_read=client_timeout
        )
        path = resource.path(namespace=namespace)
        response = await self._send("GET", path, query=query, limits=limits, verb="watch")
        async with response:
            if response.status >= 400:
                raise self._status_error(response.status, await self._read(response, "GET", path))
            while True:
                try:
                    line = await response.content.readline()
                except (aiohttp.ClientError, TimeoutError) as exc:
                    raise await self._connection_error(exc, f"watch {path}", bound=client_timeout) from exc
                if not line:
                    return
                if line.strip():
                    yield json.loads(line)

    # writes

    async def create(
        self,
        resource: Resource,
        body: JSON,
        *,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> JSON:
        """POST an object; with `subresource`, POST to an object's subresource (`name` or the body's name)."""
        ns = _scope(resource, namespace, body)
        target = (name or _name(body)) if subresource else None
        path = resource.path(namespace=ns, name=target, subresource=subresource)
        return await self._json("POST", path, query=_write_query(field_manager, dry_run), body=body)

    async def replace(
        self,
        resource: Resource,
        body: JSON,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> JSON:
        """PUT the whole object; its metadata.resourceVersion (if set) makes the write conditional."""
        path = resource.path(
            namespace=_scope(resource, namespace, body), name=_name(body), subresource=subresource
        )
        return await self._json("PUT", path, query=_write_query(field_manager, dry_run), body=body)

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> JSON:
        path = resource.path(namespace=_scope(resource, namespace), name=name, subresource=subresource)
        return await self._json(
            "PATCH",
            path,
            query=_write_query(field_manager, dry_run),
            body=patch,
            content_type=_PATCH_CONTENT_TYPES[patch_type],
        )

    async def apply(
        self,
        resource: Resource,
        body: JSON,
        *,
        field_manager: str,
        namespace: str | None = None,
        force: bool = False,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> JSON:
        """Server-side apply: `body` is this manager's whole intent for the fields it owns.

        apiVersion and kind are filled in from `resource` when missing; `force` takes
        over fields other managers own instead of failing with a conflict.
        """
        intent = {"apiVersion": resource.api_version, "kind": resource.kind, **body}
        if not intent["kind"]:
            raise ValueError(f"apply to {resource.plural} needs a kind: set Resource.kind or the body's kind")
        path = resource.path(
            namespace=_scope(resource, namespace, body), name=_name(body), subresource=subresource
        )
        query = _write_query(field_manager, dry_run)
        _add(query, "force", "true" if force else None)
        return await self._json("PATCH", path, query=query, body=intent, content_type=APPLY_CONTENT_TYPE)

    async def delete(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: Literal["Orphan", "Background", "Foreground"] | None = None,
        grace_period_seconds: int | None = None,
        preconditions: JSON | None = None,
        dry_run: bool = False,
    ) -> JSON:
        """DELETE an object; returns what the server answers (the object if it lingers on finalizers, or a Status).

        `preconditions` is the API's shape: {"uid": ..., "resourceVersion": ...}.
        """
        options: JSON = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if preconditions is not None:
            options["preconditions"] = preconditions
        if dry_run:
            options["dryRun"] = ["All"]
        path = resource.path(namespace=_scope(resource, namespace), name=name)
        return await self._json("DELETE", path, body=options)

    async def update_status(
        self,
        resource: Resource,
        body: JSON,
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
    ) -> JSON:
        return await self.replace(
            resource, body, namespace=namespace, subresource="status", field_manager=field_manager
        )

    async def patch_status(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        field_manager: str | None = None,
    ) -> JSON:
        return await self.patch(
            resource,
            name,
            patch,
            namespace=namespace,
            patch_type=patch_type,
            subresource="status",
            field_manager=field_manager,
        )

    async def stream(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        subresource: str,
        query: Iterable[tuple[str, str]] = (),
    ) -> AsyncGenerator[bytes, None]:
        """The raw body of a GET on an object's subresource (`pods/log`), chunk by chunk, as the server sends it.

        Errors before the body raise as typed errors; a connection that breaks mid-body raises APIConnectionError.
        """
        path = resource.path(namespace=_scope(resource, namespace), name=name, subresource=subresource)
        limits = aiohttp.ClientTimeout(total=None, sock_connect=self._timeout)
        response = await self._send("GET", path, query=list(query), limits=limits)
        async with response:
            if response.status >= 400:
                raise _error(response.status, await self._read(response, "GET", path))
            while True:
                try:
                    chunk = await response.content.readany()
                except (aiohttp.ClientError, TimeoutError) as exc:
                    raise await self._connection_error(exc, f"GET {path}", bound=None) from exc
                if not chunk:
                    return
                yield chunk

    async def upgrade(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        subresource: str,
        query: Iterable[tuple[str, str]] = (),
        headers: Iterable[tuple[str, str]],
    ) -> Upgraded:
        """A POST on an object's streaming subresource (`pods/exec`) that asks, with `headers` (Connection,
        Upgrade, X-Stream-Protocol-Version, Sec-WebSocket-*: a line each, a name may repeat), to switch
        protocols; the switched connection.

        An answer other than 101 raises its typed error; a server that cannot be reached, APIConnectionError.
        Not through an HTTP proxy.
        """
        path = resource.path(namespace=_scope(resource, namespace), name=name, subresource=subresource)
        query = list(query)
        target = path + ("?" + urlencode(query) if query else "")
        request = f"POST {target}"
        if self._config.proxy_url or self._env_proxy:
            raise APIConnectionError(
                f"{request}: streams (exec) are not opened through an HTTP proxy; reach the API server directly",
                cluster=self._config.cluster_label,
            )
        parts = urlsplit(self.host)
        auth = await self._auth.request_auth()
        tls = parts.scheme == "https"
        context = auth.ssl if isinstance(auth.ssl, ssl.SSLContext) else ssl.create_default_context()
        try:
            async with asyncio.timeout(self._timeout):
                reader, writer = await asyncio.open_connection(
                    parts.hostname,
                    parts.port or (443 if tls else 80),
                    ssl=context if tls else None,
                    server_hostname=(self._config.tls_server_name or parts.hostname) if tls else None,
                    limit=READ_BUFFER,
                )
                lines = [
                    f"{request} HTTP/1.1",
                    f"Host: {parts.netloc}",
                    f"User-Agent: {USER_AGENT}",
                    "Content-Length: 0",
                    *(f"{key}: {value}" for key, value in [*headers, *auth.headers.items()]),
                ]
                writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
                status, answer = _response_head(await reader.readuntil(b"\r\n\r\n"))
                if status != 101:
                    length = int(answer.get("content-length", "0") or 0)
                    body = await reader.readexactly(length) if length else b""
                    writer.close()
                    raise self._status_error(status, body)
        except (
            OSError,
            TimeoutError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            ValueError,
        ) as exc:
            raise await self._connection_error(exc, request, bound=self._timeout) from exc
        if self.on_request is not None:
            self.on_request("create", status)
        return Upgraded(headers=answer, reader=reader, writer=writer)

    async def get_path(self, path: str) -> JSON:
        """GET a path that addresses no object: a discovery document (`/apis`, `/api/v1`), `/version`."""
        return await self._json("GET", path)

    # discovery

    async def resource_for(self, api_version: str, kind: str) -> Resource:
        """The Resource serving `kind` in `api_version`, from (cached) discovery; NotFoundError if none does."""
        found = _find_kind(self._discovery.get(api_version), api_version, kind)
        if found is None:
            listing = await self.get_path(group_version_path(api_version))
            self._discovery[api_version] = list(listing.get("resources") or [])
            found = _find_kind(self._discovery[api_version], api_version, kind)
        if found is None:
            raise NotFoundError(
                {
                    "kind": "Status",
                    "status": "Failure",
                    "code": 404,
                    "reason": "NotFound",
                    "message": f'no kind "{kind}" is served in "{api_version}"',
                }
            )
        return found

    # HTTP

    async def _json(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Any = None,
        content_type: str = "application/json",
        verb: str | None = None,
    ) -> JSON:
        limits = aiohttp.ClientTimeout(total=self._timeout)
        response = await self._send(
            method, path, query=query or [], body=body, content_type=content_type, limits=limits, verb=verb
        )
        async with response:
            data = await self._read(response, method, path)
        if response.status >= 400:
            raise self._status_error(response.status, data)
        if not data:
            return {}
        decoded = json.loads(data)
        if not isinstance(decoded, dict):
            raise APIConnectionError(
                f"{method} {path}: the answer is not a JSON object", cluster=self._config.cluster_label
            )
        return decoded

    async def _send(
        self,
        method: str,
        path: str,
        *,
        query: Query,
        limits: aiohttp.ClientTimeout,
        body: Any = None,
        content_type: str = "application/json",
        verb: str | None = None,
    ) -> aiohttp.ClientResponse:
        """One request (retried once after a 401 with fresh credentials); `verb` names it for `on_request`."""
        url = self.host + path
        if query:
            url += "?" + urlencode(query)
        data = json.dumps(body) if body is not None and method in _BODY_METHODS else None
        logger.debug("%s %s", method, path)
        auth = await self._auth.request_auth()
        response = await self._request(method, url, path, data, content_type, auth.headers, auth.ssl, limits)
        for _ in range(MAX_RETRIES):
            wait = _retry_after(response)
            if wait is None:
                break
            # the server did not take the request (a priority level full, storage still initializing after
            # a restart): client-go sends it again after the time it names
            response.release()
            logger.info("%s %s: %s from the server; retrying in %g s", method, path, response.status, wait)
            await asyncio.sleep(wait)
            response = await self._request(
                method, url, path, data, content_type, auth.headers, auth.ssl, limits
            )
        if response.status == 401 and await self._auth.unauthorized(auth):
            response.release()
            logger.info("%s %s: unauthorized; retrying once with refreshed credentials", method, path)
            auth = await self._auth.request_auth()
            response = await self._request(
                method, url, path, data, content_type, auth.headers, auth.ssl, limits
            )
        if self.on_request is not None:
            self.on_request(verb or _VERBS.get(method, method.lower()), response.status)
        return response

    async def _request(
        self,
        method: str,
        url: str,
        path: str,
        data: str | None,
        content_type: str,
        credentials: Mapping[str, str],
        ssl_context: ssl.SSLContext | bool,
        limits: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        headers = {
            "Accept": "application/json",
            "Content-Type": content_type,
            "User-Agent": USER_AGENT,
            **credentials,
        }
        proxy = self._config.proxy_url or self._env_proxy
        try:
            return await self._http().request(
                method,
                url,
                data=data,
                headers=headers,
                timeout=limits,
                ssl=ssl_context,
                server_hostname=self._config.tls_server_name,
                proxy=proxy,
            )
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise await self._connection_error(
                exc, f"{method} {path}", bound=limits.total or limits.sock_connect
            ) from exc

    def _status_error(self, code: int, data: bytes) -> APIStatusError:
        error = _error(code, data)
        error.cluster = self._config.cluster_label
        error.user = self._config.credentials_label
        return error

    async def _connection_error(
        self, exc: BaseException, request: str, *, bound: float | None
    ) -> APIConnectionError:
        """A transport failure of `request` ("GET /api/v1/..."), in words (`failures.transport_failure`)."""
        certificate = (
            await self._server_certificate()
            if isinstance(exc, aiohttp.ClientConnectorCertificateError)
            else None
        )
        failure = transport_failure(
            exc,
            address=address_of(self.host),
            timeout=bound or None,
            certificate=certificate,
            server_name=self._config.tls_server_name,
        )
        return APIConnectionError(
            f"{request}: {failure}", failure=failure, cluster=self._config.cluster_label
        )

    async def _server_certificate(self) -> Certificate | None:
        """The server's certificate read without verifying it, to say which one was not trusted (None if it
        cannot be read: behind a proxy, or the server went away)."""
        if self._config.proxy_url:
            return None
        parts = urlsplit(self.host)
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        try:
            async with asyncio.timeout(CERTIFICATE_PROBE_SECONDS):
                _, writer = await asyncio.open_connection(
                    parts.hostname,
                    parts.port or 443,
                    ssl=context,
                    server_hostname=self._config.tls_server_name or parts.hostname,
                )
        except (OSError, TimeoutError):
            return None
        try:
            ssl_object = writer.get_extra_info("ssl_object")
            der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        finally:
            writer.close()
        return Certificate.of(der) if der else None

    def _http(self) -> aiohttp.ClientSession:
        """The session, made on first use (inside the loop).

        Proxies from the environment apply as in client-go, looked up once per server
        (`_env_proxy`): aiohttp's `trust_env` looks them up again in a thread for every
        request, a thread hop that costs more than the request's own work on a busy loop.
        """
        if self._closed:
            raise APIConnectionError(f"{self.host}: the client is closed", cluster=self._config.cluster_label)
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=CONNECTION_LIMIT),
                read_bufsize=READ_BUFFER,
            )
        return self._session

    async def _read(self, response: aiohttp.ClientResponse, method: str, path: str) -> bytes:
        try:
            return await response.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise await self._connection_error(exc, f"{method} {path}", bound=self._timeout) from exc


def _response_head(head: bytes) -> tuple[int, dict[str, str]]:
    """The status and the headers (names lower-cased) of an HTTP/1.1 answer's head."""
    status_line, *fields = head.decode("latin-1").split("\r\n")
    protocol, _, rest = status_line.partition(" ")
    if not protocol.startswith("HTTP/"):
        raise ValueError(f"not an HTTP answer: {status_line[:40]!r}")
    headers = {}
    for field in fields:
        key, separator, value = field.partition(":")
        if separator:
            headers[key.strip().lower()] = value.strip()
    return int(rest.split(" ", 1)[0]), headers


def _retry_after(response: aiohttp.ClientResponse) -> float | None:
    """Seconds to wait before sending a request again, as client-go's `checkWait` reads them: a 429 or a 5xx
    with a `Retry-After` header of whole seconds; None when the answer stands."""
    header = response.headers.get("Retry-After", "")
    if (response.status == 429 or response.status >= 500) and header.isdigit():
        return min(float(header), RETRY_AFTER_CAP)
    return None


def _env_proxy(server: str) -> str | None:
    """The proxy the environment names for `server`: HTTPS_PROXY (HTTP_PROXY for http://) unless NO_PROXY covers
    it, as client-go's `ProxyFromEnvironment` reads them (credentials in the proxy's URL; no netrc)."""
    parts = urlsplit(server)
    if not parts.hostname or urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies_environment().get(parts.scheme or "https")


def group_version_path(api_version: str) -> str:
    """Where a group version's discovery document is served: `/api/v1` for the core group, else `/apis/<gv>`."""
    group, _, version = api_version.rpartition("/")
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def _add(query: Query, key: str, value: str | None) -> None:
    if value is not None and value != "":
        query.append((key, value))


def _write_query(field_manager: str | None, dry_run: bool) -> Query:
    query: Query = []
    _add(query, "fieldManager", field_manager)
    _add(query, "dryRun", "All" if dry_run else None)
    return query


def _name(body: JSON) -> str:
    name = nested(body, "metadata", "name")
    if not name:
        raise ValueError("the object has no metadata.name")
    return str(name)


def _scope(resource: Resource, namespace: str | None, body: JSON | None = None) -> str | None:
    """The namespace of one object: the argument, else the body's; required for namespaced kinds."""
    if not resource.namespaced:
        return None
    namespace = namespace or nested(body, "metadata", "namespace")
    if not namespace:
        raise ValueError(f"{resource.plural} are namespaced: give a namespace")
    return str(namespace)


def _error(code: int, data: bytes) -> APIStatusError:
    try:
        body = json.loads(data) if data else None
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status":
        return status_error(body)
    message = data.decode(errors="replace")[:1000] if data else ""
    return status_error({"kind": "Status", "status": "Failure", "code": code, "message": message})


def _find_kind(resources: Iterable[JSON] | None, api_version: str, kind: str) -> Resource | None:
    group, _, version = api_version.rpartition("/")
    for entry in resources or ():
        if entry.get("kind") == kind and "/" not in str(entry.get("name", "")):
            return Resource(group, version, str(entry["name"]), bool(entry.get("namespaced")), kind)
    return None
