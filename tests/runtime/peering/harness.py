"""Clusters with the runtime installed and running in-process, for the peering behaviour suite.

`Clusters` starts one emulator per cluster and, in the test's own event loop, everything a
playground cluster would run for the runtime:

- the runtime's install manifests (the webhook configurations only with `webhook=True`,
  which runs the webhook too: without it they would fail closed), with the cluster's id,
  name and labels, and a worker Node with 4 cpu / 8Gi / 110 pods, Ready, so a provider has
  something to share;
- the control-plane pieces the runtime relies on (the playground's namespace lifecycle,
  garbage collector, `default` ServiceAccounts and `kube-root-ca.crt`, EndpointSlices),
  with the admin credential, as kube-controller-manager would;
- the controller manager (`runtime.controllers.main.setup_all`) as the
  `liqo-controller-manager` ServiceAccount, and the authentication service on 127.0.0.1 as
  the `liqo-auth` ServiceAccount, so the installation's least-privilege RBAC is what they
  are held to;
- for every virtual kubelet Deployment the VirtualNode controller creates, the virtual
  kubelet's own `main`, in-process, with a token of the Deployment's ServiceAccount. The
  emulator has no node agent, so the harness also stands in for the kubelet and the
  Deployment controller: it reports the Deployment Available while that virtual kubelet
  runs (and unavailable once it stopped).

A crash of any component fails the test when the harness closes. `stop(cluster)` ends a
cluster's components and its API server (a provider that is gone).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import io
import json
import logging
import os
import subprocess
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from playground.controllers import endpointslice, gc, namespace, serviceaccount
from playground.controlplane import ControlPlaneOptions
from playground.controlplane.credentials import ServiceAccountCredentials
from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS, VIRTUALNODES
from runtime.api.kinds import DEPLOYMENTS, NODES, SECRETS
from runtime.api.objects import JSON
from runtime.auth.options import AuthOptions
from runtime.auth.server import AuthServer
from runtime.controllers.main import setup_all
from runtime.controllers.options import ControllerOptions
from runtime.core import Client, Manager, NotFoundError, ServerSettings, Settings
from runtime.forge import virtualnode as forge_vn
from runtime.forge.install import MUTATING_WEBHOOK, VALIDATING_WEBHOOK, InstallOptions, install_manifests
from runtime.forge.services import ServiceType
from runtime.forge.tokens import generate_token, token_secret
from tests.apiserver.conftest import start_emulator, stop_emulator
from tests.ports import free_port
from tests.runtime.serviceaccounts import service_account_kubeconfig

logger = logging.getLogger(__name__)


WORKER_CAPACITY = {"cpu": "4", "memory": "8Gi", "pods": "110"}
#: what the controllers are given in these tests: short waits, so failures show quickly
CONTROLLER_OPTIONS = ControllerOptions(
    unpeer_timeout=3.0,
    remote_timeout=3.0,
    auth_timeout=3.0,
    resource_slice_poll=0.1,
    virtual_node_deletion_timeout=5.0,
    tenant_orphan_grace=None,
)
VK_SELECTOR = f"{c.LABEL_COMPONENT}={forge_vn.COMPONENT}"
#: how often the harness looks for virtual kubelet Deployments to run
VK_POLL = 0.1


@dataclass
class Cluster:
    name: str
    cluster_id: str
    kubeconfig: Path
    admin: Client
    process: subprocess.Popen[bytes]
    #: the authentication service's URL (None when the runtime is not installed)
    auth_url: str | None = None
    #: the authentication service's certificate (PEM), once it started
    auth_certificate: bytes | None = None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    controller_manager: asyncio.Task[None] | None = None
    auth_service: asyncio.Task[None] | None = None
    #: the webhook's /healthz, /readyz, /metrics port (with `webhook=True`), once it started
    webhook_health_port: int | None = None
    clients: list[Client] = field(default_factory=list)
    stopped: bool = False

    @property
    def api_server_url(self) -> str:
        return self.admin.host


async def _service_account_client(cluster: Cluster, namespace: str, name: str, *, ttl: int = 3600) -> Client:
    """A client authenticated as ServiceAccount `namespace/name` of `cluster`."""
    config = await service_account_kubeconfig(
        cluster.admin, cluster.kubeconfig, name, namespace=namespace, ttl=ttl
    )
    client = await Client.from_kubeconfig_dict(config)
    cluster.clients.append(client)
    return client


async def _renewing(credentials: ServiceAccountCredentials) -> None:
    try:
        await credentials.run()
    finally:
        await credentials.close()


class Clusters:
    """Clusters of one test; `async with Clusters(tmp_path) as clusters:` tears all of them down."""

    def __init__(
        self,
        state_dir: Path,
        *,
        options: ControllerOptions = CONTROLLER_OPTIONS,
        webhook: bool = False,
        max_consumer_service_type: ServiceType = "ClusterIP",
    ) -> None:
        self.state_dir = state_dir
        self.options = options
        self.webhook = webhook
        #: the widest Service type the clusters, as providers, let consumers keep (their install's option)
        self.max_consumer_service_type = max_consumer_service_type
        self._clusters: list[Cluster] = []
        self._crashes: list[str] = []
        #: uids of virtual kubelet Deployments whose virtual kubelet is being killed to start again
        self._restarting: set[str] = set()
        self._virtual_kubelet_tasks: dict[str, asyncio.Task[int]] = {}
        #: the /metrics port of each virtual kubelet, by its Deployment's `<namespace>/<name>`
        self.virtual_kubelet_health_ports: dict[str, int] = {}

    async def __aenter__(self) -> Clusters:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for cluster in self._clusters:
            await self.stop(cluster)
        if self._crashes and exc is None:
            raise AssertionError("runtime components crashed:\n" + "\n".join(self._crashes))

    async def cluster(
        self,
        name: str,
        *,
        labels: dict[str, str] | None = None,
        runtime: bool = True,
        components: bool = True,
    ) -> Cluster:
        """A cluster named `name`; with `runtime`, the runtime installed, and with `components` running too."""
        directory = self.state_dir / name
        directory.mkdir(parents=True)
        process, kubeconfig = await asyncio.to_thread(start_emulator, directory)
        admin = await Client.from_kubeconfig(kubeconfig)
        cluster = Cluster(
            name=name, cluster_id=str(uuid.uuid4()), kubeconfig=kubeconfig, admin=admin, process=process
        )
        self._clusters.append(cluster)
        if runtime:
            await self._install(cluster, labels or {})
            if components:
                await self._start(cluster)
        return cluster

    async def _install(self, cluster: Cluster, labels: dict[str, str]) -> None:
        options = InstallOptions(
            cluster_id=cluster.cluster_id,
            cluster_name=cluster.name,
            api_server_url=cluster.api_server_url,
            webhook_mode="url",
            pod_cidr="10.244.0.0/16",
            service_cidr="10.96.0.0/12",
            cluster_labels=labels,
            # no node forwards a nodePort here: the auth service publishes the address it binds on 127.0.0.1
            auth_service_type="ClusterIP",
            max_consumer_service_type=self.max_consumer_service_type,
        )

        async def apply(obj: JSON) -> None:
            resource = await cluster.admin.resource_for(obj["apiVersion"], obj["kind"])
            await cluster.admin.apply(
                resource,
                obj,
                namespace=obj["metadata"].get("namespace"),
                field_manager=c.FIELD_MANAGER_INSTALL,
                force=True,
            )

        webhooks = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
        manifests = [obj for obj in install_manifests(options) if self.webhook or obj["kind"] not in webhooks]
        # the namespace first; nothing else depends on another object of the installation
        await apply(manifests[0])
        await asyncio.gather(*(apply(obj) for obj in manifests[1:]))
        node = f"{cluster.name}-worker"
        await cluster.admin.create(
            NODES, {"metadata": {"name": node, "labels": {"kubernetes.io/hostname": node}}}
        )
        await cluster.admin.patch_status(
            NODES,
            node,
            {
                "status": {
                    "capacity": WORKER_CAPACITY,
                    "allocatable": WORKER_CAPACITY,
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "reason": "KubeletReady",
                            "message": "kubelet is ready",
                        }
                    ],
                }
            },
        )

    async def _start(self, cluster: Cluster) -> None:
        """Start (or start again) the cluster's components."""
        control_plane = Manager(cluster.admin, settings=Settings(server=None))
        root_ca = (cluster.admin.config.certificate_authority or b"").decode()
        # the controllers write as kube-controller-manager's ServiceAccounts, as on a playground cluster
        credentials = ServiceAccountCredentials(
            cluster.admin, scheduler=cluster.admin, directory=cluster.kubeconfig.parent / "tokens"
        )
        for setup in (namespace.setup, gc.setup, serviceaccount.setup, endpointslice.setup):
            setup(control_plane, ControlPlaneOptions(root_ca=root_ca), credentials)
        await credentials.prepare()
        self._run(cluster, "control plane", control_plane.run())
        self._run(cluster, "controller tokens", _renewing(credentials))
        self._run(cluster, "virtual kubelets", self._virtual_kubelets(cluster))
        server = await self._auth_service(cluster, port=0)
        if self.webhook:
            await self._webhook(cluster)
        await self.start_controller_manager(cluster)
        await asyncio.wait_for(server.started.wait(), 20)
        cluster.auth_url = server.url
        cluster.auth_certificate = server.certificate

    async def _auth_service(self, cluster: Cluster, *, port: int) -> AuthServer:
        auth_client = await _service_account_client(cluster, c.DEFAULT_NAMESPACE, "liqo-auth")
        server = AuthServer(auth_client, AuthOptions(host="127.0.0.1", port=port, token_ttl=600))
        cluster.auth_service = self._run(cluster, "auth service", server.run())
        return server

    async def _webhook(self, cluster: Cluster) -> None:
        from runtime.webhook.server import WebhookOptions, WebhookServer

        client = await _service_account_client(cluster, c.DEFAULT_NAMESPACE, "liqo-webhook")
        options = WebhookOptions(
            namespace=c.DEFAULT_NAMESPACE,
            listen_host="127.0.0.1",
            listen_port=0,
            mode="url",
            configurations=(VALIDATING_WEBHOOK,),
            mutating_configurations=(MUTATING_WEBHOOK,),
            service="liqo-webhook",
            health=ServerSettings(host="127.0.0.1", port=0),
            max_consumer_service_type=self.max_consumer_service_type,
            # URL mode: the API server calls the webhook by the address it patched in, no Service to drain
            shutdown_delay=0.0,
        )
        server = WebhookServer(client, options)
        self._run(cluster, "webhook", server.run())
        await asyncio.wait_for(server.ready.wait(), 20)
        assert server.health is not None
        await asyncio.wait_for(server.health.started.wait(), 20)
        cluster.webhook_health_port = server.health.port

    async def restart_auth_service(self, cluster: Cluster) -> None:
        """Stop the cluster's authentication service and start it again on the same address."""
        task, url = cluster.auth_service, cluster.auth_url
        assert task is not None and url is not None
        await _stopped(task, f"{cluster.name}: the authentication service")
        server = await self._auth_service(cluster, port=int(url.rsplit(":", 1)[1]))
        await asyncio.wait_for(server.started.wait(), 20)
        assert server.url == url
        cluster.auth_certificate = server.certificate

    async def start_controller_manager(self, cluster: Cluster) -> None:
        client = await _service_account_client(cluster, c.DEFAULT_NAMESPACE, "liqo-controller-manager")
        manager = Manager(client, settings=Settings(server=None))
        setup_all(manager, dataclasses.replace(self.options, api_server_url=cluster.api_server_url))
        cluster.controller_manager = self._run(cluster, "controller manager", manager.run())
        await asyncio.wait_for(manager.informers.wait_synced(), 20)

    async def restart_controller_manager(self, cluster: Cluster) -> None:
        """Kill the cluster's controller manager (its reconciles in flight are cancelled) and start a new one."""
        task = cluster.controller_manager
        assert task is not None
        await _stopped(task, f"{cluster.name}: the controller manager")
        await self.start_controller_manager(cluster)

    def _run(self, cluster: Cluster, what: str, work: Awaitable[None]) -> asyncio.Task[None]:
        async def watched() -> None:
            try:
                await work
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                logger.exception("%s: %s crashed", cluster.name, what)
                self._crashes.append(f"{cluster.name}: {what}: {exc!r}")
                raise

        task = asyncio.create_task(watched(), name=f"{cluster.name} {what}")
        cluster.tasks.append(task)
        return task

    async def stop(self, cluster: Cluster) -> None:
        """Stop the cluster's components, then its API server (idempotent)."""
        if cluster.stopped:
            return
        cluster.stopped = True
        for task in cluster.tasks:
            task.cancel()
        await asyncio.gather(*cluster.tasks, return_exceptions=True)
        for client in [*cluster.clients, cluster.admin]:
            await client.close()
        await asyncio.to_thread(stop_emulator, cluster.process)

    async def eventually(
        self, condition: Callable[[], Awaitable[object]], *, within: float = 15.0, every: float = 0.1
    ) -> Any:
        """Await until `condition()` returns something truthy, and return it.

        AssertionError with the last value after `within` seconds, or at once when a component crashed.
        """
        deadline = asyncio.get_running_loop().time() + within
        while True:
            value = await condition()
            if value:
                return value
            if self._crashes:
                raise AssertionError("runtime components crashed:\n" + "\n".join(self._crashes))
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(
                    f"condition still false after {within} s (last value {value!r})" + await self._diagnosis()
                )
            await asyncio.sleep(every)

    async def _diagnosis(self) -> str:
        """What the VirtualNodes of the running clusters say, to tell which component is stuck."""
        lines = []
        for cluster in self._clusters:
            if cluster.stopped or cluster.auth_url is None:
                continue
            for vn in (await cluster.admin.list(VIRTUALNODES)).items:
                for cond in (vn.get("status") or {}).get("conditions") or []:
                    lines.append(
                        f"{cluster.name}: VirtualNode {vn['metadata']['name']}: {cond['type']}={cond['status']}"
                        f" ({cond.get('reason')}: {cond.get('message')})"
                    )
        return ("\n" + "\n".join(lines)) if lines else ""

    # peering, as `liqo_generate` and `liqo_peer` will do it

    async def token(self, provider: Cluster) -> str:
        """A fresh peering token of `provider` (its hash stored there, as `liqo_generate` does)."""
        token = generate_token()
        await provider.admin.create(SECRETS, token_secret(token, namespace=c.DEFAULT_NAMESPACE))
        return token

    async def peer(
        self,
        consumer: Cluster,
        provider: Cluster,
        *,
        token: str | None = None,
        auth_url: str | None = None,
        resources: dict[str, str] | None = None,
        node_labels: dict[str, str] | None = None,
        networking: bool = True,
        auth_key_fingerprint: str = "",
    ) -> JSON:
        """What `liqo_peer` creates on the consumer for `provider` (a fresh token of it unless given;
        `auth_key_fingerprint`: the auth service key to trust, as `liqo_peer` passes it).

        These clusters run no pods, so with `networking` the fabric's step stays Pending (no gateway
        server has an endpoint) while the peering is Ready."""
        url = auth_url or provider.auth_url
        assert url is not None, f"{provider.name} runs no authentication service: give auth_url"
        return await self.foreign_cluster(
            consumer,
            provider.name,
            cluster_id=provider.cluster_id,
            auth_url=url,
            token=token if token is not None else await self.token(provider),
            resources=resources,
            node_labels=node_labels,
            networking=networking,
            auth_key_fingerprint=auth_key_fingerprint,
        )

    async def foreign_cluster(
        self,
        consumer: Cluster,
        name: str,
        *,
        cluster_id: str,
        auth_url: str,
        token: str,
        resources: dict[str, str] | None = None,
        node_labels: dict[str, str] | None = None,
        networking: bool = True,
        auth_key_fingerprint: str = "",
    ) -> JSON:
        """The token Secret and the ForeignCluster `name`, on the consumer."""
        secret_name = f"liqo-peering-{name}"
        await consumer.admin.create(
            SECRETS,
            {
                "metadata": {"name": secret_name, "namespace": c.DEFAULT_NAMESPACE},
                "data": {c.TOKEN_SECRET_KEY: base64.b64encode(token.encode()).decode()},
            },
        )
        spec: JSON = {
            "clusterID": cluster_id,
            "clusterName": name,
            "peeringType": "OutOfBand",
            "authURL": auth_url,
            "tokenSecretRef": {"name": secret_name, "namespace": c.DEFAULT_NAMESPACE},
        }
        if resources is not None:
            spec["resources"] = resources
        if node_labels is not None:
            spec["nodeLabels"] = node_labels
        if not networking:
            spec["networkingEnabled"] = False
        metadata: JSON = {"name": name}
        if auth_key_fingerprint:
            metadata["annotations"] = {c.ANNOTATION_TRUST_AUTH_SERVICE_KEY: auth_key_fingerprint}
        body = {
            "apiVersion": FOREIGNCLUSTERS.api_version,
            "kind": "ForeignCluster",
            "metadata": metadata,
            "spec": spec,
        }
        return await consumer.admin.create(FOREIGNCLUSTERS, body)

    # the virtual kubelets, in-process

    async def _virtual_kubelets(self, cluster: Cluster) -> None:
        """Run a virtual kubelet for every virtual kubelet Deployment, and report the Deployment's availability."""
        running: dict[str, asyncio.Task[int]] = {}
        try:
            while True:
                listed = await cluster.admin.list(DEPLOYMENTS, label_selector=VK_SELECTOR)
                present = {}
                for deployment in listed.items:
                    meta = deployment["metadata"]
                    if meta.get("deletionTimestamp"):
                        continue
                    present[meta["uid"]] = deployment
                    task = running.get(meta["uid"])
                    if task is None or (task.done() and meta["uid"] in self._restarting):
                        self._restarting.discard(meta["uid"])
                        running[meta["uid"]] = await self._start_virtual_kubelet(cluster, deployment)
                    await _report(cluster, deployment, available=not running[meta["uid"]].done())
                for uid in [uid for uid in running if uid not in present]:
                    await _finish(running.pop(uid))
                await asyncio.sleep(VK_POLL)
        finally:
            for task in running.values():
                await _finish(task)

    async def _start_virtual_kubelet(self, cluster: Cluster, deployment: JSON) -> asyncio.Task[int]:
        from runtime.virtualkubelet.main import main as virtual_kubelet_main

        meta = deployment["metadata"]
        pod = deployment["spec"]["template"]["spec"]
        container = pod["containers"][0]
        config = await service_account_kubeconfig(
            cluster.admin, cluster.kubeconfig, pod["serviceAccountName"], namespace=meta["namespace"]
        )
        path = self.state_dir / cluster.name / f"{meta['name']}.kubeconfig"
        await asyncio.to_thread(path.write_text, json.dumps(config))
        health_port = free_port()
        self.virtual_kubelet_health_ports[f"{meta['namespace']}/{meta['name']}"] = health_port
        args = [_local(arg) for arg in container.get("args") or []] + [
            f"--kubeconfig={path}",
            f"--health-address=127.0.0.1:{health_port}",
        ]

        async def run() -> int:
            try:
                code = await virtual_kubelet_main(args)
            except Exception as exc:
                logger.exception("%s: the virtual kubelet %s crashed", cluster.name, meta["name"])
                self._crashes.append(f"{cluster.name}: virtual kubelet {meta['name']}: {exc!r}")
                return 1
            if code != 0:
                self._crashes.append(f"{cluster.name}: virtual kubelet {meta['name']} exited with {code}")
            return code

        logger.info(
            "%s: starting the virtual kubelet %s/%s in-process", cluster.name, meta["namespace"], meta["name"]
        )
        # the virtual kubelet reads its pod's address (the node's InternalIP) from the downward API
        os.environ["POD_IP"] = "127.0.0.1"
        task = asyncio.create_task(run(), name=f"{cluster.name} virtual kubelet {meta['name']}")
        self._virtual_kubelet_tasks[meta["uid"]] = task
        return task

    async def kill_virtual_kubelets(self, cluster: Cluster) -> None:
        """Kill every virtual kubelet of `cluster` mid-flight (cancelled); the harness starts them again."""
        listed = await cluster.admin.list(DEPLOYMENTS, label_selector=VK_SELECTOR)
        for deployment in listed.items:
            uid = deployment["metadata"]["uid"]
            task = self._virtual_kubelet_tasks.get(uid)
            if task is not None:
                self._restarting.add(uid)
                task.cancel()


def _local(arg: str) -> str:
    """A pod argument for a process of the test: the pod IP is loopback, the kubelet port a free one (the health
    address is given after the pod's arguments, so it wins)."""
    if arg.startswith("--kubelet-address="):
        return "--kubelet-address=127.0.0.1:0"
    return arg.replace("$(POD_IP)", "127.0.0.1")


async def _report(cluster: Cluster, deployment: JSON, *, available: bool) -> None:
    """What the kubelet and the Deployment controller would report about a one-replica Deployment."""
    meta = deployment["metadata"]
    ready = 1 if available else 0
    status = {
        "observedGeneration": meta.get("generation"),
        "replicas": 1,
        "readyReplicas": ready,
        "availableReplicas": ready,
        "updatedReplicas": 1,
        "conditions": [
            {
                "type": "Available",
                "status": "True" if available else "False",
                "reason": "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
                "message": "Deployment has minimum availability."
                if available
                else "the virtual kubelet stopped",
            }
        ],
    }
    current = deployment.get("status") or {}
    if all(current.get(key) == value for key, value in status.items() if key != "conditions") and [
        {k: v for k, v in entry.items() if k in ("type", "status")}
        for entry in current.get("conditions") or []
    ] == [{"type": "Available", "status": status["conditions"][0]["status"]}]:
        return
    with contextlib.suppress(NotFoundError):
        await cluster.admin.patch_status(
            DEPLOYMENTS, meta["name"], {"status": status}, namespace=meta["namespace"]
        )


async def _finish(task: asyncio.Task[int]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


#: how long a component cancelled by a restart may take to stop
STOP_WITHIN = 30.0


async def _stopped(task: asyncio.Task[None], what: str) -> None:
    """Cancel `task` and wait for it to end; AssertionError naming `what` if it does not within STOP_WITHIN."""
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=STOP_WITHIN)
    if not done:
        stack = io.StringIO()
        task.print_stack(file=stack)
        raise AssertionError(
            f"{what} did not stop within {STOP_WITHIN:g} s of being cancelled:\n{stack.getvalue()}"
        )
