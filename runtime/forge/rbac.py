"""RBAC of the runtime: one ClusterRole per component (least privilege), the roles the
runtime binds at run time (virtual kubelets, remote consumers), and the bindings.

Controllers bind the run-time roles with the `bind` verb on exactly those role names,
so they never need (or hold) the permissions they hand out.
"""

from __future__ import annotations

from typing import Any

from runtime.api import constants as c

from .meta import metadata

JSON = dict[str, Any]

RBAC_GROUP = "rbac.authorization.k8s.io"
ALL = ["get", "list", "watch", "create", "update", "patch", "delete"]
READ = ["get", "list", "watch"]
LIQO_GROUPS = [c.CORE_GROUP, c.AUTHENTICATION_GROUP, c.OFFLOADING_GROUP, c.NETWORKING_GROUP, c.IPAM_GROUP]

#: bound per virtual node (ClusterRoleBinding): its Node, its Lease, its VirtualNode
VIRTUAL_KUBELET_ROLE = "liqo-virtual-kubelet"
#: bound per virtual node in each namespace offloaded to its provider (RoleBinding): what it reflects from there
VIRTUAL_KUBELET_REFLECTION_ROLE = "liqo-virtual-kubelet-reflection"
#: bound on a provider in a consumer's tenant namespace (RoleBinding): what a consumer may do there
REMOTE_CONSUMER_ROLE = "liqo-remote-consumer"
#: the fabric agents' (one per node): Configurations and gateway pods everywhere
FABRIC_ROLE = "liqo-fabric"
#: bound on a provider in each twin namespace (RoleBinding) to the consumer it was created for
REMOTE_OFFLOADING_ROLE = "liqo-remote-offloading"


def _rule(groups: list[str], resources: list[str], verbs: list[str], names: list[str] | None = None) -> JSON:
    rule: JSON = {"apiGroups": groups, "resources": resources, "verbs": verbs}
    if names:
        rule["resourceNames"] = names
    return rule


def _cluster_role(name: str, component: str, rules: list[JSON]) -> JSON:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": metadata(name, component=component),
        "rules": rules,
    }


def cluster_roles() -> list[JSON]:
    events = _rule(["", "events.k8s.io"], ["events"], ["create", "patch", "update"])
    return [
        _cluster_role(
            "liqo-controller-manager",
            "controller-manager",
            [
                _rule(LIQO_GROUPS, ["*"], ALL),
                _rule([""], ["namespaces", "secrets", "serviceaccounts", "configmaps"], ALL),
                _rule([""], ["serviceaccounts/token"], ["create"]),
                _rule([""], ["nodes"], [*READ, "delete"]),
                # provider: the Pods of ShadowPods; consumer: offloaded pods sent back when a namespace is unoffloaded
                _rule([""], ["pods"], ALL),
                # provider: the EndpointSlices of ShadowEndpointSlices
                _rule(["discovery.k8s.io"], ["endpointslices"], ALL),
                _rule(["apps"], ["deployments"], ALL),
                # gateway servers' Services
                _rule([""], ["services"], ALL),
                _rule([RBAC_GROUP], ["roles", "rolebindings", "clusterrolebindings"], ALL),
                _rule(
                    [RBAC_GROUP],
                    ["clusterroles"],
                    ["bind"],
                    [
                        VIRTUAL_KUBELET_ROLE,
                        VIRTUAL_KUBELET_REFLECTION_ROLE,
                        REMOTE_CONSUMER_ROLE,
                        REMOTE_OFFLOADING_ROLE,
                    ],
                ),
                _rule(["coordination.k8s.io"], ["leases"], ALL),
                events,
            ],
        ),
        _cluster_role(
            "liqo-auth",
            "auth",
            [
                _rule([""], ["namespaces"], ["get", "create", "patch"]),
                _rule([""], ["serviceaccounts"], ["get", "create", "patch"]),
                _rule([""], ["serviceaccounts/token"], ["create"]),
                _rule(
                    [c.AUTHENTICATION_GROUP],
                    ["tenants"],
                    ["get", "list", "watch", "create", "update", "patch", "delete"],
                ),
                _rule([c.AUTHENTICATION_GROUP], ["tenants/status"], ["get", "patch"]),
                _rule([RBAC_GROUP], ["rolebindings"], ["get", "create", "update", "patch"]),
                _rule([RBAC_GROUP], ["clusterroles"], ["bind"], [REMOTE_CONSUMER_ROLE]),
                # the nodePort of its Service is reached at a node's address (runtime.auth.endpoint)
                _rule([""], ["nodes"], READ),
                events,
            ],
        ),
        _cluster_role(
            "liqo-webhook",
            "webhook",
            [
                _rule(
                    ["admissionregistration.k8s.io"],
                    ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"],
                    ["get", "update", "patch"],
                    ["liqo-validating", "liqo-mutating"],
                ),
                # the pod webhook applies the namespace's NamespaceOffloading
                _rule([c.OFFLOADING_GROUP], ["namespaceoffloadings"], READ),
            ],
        ),
        _cluster_role(
            VIRTUAL_KUBELET_ROLE,
            "virtual-kubelet",
            [
                _rule([""], ["nodes"], ALL),
                _rule([""], ["nodes/status"], ["get", "update", "patch"]),
                _rule(["coordination.k8s.io"], ["leases"], ALL),
                _rule([c.OFFLOADING_GROUP], ["virtualnodes"], READ),
                _rule([c.OFFLOADING_GROUP], ["virtualnodes/status"], ["get", "update", "patch"]),
                # the pods bound to its node (as a kubelet: status, and the final delete once they stopped)
                _rule([""], ["pods"], [*READ, "delete"]),
                _rule([""], ["pods/status"], ["get", "update", "patch"]),
                # offloaded pods' ServiceAccount tokens, reflected to the provider
                _rule([""], ["serviceaccounts/token"], ["create"]),
                # which namespaces are offloaded to its provider, under which names
                _rule([c.OFFLOADING_GROUP], ["namespacemaps"], READ),
                # how its provider's pod network is mapped here (offloaded pods' addresses)
                _rule([c.NETWORKING_GROUP], ["configurations"], READ),
                # its kubelet API authorizes the API server's requests as a kubelet does
                _rule(["authorization.k8s.io"], ["subjectaccessreviews"], ["create"]),
                events,
            ],
        ),
        _cluster_role(
            VIRTUAL_KUBELET_REFLECTION_ROLE,
            "virtual-kubelet",
            [
                # what it reflects, in the namespaces offloaded to its provider only (a RoleBinding in each)
                _rule([""], ["configmaps", "secrets", "services"], READ),
                _rule(["discovery.k8s.io"], ["endpointslices"], READ),
                _rule(["networking.k8s.io"], ["ingresses"], READ),
                # the copies of the provider's Events it keeps there
                _rule([""], ["events"], [*READ, "delete"]),
            ],
        ),
        _cluster_role(
            REMOTE_CONSUMER_ROLE,
            "auth",
            [
                _rule([c.AUTHENTICATION_GROUP], ["resourceslices"], ALL),
                _rule([c.AUTHENTICATION_GROUP], ["resourceslices/status"], ["get"]),
                _rule([c.AUTHENTICATION_GROUP], ["tenants"], ["get"]),
                # the copy of its NamespaceMap, which asks for twin namespaces
                _rule([c.OFFLOADING_GROUP], ["namespacemaps"], ALL),
                _rule([c.OFFLOADING_GROUP], ["namespacemaps/status"], ["get"]),
                # the network fabric: its Configuration, GatewayServer and gateway key there, and what the
                # provider answers (its pod network, how it maps the consumer's, its gateway's endpoint and key)
                _rule([c.NETWORKING_GROUP], ["configurations", "gatewayservers", "publickeys"], ALL),
                _rule([c.NETWORKING_GROUP], ["configurations/status"], ["get", "patch"]),
                _rule([c.NETWORKING_GROUP], ["gatewayservers/status"], ["get"]),
            ],
        ),
        _cluster_role(
            FABRIC_ROLE,
            "fabric",
            [
                _rule([c.NETWORKING_GROUP], ["configurations"], READ),
                # where each peering's gateway runs
                _rule([""], ["pods"], READ),
            ],
        ),
        _cluster_role(
            REMOTE_OFFLOADING_ROLE,
            "offloading",
            [
                _rule([c.OFFLOADING_GROUP], ["shadowpods"], ALL),
                _rule([c.OFFLOADING_GROUP], ["shadowpods/status"], ["get"]),
                _rule([""], ["pods"], READ),
                _rule([""], ["pods/log"], ["get"]),
                # `kubectl exec` of an offloaded pod, from the consumer (a SPDY upgrade is a create, WebSocket a get)
                _rule([""], ["pods/exec"], ["create", "get"]),
                # offloaded pods' ServiceAccount token Secrets, and the reflected objects
                _rule([""], ["secrets", "configmaps", "services"], ALL),
                _rule(["networking.k8s.io"], ["ingresses"], ALL),
                _rule([c.OFFLOADING_GROUP], ["shadowendpointslices"], ALL),
                _rule(["", "events.k8s.io"], ["events"], READ),
            ],
        ),
    ]


def component_bindings(component: str, *, namespace: str) -> list[JSON]:
    """The component's ClusterRoleBinding, and a Role with what it needs only in the runtime's namespace."""
    name = f"liqo-{component}"
    subject = {"kind": "ServiceAccount", "name": name, "namespace": namespace}
    local_rules = {
        "controller-manager": [_rule(["coordination.k8s.io"], ["leases"], ALL)],
        "auth": [
            _rule([""], ["secrets"], READ),
            _rule([""], ["configmaps"], ["get", "update", "patch"], [c.CLUSTER_IDENTITY_CONFIGMAP]),
            # its own Service only (list and watch by a metadata.name field selector), to derive its authURL
            _rule([""], ["services"], READ, [c.AUTH_SERVICE]),
        ],
        "webhook": [],
        # the cluster's pod CIDR
        "fabric": [_rule([""], ["configmaps"], READ, [c.CLUSTER_IDENTITY_CONFIGMAP])],
    }[component]
    objects: list[JSON] = [
        {
            "apiVersion": f"{RBAC_GROUP}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": metadata(name, component=component),
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
            "subjects": [subject],
        }
    ]
    if local_rules:
        objects += [
            {
                "apiVersion": f"{RBAC_GROUP}/v1",
                "kind": "Role",
                "metadata": metadata(name, namespace=namespace, component=component),
                "rules": local_rules,
            },
            {
                "apiVersion": f"{RBAC_GROUP}/v1",
                "kind": "RoleBinding",
                "metadata": metadata(name, namespace=namespace, component=component),
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name},
                "subjects": [subject],
            },
        ]
    return objects
