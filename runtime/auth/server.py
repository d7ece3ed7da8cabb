"""The authentication service put together: informers, a self-signed HTTPS endpoint, the published URL.

`AuthServer.run()` starts the token Secret and Tenant informers (and the health
endpoint, if any), waits for their caches, reads the cluster identity (id, name, version,
cluster labels: what `GET /v1/cluster` advertises) and the serving key (the Secret
`liqo-auth-serving-key`, which the controller manager creates once; see `servingkey.py`),
signs a serving certificate with that key (self-signed; SANs: the listen address, the
advertised host and `liqo-auth.<namespace>.svc`), starts listening, and writes its URL
into the identity ConfigMap as `authURL`, with the fingerprint of its key as
`authKeyFingerprint`, from where `liqo_generate` reads both: the
`--advertise-url` if given, else the URL derived from the `liqo-auth` Service (a load
balancer's ingress, a node's address and the nodePort, or for a ClusterIP Service the
listen address; see `endpoint.py`), which `publisher.py` keeps current as the Service and
the Nodes change. Then it is ready and serves until cancelled. The certificate is signed
anew at every start, but its key stays: consumers pin the key (the fingerprint `liqo_generate` gives, else
what they met on their first contact) and
refuse a service holding another one (they do not check the host name, so a URL derived
later needs no new certificate).
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import TypeVar
from urllib.parse import urlsplit

from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import ec
from prometheus_client import CollectorRegistry

from runtime.api import constants as c
from runtime.api.crds import TENANTS
from runtime.api.image import package_version
from runtime.api.kinds import CONFIGMAPS, NODES, SECRETS, SERVICES
from runtime.core import (
    APIError,
    Client,
    Informer,
    InformerFactory,
    NotFoundError,
    Settings,
    WatchingSettings,
)
from runtime.core.health import HealthServer
from runtime.core.informer import InformerMetrics
from runtime.core.kubeconfig.tls import load_cert_chain
from runtime.core.reconcile import ControllerMetrics
from runtime.forge import certificates
from runtime.forge.credential import ClusterInfo
from runtime.forge.tokens import tenant_token

from .app import Handlers, auth_app
from .endpoint import url_for
from .identities import CLUSTER_ID_INDEX, TOKEN_INDEX, IdentityIssuer, ProviderIdentity, cluster_id_of
from .options import AuthOptions
from .publisher import AuthURLPublisher
from .ratelimit import FailureLimiter
from .renewal import SignedRequests
from .servingkey import key_of, serving_certificate
from .tokens import PeeringTokens

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: the longest wait between attempts to read the identity or publish the URL
_RETRY_MAX = 30.0
_NOT_INSTALLED = "is the runtime installed?"


def service_host(namespace: str) -> str:
    """The in-cluster DNS name of the auth Service."""
    return f"{c.AUTH_SERVICE}.{namespace}.svc"


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
        self._controller_metrics = ControllerMetrics(self._registry)
        #: set once the endpoint listens and its URL is published
        self.started = asyncio.Event()
        #: the bound port and its URL (`https://<listen address>:<port>`), once `started` is set
        self.port: int | None = None
        self.listen_url: str | None = None
        #: the URL published as `authURL`, once `started` is set (it follows the Service afterwards)
        self.url: str | None = None
        #: the serving certificate (PEM), once `started` is set
        self.certificate: bytes | None = None
        #: `sha256:<hex>` of the serving key, published as `authKeyFingerprint` with the URL
        self.key_fingerprint = ""
        #: the /healthz, /readyz, /metrics endpoint, while `run()` serves one (its bound port: `health.port`)
        self.health: HealthServer | None = None

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
        tenants.store.add_index(TOKEN_INDEX, tenant_token)
        watched = None
        if not options.advertise_url:
            watched = (
                informers.informer(
                    SERVICES, namespace=options.namespace, field_selector=f"metadata.name={c.AUTH_SERVICE}"
                ),
                informers.informer(NODES),
            )
        async with asyncio.TaskGroup() as group:
            group.create_task(informers.run(), name="auth informers")
            if options.health is not None:
                self.health = HealthServer(
                    settings=options.health, registry=self._registry, ready=self.started.is_set
                )
                group.create_task(self.health.run(), name="auth health endpoint")
            await informers.wait_synced()
            identity = await self._retrying("read the cluster identity", self._read_identity)
            cluster = ClusterInfo(
                cluster_id=identity[c.IDENTITY_CLUSTER_ID],
                cluster_name=identity[c.IDENTITY_CLUSTER_NAME],
                version=identity.get(c.IDENTITY_VERSION) or package_version(),
            )
            provider = ProviderIdentity(
                cluster=cluster,
                api_server_url=options.api_server_url or self._client.host,
                certificate_authority=self._client.config.certificate_authority or b"",
            )
            handlers = Handlers(
                cluster=cluster,
                cluster_labels=_cluster_labels(identity, where=self._identity_name()),
                tokens=PeeringTokens(self._client, secrets, namespace=options.namespace),
                issuer=IdentityIssuer(self._client, tenants, provider=provider, token_ttl=options.token_ttl),
                signed=SignedRequests(self._client, tenants, window=options.signature_window),
            )
            limiter = FailureLimiter(burst=options.failure_burst, refill_per_second=options.failure_refill)
            key = await self._retrying(
                "read the serving key",
                self._read_serving_key,
                missing="the controller manager creates it; is it running?",
            )
            app = auth_app(handlers, limiter=limiter, max_body=options.max_body)
            await self._serve(key, app, watched, published=identity.get(c.IDENTITY_AUTH_URL) or "")

    async def _serve(
        self,
        key: ec.EllipticCurvePrivateKey,
        app: web.Application,
        watched: tuple[Informer, Informer] | None,
        *,
        published: str,
    ) -> None:
        options = self._options
        hosts = [
            options.host,
            urlsplit(options.advertise_url).hostname or "",
            service_host(options.namespace),
        ]
        certificate, key_pem = await asyncio.to_thread(serving_certificate, hosts, key)
        context = await asyncio.to_thread(_server_context, certificate, key_pem)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
        self.key_fingerprint = certificates.key_fingerprint(key.public_key())
        await runner.setup()
        try:
            site = web.TCPSite(runner, options.host, options.port, ssl_context=context)
            await site.start()
            self.port = int(runner.addresses[0][1])
            self.listen_url = url_for(options.host, self.port)
            self.certificate = certificate
            logger.info("%s: serving peering requests on %s:%d", options.namespace, options.host, self.port)
            publisher = None
            if watched is not None:
                service, nodes = watched
                publisher = AuthURLPublisher(
                    namespace=options.namespace,
                    service=service,
                    nodes=nodes,
                    pod_url=self.listen_url,
                    own_node=options.node_name,
                    published=published,
                    publish=self._publish,
                )
            url = publisher.initial() if publisher is not None else options.advertise_url
            await self._retrying("publish the authURL", lambda: self._publish(url))
            if publisher is not None:
                publisher.url = url
            self.started.set()
            if publisher is None:
                await asyncio.Event().wait()
            else:
                await publisher.controller(Settings(server=None), metrics=self._controller_metrics).run()
        finally:
            self.started.clear()
            await runner.cleanup()

    async def _read_identity(self) -> dict[str, str]:
        ns = self._options.namespace
        configmap = await self._client.get(CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace=ns)
        data = configmap.get("data") or {}
        missing = [key for key in (c.IDENTITY_CLUSTER_ID, c.IDENTITY_CLUSTER_NAME) if not data.get(key)]
        if missing:
            raise LookupError(f"{self._identity_name()}: no {', '.join(missing)}; reinstall the runtime")
        identity = {str(k): str(v) for k, v in data.items()}
        _cluster_labels(identity, where=self._identity_name())
        return identity

    async def _read_serving_key(self) -> ec.EllipticCurvePrivateKey:
        ns = self._options.namespace
        secret = await self._client.get(SECRETS, c.AUTH_SERVING_KEY_SECRET, namespace=ns)
        try:
            return key_of(secret)
        except ValueError as exc:
            raise LookupError(
                f"the Secret {ns}/{c.AUTH_SERVING_KEY_SECRET}: {exc}; delete it and the controller manager"
                " creates a new key (consumers that pinned the old one must then trust the new one)"
            ) from None

    def _identity_name(self) -> str:
        return f"{self._options.namespace}/{c.CLUSTER_IDENTITY_CONFIGMAP}"

    async def _publish(self, url: str) -> None:
        """Write `url` as the identity's `authURL` (one attempt)."""
        ns = self._options.namespace
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": c.CLUSTER_IDENTITY_CONFIGMAP, "namespace": ns},
            "data": {c.IDENTITY_AUTH_URL: url, c.IDENTITY_AUTH_KEY: self.key_fingerprint},
        }
        await self._client.apply(CONFIGMAPS, body, field_manager=c.FIELD_MANAGER_AUTH, force=True)
        self.url = url
        logger.info(
            "%s/%s: published authURL %s (key %s)",
            ns,
            c.CLUSTER_IDENTITY_CONFIGMAP,
            url,
            self.key_fingerprint,
        )

    async def _retrying(
        self, what: str, attempt: Callable[[], Awaitable[T]], *, missing: str = _NOT_INSTALLED
    ) -> T:
        """`attempt()` until it succeeds, logging each failure; `missing` is the hint for a 404."""
        ns = self._options.namespace
        delay = 0.5
        while True:
            try:
                return await attempt()
            except NotFoundError as exc:
                problem = f"{exc} ({missing})"
            except (APIError, LookupError) as exc:
                problem = str(exc)
            logger.warning("%s: could not %s: %s; retrying in %.3g s", ns, what, problem, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, _RETRY_MAX)


def _cluster_labels(identity: dict[str, str], *, where: str) -> dict[str, str]:
    """The identity's cluster labels (a JSON object of strings); LookupError naming the ConfigMap otherwise."""
    text = identity.get(c.IDENTITY_CLUSTER_LABELS) or "{}"
    try:
        labels = json.loads(text)
    except ValueError:
        labels = None
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise LookupError(
            f"{where}: {c.IDENTITY_CLUSTER_LABELS} {text!r} is not a JSON object of strings; reinstall the runtime"
        )
    return {str(key): value for key, value in labels.items()}
