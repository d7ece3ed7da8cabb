"""RBAC of the runtime: one ClusterRole per component (least privilege), the roles the
runtime binds at run time (virtual kubelets, remote consumers), and the bindings.

Every right a ServiceAccount holds is here, and docs/security.md says why each is needed.
What names one object is granted by name (`resourceNames`): a virtual kubelet's Node and
Lease, its VirtualNode, NamespaceMap and Configuration, the auth service's consumer
ServiceAccount, its token and its RoleBinding, the webhook's CA Secret. What lives in a
namespace the runtime made for a peer is granted there only (RoleBindings in tenant and
twin namespaces, and in each namespace offloaded to a provider). A create cannot be
limited by name (the object's name is not known when it is authorized), so every create
that is granted says where it is needed.

Controllers bind the shared run-time roles with the `bind` verb on exactly those role
names, so they never need (or hold) the permissions they hand out; a virtual kubelet's
own ClusterRole names its Node, so the controller manager makes it, and holds what it
grants.
"""

from __future__ import annotations

from runtime.api import constants as c
from runtime.api.objects import JSON

from .meta import metadata

RBAC_GROUP = "rbac.authorization.k8s.io"
ALL = ["get", "list", "watch", "create", "update", "patch", "delete"]
READ = ["get", "list", "watch"]
LIQO_GROUPS = [c.CORE_GROUP, c.AUTHENTICATION_GROUP, c.OFFLOADING_GROUP, c.NETWORKING_GROUP, c.IPAM_GROUP]

#: bound per virtual node in each namespace offloaded to its provider (RoleBinding): what it reflects from there
VIRTUAL_KUBELET_REFLECTION_ROLE = "liqo-virtual-kubelet-reflection"
#: bound on a provider in a consumer's tenant namespace (RoleBinding): what a consumer may do there
REMOTE_CONSUMER_ROLE = "liqo-remote-consumer"
#: the fabric agents' (one per node): Configurations, the IPAM's Networks and gateway pods everywhere
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


def cluster_roles(*, pod_tokens: bool = True) -> list[JSON]:
    """The runtime's ClusterRoles; `pod_tokens`: whether virtual kubelets request offloaded pods' ServiceAccount
    tokens (the installation's API server support is TokenAPI), else they may not."""
    events = _rule(["", "events.k8s.io"], ["events"], ["create", "patch", "update"])
    # offloaded pods' ServiceAccount tokens, reflected to the provider
    tokens = [_rule([""], ["serviceaccounts/token"], ["create"])] if pod_tokens else []
    return [
        _cluster_role(
            "liqo-controller-manager",
            "controller-manager",
            [
                _rule(LIQO_GROUPS, ["*"], ALL),
                _rule([""], ["namespaces", "secrets", "serviceaccounts", "configmaps"], ALL),
                _rule([""], ["serviceaccounts/token"], ["create"]),
                # virtual nodes' Nodes; each virtual kubelet's ClusterRole grants its own, so the manager holds it
                _rule([""], ["nodes"], ALL),
                _rule([""], ["nodes/status"], ["get", "update", "patch"]),
                # provider: the Pods of ShadowPods; consumer: offloaded pods sent back when a namespace is unoffloaded
                _rule([""], ["pods"], ALL),
                # what a virtual kubelet does as the kubelet of its node (its ClusterRole grants it)
                _rule([""], ["pods/status"], ["get", "update", "patch"]),
                _rule(["authorization.k8s.io"], ["subjectaccessreviews"], ["create"]),
                # provider: the EndpointSlices of ShadowEndpointSlices
                _rule(["discovery.k8s.io"], ["endpointslices"], ALL),
                _rule(["apps"], ["deployments"], ALL),
                # gateway servers' Services
                _rule([""], ["services"], ALL),
                _rule([RBAC_GROUP], ["roles", "rolebindings", "clusterroles", "clusterrolebindings"], ALL),
                _rule(
                    [RBAC_GROUP],
                    ["clusterroles"],
                    ["bind"],
                    [VIRTUAL_KUBELET_REFLECTION_ROLE, REMOTE_CONSUMER_ROLE, REMOTE_OFFLOADING_ROLE],
                ),
                _rule(["coordination.k8s.io"], ["leases"], ALL),
                events,
            ],
        ),
        _cluster_role(
            "liqo-auth",
            "auth",
            [
                # a consumer's tenant namespace: made once, never changed (it may not relabel other namespaces)
                _rule([""], ["namespaces"], ["get", "create"]),
                # the consumer's ServiceAccount, its tokens and its RoleBinding, by name, in any tenant namespace
                _rule([""], ["serviceaccounts"], ["get", "create", "patch"], [c.CONSUMER_SERVICE_ACCOUNT]),
                _rule([""], ["serviceaccounts/token"], ["create"], [c.CONSUMER_SERVICE_ACCOUNT]),
                _rule([RBAC_GROUP], ["rolebindings"], ["get", "create", "patch"], [c.CONSUMER_ROLE_BINDING]),
                _rule([RBAC_GROUP], ["clusterroles"], ["bind"], [REMOTE_CONSUMER_ROLE]),
                _rule([c.AUTHENTICATION_GROUP], ["tenants"], [*READ, "create", "patch", "delete"]),
                _rule([c.AUTHENTICATION_GROUP], ["tenants/status"], ["get", "patch"]),
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
                # a ShadowPod is admitted against its consumer's Quotas, counting the ShadowPods it has, and
                # against the Pod Security level of its namespace (runtime.webhook.shadowpods)
                _rule([c.OFFLOADING_GROUP], ["shadowpods", "quotas"], READ),
                _rule([""], ["namespaces"], READ),
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
                *tokens,
                # the copies of the provider's Events it keeps there
                _rule([""], ["events"], [*READ, "delete"]),
            ],
        ),
        _cluster_role(
            REMOTE_CONSUMER_ROLE,
            "auth",
            [
                # in its tenant namespace only (a RoleBinding): the slices it asks for, and what the provider says
                _rule([c.AUTHENTICATION_GROUP], ["resourceslices"], [*READ, "create", "patch", "delete"]),
                _rule([c.AUTHENTICATION_GROUP], ["resourceslices/status"], ["get"]),
                # the copy of its NamespaceMap, which asks for twin namespaces
                _rule([c.OFFLOADING_GROUP], ["namespacemaps"], [*READ, "create", "patch"]),
                _rule([c.OFFLOADING_GROUP], ["namespacemaps/status"], ["get"]),
                # the network fabric: its Configuration, GatewayServer and gateway key there, and what the
                # provider answers (its pod network, how it maps the consumer's, its gateway's endpoint and key);
                # `status.local` is how the consumer maps the provider's network, which only it knows
                _rule(
                    [c.NETWORKING_GROUP],
                    ["configurations", "gatewayservers", "publickeys"],
                    [*READ, "create", "patch"],
                ),
                _rule([c.NETWORKING_GROUP], ["configurations/status"], ["get", "patch"]),
                _rule([c.NETWORKING_GROUP], ["gatewayservers/status"], ["get"]),
            ],
        ),
        _cluster_role(
            FABRIC_ROLE,
            "fabric",
            [
                _rule([c.NETWORKING_GROUP], ["configurations"], READ),
                # what the IPAM gave each Configuration: the only networks the agent routes
                _rule([c.IPAM_GROUP], ["networks"], READ),
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
                # `kubectl exec`, `attach`, `port-forward` of an offloaded pod, from the consumer (a SPDY upgrade
                # is a create, WebSocket a get)
                _rule([""], ["pods/exec", "pods/attach", "pods/portforward"], ["create", "get"]),
                # offloaded pods' ServiceAccount token Secrets, and the reflected objects
                _rule([""], ["secrets", "configmaps", "services"], ALL),
                _rule(["networking.k8s.io"], ["ingresses"], ALL),
                _rule([c.OFFLOADING_GROUP], ["shadowendpointslices"], ALL),
                _rule(["", "events.k8s.io"], ["events"], READ),
            ],
        ),
    ]


def virtual_kubelet_rules(*, node_name: str) -> list[JSON]:
    """A virtual kubelet's rights cluster-wide (its own ClusterRole): what a kubelet does for its node.

    Its Node and its Lease are named; a create cannot be, so it may create others, but never
    change or delete them. Pods of any namespace can be bound to its node, and RBAC cannot
    select by `spec.nodeName` (the Node authorizer does that for real kubelets): it reads them
    everywhere, and writes their status and deletes them once stopped, as a kubelet does.
    """
    named = [node_name]
    return [
        _rule([""], ["nodes"], READ),
        _rule([""], ["nodes"], ["create"]),
        _rule([""], ["nodes"], ["update", "patch", "delete"], named),
        _rule([""], ["nodes/status"], ["get", "update", "patch"], named),
        # its Lease in kube-node-lease
        _rule(["coordination.k8s.io"], ["leases"], ["create"]),
        _rule(["coordination.k8s.io"], ["leases"], ["get", "update", "patch", "delete"], named),
        _rule([""], ["pods"], [*READ, "delete"]),
        _rule([""], ["pods/status"], ["get", "update", "patch"]),
        # its kubelet API authorizes the API server's requests as a kubelet does
        _rule(["authorization.k8s.io"], ["subjectaccessreviews"], ["create"]),
        _rule(["", "events.k8s.io"], ["events"], ["create", "patch", "update"]),
    ]


def virtual_kubelet_namespace_rules(
    *, virtual_node: str, provider: str, credential_secret: str
) -> list[JSON]:
    """A virtual kubelet's rights in its VirtualNode's namespace (a Role), each object by name.

    The credential Secret (read through the API, so a renewed credential reaches it without a
    restart), its VirtualNode, the NamespaceMap saying which namespaces are offloaded there,
    and the provider's Configuration (how its pod network is mapped here).
    """
    return [
        _rule([""], ["secrets"], READ, [credential_secret]),
        _rule([c.OFFLOADING_GROUP], ["virtualnodes", "namespacemaps"], READ, [virtual_node]),
        _rule([c.NETWORKING_GROUP], ["configurations"], READ, [provider]),
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
        # its CA, shared by every replica (a create cannot name its object)
        "webhook": [
            _rule([""], ["secrets"], ["create"]),
            _rule([""], ["secrets"], ["get", "update"], [c.WEBHOOK_CA_SECRET]),
        ],
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
