"""Twin namespaces and the NamespaceMaps that ask for them, as pure builders.

A consumer offloads a namespace to a provider by listing it in the NamespaceMap it keeps
for that provider (`desiredMapping`: local name -> twin name); the map's copy in the
consumer's tenant namespace on the provider is what the provider's runtime acts on. The
provider creates each twin namespace itself (the consumer's credential cannot create
namespaces), marks it with the map it belongs to (`offloading.liqo.io/namespace-map`), so a
namespace it did not create is never adopted nor deleted, and binds the
`liqo-remote-offloading` ClusterRole there to the consumer's ServiceAccount: the consumer
gets rights in its twin namespaces and nowhere else.

Names: `twin_namespace_name` applies the mapping strategy; a DefaultName that would not
fit in a namespace name (63 characters) is shortened and ends in a hash of the full name,
so it is stable and distinct.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any, Final

from runtime.api import constants as c
from runtime.api.crds import NAMESPACEMAPS
from runtime.api.objects import JSON, nested

from . import podsecurity
from .meta import labels
from .podsecurity import Level
from .rbac import RBAC_GROUP, REMOTE_OFFLOADING_ROLE
from .tenant import CONSUMER_SERVICE_ACCOUNT

COMPONENT = "offloading"
MAX_NAMESPACE: Final = 63
_DIGEST: Final = 8
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
#: namespaces a consumer can never get as a twin namespace: the cluster's own and the runtime's kinds of namespace
RESERVED_PREFIXES: Final = ("kube-", c.TENANT_NAMESPACE_PREFIX)
RESERVED_NAMES: Final = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


def shortened(name: str) -> str:
    """`name` if it fits in a namespace name, else its start and a hash of the whole (stable, distinct)."""
    if len(name) <= MAX_NAMESPACE:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:_DIGEST]
    return f"{name[: MAX_NAMESPACE - _DIGEST - 1].rstrip('-')}-{digest}"


def twin_namespace_name(
    namespace: str, *, strategy: str, local_cluster_name: str, selected_name: str = ""
) -> str:
    """The twin namespace's name for `namespace` under a mapping strategy; ValueError for SelectedName without one."""
    if strategy == c.MAPPING_ENFORCE_SAME_NAME:
        return namespace
    if strategy == c.MAPPING_SELECTED_NAME:
        if not selected_name:
            raise ValueError("the SelectedName strategy needs spec.remoteNamespaceName")
        return selected_name
    if strategy != c.MAPPING_DEFAULT_NAME:
        raise ValueError(f"unknown namespace mapping strategy {strategy!r}")
    return shortened(f"{namespace}-{local_cluster_name}")


def is_namespace_name(name: Any) -> bool:
    return isinstance(name, str) and len(name) <= MAX_NAMESPACE and bool(_DNS_LABEL.match(name))


def reserved_problem(name: str, *, runtime_namespace: str) -> str:
    """Why `name` can never be a twin namespace on a provider ("" when it can be)."""
    if name in RESERVED_NAMES or name == runtime_namespace:
        return f"namespace {name} belongs to the cluster itself"
    prefix = next((p for p in RESERVED_PREFIXES if name.startswith(p)), None)
    if prefix is not None:
        return f"namespaces starting with {prefix!r} belong to the cluster itself"
    return ""


# NamespaceMaps


def namespace_map(
    name: str,
    *,
    namespace: str,
    cluster_id: str,
    owner: JSON | None = None,
    desired: Mapping[str, str],
    pod_security: Level = podsecurity.DEFAULT_LEVEL,
) -> JSON:
    """The consumer's NamespaceMap for the provider `name`, in its local tenant namespace, owned by the VirtualNode;
    `pod_security` is the level the provider is asked to hold the twin namespaces to."""
    meta: JSON = {
        "name": name,
        "namespace": namespace,
        "labels": labels(COMPONENT, **{c.LABEL_REMOTE_CLUSTER_ID: cluster_id}),
    }
    if owner is not None:
        meta["ownerReferences"] = [_controller_reference(owner)]
    return {
        "apiVersion": NAMESPACEMAPS.api_version,
        "kind": NAMESPACEMAPS.kind,
        "metadata": meta,
        "spec": {"desiredMapping": dict(desired), "podSecurity": pod_security},
    }


def replica_namespace_map(local: JSON, *, remote_namespace: str, origin_cluster_id: str) -> JSON:
    """The copy of the consumer's NamespaceMap `local` that its provider acts on, in its tenant namespace there."""
    return {
        "apiVersion": NAMESPACEMAPS.api_version,
        "kind": NAMESPACEMAPS.kind,
        "metadata": {
            "name": local["metadata"]["name"],
            "namespace": remote_namespace,
            "labels": labels(COMPONENT, **{c.LABEL_ORIGIN_CLUSTER_ID: origin_cluster_id}),
        },
        "spec": {"desiredMapping": dict(desired_mapping(local)), "podSecurity": pod_security(local)},
    }


def desired_mapping(namespace_map: JSON) -> dict[str, str]:
    return {str(k): str(v) for k, v in (nested(namespace_map, "spec", "desiredMapping") or {}).items()}


def current_mapping(namespace_map: JSON | None) -> dict[str, JSON]:
    """Local namespace -> {remoteNamespace, phase, message} of a NamespaceMap's status."""
    found = nested(namespace_map, "status", "currentMapping") or {}
    return {str(k): dict(v) for k, v in found.items() if isinstance(v, Mapping)}


def accepted(namespace_map: JSON | None) -> dict[str, str]:
    """Local namespace -> twin namespace, for the twin namespaces that exist (phase Accepted)."""
    return {
        local: str(entry.get("remoteNamespace") or "")
        for local, entry in current_mapping(namespace_map).items()
        if entry.get("phase") == c.MAPPING_ACCEPTED and entry.get("remoteNamespace")
    }


def map_reference(namespace_map: JSON) -> str:
    """`<namespace>/<name>`: what a twin namespace's `offloading.liqo.io/namespace-map` says."""
    meta = namespace_map["metadata"]
    return f"{meta['namespace']}/{meta['name']}"


# twin namespaces (provider)


def pod_security(namespace_map: JSON | None) -> Level:
    """The Pod Security level a NamespaceMap asks for its twin namespaces: restricted when it says so,
    baseline otherwise (the floor: no consumer gets less)."""
    asked = nested(namespace_map, "spec", "podSecurity")
    return "restricted" if asked == "restricted" else podsecurity.DEFAULT_LEVEL


def twin_namespace(
    name: str,
    *,
    namespace_map: JSON,
    origin_namespace: str,
    origin_cluster_id: str,
) -> JSON:
    """A twin namespace, marked as the NamespaceMap's and with the consumer's cluster id, enforcing the Pod
    Security level the map asks for (`pod_security`) with Pod Security Admission's labels."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": labels(
                COMPONENT,
                **{c.LABEL_ORIGIN_CLUSTER_ID: origin_cluster_id},
                **podsecurity.namespace_labels(pod_security(namespace_map)),
            ),
            "annotations": {
                c.ANNOTATION_NAMESPACE_MAP: map_reference(namespace_map),
                c.ANNOTATION_ORIGIN_NAMESPACE: origin_namespace,
            },
        },
    }


def is_twin_of(namespace: JSON | None, namespace_map: JSON) -> bool:
    """Whether a Namespace was created for this NamespaceMap (anything else is never adopted nor deleted)."""
    annotations = nested(namespace, "metadata", "annotations") or {}
    return annotations.get(c.ANNOTATION_NAMESPACE_MAP) == map_reference(namespace_map)


def twin_role_binding(twin: str, *, tenant_namespace: str, origin_cluster_id: str) -> JSON:
    """`liqo-remote-offloading` for the consumer's ServiceAccount, in one twin namespace (named after its tenant)."""
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": {
            "name": tenant_namespace,
            "namespace": twin,
            "labels": labels(COMPONENT, **{c.LABEL_ORIGIN_CLUSTER_ID: origin_cluster_id}),
        },
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": REMOTE_OFFLOADING_ROLE},
        "subjects": [
            {"kind": "ServiceAccount", "name": CONSUMER_SERVICE_ACCOUNT, "namespace": tenant_namespace}
        ],
    }


def _controller_reference(owner: JSON) -> JSON:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": False,
    }
