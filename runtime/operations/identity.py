"""A cluster's Liqo identity, as the runtime publishes it: the one lookup every operation and front end uses.

The runtime keeps the identity (id, name, labels, version, pod and Service CIDRs, and the
auth service's URL once it runs) in the ConfigMap `liqo-clusterid-configmap` of its
namespace (keys in `runtime.api.constants`). A cluster without it has no runtime in that
namespace: lookups answer None, never invented values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from runtime.api import constants as c
from runtime.api.kinds import CONFIGMAPS
from runtime.core import Client, NotFoundError


class NotInstalledError(Exception):
    """The Liqo runtime is not installed in the namespace an operation needs it in."""

    def __init__(self, namespace: str) -> None:
        super().__init__(f"the Liqo runtime is not installed in namespace {namespace}")
        self.namespace = namespace


class IdentityError(ValueError):
    """The identity ConfigMap exists but a value in it is malformed."""


@dataclass(frozen=True)
class ClusterIdentity:
    cluster_id: str
    name: str
    labels: dict[str, str]
    version: str
    pod_cidr: str
    service_cidr: str


async def published(client: Client, *, namespace: str) -> dict[str, str] | None:
    """The identity ConfigMap's data, or None when the runtime is not installed in `namespace`."""
    try:
        configmap = await client.get(CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace=namespace)
    except NotFoundError:
        return None
    return {str(k): str(v) for k, v in (configmap.get("data") or {}).items()}


async def legacy_cluster_id(client: Client, *, namespace: str) -> str | None:
    """The cluster id in the identity ConfigMap of an installation older than Liqo's names, or None."""
    try:
        configmap = await client.get(CONFIGMAPS, c.LEGACY_CLUSTER_IDENTITY_CONFIGMAP, namespace=namespace)
    except NotFoundError:
        return None
    return str((configmap.get("data") or {}).get(c.LEGACY_IDENTITY_CLUSTER_ID) or "") or None


async def cluster_identity(client: Client, *, namespace: str = c.DEFAULT_NAMESPACE) -> ClusterIdentity | None:
    """The identity the runtime published in `namespace`, or None when the runtime is not installed there.

    Raises IdentityError when the ConfigMap holds no cluster id or labels that are not a JSON object of strings.
    """
    data = await published(client, namespace=namespace)
    if data is None:
        return None
    where = f"{namespace}/{c.CLUSTER_IDENTITY_CONFIGMAP}"
    cluster_id = data.get(c.IDENTITY_CLUSTER_ID) or ""
    if not cluster_id:
        raise IdentityError(f"ConfigMap {where} has no {c.IDENTITY_CLUSTER_ID}")
    try:
        labels = json.loads(data.get(c.IDENTITY_CLUSTER_LABELS) or "{}")
    except ValueError as exc:
        raise IdentityError(f"ConfigMap {where}: {c.IDENTITY_CLUSTER_LABELS} is not JSON ({exc})") from None
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise IdentityError(f"ConfigMap {where}: {c.IDENTITY_CLUSTER_LABELS} is not a JSON object of strings")
    return ClusterIdentity(
        cluster_id=cluster_id,
        name=data.get(c.IDENTITY_CLUSTER_NAME) or "",
        labels=labels,
        version=data.get(c.IDENTITY_VERSION) or "",
        pod_cidr=data.get(c.IDENTITY_POD_CIDR) or "",
        service_cidr=data.get(c.IDENTITY_SERVICE_CIDR) or "",
    )
