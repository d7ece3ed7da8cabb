"""The networking step of a consumer's peering: the fabric's objects exchanged with the provider.

With the credential the provider issued, the consumer keeps in its tenant namespace there
a Configuration (its own pod network in `spec.remote`), a GatewayServer and the PublicKey
of its gateway client, all named after itself; and here, in the provider's tenant
namespace, a Configuration, a GatewayClient and the server's PublicKey named after the
provider. It carries across what only the other side knows: the provider's pod network
(`spec.local` there -> `spec.remote` here), how each IPAM mapped the other
(`status.remote` there -> `status.local` here, and back), the server's endpoint and key.
The provider's controllers and the IPAMs (`runtime.controllers.networking`) do the rest;
the gateways report the tunnel in their Connection, which makes the step done.
"""

from __future__ import annotations

import logging
from typing import Any

from runtime.api.crds import CONFIGURATIONS, CONNECTIONS, GATEWAYCLIENTS, GATEWAYSERVERS, PUBLICKEYS
from runtime.api.objects import JSON, nested
from runtime.core import APIConnectionError, APIError, Client, NotFoundError
from runtime.forge import ipam
from runtime.forge import networking as forge
from runtime.forge.networking import Cidrs

from ..options import ControllerOptions
from .peering import LocalCluster, PeeringSpec
from .status import Step, done, failed, waiting

logger = logging.getLogger(__name__)


FIELD_MANAGER = "liqo-network-exchange"
REASON_PENDING = "NetworkPending"
REASON_CONNECTED = "TunnelConnected"
REASON_ERROR = "NetworkError"


async def _get(client: Client, resource: Any, name: str, namespace: str) -> JSON | None:
    try:
        return await client.get(resource, name, namespace=namespace)
    except NotFoundError:
        return None


async def _status(client: Client, resource: Any, name: str, namespace: str, status: JSON) -> None:
    await client.apply(
        resource,
        {"metadata": {"name": name, "namespace": namespace}, "status": status},
        field_manager=FIELD_MANAGER,
        subresource="status",
        force=True,
    )


async def exchange(
    client: Client,
    remote: Client,
    spec: PeeringSpec,
    local: LocalCluster,
    *,
    remote_namespace: str,
    options: ControllerOptions,
) -> Step:
    """One pass of the exchange; the step says how far the fabric got."""
    try:
        return await _exchange(
            client, remote, spec, local, remote_namespace=remote_namespace, options=options
        )
    except (APIConnectionError, APIError) as exc:
        return failed(REASON_ERROR, f"exchanging the network configuration with {spec.name}: {exc}")


async def _exchange(
    client: Client,
    remote: Client,
    spec: PeeringSpec,
    local: LocalCluster,
    *,
    remote_namespace: str,
    options: ControllerOptions,
) -> Step:
    here, there = spec.tenant_namespace, remote_namespace
    if not local.pod_cidr:
        return failed(
            REASON_ERROR, "this cluster's identity ConfigMap records no pod CIDR: reinstall with pod_cidr"
        )
    if not there:
        return waiting(REASON_PENDING, f"waiting for the tenant namespace on {spec.name}")
    mine = Cidrs(pod=(local.pod_cidr,), external=(ipam.DEFAULT_EXTERNAL_CIDR,))
    # there: what the provider needs from us
    await remote.apply(
        CONFIGURATIONS,
        forge.configuration(
            local.cluster_name, namespace=there, remote_cluster_id=local.cluster_id, remote=mine
        ),
        field_manager=FIELD_MANAGER,
        force=True,
    )
    await remote.apply(
        GATEWAYSERVERS,
        forge.gateway_server(
            local.cluster_name,
            namespace=there,
            remote_cluster_id=local.cluster_id,
            service_type=options.gateway_service_type,
            port=options.gateway_port,
            mtu=options.gateway_mtu,
        ),
        field_manager=FIELD_MANAGER,
        force=True,
    )
    remote_configuration = await _get(remote, CONFIGURATIONS, local.cluster_name, there) or {}
    server = await _get(remote, GATEWAYSERVERS, local.cluster_name, there) or {}
    theirs = Cidrs.of(nested(remote_configuration, "spec", "local"))
    mine_there = Cidrs.of(nested(remote_configuration, "status", "remote"))
    endpoint = nested(server, "status", "endpoint") or {}
    server_key = str(nested(server, "status", "publicKey") or "")
    # here: the provider as we know it, and our gateway client
    await client.apply(
        CONFIGURATIONS,
        forge.configuration(
            spec.name,
            namespace=here,
            remote_cluster_id=spec.cluster_id,
            remote=theirs if theirs.pod else None,
        ),
        field_manager=FIELD_MANAGER,
        force=True,
    )
    if mine_there.pod:
        await _status(client, CONFIGURATIONS, spec.name, here, {"local": {"cidr": mine_there.json()}})
    await client.apply(
        GATEWAYCLIENTS,
        forge.gateway_client(
            spec.name,
            namespace=here,
            remote_cluster_id=spec.cluster_id,
            addresses=endpoint.get("addresses") or [],
            port=int(endpoint.get("port") or options.gateway_port),
            mtu=options.gateway_mtu,
        ),
        field_manager=FIELD_MANAGER,
        force=True,
    )
    if server_key:
        await client.apply(
            PUBLICKEYS,
            forge.public_key(spec.name, server_key, namespace=here, cluster_id=spec.cluster_id),
            field_manager=FIELD_MANAGER,
            force=True,
        )
    local_configuration = await _get(client, CONFIGURATIONS, spec.name, here) or {}
    gateway_client = await _get(client, GATEWAYCLIENTS, spec.name, here) or {}
    theirs_here = Cidrs.of(nested(local_configuration, "status", "remote"))
    client_key = str(nested(gateway_client, "status", "publicKey") or "")
    # there: what only we know
    if theirs_here.pod and Cidrs.of(nested(remote_configuration, "status", "local")) != theirs_here:
        await _status(
            remote, CONFIGURATIONS, local.cluster_name, there, {"local": {"cidr": theirs_here.json()}}
        )
    if client_key:
        await remote.apply(
            PUBLICKEYS,
            forge.public_key(local.cluster_name, client_key, namespace=there, cluster_id=local.cluster_id),
            field_manager=FIELD_MANAGER,
            force=True,
        )
    missing = [
        what
        for what, value in (
            (f"{spec.name}'s pod CIDR", theirs.pod),
            (f"the pod CIDR {spec.name} maps this cluster to", mine_there.pod),
            (f"the pod CIDR {spec.name} is mapped to here", theirs_here.pod),
            (f"the gateway server's endpoint on {spec.name}", endpoint.get("addresses")),
            (f"the gateway server's key on {spec.name}", server_key),
            ("the gateway client's key", client_key),
        )
        if not value
    ]
    if missing:
        return waiting(REASON_PENDING, "waiting for " + ", ".join(missing))
    connection = await _get(client, CONNECTIONS, spec.name, here) or {}
    status = connection.get("status") or {}
    state = status.get("value") or "Connecting"
    message = status.get("message") or "the gateway client has not reported yet"
    if state == "Connected":
        latency = nested(status, "latency", "value")
        return done(
            REASON_CONNECTED,
            f"tunnel to {spec.name} up"
            + (f" (latency {latency})" if latency else "")
            + f": its pods ({theirs.pod[0]}) are {theirs_here.pod[0]} here",
        )
    return waiting(REASON_PENDING, f"tunnel to {spec.name}: {state}: {message}")
