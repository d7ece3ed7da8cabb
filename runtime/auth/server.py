"""The authentication service put together: informers, a self-signed HTTPS endpoint, the published URL.

`AuthServer.run()` starts the token Secret and Tenant informers (and the health
endpoint, if any), waits for their caches, reads the cluster identity, generates a
serving certificate (ECDSA P-256, self-signed; SANs: the listen address, the advertised
host and `liqo-auth.<namespace>.svc`), starts listening, and writes its URL into the
identity ConfigMap as `authURL` (the `--advertise-url` if given, else
`https://<listen address>`), from where `liqo_generate` reads it. Then it is ready and
serves until cancelled. Consumers authenticate the provider by the peering token, not
by the certificate, which changes with every start and stays in memory only.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import TypeVar
from urllib.parse import urlsplit

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from prometheus_client import CollectorRegistry

from runtime.api import constants as c
from runtime.api.crds import TENANTS
from runtime.api.image import package_version
from runtime.api.kinds import CONFIGMAPS, SECRETS
from runtime.core import APIError, Client, InformerFactory, NotFoundError, WatchingSettings
from runtime.core.health import HealthServer
from runtime.core.informer import InformerMetrics
from runtime.core.kubeconfig.tls import load_cert_chain
from runtime.forge.credential import ClusterInfo

from .app import Handlers, auth_app
from .identities import CLUSTER_ID_INDEX, IdentityIssuer, ProviderIdentity, cluster_id_of
from .options import AuthOptions
from .ratelimit import FailureLimiter
from .renewal import SignedRequests
from .tokens import PeeringTokens

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: validity of the serving certificate (it is regenerated at every start)
CERTIFICATE_DAYS = 365
#: the longest wait between attempts to read the identity or publish the URL
_RETRY_MAX = 30.0


def service_host(namespace: str) -> str:
    """The in-cluster DNS name of the auth Service."""
    return f"liqo-auth.{namespace}.svc"


def url_for(host: str, port: int) -> str:
    """`https://host:port`, with brackets around an IPv6 address."""
    try:
        literal = f"[{host}]" if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        literal = host
    return f"https://{literal}:{port}"


def serving_certificate(hosts: list[str]) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM): self-signed, for these host names and IP addresses."""
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(h for h in hosts if h):
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            names.append(x509.DNSName(host))
            continue
        if not address.is_unspecified:
            names.append(x509.IPAddress(address))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "liqo-auth")])
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=CERTIFICATE_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    certificate = builder.sign(key, hashes.SHA256())
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem


def _server_context(certificate: bytes, key: bytes) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    load_cert_chain(context, certificate, key, label="the auth service's serving certificate")
    return context


class AuthServer:
    def __init__(
        self, client: Client, options: AuthOptions, *, registry: CollectorRegistry | None = None
    ) -> None:
        options.validate()
        self._client = client
        self._options = options
        self._registry = registry if registry is not None else CollectorRegistry()
        #: set once the endpoint listens and its URL is published
        self.started = asyncio.Event()
        #: the bound port and published URL, once `started` is set
        self.port: int | None = None
        self.url: str | None = None
        #: the serving certificate (PEM), once `started` is set
        self.certificate: bytes | None = None

    async def run(self) -> None:
        """Serve until cancelled."""
        options = self._options
        informers = InformerFactory(
            self._client, settings=WatchingSettings(), metrics=InformerMetrics(self._registry)
        )
        secrets = informers.informer(
            SECRETS, namespace=options.namespace, label_selector=f"{c.LABEL_PEERING_TOKEN}=true"
        )
        tenants = informers.informer(TENANTS)
        tenants.store.add_index(CLUSTER_ID_INDEX, cluster_id_of)
        async with asyncio.TaskGroup() as group:
            group.create_task(informers.run(), name="auth informers")
            if options.health is not None:
                health = HealthServer(
                    settings=options.health, registry=self._registry, ready=self.started.is_set
                )
                group.create_task(health.run(), name="auth health endpoint")
            await informers.wait_synced()
            cluster = await self._cluster_info()
            provider = ProviderIdentity(
                cluster=cluster,
                api_server_url=options.api_server_url or self._client.host,
                certificate_authority=self._client.config.certificate_authority or b"",
            )
            handlers = Handlers(
                cluster=cluster,
                tokens=PeeringTokens(self._client, secrets, namespace=options.namespace),
                issuer=IdentityIssuer(self._client, tenants, provider=provider, token_ttl=options.token_ttl),
                signed=SignedRequests(self._client, tenants, window=options.signature_window),
            )
            limiter = FailureLimiter(burst=options.failure_burst, refill_per_second=options.failure_refill)
            await self._serve(auth_app(handlers, limiter=limiter, max_body=options.max_body))

    async def _serve(self, app: web.Application) -> None:
        options = self._options
        hosts = [
            options.host,
            urlsplit(options.advertise_url).hostname or "",
            service_host(options.namespace),
        ]
        certificate, key = await asyncio.to_thread(serving_certificate, hosts)
        context = await asyncio.to_thread(_server_context, certificate, key)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, options.host, options.port, ssl_context=context)
            await site.start()
            self.port = int(runner.addresses[0][1])
            self.url = options.advertise_url or url_for(options.host, self.port)
            self.certificate = certificate
            logger.info("%s: serving peering requests on %s:%d", options.namespace, options.host, self.port)
            await self._publish(self.url)
            self.started.set()
            await asyncio.Event().wait()
        finally:
            self.started.clear()
            await runner.cleanup()

    async def _cluster_info(self) -> ClusterInfo:
        data = await self._retrying("read the cluster identity", self._read_identity)
        return ClusterInfo(
            cluster_id=data[c.IDENTITY_CLUSTER_ID],
            cluster_name=data[c.IDENTITY_CLUSTER_NAME],
            version=data.get(c.IDENTITY_VERSION) or package_version(),
        )

    async def _read_identity(self) -> dict[str, str]:
        ns = self._options.namespace
        configmap = await self._client.get(CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace=ns)
        data = configmap.get("data") or {}
        missing = [key for key in (c.IDENTITY_CLUSTER_ID, c.IDENTITY_CLUSTER_NAME) if not data.get(key)]
        if missing:
            raise LookupError(
                f"{ns}/{c.CLUSTER_IDENTITY_CONFIGMAP}: no {', '.join(missing)}; reinstall the runtime"
            )
        return {str(k): str(v) for k, v in data.items()}

    async def _publish(self, url: str) -> None:
        ns = self._options.namespace
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": c.CLUSTER_IDENTITY_CONFIGMAP, "namespace": ns},
            "data": {c.IDENTITY_AUTH_URL: url},
        }

        async def publish() -> None:
            await self._client.apply(CONFIGMAPS, body, field_manager=c.FIELD_MANAGER_AUTH, force=True)

        await self._retrying("publish the authURL", publish)
        logger.info("%s/%s: published authURL %s", ns, c.CLUSTER_IDENTITY_CONFIGMAP, url)

    async def _retrying(self, what: str, attempt: Callable[[], Awaitable[T]]) -> T:
        ns = self._options.namespace
        delay = 0.5
        while True:
            try:
                return await attempt()
            except NotFoundError:
                problem = f"{ns}/{c.CLUSTER_IDENTITY_CONFIGMAP} does not exist (is the runtime installed?)"
            except (APIError, LookupError) as exc:
                problem = str(exc)
            logger.warning(
                "%s/%s: could not %s: %s; retrying in %.3g s",
                ns,
                c.CLUSTER_IDENTITY_CONFIGMAP,
                what,
                problem,
                delay,
            )
            await asyncio.sleep(delay)
            delay = min(delay * 2, _RETRY_MAX)
