"""VirtualNodes and their virtual kubelets, on the consumer.

`virtual_node()` is what a consumer creates in its tenant namespace once a provider granted
it a ResourceSlice: the node standing for the provider, its labels and capacity, and where
the credential for the provider lives. For each VirtualNode the controller then keeps the
objects of its virtual kubelet (`virtual_kubelet()`), all named `liqo-vk-<provider name>`:

- a ServiceAccount with a ClusterRole of its own, bound cluster-wide: its Node and its Lease by
  name, and what a kubelet does for the pods bound to its node (`rbac.virtual_kubelet_rules`);
- a Role and RoleBinding in the tenant namespace allowing reads of exactly the credential Secret
  (read through the API so a renewed credential reaches it without a restart), its VirtualNode,
  its NamespaceMap and its provider's Configuration (`rbac.virtual_kubelet_namespace_rules`);
- in each namespace offloaded to the provider, a RoleBinding to `liqo-virtual-kubelet-reflection`
  (`reflection_role_binding`): it reads what it reflects (ConfigMaps, Secrets, Services,
  EndpointSlices, Ingresses) there and nowhere else;
- the Deployment running `python3 -m runtime virtual-kubelet` from the runtime image.

Namespaced objects are owned by the VirtualNode; the ClusterRole and its binding cannot be (a
cluster-scoped object cannot have a namespaced owner), so the controller deletes them itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from runtime.api import constants as c
from runtime.api import validation
from runtime.api.crds import VIRTUALNODES
from runtime.api.image import component_command, runtime_image
from runtime.api.objects import JSON, nested
from runtime.api.views import VirtualNodeSpec

from . import podsecurity
from .install import HEALTH_PORT
from .meta import labels
from .pods import RESERVED_DOMAINS, under_domain
from .podsecurity import Level
from .rbac import (
    RBAC_GROUP,
    VIRTUAL_KUBELET_REFLECTION_ROLE,
    virtual_kubelet_namespace_rules,
    virtual_kubelet_rules,
)
from .reflection import ReflectionOptions

COMPONENT = "virtual-kubelet"
CONTAINER = "virtual-kubelet"
#: provider cluster labels that may reach the virtual Node although their domain is reserved (`provider_labels`)
PROVIDER_LABEL_KEYS: Final = frozenset({"topology.kubernetes.io/region", "topology.kubernetes.io/zone"})
PROVIDER_LABEL_DOMAINS: Final = ("topology.liqo.io",)
MAX_PROVIDER_LABELS: Final = 32
#: the kubelet API's port (the kubelet's), where the API server proxies `kubectl logs` of offloaded pods
KUBELET_PORT = 10250


def node_name_for(cluster_name: str) -> str:
    """The Node standing for a provider: `liqo-<provider name>`."""
    return f"{c.VIRTUAL_NODE_PREFIX}{cluster_name}"


def virtual_node(
    cluster_name: str,
    *,
    namespace: str,
    cluster_id: str,
    resource_slice_name: str,
    resources: Mapping[str, str],
    credential_secret: str,
    cluster_labels: Mapping[str, str] | None = None,
    node_labels: Mapping[str, str] | None = None,
    image: str = "",
    pod_security: Level = podsecurity.DEFAULT_LEVEL,
) -> JSON:
    """The VirtualNode for a provider (named after it) in the consumer's tenant namespace for that provider.

    The Node's labels are the provider's cluster labels that pass `provider_labels`, then the
    peering's extra `node_labels`, then the ones every virtual node carries (type, remote cluster
    id, the agent role).
    """
    spec: JSON = {
        "clusterID": cluster_id,
        "clusterName": cluster_name,
        "nodeName": node_name_for(cluster_name),
        "createNode": True,
        "credentialSecretRef": {"name": credential_secret, "namespace": namespace},
        "resourceSliceName": resource_slice_name,
        "resources": dict(resources),
        "labels": {
            **provider_labels(cluster_labels or {}),
            **(node_labels or {}),
            c.LABEL_TYPE: c.TYPE_VIRTUAL_NODE,
            c.LABEL_REMOTE_CLUSTER_ID: cluster_id,
            c.LABEL_ROLE_AGENT: "",
        },
        "podSecurity": pod_security,
    }
    if image:
        spec["image"] = image
    return {
        "apiVersion": VIRTUALNODES.api_version,
        "kind": VIRTUALNODES.kind,
        "metadata": {
            "name": cluster_name,
            "namespace": namespace,
            "labels": {c.LABEL_REMOTE_CLUSTER_ID: cluster_id, c.LABEL_MANAGED_BY: c.MANAGED_BY},
        },
        "spec": spec,
    }


def provider_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """The provider's cluster labels the consumer's virtual Node may carry (an allowlist).

    The provider says them in its first, unauthenticated answer (`GET /v1/cluster`), and the
    consumer's scheduler, controllers and users act on Node labels, so only labels that describe
    the provider pass: a valid key and value, and a key under `topology.liqo.io` (Liqo's cluster
    labels), one of `topology.kubernetes.io/region` and `/zone`, or under a domain that is not
    reserved to Kubernetes or Liqo (`kubernetes.io`, `k8s.io`, `liqo.io` and their subdomains:
    a provider must not pass for a control-plane node, exclude itself from load balancers, or
    claim the runtime's own marks); at most `MAX_PROVIDER_LABELS` of them, by key order.
    """
    passed = {
        key: value
        for key, value in sorted(labels.items())
        if isinstance(key, str)
        and isinstance(value, str)
        and not validation.label_key(key)
        and not validation.label_value(key, value)
        and _describes_the_provider(key)
    }
    return dict(list(passed.items())[:MAX_PROVIDER_LABELS])


def _describes_the_provider(key: str) -> bool:
    if key in PROVIDER_LABEL_KEYS:
        return True
    prefix, slash, _ = key.rpartition("/")
    return (
        not slash
        or under_domain(prefix, PROVIDER_LABEL_DOMAINS)
        or not under_domain(prefix, RESERVED_DOMAINS)
    )


def provider_name(virtual_node: JSON) -> str:
    """The provider's cluster name (the VirtualNode's name when its spec does not say)."""
    return str(nested(virtual_node, "spec", "clusterName") or virtual_node["metadata"]["name"])


def node_name(virtual_node: JSON) -> str:
    """The Node this VirtualNode registers: `spec.nodeName`, else `liqo-<provider name>`."""
    return str(nested(virtual_node, "spec", "nodeName") or node_name_for(provider_name(virtual_node)))


def virtual_kubelet_name(virtual_node: JSON) -> str:
    """`liqo-vk-<provider name>`: the virtual kubelet's ServiceAccount, bindings and Deployment."""
    return f"{c.VIRTUAL_KUBELET_PREFIX}{provider_name(virtual_node)}"


def credential_secret(virtual_node: JSON) -> str:
    """The name of the Secret with the provider credential; ValueError if the spec names none, or another namespace."""
    meta = virtual_node["metadata"]
    ref = nested(virtual_node, "spec", "credentialSecretRef") or {}
    if not ref.get("name"):
        raise ValueError(
            "spec.credentialSecretRef.name is required: the virtual kubelet needs the provider credential"
        )
    if ref.get("namespace", meta["namespace"]) != meta["namespace"]:
        raise ValueError(
            f"spec.credentialSecretRef.namespace {ref['namespace']!r} must be the VirtualNode's own namespace "
            f"{meta['namespace']!r}"
        )
    return str(ref["name"])


def _labels(virtual_node: JSON) -> dict[str, str]:
    spec: VirtualNodeSpec = virtual_node.get("spec") or {}
    return labels(
        COMPONENT,
        **{c.LABEL_VIRTUAL_NODE_NAME: virtual_node["metadata"]["name"]},
        **({c.LABEL_REMOTE_CLUSTER_ID: spec["clusterID"]} if spec.get("clusterID") else {}),
    )


def _metadata(virtual_node: JSON, *, namespaced: bool = True) -> JSON:
    meta = virtual_node["metadata"]
    result: JSON = {"name": virtual_kubelet_name(virtual_node), "labels": _labels(virtual_node)}
    if namespaced:
        result["namespace"] = meta["namespace"]
        result["ownerReferences"] = [
            {
                "apiVersion": virtual_node.get("apiVersion", VIRTUALNODES.api_version),
                "kind": virtual_node.get("kind", VIRTUALNODES.kind),
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
            }
        ]
    return result


def selector(virtual_node: JSON) -> dict[str, str]:
    """The labels of this VirtualNode's virtual kubelet pods (and nothing else's)."""
    return {c.LABEL_COMPONENT: COMPONENT, c.LABEL_VIRTUAL_NODE_NAME: virtual_node["metadata"]["name"]}


def service_account(virtual_node: JSON) -> JSON:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _metadata(virtual_node)}


def _subject(virtual_node: JSON) -> JSON:
    return {
        "kind": "ServiceAccount",
        "name": virtual_kubelet_name(virtual_node),
        "namespace": virtual_node["metadata"]["namespace"],
    }


def cluster_role(virtual_node: JSON) -> JSON:
    """Its rights cluster-wide: its Node and Lease by name, and the kubelet's part in pods."""
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": _metadata(virtual_node, namespaced=False),
        "rules": virtual_kubelet_rules(node_name=node_name(virtual_node)),
    }


def cluster_role_binding(virtual_node: JSON) -> JSON:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _metadata(virtual_node, namespaced=False),
        "roleRef": {
            "apiGroup": RBAC_GROUP,
            "kind": "ClusterRole",
            "name": virtual_kubelet_name(virtual_node),
        },
        "subjects": [_subject(virtual_node)],
    }


def credential_role(virtual_node: JSON) -> JSON:
    """Reads of the credential Secret, the VirtualNode, its NamespaceMap and the provider's Configuration, by name."""
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "Role",
        "metadata": _metadata(virtual_node),
        "rules": virtual_kubelet_namespace_rules(
            virtual_node=virtual_node["metadata"]["name"],
            provider=provider_name(virtual_node),
            credential_secret=credential_secret(virtual_node),
        ),
    }


def credential_role_binding(virtual_node: JSON) -> JSON:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": _metadata(virtual_node),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": virtual_kubelet_name(virtual_node)},
        "subjects": [_subject(virtual_node)],
    }


def reflection_role_binding(virtual_node: JSON, namespace: str) -> JSON:
    """`liqo-virtual-kubelet-reflection` for the virtual kubelet, in one namespace offloaded to its provider.

    Not owned (an owner lives in the same namespace); named and labelled after the virtual kubelet, so the
    VirtualNode controller finds and removes it.
    """
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": {**_metadata(virtual_node, namespaced=False), "namespace": namespace},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": VIRTUAL_KUBELET_REFLECTION_ROLE},
        "subjects": [_subject(virtual_node)],
    }


def is_reflection_role_binding_of(binding: JSON, virtual_node: JSON) -> bool:
    """Whether a RoleBinding outside the VirtualNode's namespace is one of its virtual kubelet's reflection ones."""
    meta = binding.get("metadata") or {}
    return (
        meta.get("namespace") != virtual_node["metadata"]["namespace"]
        and meta.get("name") == virtual_kubelet_name(virtual_node)
        and nested(binding, "roleRef", "name") == VIRTUAL_KUBELET_REFLECTION_ROLE
        and (binding.get("subjects") or [{}])[0] == _subject(virtual_node)
    )


def deployment(
    virtual_node: JSON,
    *,
    home_cluster_id: str,
    home_api_server: str = "",
    default_image: str = "",
    reflection: ReflectionOptions | None = None,
) -> JSON:
    """The virtual kubelet's Deployment: one replica, replaced (never two at once: they would fight over the Node).

    `home_cluster_id` marks what it reflects; `home_api_server` is this cluster's API server as other clusters
    reach it (offloaded pods talk to it); `reflection` what it reflects (its flags; the defaults when None).
    """
    meta = virtual_node["metadata"]
    image = nested(virtual_node, "spec", "image") or default_image or runtime_image()
    probe = {"httpGet": {"path": "/readyz", "port": "health"}, "periodSeconds": 5, "failureThreshold": 3}
    container: JSON = {
        "name": CONTAINER,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": component_command(COMPONENT),
        "args": [
            f"--virtual-node={meta['namespace']}/{meta['name']}",
            f"--health-address=$(POD_IP):{HEALTH_PORT}",
            f"--kubelet-address=$(POD_IP):{KUBELET_PORT}",
            f"--home-cluster-id={home_cluster_id}",
            *([f"--home-api-server-url={home_api_server}"] if home_api_server else []),
            *(reflection or ReflectionOptions()).args(),
        ],
        "env": [
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        ],
        "ports": [
            {"name": "health", "containerPort": HEALTH_PORT, "protocol": "TCP"},
            {"name": "kubelet", "containerPort": KUBELET_PORT, "protocol": "TCP"},
        ],
        "readinessProbe": probe,
        "livenessProbe": {**probe, "httpGet": {"path": "/healthz", "port": "health"}, "failureThreshold": 6},
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(virtual_node),
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": selector(virtual_node)},
            "template": {
                "metadata": {"labels": _labels(virtual_node)},
                "spec": {
                    "serviceAccountName": virtual_kubelet_name(virtual_node),
                    "containers": [container],
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 65532,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                },
            },
        },
    }


def virtual_kubelet(
    virtual_node: JSON,
    *,
    home_cluster_id: str,
    home_api_server: str = "",
    default_image: str = "",
    reflection: ReflectionOptions | None = None,
) -> list[JSON]:
    """Every object of the VirtualNode's virtual kubelet, in apply order (identity and rights before the workload).

    ValueError when the VirtualNode cannot have one (see `credential_secret`).
    """
    return [
        service_account(virtual_node),
        credential_role(virtual_node),
        credential_role_binding(virtual_node),
        cluster_role(virtual_node),
        cluster_role_binding(virtual_node),
        deployment(
            virtual_node,
            home_cluster_id=home_cluster_id,
            home_api_server=home_api_server,
            default_image=default_image,
            reflection=reflection,
        ),
    ]
