"""Each peering's gateway (provider: GatewayServer, consumer: GatewayClient), run as a Deployment.

For a gateway object the controller keeps, in its namespace and owned by it: the Secret
with a WireGuard private key made once (never logged, never replaced: the other side holds
its public key), the gateway's ServiceAccount and Role, its Deployment and, for a server,
the Service exposing its WireGuard port (NodePort by default, as the auth service). The
gateway is told this cluster's pod CIDR (from the identity ConfigMap) in its arguments: the
Configuration it reads can be written by the peer. The
status carries the public key, the key Secret and, for a server, the endpoint consumers
dial: a Ready real node's most reachable address and the nodePort, or the load
balancer's ingress and the port.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging

from runtime.api import constants as c
from runtime.api.crds import GATEWAYCLIENTS, GATEWAYSERVERS
from runtime.api.kinds import (
    CONFIGMAPS,
    DEPLOYMENTS,
    NODES,
    ROLEBINDINGS,
    ROLES,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
)
from runtime.api.objects import JSON, nested
from runtime.api.resource import Resource
from runtime.core import AlreadyExistsError, Client, Informer, Manager, Request, Result
from runtime.forge import networking as forge
from runtime.forge import nodes as forge_nodes
from runtime.forge import wireguard
from runtime.forge.networking import GatewayMode

from ..options import ControllerOptions

logger = logging.getLogger(__name__)


FIELD_MANAGER = "liqo-gateway-controller"
ENDPOINT_WAIT = 1.0


def _ready_real_node(node: JSON) -> bool:
    labels = nested(node, "metadata", "labels") or {}
    if labels.get(c.LABEL_TYPE) == c.TYPE_VIRTUAL_NODE:
        return False
    return any(
        cond.get("type") == "Ready" and cond.get("status") == "True"
        for cond in nested(node, "status", "conditions") or []
    )


def server_endpoint(service: JSON | None, nodes: list[JSON], *, port: int) -> JSON | None:
    """Where consumers dial a gateway server's Service (pure); None until it can be told."""
    if service is None:
        return None
    spec = service.get("spec") or {}
    if spec.get("type") == "LoadBalancer":
        ingress = nested(service, "status", "loadBalancer", "ingress") or []
        addresses = [
            str(entry.get("ip") or entry.get("hostname"))
            for entry in ingress
            if entry.get("ip") or entry.get("hostname")
        ]
        return {"addresses": addresses[:1], "port": port, "protocol": "UDP"} if addresses else None
    node_port = next((p.get("nodePort") for p in spec.get("ports") or [] if p.get("nodePort")), None)
    found = sorted(
        (
            found
            for found in (forge_nodes.node_address(node) for node in nodes if _ready_real_node(node))
            if found
        ),
        key=lambda found: forge_nodes.ADDRESS_TYPES.index(found[0]),
    )
    if node_port is None or not found:
        return None
    return {"addresses": [found[0][1]], "port": int(node_port), "protocol": "UDP"}


class GatewayReconciler:
    def __init__(
        self,
        client: Client,
        *,
        mode: GatewayMode,
        options: ControllerOptions,
        gateways: Informer,
        secrets: Informer,
        services: Informer,
        nodes: Informer,
        identity: Informer,
    ) -> None:
        self._client = client
        self._mode = mode
        self._options = options
        self._gateways = gateways
        self._secrets = secrets
        self._services = services
        self._nodes = nodes
        self._identity = identity
        self._resource = GATEWAYSERVERS if mode == "server" else GATEWAYCLIENTS

    async def reconcile(self, request: Request) -> Result | None:
        gateway = self._gateways.store.get(request.name, namespace=request.namespace)
        if gateway is None or gateway["metadata"].get("deletionTimestamp"):
            return None
        ns = request.namespace
        data = (next(iter(self._identity.store), None) or {}).get("data") or {}
        pod_cidr = str(data.get(c.IDENTITY_POD_CIDR) or "")
        if not pod_cidr:
            return Result(requeue_after=5.0)
        spec = gateway.get("spec") or {}
        remote_id = str(spec.get("remoteClusterID") or "")
        name = forge.gateway_name(request.name)
        public = await self._public_key(gateway, name, remote_id)
        owner = forge.owner_reference(gateway)
        objects: list[tuple[Resource, JSON]] = [
            (resource, body)
            for resource, body in zip(
                (SERVICEACCOUNTS, ROLES, ROLEBINDINGS),
                forge.gateway_role(name, namespace=ns, remote_cluster_id=remote_id),
                strict=True,
            )
        ]
        objects.append(
            (
                DEPLOYMENTS,
                forge.gateway_deployment(
                    name,
                    namespace=ns,
                    mode=self._mode,
                    remote_cluster_id=remote_id,
                    remote_cluster_name=request.name,
                    interface=forge.interface_name(str(gateway["metadata"]["uid"])),
                    image=self._options.image,
                    pod_cidr=pod_cidr,
                    implementation=self._options.wireguard_implementation,
                ),
            )
        )
        endpoint_spec = spec.get("endpoint") or {}
        port = int(endpoint_spec.get("port") or self._options.gateway_port)
        if self._mode == "server":
            objects.append(
                (
                    SERVICES,
                    forge.gateway_service(
                        name,
                        namespace=ns,
                        remote_cluster_id=remote_id,
                        service_type=str(
                            endpoint_spec.get("serviceType") or self._options.gateway_service_type
                        ),
                        port=port,
                    ),
                )
            )
        for resource, body in objects:
            body["metadata"]["ownerReferences"] = [owner]
            await self._client.apply(resource, body, field_manager=FIELD_MANAGER, force=True)
        status: JSON = {"publicKey": public, "secretRef": {"name": name, "namespace": ns}}
        endpoint = None
        if self._mode == "server":
            endpoint = server_endpoint(
                self._services.store.get(name, namespace=ns), list(self._nodes.store), port=port
            )
            if endpoint is not None:
                status["endpoint"] = endpoint
        current = gateway.get("status") or {}
        if any(current.get(key) != value for key, value in status.items()):
            await self._client.apply(
                self._resource,
                {"metadata": {"name": request.name, "namespace": ns}, "status": status},
                field_manager=FIELD_MANAGER,
                subresource="status",
                force=True,
            )
            logger.info("%s: gateway %s %s ready to run", request, self._mode, name)
        if self._mode == "server" and endpoint is None:
            return Result(requeue_after=ENDPOINT_WAIT)
        return None

    async def _public_key(self, gateway: JSON, name: str, remote_id: str) -> str:
        """The public key of the gateway's private key Secret, made now when missing."""
        ns = gateway["metadata"]["namespace"]
        secret = self._secrets.store.get(name, namespace=ns)
        if secret is None:
            with contextlib.suppress(AlreadyExistsError):
                body = forge.key_secret(
                    name,
                    await asyncio.to_thread(wireguard.private_key),
                    namespace=ns,
                    remote_cluster_id=remote_id,
                )
                body["metadata"]["ownerReferences"] = [forge.owner_reference(gateway)]
                secret = await self._client.create(SECRETS, body, field_manager=FIELD_MANAGER)
                logger.info("%s/%s: made the gateway's WireGuard key", ns, name)
            if secret is None:
                secret = await self._client.get(SECRETS, name, namespace=ns)
        encoded = nested(secret, "data", forge.PRIVATE_KEY) or ""
        return wireguard.public_key(base64.b64decode(encoded).decode())


def _setup(manager: Manager, options: ControllerOptions, mode: GatewayMode) -> None:
    resource = GATEWAYSERVERS if mode == "server" else GATEWAYCLIENTS
    gateways = manager.informer(resource)
    secrets = manager.informer(SECRETS, label_selector=f"{c.LABEL_COMPONENT}={forge.COMPONENT}")
    services = manager.informer(SERVICES, label_selector=f"{c.LABEL_COMPONENT}={forge.COMPONENT}")
    nodes = manager.informer(NODES)
    identity = manager.informer(
        CONFIGMAPS,
        namespace=options.namespace,
        field_selector=f"metadata.name={c.CLUSTER_IDENTITY_CONFIGMAP}",
    )
    reconciler = GatewayReconciler(
        manager.client,
        mode=mode,
        options=options,
        gateways=gateways,
        secrets=secrets,
        services=services,
        nodes=nodes,
        identity=identity,
    )
    controller = manager.controller(f"gateway{mode}", reconciler, primary=gateways)
    controller.owns(secrets)
    controller.owns(services)
    controller.watches(identity, lambda _: [Request.of(item) for item in gateways.store])


def setup_server(manager: Manager, options: ControllerOptions) -> None:
    """Register the provider's gateway servers with `manager`."""
    _setup(manager, options, "server")


def setup_client(manager: Manager, options: ControllerOptions) -> None:
    """Register the consumer's gateway clients with `manager`."""
    _setup(manager, options, "client")
