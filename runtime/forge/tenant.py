"""A consumer's objects on its provider: tenant namespace, Tenant, ServiceAccount and RoleBinding.

The auth service creates them when a consumer presents a valid peering token, and the
provider's Tenant controller keeps them as described here (repairing drift), so both
build them from these functions. The consumer's credential is a token of the
ServiceAccount; the RoleBinding grants it the `liqo-remote-consumer` ClusterRole in its
tenant namespace only, which is all it may touch on the provider.
"""

from __future__ import annotations

import hashlib

from runtime.api import constants as c
from runtime.api.crds import TENANTS
from runtime.api.objects import JSON, nested

from .meta import metadata
from .rbac import RBAC_GROUP, REMOTE_CONSUMER_ROLE

COMPONENT = "tenant"
#: the consumer's ServiceAccount in its tenant namespace (its credential is a token of it)
CONSUMER_SERVICE_ACCOUNT = c.CONSUMER_SERVICE_ACCOUNT
#: the RoleBinding of `liqo-remote-consumer` to that ServiceAccount
CONSUMER_ROLE_BINDING = c.CONSUMER_ROLE_BINDING
_MAX_NAME = 63
_DIGEST = 8


def tenant_namespace_name(cluster_name: str) -> str:
    """`liqo-tenant-<cluster name>`; names too long for a namespace end in a hash of the cluster name."""
    name = c.TENANT_NAMESPACE_PREFIX + cluster_name
    if len(name) <= _MAX_NAME:
        return name
    digest = hashlib.sha256(cluster_name.encode()).hexdigest()[:_DIGEST]
    return f"{name[: _MAX_NAME - _DIGEST - 1].rstrip('-')}-{digest}"


def consumer_user(namespace: str) -> str:
    """The Kubernetes user name of a consumer's credential (its ServiceAccount's)."""
    return f"system:serviceaccount:{namespace}:{CONSUMER_SERVICE_ACCOUNT}"


def _metadata(name: str, *, cluster_id: str, namespace: str | None = None, **extra: str) -> JSON:
    return metadata(
        name, namespace=namespace, component=COMPONENT, **{c.LABEL_REMOTE_CLUSTER_ID: cluster_id}, **extra
    )


def tenant_namespace(*, cluster_id: str, cluster_name: str) -> JSON:
    """The consumer's tenant namespace, labelled as one and with the consumer's cluster id."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": _metadata(
            tenant_namespace_name(cluster_name), cluster_id=cluster_id, **{c.LABEL_TENANT_NAMESPACE: "true"}
        ),
    }


def tenant(*, cluster_id: str, cluster_name: str, public_key: str, peering_token: str = "") -> JSON:
    """The Tenant (named after the consumer) in its tenant namespace, with the finalizer that cleans up after it;
    `peering_token` names the token Secret the consumer presented (it binds the token to the consumer)."""
    meta = _metadata(cluster_name, cluster_id=cluster_id, namespace=tenant_namespace_name(cluster_name))
    meta["finalizers"] = [c.FINALIZER_TENANT]
    if peering_token:
        meta["annotations"] = {c.ANNOTATION_TENANT_TOKEN: peering_token}
    return {
        "apiVersion": TENANTS.api_version,
        "kind": TENANTS.kind,
        "metadata": meta,
        "spec": {
            "clusterID": cluster_id,
            "clusterName": cluster_name,
            "publicKey": public_key,
            "serviceAccountName": CONSUMER_SERVICE_ACCOUNT,
        },
    }


def service_account(*, cluster_id: str, namespace: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _metadata(CONSUMER_SERVICE_ACCOUNT, cluster_id=cluster_id, namespace=namespace),
    }


def role_binding(*, cluster_id: str, namespace: str) -> JSON:
    """`liqo-remote-consumer` for the consumer's ServiceAccount, in its tenant namespace only."""
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": _metadata(CONSUMER_ROLE_BINDING, cluster_id=cluster_id, namespace=namespace),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": REMOTE_CONSUMER_ROLE},
        "subjects": [{"kind": "ServiceAccount", "name": CONSUMER_SERVICE_ACCOUNT, "namespace": namespace}],
    }


def is_tenant_namespace_of(namespace: JSON, cluster_id: str) -> bool:
    """Whether a Namespace is the tenant namespace of the consumer with this cluster id."""
    labels = nested(namespace, "metadata", "labels") or {}
    return (
        labels.get(c.LABEL_TENANT_NAMESPACE) == "true" and labels.get(c.LABEL_REMOTE_CLUSTER_ID) == cluster_id
    )
