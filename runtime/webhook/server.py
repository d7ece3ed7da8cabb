"""The webhook as a running service: HTTPS admission endpoint, configuration patching, health endpoint.

Start-up order: read the CA every replica shares (`authority.py`; made when there is none)
and sign a serving certificate with it, start the informers the handlers read (the
NamespaceOffloadings the pod webhook applies; the twin namespaces, Quotas and ShadowPods
ShadowPods are admitted against) and wait until they have synced (a pod admitted before
would miss its namespace's offloading, a ShadowPod the use of its quota), listen (so the bound port is known, and the API server can call
as soon as it is told to), patch the webhook configurations with the CA (and, in URL
mode, this address), then report ready. `run()` blocks until cancelled; `ready` is set
once the configurations are patched. Cancelled, it reports not ready and keeps answering
for `shutdown_delay` seconds before it closes: a rolling update's old pod is still an
endpoint of the Service for a moment after it is told to stop, and with `failurePolicy:
Fail` a call it refused would refuse an object.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from dataclasses import dataclass

from aiohttp import web
from prometheus_client import CollectorRegistry

from runtime.api import constants as c
from runtime.api.crds import NAMESPACEOFFLOADINGS, QUOTAS, SHADOWPODS
from runtime.api.kinds import NAMESPACES
from runtime.api.objects import JSON
from runtime.core import Client, InformerFactory, ServerSettings, WatchingSettings
from runtime.core.health import HealthServer
from runtime.core.informer import InformerMetrics
from runtime.forge.services import ServiceType

from .app import ReviewMetrics, application, mutators, validators
from .authority import kept_authority
from .certs import ServingCertificate, server_context, service_dns_names, serving_certificate
from .configuration import Mode, patch_configurations, targets
from .shadowpods import ShadowPodAdmission

logger = logging.getLogger(__name__)

_ANY_HOST = ("", "0.0.0.0", "::")


@dataclass(frozen=True)
class WebhookOptions:
    #: the runtime's namespace (where the webhook's Service is, and token Secrets must be)
    namespace: str
    listen_host: str
    listen_port: int
    mode: Mode
    #: names of the ValidatingWebhookConfigurations to point at this webhook
    configurations: tuple[str, ...]
    #: the Service fronting the webhook (its DNS names go into the certificate)
    service: str
    health: ServerSettings | None = None
    #: names of the MutatingWebhookConfigurations to point at this webhook
    mutating_configurations: tuple[str, ...] = ()
    #: the widest type a consumer's Services keep in its twin namespaces (wider ones are narrowed to it)
    max_consumer_service_type: ServiceType = "ClusterIP"
    #: how long a stopping webhook keeps answering, not ready, so the API server stops calling it first
    shutdown_delay: float = 5.0

    def validate(self) -> None:
        if self.mode == "url" and self.listen_host in _ANY_HOST:
            raise ValueError(
                f"--listen {self.listen_host or '*'}:{self.listen_port}: URL mode writes the listen address into "
                "the webhook configuration, so it must be one the API server can reach (the pod IP: "
                "--listen=$(POD_IP):9443), not every interface"
            )


def host_url(host: str, port: int) -> str:
    """`https://host:port`, with an IPv6 address in brackets."""
    try:
        if ipaddress.ip_address(host).version == 6:
            host = f"[{host}]"
    except ValueError:
        pass
    return f"https://{host}:{port}"


class WebhookServer:
    def __init__(
        self, client: Client, options: WebhookOptions, *, registry: CollectorRegistry | None = None
    ) -> None:
        options.validate()
        self._client = client
        self._options = options
        self._registry = registry if registry is not None else CollectorRegistry()
        #: set once every webhook configuration trusts this webhook (and calls it, in URL mode)
        self.ready = asyncio.Event()
        #: the bound port, once listening (differs from the options' when that is 0)
        self.port: int | None = None
        self._informers = InformerFactory(
            client, settings=WatchingSettings(), metrics=InformerMetrics(self._registry)
        )
        #: the /healthz, /readyz, /metrics endpoint, while `run()` serves one (its bound port: `health.port`)
        self.health: HealthServer | None = None
        self._offloadings = self._informers.informer(NAMESPACEOFFLOADINGS)
        self._shadow_pods = ShadowPodAdmission(
            namespaces=self._informers.informer(NAMESPACES, label_selector=c.LABEL_ORIGIN_CLUSTER_ID).store,
            quotas=self._informers.informer(QUOTAS).store,
        )
        self._informers.informer(SHADOWPODS).add_handler(self._shadow_pods.observe)

    def _offloading(self, namespace: str) -> JSON | None:
        return self._offloadings.store.get(c.NAMESPACE_OFFLOADING_NAME, namespace=namespace)

    def _hosts(self) -> list[str]:
        options = self._options
        hosts = service_dns_names(options.service, options.namespace)
        if options.listen_host not in _ANY_HOST:
            hosts.insert(0, options.listen_host)
        return hosts

    async def run(self) -> None:
        """Serve until cancelled."""
        options = self._options
        authority = await kept_authority(
            self._client, namespace=options.namespace, common_name=options.service
        )
        certificate = await asyncio.to_thread(
            serving_certificate, authority, hosts=self._hosts(), common_name=options.service
        )
        async with asyncio.TaskGroup() as group:
            if options.health is not None:
                self.health = HealthServer(
                    settings=options.health, registry=self._registry, ready=self.ready.is_set
                )
                group.create_task(self.health.run(), name="webhook health server")
            group.create_task(self._informers.run(), name="webhook informers")
            await self._informers.wait_synced()
            group.create_task(self._serve(certificate), name="webhook https server")

    async def _serve(self, certificate: ServingCertificate) -> None:
        options = self._options
        app = application(
            validators(namespace=options.namespace, shadow_pods=self._shadow_pods),
            mutating=mutators(offloadings=self._offloading, widest_service=options.max_consumer_service_type),
            metrics=ReviewMetrics(self._registry),
        )
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        try:
            site = web.TCPSite(
                runner,
                options.listen_host or None,
                options.listen_port,
                ssl_context=server_context(certificate),
            )
            await site.start()
            self.port = int(runner.addresses[0][1])
            base_url = host_url(options.listen_host, self.port)
            logger.info("serving admission reviews on %s (%s mode)", base_url, options.mode)
            await patch_configurations(
                self._client,
                targets(validating=options.configurations, mutating=options.mutating_configurations),
                ca_bundle=certificate.ca,
                mode=options.mode,
                base_url=base_url,
            )
            self.ready.set()
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await self._drain()
            raise
        finally:
            await runner.cleanup()

    async def _drain(self) -> None:
        """Stopping: not ready any more, but still answering for `shutdown_delay` seconds, while the Service's
        endpoints and the API server's resolver catch up with this pod going (a rolling update's old pod)."""
        self.ready.clear()
        delay = self._options.shutdown_delay
        if delay > 0:
            logger.info(
                "stopping: answering admission reviews %g s more while the endpoints drop this pod", delay
            )
            await asyncio.sleep(delay)
