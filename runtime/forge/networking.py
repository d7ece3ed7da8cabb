"""The network fabric's objects, pure: what each side of a peering keeps, and each peering's gateway.

Per peering, in the tenant namespace of the remote cluster, each side has:

- a `Configuration` named after the remote cluster: `spec.local` this cluster's networks,
  `spec.remote` the remote one's real networks, `status.remote` the remote networks as this
  cluster's IPAM mapped them, `status.local` this cluster's networks as the remote's IPAM
  mapped them (the consumer's controller carries both statuses across);
- a `Network` (ipam.liqo.io) per remote pod CIDR: the IPAM's persistent allocation;
- the gateway: a `GatewayServer` on the provider (its Service exposes a WireGuard port),
  a `GatewayClient` on the consumer, each run by a Deployment of the runtime's image with a
  ServiceAccount allowed to read its peering's objects and write its `Connection`;
- `PublicKey`s: this side's and the remote side's WireGuard public keys (private keys stay
  in a Secret of the side that made them).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from runtime.api import constants as c
from runtime.api.crds import CONFIGURATIONS, CONNECTIONS, GATEWAYCLIENTS, GATEWAYSERVERS, NETWORKS, PUBLICKEYS
from runtime.api.image import component_command
from runtime.api.objects import JSON, nested

from . import cidrs
from .meta import labels, metadata

GatewayMode = Literal["server", "client"]

COMPONENT: Final = "gateway"
#: the gateway's WireGuard port in its pod, and the Service port in front of it
GATEWAY_PORT: Final = 51840
#: WireGuard's overhead on IPv4 (60), under the playground's and most clouds' 1500 with room for an outer encapsulation
DEFAULT_MTU: Final = 1340
#: how often an idle tunnel is kept alive through NATs (WireGuard's recommended value)
KEEPALIVE_SECONDS: Final = 25
#: each gateway's address on its tunnel interface (a link-local pair, reachable only through the tunnel), by mode
TUNNEL_ADDRESSES: Final[dict[GatewayMode, str]] = {"server": "169.254.18.1", "client": "169.254.18.2"}
#: the UDP port the gateways' latency probes ping each other on (Liqo's connection checker's)
PROBE_PORT: Final = 12345
PRIVATE_KEY: Final = "privateKey"
#: where wireguard-go keeps its control sockets (`wg` finds them there): an emptyDir, the root being read-only
WIREGUARD_SOCKET_DIR: Final = "/var/run/wireguard"
WIREGUARD_RUN_VOLUME: Final = "wireguard-run"
HEALTH_PORT: Final = 8087


@dataclass(frozen=True)
class Cidrs:
    """A cluster's networks as a Configuration's half (`spec.local`, `status.remote`, ...) states them."""

    pod: tuple[str, ...] = ()
    external: tuple[str, ...] = ()

    def json(self) -> JSON:
        return {"pod": list(self.pod), "external": list(self.external)}

    @classmethod
    def of(cls, value: Any) -> Cidrs:
        """The networks of a half as a peer may have written it: only those `runtime.forge.cidrs` accepts
        (canonical IPv4 CIDRs, not special-purpose, not wider than /8, at most 4 of a kind); `refused()` says
        why the others are left out."""
        pod, external = (cidrs.peer_networks(values) for values in _lists(value))
        return cls(tuple(str(n) for n in pod.accepted), tuple(str(n) for n in external.accepted))

    @staticmethod
    def refused(value: Any) -> list[str]:
        """Why each network of the half that `of()` leaves out is refused."""
        return [reason for values in _lists(value) for reason in cidrs.peer_networks(values).refused]


def _lists(value: Any) -> tuple[Any, Any]:
    """The raw pod and external lists of a Configuration's half (`{"cidr": {"pod": [...], "external": [...]}}`)."""
    cidr = value.get("cidr") if isinstance(value, dict) else None
    if not isinstance(cidr, dict):
        return None, None
    return cidr.get("pod"), cidr.get("external")


def _meta(name: str, namespace: str, remote_cluster_id: str, *, component: str = COMPONENT) -> JSON:
    return metadata(
        name, namespace=namespace, component=component, **{c.LABEL_REMOTE_CLUSTER_ID: remote_cluster_id}
    )


def configuration(
    name: str,
    *,
    namespace: str,
    remote_cluster_id: str,
    local: Cidrs | None = None,
    remote: Cidrs | None = None,
) -> JSON:
    """The Configuration of a peering (only the halves given: each writer applies its own)."""
    spec: JSON = {"remoteClusterID": remote_cluster_id}
    if local is not None:
        spec["local"] = {"cidr": local.json()}
    if remote is not None:
        spec["remote"] = {"cidr": remote.json()}
    return {
        "apiVersion": CONFIGURATIONS.api_version,
        "kind": CONFIGURATIONS.kind,
        "metadata": _meta(name, namespace, remote_cluster_id, component=c.COMPONENT_PEERING),
        "spec": spec,
    }


def configuration_status(
    name: str, *, namespace: str, remote: Cidrs | None = None, local: Cidrs | None = None
) -> JSON:
    """A Configuration's status half: `remote` from this cluster's IPAM, `local` from the remote cluster's."""
    status: JSON = {}
    if remote is not None:
        status["remote"] = {"cidr": remote.json()}
    if local is not None:
        status["local"] = {"cidr": local.json()}
    return {
        "apiVersion": CONFIGURATIONS.api_version,
        "kind": CONFIGURATIONS.kind,
        "metadata": {"name": name, "namespace": namespace},
        "status": status,
    }


def network_name(configuration_name: str, cidr: str) -> str:
    """`<configuration>-pod-<a-b-c-d-len>`: one Network per remote pod CIDR."""
    return f"{configuration_name}-pod-{cidr.replace('.', '-').replace('/', '-')}"


def network(configuration: JSON, cidr: str) -> JSON:
    """The IPAM request for one of the remote pod CIDRs of `configuration`, owned by it."""
    meta = configuration["metadata"]
    remote_id = nested(configuration, "spec", "remoteClusterID") or ""
    body = metadata(network_name(meta["name"], cidr), namespace=meta["namespace"], component="ipam")
    body["ownerReferences"] = [owner_reference(configuration)]
    return {
        "apiVersion": NETWORKS.api_version,
        "kind": NETWORKS.kind,
        "metadata": body,
        "spec": {"cidr": cidr, "remoteClusterID": remote_id},
    }


def owner_reference(owner: JSON, *, controller: bool = True) -> JSON:
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def gateway_server(
    name: str, *, namespace: str, remote_cluster_id: str, service_type: str, port: int, mtu: int
) -> JSON:
    return {
        "apiVersion": GATEWAYSERVERS.api_version,
        "kind": GATEWAYSERVERS.kind,
        "metadata": _meta(name, namespace, remote_cluster_id),
        "spec": {
            "remoteClusterID": remote_cluster_id,
            "mtu": mtu,
            "endpoint": {"serviceType": service_type, "port": port},
        },
    }


def gateway_client(
    name: str, *, namespace: str, remote_cluster_id: str, addresses: Sequence[str], port: int, mtu: int
) -> JSON:
    return {
        "apiVersion": GATEWAYCLIENTS.api_version,
        "kind": GATEWAYCLIENTS.kind,
        "metadata": _meta(name, namespace, remote_cluster_id),
        "spec": {
            "remoteClusterID": remote_cluster_id,
            "mtu": mtu,
            "endpoint": {"addresses": list(addresses), "port": port, "protocol": "UDP"},
        },
    }


def public_key(name: str, key: str, *, namespace: str, cluster_id: str) -> JSON:
    """The WireGuard public key of cluster `cluster_id`'s gateway of one peering."""
    return {
        "apiVersion": PUBLICKEYS.api_version,
        "kind": PUBLICKEYS.kind,
        "metadata": _meta(name, namespace, cluster_id),
        "spec": {"publicKey": key},
    }


def connection(name: str, *, namespace: str, remote_cluster_id: str, mode: GatewayMode) -> JSON:
    return {
        "apiVersion": CONNECTIONS.api_version,
        "kind": CONNECTIONS.kind,
        "metadata": _meta(name, namespace, remote_cluster_id),
        "spec": {"remoteClusterID": remote_cluster_id, "gatewayType": mode.capitalize()},
    }


def gateway_name(remote_cluster_name: str) -> str:
    """`gw-<remote cluster name>`: the gateway's Deployment, Service, ServiceAccount and key Secret."""
    return f"gw-{remote_cluster_name}"


def interface_name(gateway_uid: str) -> str:
    """The tunnel interface: `liqo-<10 hex>` of the gateway object's uid, unique on a host (wireguard-go's
    control socket is host-wide, and clusters sharing a host may have the same names)."""
    digest = hashlib.sha256(gateway_uid.encode()).hexdigest()
    return f"liqo-{digest[:10]}"


def key_secret(name: str, private_key: str, *, namespace: str, remote_cluster_id: str) -> JSON:
    """The gateway's WireGuard private key (`stringData`: the API server stores it base64 as any Secret)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(name, namespace, remote_cluster_id),
        "type": "Opaque",
        "stringData": {PRIVATE_KEY: private_key},
    }


def _selector(name: str) -> dict[str, str]:
    return {c.LABEL_NAME: name}


def gateway_role(name: str, *, namespace: str, remote_cluster_id: str) -> list[JSON]:
    """What a gateway may do in its tenant namespace: read its peering's objects and the IPAM's Networks, write
    its Connection."""
    read = ["get", "list", "watch"]
    rules = [
        {
            "apiGroups": [c.NETWORKING_GROUP],
            "resources": ["configurations", "gatewayservers", "gatewayclients", "publickeys"],
            "verbs": read,
        },
        # what the IPAM gave the Configuration: the only remote network the gateway tunnels
        {"apiGroups": [c.IPAM_GROUP], "resources": ["networks"], "verbs": read},
        {
            "apiGroups": [c.NETWORKING_GROUP],
            "resources": ["connections"],
            "verbs": [*read, "create", "patch"],
        },
        {"apiGroups": [c.NETWORKING_GROUP], "resources": ["connections/status"], "verbs": ["get", "patch"]},
    ]
    subject = {"kind": "ServiceAccount", "name": name, "namespace": namespace}
    rbac = "rbac.authorization.k8s.io/v1"
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name, namespace, remote_cluster_id)},
        {
            "apiVersion": rbac,
            "kind": "Role",
            "metadata": _meta(name, namespace, remote_cluster_id),
            "rules": rules,
        },
        {
            "apiVersion": rbac,
            "kind": "RoleBinding",
            "metadata": _meta(name, namespace, remote_cluster_id),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [subject],
        },
    ]


def gateway_deployment(
    name: str,
    *,
    namespace: str,
    mode: GatewayMode,
    remote_cluster_id: str,
    remote_cluster_name: str,
    interface: str,
    image: str,
    pod_cidr: str,
    implementation: str = "auto",
) -> JSON:
    """The gateway's Deployment: one replica, replaced (a second one would fight over the tunnel).

    This cluster's pod CIDR is an argument (`pod_cidr`, from the identity ConfigMap), never
    read from the Configuration: the peer can write into that one, and the gateway NATs to it.

    It runs as root (the image's user is not), privileged with NET_ADMIN, as Liqo's gateway
    does: it makes the tunnel interface, routes and NAT rules in its own pod's network
    namespace, turns forwarding on there (`/proc/sys`, read-only in an unprivileged
    container) and opens `/dev/net/tun` for wireguard-go (a device an unprivileged container
    lacks). Its root file system is read-only all the same: the one thing it writes,
    wireguard-go's control socket, goes into an emptyDir at /var/run/wireguard.
    """
    container: JSON = {
        "name": COMPONENT,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": component_command(COMPONENT),
        "args": [
            f"--mode={mode}",
            f"--name={remote_cluster_name}",
            f"--remote-cluster-id={remote_cluster_id}",
            f"--interface={interface}",
            f"--pod-cidr={cidrs.network(pod_cidr)}",
            f"--key-file=/etc/wireguard/keys/{PRIVATE_KEY}",
            f"--listen-port={GATEWAY_PORT}",
            f"--implementation={implementation}",
            f"--health-address=$(POD_IP):{HEALTH_PORT}",
        ],
        "env": [
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        ],
        "ports": [
            {"name": "wireguard", "containerPort": GATEWAY_PORT, "protocol": "UDP"},
            {"name": "health", "containerPort": HEALTH_PORT, "protocol": "TCP"},
        ],
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "health"}, "periodSeconds": 5},
        "volumeMounts": [
            {"name": "keys", "mountPath": "/etc/wireguard/keys", "readOnly": True},
            {"name": WIREGUARD_RUN_VOLUME, "mountPath": WIREGUARD_SOCKET_DIR},
        ],
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "securityContext": {
            "privileged": True,
            "runAsUser": 0,
            "runAsNonRoot": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"add": ["NET_ADMIN", "NET_RAW"]},
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(name, namespace, remote_cluster_id),
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": _selector(name)},
            "template": {
                "metadata": {
                    "labels": {
                        **labels(COMPONENT),
                        **_selector(name),
                        c.LABEL_REMOTE_CLUSTER_ID: remote_cluster_id,
                    }
                },
                "spec": {
                    "serviceAccountName": name,
                    "containers": [container],
                    "volumes": [
                        {"name": "keys", "secret": {"secretName": name, "defaultMode": 0o400}},
                        {"name": WIREGUARD_RUN_VOLUME, "emptyDir": {}},
                    ],
                },
            },
        },
    }


def gateway_service(
    name: str, *, namespace: str, remote_cluster_id: str, service_type: str, port: int
) -> JSON:
    """The gateway server's Service: its WireGuard port to other clusters."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(name, namespace, remote_cluster_id),
        "spec": {
            "type": service_type,
            "selector": _selector(name),
            "ports": [{"name": "wireguard", "port": port, "targetPort": GATEWAY_PORT, "protocol": "UDP"}],
        },
    }
