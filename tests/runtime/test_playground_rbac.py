"""Least privilege, proven by the API server: what each of the runtime's ServiceAccounts may and may not do.

One playground cluster (in the real leg, kube-apiserver v1.36's RBAC authorizer) gets every
RBAC object the runtime makes, as its pure builders make them: the install's ClusterRoles,
Roles and bindings, a consumer's tenant (rome) and twin namespace on this cluster as a
provider, a virtual kubelet for a provider (milan) with one offloaded namespace on this
cluster as a consumer, and a gateway. Each case then asks the API server, with a
SubjectAccessReview, whether that ServiceAccount may do one thing; the cases are what a
hostile peer, or whoever takes over one component, would try first.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from playground.testing import Playground
from runtime.api import constants as c
from runtime.api.kinds import NAMESPACES, SUBJECTACCESSREVIEWS
from runtime.api.objects import JSON
from runtime.core import Client
from runtime.forge import networking, tenant
from runtime.forge import virtualnode as vn
from runtime.forge.install import InstallOptions, install_manifests
from runtime.forge.namespaces import twin_role_binding

pytestmark = [pytest.mark.slow]


RUNTIME = "liqo"
OPTIONS = InstallOptions(
    cluster_id="7d7c3b5e-2f0a-4c1e-9a51-3c0d6f0f5a10",
    cluster_name="paris",
    api_server_url="https://127.0.0.1:6443",
    pod_cidr="10.244.0.0/16",
    service_cidr="10.96.0.0/16",
    namespace=RUNTIME,
)
#: this cluster as a provider: rome's tenant namespace, one of its twin namespaces, a gateway there
TENANT = "liqo-tenant-rome"
OTHER_TENANT = "liqo-tenant-turin"
TWIN = "shop-rome"
GATEWAY = "gw-rome"
#: this cluster as a consumer: the VirtualNode for milan, its node, and a namespace offloaded there
VN_NAMESPACE = "liqo-tenant-milan"
NODE = "liqo-milan"
OFFLOADED = "shop"
RBAC_KINDS = ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


@dataclass(frozen=True)
class Case:
    verb: str
    resource: str
    namespace: str = ""
    name: str = ""
    group: str = ""
    subresource: str = ""
    allowed: bool = True

    def attributes(self) -> JSON:
        attributes = {"verb": self.verb, "group": self.group, "resource": self.resource}
        for key, value in (
            ("namespace", self.namespace),
            ("name", self.name),
            ("subresource", self.subresource),
        ):
            if value:
                attributes[key] = value
        return attributes

    def __str__(self) -> str:
        where = f"{self.namespace or '*'}/{self.name or '*'}"
        what = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        return f"{'may' if self.allowed else 'may not'} {self.verb} {what}.{self.group or 'core'} {where}"


def may(
    verb: str, resource: str, *, namespace: str = "", name: str = "", group: str = "", subresource: str = ""
) -> Case:
    return Case(verb, resource, namespace=namespace, name=name, group=group, subresource=subresource)


def may_not(
    verb: str, resource: str, *, namespace: str = "", name: str = "", group: str = "", subresource: str = ""
) -> Case:
    return Case(verb, resource, namespace, name, group, subresource, allowed=False)


RBAC = "rbac.authorization.k8s.io"
COORDINATION = "coordination.k8s.io"

ACCOUNTS: dict[tuple[str, str], list[Case]] = {
    (RUNTIME, "liqo-auth"): [
        may(
            "create",
            "serviceaccounts",
            namespace=TENANT,
            name=c.CONSUMER_SERVICE_ACCOUNT,
            subresource="token",
        ),
        may("patch", "serviceaccounts", namespace=TENANT, name=c.CONSUMER_SERVICE_ACCOUNT),
        may_not(
            "create",
            "serviceaccounts",
            namespace=RUNTIME,
            name="liqo-controller-manager",
            subresource="token",
        ),
        may_not("create", "serviceaccounts", namespace="kube-system", name="default", subresource="token"),
        may_not("patch", "serviceaccounts", namespace="kube-system", name="default"),
        may("create", "namespaces"),
        may_not("patch", "namespaces", name="kube-system"),
        may_not("update", "namespaces", name=TENANT),
        may("patch", "rolebindings", group=RBAC, namespace=TENANT, name=c.CONSUMER_ROLE_BINDING),
        may_not("patch", "rolebindings", group=RBAC, namespace="kube-system", name="system:controller:x"),
        may_not("create", "rolebindings", group=RBAC, namespace="kube-system", name="takeover"),
        may("bind", "clusterroles", group=RBAC, name="liqo-remote-consumer"),
        may_not("bind", "clusterroles", group=RBAC, name="cluster-admin"),
        may("create", "tenants", group=c.AUTHENTICATION_GROUP, namespace=TENANT),
        may(
            "patch",
            "tenants",
            group=c.AUTHENTICATION_GROUP,
            namespace=TENANT,
            subresource="status",
            name="rome",
        ),
        may("get", "secrets", namespace=RUNTIME),
        may_not("get", "secrets", namespace="kube-system"),
        may_not("create", "pods", namespace=TENANT),
    ],
    (RUNTIME, "liqo-controller-manager"): [
        may("bind", "clusterroles", group=RBAC, name="liqo-virtual-kubelet-reflection"),
        may_not("bind", "clusterroles", group=RBAC, name="cluster-admin"),
        may_not("escalate", "clusterroles", group=RBAC, name="cluster-admin"),
        may_not("impersonate", "serviceaccounts", namespace="kube-system", name="default"),
        may("create", "clusterroles", group=RBAC),
        may("patch", "pods", subresource="status", namespace=OFFLOADED),
    ],
    (VN_NAMESPACE, "liqo-vk-milan"): [
        may("update", "nodes", name=NODE),
        may("patch", "nodes", name=NODE, subresource="status"),
        may("list", "nodes"),
        may_not("update", "nodes", name="worker-1"),
        may_not("patch", "nodes", name="worker-1", subresource="status"),
        may_not("delete", "nodes", name="worker-1"),
        may("update", "leases", group=COORDINATION, namespace="kube-node-lease", name=NODE),
        may_not("update", "leases", group=COORDINATION, namespace="kube-node-lease", name="worker-1"),
        may_not(
            "update", "leases", group=COORDINATION, namespace="kube-system", name="kube-controller-manager"
        ),
        may_not("update", "leases", group=COORDINATION, namespace=RUNTIME, name="liqo-controller-manager"),
        may("list", "pods"),
        may("patch", "pods", namespace=OFFLOADED, subresource="status"),
        may("create", "serviceaccounts", namespace=OFFLOADED, name="default", subresource="token"),
        may_not("create", "serviceaccounts", namespace="kube-system", name="default", subresource="token"),
        may_not(
            "create",
            "serviceaccounts",
            namespace=RUNTIME,
            name="liqo-controller-manager",
            subresource="token",
        ),
        may("list", "configmaps", namespace=OFFLOADED),
        may_not("list", "configmaps", namespace="kube-system"),
        may("get", "secrets", namespace=VN_NAMESPACE, name="liqo-credential-milan"),
        may_not("get", "secrets", namespace=VN_NAMESPACE, name="liqo-credential-other"),
        may("get", "virtualnodes", group=c.OFFLOADING_GROUP, namespace=VN_NAMESPACE, name="milan"),
        may_not("get", "virtualnodes", group=c.OFFLOADING_GROUP, namespace=VN_NAMESPACE, name="other"),
        may_not("patch", "virtualnodes", group=c.OFFLOADING_GROUP, namespace=VN_NAMESPACE, name="milan"),
        may("get", "configurations", group=c.NETWORKING_GROUP, namespace=VN_NAMESPACE, name="milan"),
        may_not("list", "configurations", group=c.NETWORKING_GROUP),
        may_not("list", "namespacemaps", group=c.OFFLOADING_GROUP),
    ],
    (RUNTIME, "liqo-webhook"): [
        may("list", "shadowpods", group=c.OFFLOADING_GROUP),
        may("watch", "quotas", group=c.OFFLOADING_GROUP),
        may("list", "namespaces"),
        may("create", "secrets", namespace=RUNTIME),
        may("update", "secrets", namespace=RUNTIME, name=c.WEBHOOK_CA_SECRET),
        may_not("update", "secrets", namespace=RUNTIME, name="liqo-auth-serving-key"),
        may_not("get", "secrets", namespace=RUNTIME, name="liqo-auth-serving-key"),
        may_not("create", "secrets", namespace="kube-system"),
        may(
            "patch",
            "validatingwebhookconfigurations",
            group="admissionregistration.k8s.io",
            name="liqo-validating",
        ),
        may_not(
            "patch", "validatingwebhookconfigurations", group="admissionregistration.k8s.io", name="other"
        ),
        may_not("create", "shadowpods", group=c.OFFLOADING_GROUP, namespace=TWIN),
    ],
    (TENANT, GATEWAY): [
        may("get", "configurations", group=c.NETWORKING_GROUP, namespace=TENANT, name="rome"),
        may("patch", "connections", group=c.NETWORKING_GROUP, namespace=TENANT, subresource="status"),
        may_not("get", "configurations", group=c.NETWORKING_GROUP, namespace=OTHER_TENANT, name="turin"),
        may_not("patch", "configurations", group=c.NETWORKING_GROUP, namespace=TENANT, name="rome"),
        may_not("get", "secrets", namespace=TENANT),
    ],
    (RUNTIME, "liqo-fabric"): [
        may("list", "configurations", group=c.NETWORKING_GROUP),
        may("watch", "pods"),
        may("get", "configmaps", namespace=RUNTIME, name=c.CLUSTER_IDENTITY_CONFIGMAP),
        may_not("get", "secrets", namespace=RUNTIME),
        may_not("patch", "configurations", group=c.NETWORKING_GROUP, namespace=TENANT, name="rome"),
        may_not("patch", "nodes", name=NODE),
    ],
    (TENANT, c.CONSUMER_SERVICE_ACCOUNT): [
        may("create", "resourceslices", group=c.AUTHENTICATION_GROUP, namespace=TENANT),
        may("patch", "configurations", group=c.NETWORKING_GROUP, namespace=TENANT, name="rome"),
        may("patch", "configurations", group=c.NETWORKING_GROUP, namespace=TENANT, subresource="status"),
        may("create", "shadowpods", group=c.OFFLOADING_GROUP, namespace=TWIN),
        may("get", "pods", namespace=TWIN, subresource="log"),
        may_not("create", "resourceslices", group=c.AUTHENTICATION_GROUP, namespace=OTHER_TENANT),
        may_not(
            "patch", "resourceslices", group=c.AUTHENTICATION_GROUP, namespace=TENANT, subresource="status"
        ),
        may_not("update", "configurations", group=c.NETWORKING_GROUP, namespace=TENANT, name="rome"),
        may_not("delete", "configurations", group=c.NETWORKING_GROUP, namespace=TENANT, name="rome"),
        may_not("delete", "gatewayservers", group=c.NETWORKING_GROUP, namespace=TENANT, name="rome"),
        may_not("patch", "tenants", group=c.AUTHENTICATION_GROUP, namespace=TENANT, name="rome"),
        may_not("get", "tenants", group=c.AUTHENTICATION_GROUP, namespace=TENANT, name="rome"),
        may_not("patch", "quotas", group=c.OFFLOADING_GROUP, namespace=TENANT, name="rome"),
        may_not("get", "secrets", namespace=TENANT),
        may_not("create", "shadowpods", group=c.OFFLOADING_GROUP, namespace="kube-system"),
        may_not("create", "pods", namespace=TWIN),
        may_not("create", "rolebindings", group=RBAC, namespace=TENANT),
        may_not("list", "nodes"),
    ],
}


def rbac_objects() -> list[JSON]:
    """Every RBAC object (and the namespaces they live in) the runtime makes, for the scene above."""
    installed = [obj for obj in install_manifests(OPTIONS) if obj["kind"] in RBAC_KINDS]
    namespaces = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        for name in (OTHER_TENANT, TWIN, OFFLOADED)
    ]
    virtual_node = vn.virtual_node(
        "milan",
        namespace=VN_NAMESPACE,
        cluster_id="9f2e0c1a-1111-4c1e-9a51-3c0d6f0f5a10",
        resource_slice_name="milan",
        resources={"cpu": "1"},
        credential_secret="liqo-credential-milan",
    )
    virtual_node["metadata"]["uid"] = "3b2f7a52-0000-4000-8000-000000000001"
    kubelet = [obj for obj in vn.virtual_kubelet(virtual_node, home_cluster_id=OPTIONS.cluster_id)]
    for obj in kubelet:
        obj["metadata"].pop("ownerReferences", None)  # no VirtualNode object here to own them
    return [
        *installed,
        *namespaces,
        tenant.tenant_namespace(cluster_id="rome-id", cluster_name="rome"),
        tenant.service_account(cluster_id="rome-id", namespace=TENANT),
        tenant.role_binding(cluster_id="rome-id", namespace=TENANT),
        twin_role_binding(TWIN, tenant_namespace=TENANT, origin_cluster_id="rome-id"),
        *networking.gateway_role(GATEWAY, namespace=TENANT, remote_cluster_id="rome-id"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": VN_NAMESPACE}},
        *(obj for obj in kubelet if obj["kind"] in RBAC_KINDS),
        vn.reflection_role_binding(virtual_node, OFFLOADED),
    ]


async def apply_all(admin: Client, objects: list[JSON]) -> None:
    for obj in objects:
        resource = await admin.resource_for(obj["apiVersion"], obj["kind"])
        await admin.apply(
            resource,
            obj,
            namespace=obj["metadata"].get("namespace"),
            field_manager=c.FIELD_MANAGER_INSTALL,
            force=True,
        )


async def allowed(admin: Client, namespace: str, account: str, case: Case) -> bool:
    review = await admin.create(
        SUBJECTACCESSREVIEWS,
        {
            "apiVersion": SUBJECTACCESSREVIEWS.api_version,
            "kind": SUBJECTACCESSREVIEWS.kind,
            "spec": {
                "user": f"system:serviceaccount:{namespace}:{account}",
                "groups": [
                    "system:serviceaccounts",
                    f"system:serviceaccounts:{namespace}",
                    "system:authenticated",
                ],
                "resourceAttributes": case.attributes(),
            },
        },
    )
    return bool((review.get("status") or {}).get("allowed"))


async def test_every_service_account_may_do_what_it_needs_and_nothing_a_peer_could_abuse(
    playground: Playground,
) -> None:
    cluster = (await playground.up("paris", nodes=1))["paris"]
    async with cluster.client() as admin:
        await apply_all(admin, rbac_objects())
        assert await admin.get(NAMESPACES, TENANT)
        wrong = [
            f"{namespace}/{account} {case}"
            for (namespace, account), cases in ACCOUNTS.items()
            for case in cases
            if await allowed(admin, namespace, account, case) != case.allowed
        ]
    assert wrong == []
