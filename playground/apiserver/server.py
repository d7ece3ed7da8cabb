"""Compose and run one API server: PKI, storage, catalog, registry, admission, HTTP.

`APIServer(settings)` does no I/O; `await start()` loads or creates the state under
`state_dir` (CA, serving and admin certificates, ServiceAccount signing key, stored
objects), bootstraps what a fresh kube-apiserver has (system namespaces, the
`kubernetes` Service, default RBAC policy), listens, and writes an admin kubeconfig
once it serves. `await stop()` ends watches, closes the listener and saves state.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import ipaddress
import logging
import platform
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from aiohttp import web

from . import errors, openapi, rbac
from .admission import WebhookDispatcher
from .admission_chain import AdmissionChain
from .app import Endpoints, build_app
from .authn import Authenticator
from .authorizer import Authorizer
from .crd_controller import SYSTEM_USER, CRDController
from .fieldvalidation import FieldValidator
from .handlers import ResourceHandlers
from .identity import MASTERS_GROUP
from .kubeconfig import kubeconfig, write_kubeconfig
from .node_authorizer import NodeAuthorizer, NodeGraph
from .openapi import KUBERNETES_VERSION
from .pki import CertificateAuthority
from .plugins import system_priority_classes
from .podlogs import PodLogs
from .registry import Registry, WriteOptions
from .resources.base import Obj, ResourceType
from .resources.builtin import builtin_types
from .resources.catalog import Catalog
from .resources.core import ServiceStrategy, endpoint_ip_errors
from .reviews import Reviews
from .service_resolver import resolve_endpoint
from .storage import Storage, read_snapshot, write_snapshot
from .subresources import Subresources
from .tokens import TokenSigner

logger = logging.getLogger(__name__)

_RBAC_PLURALS = {
    "ClusterRole": "clusterroles",
    "ClusterRoleBinding": "clusterrolebindings",
    "Role": "roles",
    "RoleBinding": "rolebindings",
}

ADMIN_USER = "kubernetes-admin"
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
#: the names in-cluster clients reach the API server by (kube-apiserver's own serving certificate has them)
KUBERNETES_SERVICE_NAMES = (
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
#: on stop, how long requests in flight may take before they are cancelled (aiohttp waits 60 s by
#: default, and the state is saved only after): a stopped server must exit and keep its objects
SHUTDOWN_TIMEOUT = 2.0


@dataclass
class Settings:
    state_dir: Path
    host: str = "127.0.0.1"
    port: int = 0
    service_cidr: str = "10.96.0.0/12"
    cluster_name: str = "playground"
    bookmark_interval: float = 60.0
    persist_interval: float = 1.0
    persist: bool = True
    watch_history: int = 50_000
    #: more names and addresses for the serving certificate (kubeadm's certSANs: the node name)
    extra_hosts: tuple[str, ...] = field(default_factory=tuple)
    #: the address the `kubernetes` Service's endpoints name (kube-apiserver's --advertise-address;
    #: empty: the listen address)
    advertise_address: str = ""

    @property
    def advertised(self) -> str:
        return self.advertise_address or self.host

    def version_info(self) -> Obj:
        major, minor = KUBERNETES_VERSION.lstrip("v").split(".")[:2]
        return {
            "major": major,
            "minor": minor,
            "gitVersion": f"{KUBERNETES_VERSION}-playground",
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.23.0",
            "compiler": "gc",
            "platform": f"{platform.system().lower()}/amd64",
        }


class StoragePolicy:
    """RBAC objects as the authorizer reads them, straight from storage."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    def cluster_role(self, name: str) -> Obj | None:
        return self._storage.get("clusterroles.rbac.authorization.k8s.io", "", name)

    def role(self, namespace: str, name: str) -> Obj | None:
        return self._storage.get("roles.rbac.authorization.k8s.io", namespace, name)

    def cluster_role_bindings(self) -> Iterable[Obj]:
        return self._storage.objects("clusterrolebindings.rbac.authorization.k8s.io")

    def role_bindings(self, namespace: str) -> Iterable[Obj]:
        return self._storage.objects("rolebindings.rbac.authorization.k8s.io", namespace)


class APIServer:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.storage = Storage(history=settings.watch_history)
        self.catalog = Catalog(
            builtin_types(
                service_cidr=settings.service_cidr, services=lambda: self.storage.objects("services")
            )
        )
        self.policy = StoragePolicy(self.storage)
        graph = NodeGraph(
            get=self.storage.get, pods=lambda namespace: self.storage.objects("pods", namespace)
        )
        self.authorizer = Authorizer(
            node=NodeAuthorizer(graph, node_rules=rbac.node_rules()), policy=self.policy
        )
        # field validation reads the same built-in definitions the OpenAPI documents are made of
        self.registry = Registry(
            self.storage, self.catalog, fields=FieldValidator(lambda: self.openapi.builtin)
        )
        self.resources = ResourceHandlers(
            self.registry, self.storage, self.authorizer, bookmark_interval=settings.bookmark_interval
        )
        self.crd_controller = CRDController(self.catalog, self.registry, self.storage)
        self.openapi = openapi.OpenAPI.load()
        # made in start(), from the state on disk
        self.ca: CertificateAuthority
        self.signer: TokenSigner
        self.authenticator: Authenticator
        self.webhooks: WebhookDispatcher
        self.admission: AdmissionChain
        self.subresources: Subresources
        self.reviews: Reviews
        self._runner: web.AppRunner | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.port = settings.port
        self.ready = asyncio.Event()

    @property
    def address(self) -> str:
        host = self.settings.host
        if ipaddress.ip_address(host).is_unspecified:
            host = self.settings.advertised if self.settings.advertise_address else "127.0.0.1"
        return f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"https://{self.address}"

    @property
    def kubeconfig_path(self) -> Path:
        return self.settings.state_dir / "kubeconfig"

    def now(self) -> datetime:
        return datetime.now(UTC)

    # lifecycle

    async def start(self) -> None:
        state = self.settings.state_dir
        await asyncio.to_thread(state.mkdir, parents=True, exist_ok=True)
        self.ca, self.signer, snapshot = await asyncio.to_thread(self._load_state)
        if snapshot is not None:
            self.storage.restore(snapshot)
        self.authenticator = Authenticator(
            admin_tokens={},
            signer=self.signer,
            service_accounts=lambda ns, name: self.storage.get("serviceaccounts", ns, name),
            secrets=lambda ns, name: self.storage.get("secrets", ns, name),
            pods=lambda ns, name: self.storage.get("pods", ns, name),
            nodes=lambda _ns, name: self.storage.get("nodes", "", name),
        )
        self.webhooks = WebhookDispatcher(
            configurations=self._webhook_configurations,
            namespace=lambda name: self.storage.get("namespaces", "", name),
            resolve_service=self._resolve_service,
        )
        self.admission = AdmissionChain(self.storage, self.policy, self.authorizer, self.webhooks)
        self.registry.admission = self.admission
        self.subresources = Subresources(
            registry=self.registry,
            catalog=self.catalog,
            storage=self.storage,
            resources=self.resources,
            admission=self.admission,
            signer=self.signer,
            pod_logs=PodLogs(self.ca, self.storage),
        )
        self.reviews = Reviews(self.authenticator, self.authorizer)
        self.crd_controller.serve_stored()
        await self._listen()
        await self._bootstrap()
        self._tasks.append(asyncio.create_task(self.crd_controller.run(), name="apiserver-crd-controller"))
        if self.settings.persist:
            self._tasks.append(asyncio.create_task(self._persist_loop(), name="apiserver-persist"))
        await self._write_kubeconfig()
        self.ready.set()
        logger.info("serving on %s (state in %s)", self.url, state)

    async def stop(self) -> None:
        self.storage.close_watches()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._runner is not None:
            await self._runner.cleanup()
        await self.webhooks.close()
        if self.settings.persist:
            await self._save()

    def _load_state(self) -> tuple[CertificateAuthority, TokenSigner, Obj | None]:
        pki_dir = self.settings.state_dir / "pki"
        if (pki_dir / "ca.crt").exists():
            ca = CertificateAuthority.load(pki_dir)
        else:
            ca = CertificateAuthority.generate(f"{self.settings.cluster_name}-ca")
            ca.save(pki_dir)
        if (pki_dir / "sa.key").exists():
            signer = TokenSigner.load(pki_dir)
        else:
            signer = TokenSigner.generate()
            signer.save(pki_dir)
        snapshot = read_snapshot(self.settings.state_dir / "state.json") if self.settings.persist else None
        return ca, signer, snapshot

    async def _listen(self) -> None:
        hosts = sorted(
            {
                self.settings.advertised,
                "127.0.0.1",
                "localhost",
                *KUBERNETES_SERVICE_NAMES,
                self._kubernetes_ip(),
                *self.settings.extra_hosts,
            }
            - {"0.0.0.0"}
        )
        cert, key = self.ca.issue_server(hosts=hosts)
        ssl_context = await asyncio.to_thread(self.ca.ssl_server_context, cert, key)
        self._runner = web.AppRunner(
            build_app(self._endpoints()),
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=SHUTDOWN_TIMEOUT,
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.settings.host, self.settings.port, ssl_context=ssl_context)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    def _endpoints(self) -> Endpoints:
        return Endpoints(
            authenticator=self.authenticator,
            authorizer=self.authorizer,
            catalog=self.catalog,
            resources=self.resources,
            subresources=self.subresources,
            reviews=self.reviews,
            openapi=self.openapi_response,
            version_info=self.settings.version_info(),
            address=lambda: self.address,
            now=self.now,
        )

    async def _write_kubeconfig(self) -> None:
        cert, key = self.ca.issue_client(ADMIN_USER, organizations=[MASTERS_GROUP], days=365)
        config = kubeconfig(
            server=self.url,
            ca_pem=self.ca.cert_pem,
            cluster=self.settings.cluster_name,
            user=ADMIN_USER,
            client_cert_pem=cert,
            client_key_pem=key,
        )
        await asyncio.to_thread(write_kubeconfig, self.kubeconfig_path, config)

    # bootstrap: what a fresh kube-apiserver creates for itself

    async def _bootstrap(self) -> None:
        for name in SYSTEM_NAMESPACES:
            await self._ensure("", "v1", "namespaces", "", {"metadata": {"name": name}})
        for obj in rbac.bootstrap_policy():
            await self._reconcile_default(obj)
        for obj in system_priority_classes():
            await self._ensure("scheduling.k8s.io", "v1", "priorityclasses", "", obj)
        await self._ensure_kubernetes_service()

    async def _ensure(self, group: str, version: str, plural: str, namespace: str, body: Obj) -> Obj:
        rt = self._type(group, version, plural)
        existing = self.registry.find(rt, namespace, body["metadata"]["name"])
        if existing is not None:
            return existing
        return await self.registry.create(rt, namespace, copy.deepcopy(body), self._system_write())

    async def _reconcile_default(self, obj: Obj) -> None:
        """Create a default RBAC object, or add to the stored one what it lacks (rbac/bootstrap-roles)."""
        rt = self._type(rbac.RBAC_GROUP, "v1", _RBAC_PLURALS[obj["kind"]])
        namespace = str(obj["metadata"].get("namespace") or "")
        current = self.registry.find(rt, namespace, obj["metadata"]["name"])
        if current is None:
            await self.registry.create(rt, namespace, copy.deepcopy(obj), self._system_write())
            return
        updated = rbac.reconciled(current, obj)
        if updated is not None:
            await self.registry.update(rt, namespace, obj["metadata"]["name"], updated, self._system_write())

    def _kubernetes_ip(self) -> str:
        strategy = self._type("", "v1", "services").strategy
        if not isinstance(strategy, ServiceStrategy):
            raise errors.internal("services are served without the Service strategy")
        return strategy.kubernetes_ip

    async def _ensure_kubernetes_service(self) -> None:
        services = self._type("", "v1", "services")
        ip = self._kubernetes_ip()
        labels = {"component": "apiserver", "provider": "kubernetes"}
        port = {"name": "https", "port": 443, "protocol": "TCP", "targetPort": self.port}
        service = {
            "metadata": {"name": "kubernetes", "labels": labels},
            "spec": {"type": "ClusterIP", "clusterIP": ip, "ports": [port], "sessionAffinity": "None"},
        }
        current = self.registry.find(services, "default", "kubernetes")
        if current is None:
            await self.registry.create(services, "default", service, self._system_write())
        elif current["spec"]["ports"][0].get("targetPort") != self.port:
            updated = copy.deepcopy(current)
            updated["spec"]["ports"][0]["targetPort"] = self.port
            await self.registry.update(services, "default", "kubernetes", updated, self._system_write())
        advertised = self.settings.advertised
        problems = endpoint_ip_errors(advertised, "ip")
        if problems:
            # kube-apiserver's endpoint reconciler fails the same way, and the Service has no endpoints
            logger.warning(
                "the kubernetes Service gets no endpoints: its advertise address %s %s; give --advertise-address",
                advertised,
                problems[0].message.split(": ", 1)[1],
            )
            return
        endpoints = self._type("", "v1", "endpoints")
        subsets = [
            {
                "addresses": [{"ip": advertised}],
                "ports": [{"name": "https", "port": self.port, "protocol": "TCP"}],
            }
        ]
        body: Obj = {
            "metadata": {"name": "kubernetes", "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
            "subsets": subsets,
        }
        current_ep = self.registry.find(endpoints, "default", "kubernetes")
        if current_ep is not None:
            body["metadata"]["resourceVersion"] = current_ep["metadata"]["resourceVersion"]
        await self.registry.update(endpoints, "default", "kubernetes", body, self._system_write())
        slices = self._type("discovery.k8s.io", "v1", "endpointslices")
        slice_body: Obj = {
            "metadata": {"name": "kubernetes", "labels": {"kubernetes.io/service-name": "kubernetes"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [advertised], "conditions": {"ready": True}}],
            "ports": [{"name": "https", "port": self.port, "protocol": "TCP"}],
        }
        current_slice = self.registry.find(slices, "default", "kubernetes")
        if current_slice is None:
            await self.registry.create(slices, "default", slice_body, self._system_write())
        else:
            await self.registry.update(
                slices,
                "default",
                "kubernetes",
                {
                    **slice_body,
                    "metadata": {
                        **slice_body["metadata"],
                        "resourceVersion": current_slice["metadata"]["resourceVersion"],
                    },
                },
                self._system_write(),
            )

    def _system_write(self) -> WriteOptions:
        return WriteOptions(user=SYSTEM_USER, field_manager="kube-apiserver", admit=False)

    def _type(self, group: str, version: str, plural: str) -> ResourceType:
        rt = self.catalog.get(group, version, plural)
        if rt is None:
            raise errors.internal(f"resource {plural}.{group}/{version} is not served")
        return rt

    # admission webhooks' view of the world

    def _webhook_configurations(self, kind: str) -> list[Obj]:
        key = f"{kind}webhookconfigurations.admissionregistration.k8s.io"
        return self.storage.objects(key)

    def _resolve_service(self, namespace: str, name: str, port: int) -> str:
        """A Service webhook's base URL, as kube-apiserver with `--enable-aggregator-routing` finds it."""
        if (namespace, name, port) == ("default", "kubernetes", 443):
            return self.url
        slices = [
            obj
            for obj in self.storage.objects("endpointslices.discovery.k8s.io", namespace)
            if (obj["metadata"].get("labels") or {}).get("kubernetes.io/service-name") == name
        ]
        endpoint = resolve_endpoint(
            self.storage.get("services", namespace, name), slices, name=name, port=port
        )
        return f"https://{endpoint.address}"

    # OpenAPI

    def openapi_response(self, request: web.Request, parts: list[str]) -> web.Response:
        return self.openapi.response(request, parts, self.catalog)

    # persistence

    async def _persist_loop(self) -> None:
        while True:
            await self.storage.dirty.wait()
            await asyncio.sleep(self.settings.persist_interval)
            await self._save()

    async def _save(self) -> None:
        self.storage.dirty.clear()
        snapshot = self.storage.snapshot()
        await asyncio.to_thread(write_snapshot, self.settings.state_dir / "state.json", snapshot)
