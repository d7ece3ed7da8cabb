"""TypedDict views of the spec and status of the runtime's own kinds.

The objects stay the dicts the API server sends (`JSON`); annotating a read
(`spec: TenantSpec = tenant.get("spec") or {}`) lets mypy check the keys a controller
reads and the types it gets back. Every key is optional (`total=False`): the API server
omits empty fields and an object may predate a field. The fields are those of the
schemas in `crds.py`, which stay the one description of each kind;
tests/runtime/api/test_views.py fails when a view and its schema name different fields.
"""

from __future__ import annotations

from typing import TypedDict

from .objects import JSON

#: resource name (cpu, memory, pods, ...) to quantity; a manifest may carry a number
Resources = dict[str, str | int]


class ObjectRef(TypedDict, total=False):
    name: str
    namespace: str


class Taint(TypedDict, total=False):
    key: str
    value: str
    effect: str


class Module(TypedDict, total=False):
    enabled: bool
    conditions: list[JSON]


class ForeignClusterSpec(TypedDict, total=False):
    clusterID: str
    clusterName: str
    peeringType: str
    authURL: str
    tokenSecretRef: ObjectRef
    outgoingPeeringEnabled: bool
    networkingEnabled: bool
    resources: Resources
    nodeLabels: dict[str, str]
    podSecurity: str


class ForeignClusterModules(TypedDict, total=False):
    authentication: Module
    offloading: Module
    networking: Module


class TenantNamespace(TypedDict, total=False):
    local: str
    remote: str


class ForeignClusterStatus(TypedDict, total=False):
    role: str
    outgoingPeering: str
    incomingPeering: str
    networking: str
    authentication: str
    modules: ForeignClusterModules
    tenantNamespace: TenantNamespace
    remoteVersion: str
    apiServerUrl: str
    authServiceKeyFingerprint: str
    virtualNodes: list[str]
    observedGeneration: int
    conditions: list[JSON]


class TenantSpec(TypedDict, total=False):
    clusterID: str
    clusterName: str
    publicKey: str
    tenantCondition: str
    serviceAccountName: str


class TenantStatus(TypedDict, total=False):
    tenantNamespace: str
    credentialExpiresAt: str
    observedGeneration: int
    conditions: list[JSON]


# `class` is a keyword: the functional form
ResourceSliceSpec = TypedDict(
    "ResourceSliceSpec",
    {"class": str, "consumerClusterID": str, "providerClusterID": str, "resources": Resources},
    total=False,
)


class ResourceSliceStatus(TypedDict, total=False):
    resources: Resources
    conditions: list[JSON]
    observedGeneration: int


class IdentitySpec(TypedDict, total=False):
    clusterID: str
    clusterName: str
    secretRef: ObjectRef
    apiServerURL: str
    remoteVersion: str
    authServiceKeyFingerprint: str


class IdentityStatus(TypedDict, total=False):
    expiresAt: str
    renewAfter: str
    conditions: list[JSON]


class VirtualNodeSpec(TypedDict, total=False):
    clusterID: str
    clusterName: str
    nodeName: str
    createNode: bool
    credentialSecretRef: ObjectRef
    resourceSliceName: str
    resources: Resources
    labels: dict[str, str]
    taints: list[Taint]
    image: str
    podSecurity: str


class VirtualNodeStatus(TypedDict, total=False):
    nodeName: str
    conditions: list[JSON]
    observedGeneration: int


class NamespaceOffloadingSpec(TypedDict, total=False):
    namespaceMappingStrategy: str
    remoteNamespaceName: str
    podOffloadingStrategy: str
    clusterSelector: JSON


class NamespaceOffloadingStatus(TypedDict, total=False):
    offloadingPhase: str
    remoteNamespaceName: str
    #: per remote cluster name: its OffloadingRequired and Ready conditions
    remoteNamespacesConditions: dict[str, list[JSON]]
    observedGeneration: int
