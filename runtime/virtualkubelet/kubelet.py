"""One virtual kubelet: everything standing for one provider, assembled and run until cancelled.

What runs, all on one `runtime.core.Manager` (informers narrowed to the objects this
kubelet cares about: its VirtualNode, its Node, its credential Secret):

- the credential controller: each version of the credential Secret goes into the
  `CredentialRemote` (a renewed credential is used without a restart) and triggers a
  health check;
- the health checker: pings the provider every interval (`health.py`);
- the node controller (`node.py`): registers the Node and keeps it current, on changes
  of the VirtualNode, of the Node and of the provider's health;
- the Lease heartbeat (`lease.py`), once the Node exists;
- reflection (`reflection/`): the NamespaceMap of its provider says which namespaces are
  offloaded there, under which names; for each, the pod reflector turns the pods bound
  to the node into ShadowPods in the twin namespace and brings their status back, and
  the other reflectors (as `settings.reflection` turns them on) keep copies of the
  namespace's ConfigMaps, Secrets, Services, EndpointSlices and Ingresses there and bring
  the provider's Events back, over informers of both namespaces;
- the kubelet API (`kubeletapi.py`): `kubectl logs`, `exec`, `attach` and `port-forward` of offloaded
  pods, from the provider.

`/readyz` answers ready once the Node is registered and the provider was checked once.
Cancellation stops everything but leaves the Node: a restarted virtual kubelet takes
it over, and the controller manager deletes it when the peering goes.

The virtual kubelet also watches its VirtualNode and stops by itself (`run()` returns)
once it is deleted or being deleted, so the node's Lease stops being renewed at once,
whether or not its Deployment is gone yet; a virtual kubelet started for a VirtualNode
already being deleted returns at once too. The Node is the controller manager's to
delete (`runtime.controllers.offloading.virtualnode`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

import yaml
from prometheus_client import CollectorRegistry

from runtime.api import constants as c
from runtime.api.crds import CONFIGURATIONS, NAMESPACEMAPS, VIRTUALNODES
from runtime.api.kinds import NODES, PODS, SECRETS
from runtime.api.objects import JSON, nested
from runtime.core import (
    APIConnectionError,
    APIStatusError,
    Client,
    Controller,
    EventRecorder,
    KubeconfigError,
    Manager,
    NotFoundError,
    PermanentError,
    QueueingSettings,
    Request,
    Result,
    ServerSettings,
    Settings,
    Store,
    Upgraded,
    WatchingSettings,
)
from runtime.core.failures import explain
from runtime.core.health import HealthServer
from runtime.forge import podsecurity
from runtime.forge import virtualnode as forge
from runtime.forge.pods import PodOptions
from runtime.forge.podsecurity import Level
from runtime.forge.reflection import ReflectionOptions

from .health import HealthChecker, HealthSettings
from .kubeletapi import KubeletAPI, LogsError, SubjectAccessAuthorizer
from .lease import LeaseHeartbeat, LeaseSettings
from .node import NodeReconciler
from .reflection.manager import ReflectionManager
from .reflection.metrics import OffloadedPods, ReflectionMetrics
from .reflection.namespacemap import NamespaceMapReconciler
from .reflection.outgoing import ReflectionContext
from .reflection.setup import reflectors
from .reflection.workload import PodReflectionOptions
from .remote import CredentialRemote
from .translation import AddressTranslator, RemappingTranslator

logger = logging.getLogger(__name__)


class VirtualKubeletError(Exception):
    """The virtual kubelet cannot start for its VirtualNode (missing, or unusable); the message says why."""


@dataclass(frozen=True)
class VirtualKubeletSettings:
    health: HealthSettings = field(default_factory=HealthSettings)
    lease: LeaseSettings = field(default_factory=LeaseSettings)
    #: the node status is written at least this often (seconds), even when nothing changed
    status_report_period: float = 300.0
    #: the HTTP endpoint (/healthz, /readyz, /metrics); None: none
    server: ServerSettings | None = field(default_factory=ServerSettings)
    #: the kubelet API (`kubectl logs`): where it listens (port 0: any free one)
    kubelet_host: str = "0.0.0.0"
    kubelet_port: int = 10250
    #: what is reflected, with how many workers per kind (never two on one object): each waits on both clusters
    reflection: ReflectionOptions = field(default_factory=ReflectionOptions)
    #: the informers of the provider's twin namespaces
    watching: WatchingSettings = field(default_factory=WatchingSettings)


class CredentialReconciler:
    """Hands each version of the credential Secret (key `kubeconfig`) to the remote."""

    def __init__(
        self,
        *,
        secrets: Store,
        remote: CredentialRemote,
        health: HealthChecker,
        connected: Callable[[Client], None] = lambda client: None,
    ) -> None:
        self._secrets = secrets
        self._remote = remote
        self._health = health
        self._connected = connected

    async def reconcile(self, request: Request) -> Result | None:
        secret = self._secrets.get(request.name, namespace=request.namespace)
        if secret is None:
            logger.warning(
                "%s: the credential Secret is missing; the provider is reached with the last credential seen, "
                "if any, until the controller manager writes it again",
                request,
            )
            return None
        encoded = nested(secret, "data", c.CREDENTIAL_KUBECONFIG_KEY)
        if not encoded:
            raise PermanentError(
                f"{request}: the credential Secret has no key {c.CREDENTIAL_KUBECONFIG_KEY!r}"
            )
        try:
            kubeconfig = yaml.safe_load(base64.b64decode(encoded, validate=True))
        except (binascii.Error, yaml.YAMLError) as exc:
            raise PermanentError(
                f"{request}: key {c.CREDENTIAL_KUBECONFIG_KEY!r} is not a kubeconfig: {exc}"
            ) from None
        if not isinstance(kubeconfig, dict):
            raise PermanentError(f"{request}: key {c.CREDENTIAL_KUBECONFIG_KEY!r} is not a kubeconfig")
        try:
            changed = await self._remote.use(kubeconfig)
        except KubeconfigError as exc:
            raise PermanentError(f"{request}: the credential cannot be used: {exc}") from None
        if changed:
            self._health.check_now()
        if self._remote.client is not None:
            self._connected(self._remote.client)
        return None


class DeletionWatcher:
    """Sets `deleted` once the VirtualNode is gone from the cache or being deleted."""

    def __init__(self, *, virtual_nodes: Store, deleted: asyncio.Event) -> None:
        self._virtual_nodes = virtual_nodes
        self._deleted = deleted

    async def reconcile(self, request: Request) -> Result | None:
        virtual_node = self._virtual_nodes.get(request.name, namespace=request.namespace)
        if virtual_node is None or virtual_node["metadata"].get("deletionTimestamp"):
            logger.info("%s: the VirtualNode is being deleted; stopping", request)
            self._deleted.set()
        return None


def _pod_security(virtual_node: JSON) -> Level:
    """The level the VirtualNode says the provider holds its pods to (baseline when it says nothing valid)."""
    try:
        return podsecurity.level(nested(virtual_node, "spec", "podSecurity"))
    except podsecurity.InvalidLevelError:
        return podsecurity.DEFAULT_LEVEL


def _named(name: str) -> str:
    return f"metadata.name={name}"


class VirtualKubelet:
    """`run()` blocks until cancelled; `ready()` is what /readyz answers."""

    def __init__(
        self,
        client: Client,
        *,
        virtual_node: Request,
        settings: VirtualKubeletSettings,
        home_cluster_id: str,
        home_api_server: str = "",
        address: str | None = None,
        registry: CollectorRegistry | None = None,
        translator: AddressTranslator | None = None,
    ) -> None:
        settings.health.validate()
        settings.lease.validate()
        self._client = client
        self._ref = virtual_node
        self._settings = settings
        self._address = address
        self._home_cluster_id = home_cluster_id
        self._home_api_server = home_api_server
        self._translator = translator
        self._registry = registry if registry is not None else CollectorRegistry()
        self._checker: HealthChecker | None = None
        self._node: NodeReconciler | None = None
        self._creates_node = True
        self._kubelet: KubeletAPI | None = None
        #: the health server, once `run()` started it (its bound port is `server.port`)
        self.server: HealthServer | None = None

    def ready(self) -> bool:
        checked = self._checker is not None and self._checker.checked.is_set()
        registered = not self._creates_node or (self._node is not None and self._node.registered.is_set())
        return checked and registered

    async def _virtual_node(self) -> JSON:
        ref = self._ref
        try:
            return await self._client.get(VIRTUALNODES, ref.name, namespace=ref.namespace)
        except NotFoundError:
            raise VirtualKubeletError(
                f"{ref}: VirtualNode not found; a virtual kubelet runs for an existing VirtualNode "
                "(check --virtual-node)"
            ) from None

    async def run(self) -> None:
        """Run until cancelled, or until the VirtualNode is deleted (then return)."""
        ref = self._ref
        virtual_node = await self._virtual_node()
        if virtual_node["metadata"].get("deletionTimestamp"):
            logger.info("%s: the VirtualNode is being deleted; nothing to run for", ref)
            return
        try:
            secret = forge.credential_secret(virtual_node)
        except ValueError as exc:
            raise VirtualKubeletError(f"{ref}: {exc}") from None
        provider = forge.provider_name(virtual_node)
        node_name = forge.node_name(virtual_node)
        self._creates_node = bool(nested(virtual_node, "spec", "createNode", default=True))
        manager = Manager(
            self._client,
            settings=Settings(queueing=QueueingSettings(workers=1), server=None),
            registry=self._registry,
        )
        secrets = manager.informer(SECRETS, namespace=ref.namespace, field_selector=_named(secret))
        remote = CredentialRemote(
            provider=provider,
            request_timeout=self._settings.health.timeout,
            on_request=manager.request_metrics.observer("provider"),
        )
        node_request = Request("", node_name)
        node_controller: Controller | None = None
        checker = HealthChecker(
            remote,
            provider=provider,
            settings=self._settings.health,
            on_change=lambda health: node_controller.enqueue(node_request) if node_controller else None,
        )
        self._checker = checker
        reflection = self._reflection(
            manager,
            remote,
            provider=provider,
            provider_cluster_id=str(nested(virtual_node, "spec", "clusterID") or ""),
            node_name=node_name,
            pod_security=_pod_security(virtual_node),
        )
        manager.controller(
            "credential",
            CredentialReconciler(
                secrets=secrets.store, remote=remote, health=checker, connected=reflection.connect
            ),
            primary=secrets,
        )
        virtual_nodes = manager.informer(
            VIRTUALNODES, namespace=ref.namespace, field_selector=_named(ref.name)
        )
        deleted = asyncio.Event()
        manager.controller(
            "virtualnode-deletion",
            DeletionWatcher(virtual_nodes=virtual_nodes.store, deleted=deleted),
            primary=virtual_nodes,
        )
        if self._creates_node:
            nodes = manager.informer(NODES, field_selector=_named(node_name))
            self._node = NodeReconciler(
                self._client,
                virtual_node=ref,
                node_name=node_name,
                virtual_nodes=virtual_nodes.store,
                nodes=nodes.store,
                health=checker,
                address=self._address,
                status_report_period=self._settings.status_report_period,
                kubelet_port=lambda: self._kubelet.port if self._kubelet is not None else 0,
            )
            node_controller = manager.controller("node", self._node, primary=nodes)
            node_controller.watches(virtual_nodes, lambda obj: [node_request])
        logger.info("%s: virtual kubelet for provider %s (node %s) starting", ref, provider, node_name)
        work = asyncio.create_task(
            self._run_all(manager, checker, reflection, provider, node_name), name=f"{ref} kubelet"
        )
        until_deleted = asyncio.create_task(deleted.wait(), name=f"{ref} deletion")
        try:
            await asyncio.wait({work, until_deleted}, return_when=asyncio.FIRST_COMPLETED)
            if work.done():
                work.result()
                return
        finally:
            for task in (work, until_deleted):
                task.cancel()
            await asyncio.gather(work, until_deleted, return_exceptions=True)
            await remote.close()
        logger.info("%s: the VirtualNode is being deleted; the virtual kubelet stopped", ref)

    def _reflection(
        self,
        manager: Manager,
        remote: CredentialRemote,
        *,
        provider: str,
        provider_cluster_id: str,
        node_name: str,
        pod_security: Level,
    ) -> ReflectionManager:
        """The reflectors and the NamespaceMap handler on `manager`, their metrics, and the kubelet API."""
        ref = self._ref
        pods = manager.informer(PODS, field_selector=f"spec.nodeName={node_name}")
        metrics = ReflectionMetrics(self._registry, cluster_id=provider_cluster_id, node_name=node_name)
        self._registry.register(OffloadedPods(lambda: pods.store, node_name=node_name))
        context = ReflectionContext(
            local_client=self._client,
            remote=remote,
            recorder=EventRecorder(
                self._client, component=c.FIELD_MANAGER_VIRTUAL_KUBELET, instance=node_name
            ),
            metrics=metrics,
            translator=self._translator
            or RemappingTranslator(
                manager.informer(
                    CONFIGURATIONS, namespace=ref.namespace, field_selector=_named(provider)
                ).store,
                name=provider,
                namespace=ref.namespace,
            ),
            origin_cluster_id=self._home_cluster_id,
            provider=provider,
            options=self._settings.reflection,
        )
        pod_options = PodReflectionOptions(
            pods=PodOptions(
                origin_cluster_id=self._home_cluster_id,
                home_api_server=self._home_api_server,
                api_server_support=self._settings.reflection.api_server_support,
            ),
            node_name=node_name,
            host_ip=self._address or "",
            provider=provider,
            home_ca=self._client.config.certificate_authority or b"",
            pod_security=pod_security,
            policy=self._settings.reflection,
        )
        reflection = ReflectionManager(
            reflectors(
                manager,
                options=self._settings.reflection,
                context=context,
                pods=pods,
                pod_options=pod_options,
                provider_cluster_id=provider_cluster_id,
            ),
            local=manager.informers,
            watching=self._settings.watching,
        )
        maps = manager.informer(NAMESPACEMAPS, namespace=ref.namespace, field_selector=_named(ref.name))
        manager.controller(
            "namespacemap",
            NamespaceMapReconciler(namespace_maps=maps.store, manager=reflection),
            primary=maps,
        )

        async def logs(
            namespace: str, name: str, container: str, options: Sequence[tuple[str, str]]
        ) -> AsyncIterator[bytes]:
            pair = reflection.pair(namespace)
            if pair is None or pods.store.get(name, namespace=namespace) is None or remote.client is None:
                raise LogsError(
                    404, f'pod "{name}" in namespace "{namespace}" is not offloaded through {node_name}'
                )
            chunks = remote.client.stream(
                PODS,
                name,
                namespace=pair.remote,
                subresource="log",
                query=[("container", container), *options],
            )
            try:
                async for chunk in chunks:
                    yield chunk
            except (APIStatusError, APIConnectionError) as exc:
                raise logs_error(exc, provider=provider, host=remote.client.host) from None
            finally:
                await chunks.aclose()

        async def stream(
            subresource: str,
            namespace: str,
            name: str,
            options: Sequence[tuple[str, str]],
            upgrade: Sequence[tuple[str, str]],
        ) -> Upgraded:
            pair = reflection.pair(namespace)
            if pair is None or pods.store.get(name, namespace=namespace) is None or remote.client is None:
                raise LogsError(
                    404, f'pod "{name}" in namespace "{namespace}" is not offloaded through {node_name}'
                )
            try:
                return await remote.client.upgrade(
                    PODS, name, namespace=pair.remote, subresource=subresource, query=options, headers=upgrade
                )
            except (APIStatusError, APIConnectionError) as exc:
                raise logs_error(exc, provider=provider, host=remote.client.host) from None

        self._kubelet = KubeletAPI(
            logs,
            stream=stream,
            authorizer=SubjectAccessAuthorizer(self._client, node_name=node_name),
            node_name=node_name,
            host=self._settings.kubelet_host,
            port=self._settings.kubelet_port,
            client_ca=self._client.config.certificate_authority,
        )
        return reflection

    async def _run_all(
        self,
        manager: Manager,
        checker: HealthChecker,
        reflection: ReflectionManager,
        provider: str,
        node_name: str,
    ) -> None:
        async with asyncio.TaskGroup() as group:
            if self._kubelet is not None:
                # the Node names the kubelet API's port: it listens before the Node is registered
                group.create_task(self._kubelet.run(), name=f"kubelet API of {node_name}")
                await self._kubelet.ready.wait()
            group.create_task(reflection.run(), name=f"reflection into {provider}")
            group.create_task(manager.run(), name="virtual kubelet manager")
            group.create_task(checker.run(), name=f"health checks of provider {provider}")
            if self._settings.server is not None:
                self.server = HealthServer(
                    settings=self._settings.server, registry=self._registry, ready=self.ready
                )
                group.create_task(self.server.run(), name="virtual kubelet health server")
            if self._node is not None:
                group.create_task(self._heartbeat(self._node, node_name), name=f"lease {node_name}")

    async def _heartbeat(self, node: NodeReconciler, node_name: str) -> None:
        await node.registered.wait()
        heartbeat = LeaseHeartbeat(
            self._client, node_name=node_name, settings=self._settings.lease, node_uid=lambda: node.uid
        )
        await heartbeat.run()


def logs_error(exc: APIStatusError | APIConnectionError, *, provider: str, host: str) -> LogsError:
    """What `kubectl logs` shows when the provider's API server (at `host`) failed to stream a pod's log: its
    own answer (as kubelet passes on the runtime's), or why it cannot be reached in `failures.explain`'s words."""
    if isinstance(exc, APIStatusError):
        return LogsError(exc.code or 500, exc.message or str(exc))
    return LogsError(
        503, explain(exc, cluster=f"the API server of provider {provider} ({host})", advice=False)
    )
