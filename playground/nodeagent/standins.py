"""Small stand-ins for the few well-known images tests and demos use to show traffic: nginx and curl.

No container runtime runs images here, yet "a Deployment behind a Service, reached from
another pod" should move real packets. So two kinds of image run as stand-ins inside
the node agent, on sockets of the pod's own network namespace (made from a thread that
enters it, `playground.network.netns`), which therefore come and go from the pod's IP:

- an HTTP server for nginx images (`nginx`, `nginxinc/nginx-unprivileged`, on any
  registry): it serves nginx's welcome page at `/` (404 elsewhere) on each TCP
  containerPort of the container (80, or 8080 for the unprivileged image, when it
  declares none) and writes an access-log line per request to the container's log;
- a URL fetcher for curl images (`curlimages/curl`): the container's command and args
  are curl's arguments; the first `http://` URL among them is fetched once from the
  pod, the body (or curl's error) goes to the log, and the container exits as curl
  would (0; 6 when the name does not resolve, 7 when the connection is refused or
  cannot be made, 28 on a timeout), so its restartPolicy applies.

Names resolve as kube-dns answers them (`<service>.<namespace>.svc.cluster.local`, and
the short forms through the pod's search path) from the node agent's Service cache:
ClusterIPs only, no DNS server runs. Everything else about these pods is simulated.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import aiohttp
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from playground.network import netns
from playground.network.netns import Namespaces
from runtime.api.image import image_repository

HTTP_SERVER: Literal["http-server"] = "http-server"
FETCHER: Literal["fetcher"] = "fetcher"
StandIn = Literal["http-server", "fetcher"]

_REGISTRIES = ("docker.io/", "index.docker.io/", "registry-1.docker.io/", "mirror.gcr.io/")
NGINX = {"nginx": 80, "library/nginx": 80, "nginxinc/nginx-unprivileged": 8080}
CURL = {"curlimages/curl"}
CLUSTER_DOMAIN = "cluster.local"
FETCH_TIMEOUT = 10.0
SERVER_HEADER = "nginx/1.27.0 (playground stand-in)"
WELCOME = """<!DOCTYPE html>
<html>
<head>
<title>Welcome to nginx!</title>
</head>
<body>
<h1>Welcome to nginx!</h1>
<p>If you see this page, the nginx web server is successfully installed and
working. Further configuration is required.</p>
<p><em>Thank you for using nginx.</em></p>
</body>
</html>
"""

NOT_FOUND = "<html><body><h1>404 Not Found</h1></body></html>\n"
#: one line for a container's log
Log = Callable[[str], None]
#: (namespace, name) -> the Service's ClusterIP, or None
ServiceIP = Callable[[str, str], str | None]


def _repository(image: str) -> str:
    repository = image_repository(image)
    for registry in _REGISTRIES:
        repository = repository.removeprefix(registry)
    return repository


def stand_in(image: str) -> StandIn | None:
    """Which stand-in runs `image`, if any."""
    repository = _repository(image)
    if repository in NGINX:
        return HTTP_SERVER
    if repository in CURL:
        return FETCHER
    return None


def http_ports(container: dict[str, Any]) -> list[int]:
    """The TCP ports an nginx stand-in listens on: the containerPorts, else the image's default."""
    ports = [
        int(port["containerPort"])
        for port in container.get("ports") or []
        if port.get("containerPort") and (port.get("protocol") or "TCP") == "TCP"
    ]
    return sorted(set(ports)) or [NGINX[_repository(str(container.get("image") or ""))]]


def fetch_url(container: dict[str, Any]) -> str | None:
    """The URL a curl stand-in fetches: the first http:// or https:// word of its command and args."""
    words = [*(container.get("command") or []), *(container.get("args") or [])]
    return next((str(word) for word in words if str(word).startswith(("http://", "https://"))), None)


def _listener(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("0.0.0.0", port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


@dataclass
class HTTPServer:
    """nginx's stand-in on the given ports of a pod's namespace, until `close()`."""

    runner: web.AppRunner

    @classmethod
    async def start(cls, namespaces: Namespaces, path: Path, ports: Sequence[int], *, log: Log) -> HTTPServer:
        async def handle(request: web.Request) -> web.Response:
            found = request.path in ("/", "/index.html")
            body = WELCOME if found else NOT_FOUND
            response = web.Response(
                status=200 if found else 404,
                text=body,
                content_type="text/html",
                headers={"Server": SERVER_HEADER},
            )
            when = datetime.now(UTC).strftime("%d/%b/%Y:%H:%M:%S +0000")
            agent = request.headers.get("User-Agent", "-")
            log(
                f'{request.remote} - - [{when}] "{request.method} {request.path_qs} HTTP/{request.version.major}.'
                f'{request.version.minor}" {response.status} {len(body.encode())} "-" "{agent}"'
            )
            return response

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            for port in ports:
                sock = await namespaces.inside(path, _listener, port)
                await web.SockSite(runner, sock).start()
        except BaseException:
            await runner.cleanup()
            raise
        return cls(runner)

    async def close(self) -> None:
        await self.runner.cleanup()


class ServiceResolver(AbstractResolver):
    """Service names to ClusterIPs, as kube-dns answers a pod of `namespace` (ndots 5, the pod's search path)."""

    def __init__(self, namespace: str, service_ip: ServiceIP) -> None:
        self._namespace = namespace
        self._service_ip = service_ip

    def lookup(self, host: str) -> str | None:
        try:
            return str(ipaddress.ip_address(host))
        except ValueError:
            pass
        name = host.rstrip(".")
        candidates = (
            [name]
            if host.endswith(".")
            else [
                f"{name}.{self._namespace}.svc.{CLUSTER_DOMAIN}",
                f"{name}.svc.{CLUSTER_DOMAIN}",
                f"{name}.{CLUSTER_DOMAIN}",
                name,
            ]
        )
        for candidate in candidates:
            parts = candidate.split(".")
            if len(parts) == 5 and parts[2:] == ["svc", *CLUSTER_DOMAIN.split(".")]:
                ip = self._service_ip(parts[1], parts[0])
                if ip is not None:
                    return ip
        return None

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        ip = self.lookup(host)
        if ip is None:
            raise OSError(f"Could not resolve host: {host}")
        return [
            ResolveResult(
                hostname=host, host=ip, port=port, family=socket.AF_INET, proto=0, flags=socket.AI_NUMERICHOST
            )
        ]

    async def close(self) -> None:
        return None


async def fetch(path: Path, url: str, *, resolver: ServiceResolver, log: Log) -> int:
    """curl `url` from inside the namespace at `path`: the log gets the body or curl's error; curl's exit code."""

    def socket_in_pod(addr_info: Any) -> socket.socket:
        family, kind, proto = addr_info[0], addr_info[1], addr_info[2]
        # two setns calls around one socket(): the loop's thread is back home at once
        with netns.entered(path):
            return socket.socket(family, kind, proto)

    connector = aiohttp.TCPConnector(resolver=resolver, socket_factory=socket_in_pod, force_close=True)
    started = time.monotonic()
    host, port = URL(url).host or "", URL(url).port
    try:
        async with (
            aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=FETCH_TIMEOUT)
            ) as session,
            session.get(url, headers={"User-Agent": "curl/8.11.1"}, ssl=False) as response,
        ):
            body = await response.text(errors="replace")
    except TimeoutError:
        log(
            f"curl: (28) Failed to connect to {host} port {port} after {_ms(started)} ms: Timeout was reached"
        )
        return 28
    except aiohttp.ClientConnectorDNSError:
        log(f"curl: (6) Could not resolve host: {host}")
        return 6
    except aiohttp.ClientConnectorError as exc:
        reason = exc.os_error.strerror if exc.os_error.strerror else str(exc.os_error)
        log(f"curl: (7) Failed to connect to {host} port {port} after {_ms(started)} ms: {reason}")
        return 7
    except aiohttp.ClientError as exc:
        log(f"curl: (56) Failure when receiving data from the peer: {exc}")
        return 56
    for line in body.splitlines():
        log(line)
    return 0


def _ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)
