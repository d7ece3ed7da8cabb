"""Every string the runtime, the front ends and the playground agree on: API groups, labels,
annotations, taints, finalizers, field managers and well-known object names.

Values follow Liqo v1 where Liqo has one, so users' selectors and tolerations written
for Liqo keep working.
"""

from __future__ import annotations

from typing import Final

# API groups and the version of every kind in them.
CORE_GROUP: Final = "core.liqo.io"
AUTHENTICATION_GROUP: Final = "authentication.liqo.io"
OFFLOADING_GROUP: Final = "offloading.liqo.io"
NETWORKING_GROUP: Final = "networking.liqo.io"
IPAM_GROUP: Final = "ipam.liqo.io"
VERSION: Final = "v1beta1"

# Where the runtime lives and what it calls itself.
DEFAULT_NAMESPACE: Final = "liqo"
TENANT_NAMESPACE_PREFIX: Final = "liqo-tenant-"
VIRTUAL_NODE_PREFIX: Final = "liqo-"
#: the cluster identity ConfigMap, named and labelled as Liqo's (liqoctl finds it by the label
#: `app.kubernetes.io/name=clusterid-configmap` and reads its CLUSTER_ID)
CLUSTER_IDENTITY_CONFIGMAP: Final = "liqo-clusterid-configmap"
CLUSTER_ID_CONFIGMAP_MODULE: Final = "clusterid-configmap"
#: the identity ConfigMap and its cluster-id key before they took Liqo's names: an upgrade reads the
#: cluster id there when the new ConfigMap is missing, then deletes it
LEGACY_CLUSTER_IDENTITY_CONFIGMAP: Final = "liqo-cluster-identity"
LEGACY_IDENTITY_CLUSTER_ID: Final = "clusterID"
#: ServiceAccount, bindings and Deployment of the virtual kubelet standing for a provider: liqo-vk-<provider name>
VIRTUAL_KUBELET_PREFIX: Final = "liqo-vk-"
#: the only ResourceSlice class today
RESOURCE_SLICE_CLASS_DEFAULT: Final = "default"
# Keys of the cluster identity ConfigMap (read by `liqo_generate` and the `liqo_cluster` data source):
# Liqo's CLUSTER_ID and CLUSTER_NAME, then this runtime's own.
IDENTITY_CLUSTER_ID: Final = "CLUSTER_ID"
IDENTITY_CLUSTER_NAME: Final = "CLUSTER_NAME"
IDENTITY_CLUSTER_LABELS: Final = "clusterLabels"
IDENTITY_POD_CIDR: Final = "podCIDR"
IDENTITY_SERVICE_CIDR: Final = "serviceCIDR"
IDENTITY_VERSION: Final = "version"
IDENTITY_AUTH_URL: Final = "authURL"
#: `sha256:<hex>` of the auth service's key (its SubjectPublicKeyInfo), which consumers pin
IDENTITY_AUTH_KEY: Final = "authKeyFingerprint"
IDENTITY_SHARING_PERCENTAGE: Final = "sharingPercentage"

# Labels.
LABEL_TYPE: Final = "liqo.io/type"
TYPE_VIRTUAL_NODE: Final = "virtual-node"
LABEL_REMOTE_CLUSTER_ID: Final = "liqo.io/remote-cluster-id"
LABEL_ORIGIN_CLUSTER_ID: Final = "liqo.io/origin-cluster-id"
LABEL_REPLICATION: Final = "liqo.io/replication"
LABEL_TENANT_NAMESPACE: Final = "liqo.io/tenant-namespace"
LABEL_SCHEDULING_ENABLED: Final = "liqo.io/scheduling-enabled"
LABEL_MANAGED_BY: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "liqo"
LABEL_COMPONENT: Final = "app.kubernetes.io/component"
LABEL_NAME: Final = "app.kubernetes.io/name"
LABEL_PART_OF: Final = "app.kubernetes.io/part-of"
PART_OF: Final = "liqo"
LABEL_PEERING_TOKEN: Final = "liqo.io/peering-token"
LABEL_ROLE_AGENT: Final = "node-role.kubernetes.io/agent"
LABEL_VIRTUAL_NODE_NAME: Final = "offloading.liqo.io/virtual-node"
#: on a NamespaceOffloading a NamespaceOffloadingSet made: the set's name
LABEL_NAMESPACE_OFFLOADING_SET: Final = "offloading.liqo.io/namespace-offloading-set"
#: on objects the virtual kubelet reflects to a provider (Liqo's `liqo.io/managed-by=reflection`)
LABEL_REFLECTION_MANAGED_BY: Final = "liqo.io/managed-by"
MANAGED_BY_REFLECTION: Final = "reflection"
#: on a provider's Pod kept for a ShadowPod (Liqo's `liqo.io/managed-by=shadowpod`)
MANAGED_BY_SHADOWPOD: Final = "shadowpod"
#: on the token Secret reflected for an offloaded pod: the pod it belongs to
LABEL_REFLECTED_POD: Final = "offloading.liqo.io/pod"
#: on the EndpointSlice a provider keeps for a ShadowEndpointSlice (Liqo's `liqo.io/managed-by=shadowendpointslice`)
MANAGED_BY_SHADOWENDPOINTSLICE: Final = "shadowendpointslice"
#: Kubernetes' EndpointSlice labels: the Service a slice belongs to, and who manages it (kube's EndpointSlice
#: controller leaves slices managed by anyone else alone)
LABEL_SERVICE_NAME: Final = "kubernetes.io/service-name"
LABEL_ENDPOINTSLICE_MANAGED_BY: Final = "endpointslice.kubernetes.io/managed-by"
#: the manager of the EndpointSlices reflected from a consumer (Liqo's)
ENDPOINTSLICE_MANAGED_BY_REFLECTION: Final = "endpointslice.reflection.liqo.io"
# Kubernetes' well-known node labels (k8s.io/api/core/v1 well_known_labels.go) a virtual node carries too.
LABEL_HOSTNAME: Final = "kubernetes.io/hostname"
LABEL_OS: Final = "kubernetes.io/os"
#: Pod Security Admission's namespace labels: the level enforced there, and the policy version it is checked at
LABEL_POD_SECURITY_ENFORCE: Final = "pod-security.kubernetes.io/enforce"
LABEL_POD_SECURITY_ENFORCE_VERSION: Final = "pod-security.kubernetes.io/enforce-version"

# Annotations.
#: on an object of an offloaded namespace: never reflected (whatever its kind's reflection type)
ANNOTATION_SKIP_REFLECTION: Final = "liqo.io/skip-reflection"
#: on an object of an offloaded namespace: reflected even when its kind's reflection type is AllowList
ANNOTATION_ALLOW_REFLECTION: Final = "liqo.io/allow-reflection"
#: on a pod offloaded to a provider: which API server its ServiceAccount token is for (Liqo's): absent, the
#: installation's choice (its home API server, `TokenAPI`); `remote`, the provider's, as a ServiceAccount of the
#: twin namespace; `disabled`, none (no token is mounted on the provider)
ANNOTATION_API_SERVER_SUPPORT: Final = "liqo.io/api-server-support"
API_SERVER_SUPPORT_REMOTE: Final = "remote"
API_SERVER_SUPPORT_DISABLED: Final = "disabled"
#: on a pod with `liqo.io/api-server-support: remote`: the provider's ServiceAccount it runs as (default: the
#: pod's own ServiceAccount name, in the twin namespace)
ANNOTATION_REMOTE_SERVICE_ACCOUNT_NAME: Final = "liqo.io/remote-service-account-name"
#: on a Service: its node ports are carried to the provider too (`true`), instead of being left to it
ANNOTATION_FORCE_REMOTE_NODE_PORT: Final = "liqo.io/force-remote-node-port"
ANNOTATION_TOKEN_EXPIRES_AT: Final = "liqo.io/token-expires-at"
#: on a peering token Secret: the cluster id of the consumer the token is bound to (its first user)
ANNOTATION_TOKEN_CONSUMER: Final = "liqo.io/token-consumer"
#: on a peering token Secret: `true` when the token is good for one exchange only
ANNOTATION_TOKEN_SINGLE_USE: Final = "liqo.io/token-single-use"
#: on a Tenant: the name of the token Secret its consumer last presented (binds that token to it)
ANNOTATION_TENANT_TOKEN: Final = "authentication.liqo.io/peering-token"
#: on a Tenant: the timestamp of the last signed request (renew, revoke) accepted from its consumer (replay guard)
ANNOTATION_LAST_SIGNED_REQUEST: Final = "authentication.liqo.io/last-signed-request"
#: on a ForeignCluster: the key fingerprint (`sha256:<hex>`) of the provider's auth service key a user trusts,
#: overriding the one pinned on the first contact (re-trusting a provider whose serving key was replaced)
ANNOTATION_TRUST_AUTH_SERVICE_KEY: Final = "liqo.io/trust-auth-service-key"
#: on a ResourceSlice: its tenant is cordoned (tenantCondition Cordoned), so no new resources are granted
ANNOTATION_CORDON_TENANT: Final = "liqo.io/cordon-tenant"
#: on a consumer's Identity: the provider's cluster labels (JSON) its auth service advertised, for the virtual node
ANNOTATION_REMOTE_CLUSTER_LABELS: Final = "liqo.io/remote-cluster-labels"
#: on a virtual node's Node: the label keys and taints (`key:effect`) its virtual kubelet set, comma-separated,
#: so it removes those the VirtualNode no longer asks for and leaves everybody else's alone
ANNOTATION_MANAGED_LABELS: Final = "offloading.liqo.io/managed-labels"
ANNOTATION_MANAGED_TAINTS: Final = "offloading.liqo.io/managed-taints"
#: on a twin namespace (provider): the NamespaceMap (`<tenant namespace>/<name>`) it was created for; a namespace
#: without it (or naming another map) is never adopted nor deleted
ANNOTATION_NAMESPACE_MAP: Final = "offloading.liqo.io/namespace-map"
#: on a twin namespace (provider): the consumer's namespace it stands for
ANNOTATION_ORIGIN_NAMESPACE: Final = "offloading.liqo.io/origin-namespace"
#: on a ShadowPod: the uid of the consumer's pod it stands for (a pod recreated with the same name is another pod)
ANNOTATION_ORIGIN_POD_UID: Final = "offloading.liqo.io/origin-pod-uid"
#: on a ShadowPod being deleted: the grace period (seconds) its Pod is deleted with (a custom resource's own
#: deletion carries none)
ANNOTATION_DELETION_GRACE: Final = "offloading.liqo.io/deletion-grace-period-seconds"
#: on an offloaded pod's token Secret: when (RFC 3339) its tokens are requested again (80% of their lifetime)
ANNOTATION_TOKEN_REFRESH_AT: Final = "offloading.liqo.io/token-refresh-at"

# Taints.
TAINT_VIRTUAL_NODE: Final = "virtual-node.liqo.io/not-allowed"
TAINT_VIRTUAL_NODE_EFFECT: Final = "NoExecute"

# Finalizers.
FINALIZER_FOREIGNCLUSTER: Final = "core.liqo.io/foreigncluster"
FINALIZER_TENANT: Final = "authentication.liqo.io/tenant"
FINALIZER_VIRTUALNODE: Final = "offloading.liqo.io/virtualnode"
FINALIZER_NAMESPACEOFFLOADING: Final = "offloading.liqo.io/namespaceoffloading"
FINALIZER_SHADOWPOD: Final = "offloading.liqo.io/shadowpod"
FINALIZER_NAMESPACEMAP: Final = "offloading.liqo.io/namespacemap"
FINALIZER_NAMESPACEOFFLOADINGSET: Final = "offloading.liqo.io/namespaceoffloadingset"

# Namespace offloading.
#: the one NamespaceOffloading of a namespace is called this (Liqo's `DefaultNamespaceOffloadingName`)
NAMESPACE_OFFLOADING_NAME: Final = "offloading"
MAPPING_DEFAULT_NAME: Final = "DefaultName"
MAPPING_ENFORCE_SAME_NAME: Final = "EnforceSameName"
MAPPING_SELECTED_NAME: Final = "SelectedName"
MAPPING_STRATEGIES: Final = (MAPPING_DEFAULT_NAME, MAPPING_ENFORCE_SAME_NAME, MAPPING_SELECTED_NAME)
POD_OFFLOADING_LOCAL: Final = "Local"
POD_OFFLOADING_REMOTE: Final = "Remote"
POD_OFFLOADING_LOCAL_AND_REMOTE: Final = "LocalAndRemote"
POD_OFFLOADING_STRATEGIES: Final = (
    POD_OFFLOADING_LOCAL,
    POD_OFFLOADING_REMOTE,
    POD_OFFLOADING_LOCAL_AND_REMOTE,
)
#: a NamespaceOffloading's `offloadingPhase`
PHASE_READY: Final = "Ready"
PHASE_NO_CLUSTER_SELECTED: Final = "NoClusterSelected"
PHASE_IN_PROGRESS: Final = "InProgress"
PHASE_SOME_FAILED: Final = "SomeFailed"
PHASE_ALL_FAILED: Final = "AllFailed"
PHASE_TERMINATING: Final = "Terminating"
OFFLOADING_PHASES: Final = (
    PHASE_READY,
    PHASE_NO_CLUSTER_SELECTED,
    PHASE_IN_PROGRESS,
    PHASE_SOME_FAILED,
    PHASE_ALL_FAILED,
    PHASE_TERMINATING,
)
#: a NamespaceMap's per-namespace `phase`
MAPPING_ACCEPTED: Final = "Accepted"
MAPPING_CREATION_LOOP_BACKOFF: Final = "CreationLoopBackOff"
MAPPING_TERMINATING: Final = "Terminating"
MAPPING_PHASES: Final = (MAPPING_ACCEPTED, MAPPING_CREATION_LOOP_BACKOFF, MAPPING_TERMINATING)
#: the Pod Security Standards levels a peering asks its provider to hold its offloaded pods to, in its twin
#: namespaces: baseline is the floor every twin namespace enforces, restricted a consumer may ask for on top
POD_SECURITY_BASELINE: Final = "baseline"
POD_SECURITY_RESTRICTED: Final = "restricted"
POD_SECURITY_LEVELS: Final = (POD_SECURITY_BASELINE, POD_SECURITY_RESTRICTED)
#: per remote cluster on a NamespaceOffloading: is it selected, and is its twin namespace there
CONDITION_OFFLOADING_REQUIRED: Final = "OffloadingRequired"
#: a pod the virtual kubelet will not offload stays Pending with this reason (Liqo's)
REASON_OFFLOADING_BACKOFF: Final = "OffloadingBackOff"
#: Events on a reflected object (Liqo's reasons): its copy written, refused by the provider, or removed because
#: the object asks not to be reflected
REASON_SUCCESSFUL_REFLECTION: Final = "SuccessfulReflection"
REASON_FAILED_REFLECTION: Final = "FailedReflection"
REASON_REFLECTION_DISABLED: Final = "ReflectionDisabled"

# Condition types and reasons peers and front ends read: a ResourceSlice's `Authentication` and
# `Resources` (Accepted, Resized or Denied); a VirtualNode's `VirtualKubelet`, `Node` and `Ready`.
CONDITION_AUTHENTICATION: Final = "Authentication"
CONDITION_RESOURCES: Final = "Resources"
REASON_ACCEPTED: Final = "Accepted"
REASON_RESIZED: Final = "Resized"
REASON_DENIED: Final = "Denied"
CONDITION_VIRTUAL_KUBELET: Final = "VirtualKubelet"
CONDITION_NODE: Final = "Node"
CONDITION_READY: Final = "Ready"

# A ForeignCluster's conditions (the consumer's view of a peering), in Liqo v1's vocabulary
# (core.liqo.io/v1beta1 ForeignCluster) so that liqoctl and Liqo's dashboards read them:
# `AuthIdentityControlPlaneStatus` in modules.authentication, `OffloadingVirtualNodeStatus` in
# modules.offloading, `NetworkConnectionStatus` in modules.networking, their status one of Liqo's
# words below. `ResourcesGranted` (modules.offloading, Liqo's words too) is this runtime's own: Liqo
# keeps the provider's answer on the ResourceSlice only. `Ready` at the top is a Kubernetes condition
# (True/False, for `kubectl wait`), False with the reason of the first step that is not done.
CONDITION_AUTHENTICATED: Final = "AuthIdentityControlPlaneStatus"
CONDITION_RESOURCES_GRANTED: Final = "ResourcesGranted"
CONDITION_VIRTUAL_NODE_READY: Final = "OffloadingVirtualNodeStatus"
CONDITION_NETWORK_CONNECTED: Final = "NetworkConnectionStatus"
#: Liqo's ConditionStatusType: what a ForeignCluster's module conditions say
LIQO_STATUS_NONE: Final = "None"
LIQO_STATUS_PENDING: Final = "Pending"
LIQO_STATUS_ESTABLISHED: Final = "Established"
LIQO_STATUS_ERROR: Final = "Error"
LIQO_STATUS_READY: Final = "Ready"
LIQO_STATUS_NOT_READY: Final = "NotReady"
LIQO_STATUS_SOME_NOT_READY: Final = "SomeNotReady"
LIQO_STATUSES: Final = (
    LIQO_STATUS_NONE,
    LIQO_STATUS_PENDING,
    LIQO_STATUS_ESTABLISHED,
    LIQO_STATUS_ERROR,
    LIQO_STATUS_READY,
    LIQO_STATUS_NOT_READY,
    LIQO_STATUS_SOME_NOT_READY,
)
#: the statuses liqoctl counts as healthy
LIQO_HEALTHY_STATUSES: Final = (LIQO_STATUS_ESTABLISHED, LIQO_STATUS_READY)
#: Liqo's RoleType: what the remote cluster is to this one (a ForeignCluster's status.role)
ROLE_CONSUMER: Final = "Consumer"
ROLE_PROVIDER: Final = "Provider"
ROLE_CONSUMER_AND_PROVIDER: Final = "ConsumerAndProvider"
ROLE_UNKNOWN: Final = "Unknown"
PEER_ROLES: Final = (ROLE_CONSUMER, ROLE_PROVIDER, ROLE_CONSUMER_AND_PROVIDER, ROLE_UNKNOWN)
REASON_PEERING_ESTABLISHED: Final = "PeeringEstablished"
REASON_INVALID_SPEC: Final = "InvalidSpec"
REASON_TOKEN_MISSING: Final = "TokenMissing"
REASON_AUTHENTICATION_PENDING: Final = "AuthenticationPending"
REASON_AUTHENTICATION_FAILED: Final = "AuthenticationFailed"
REASON_PROVIDER_UNREACHABLE: Final = "ProviderUnreachable"
REASON_RUNTIME_NOT_INSTALLED: Final = "RuntimeNotInstalled"
REASON_CLUSTER_ID_MISMATCH: Final = "ClusterIDMismatch"
REASON_CREDENTIAL_ISSUED: Final = "CredentialIssued"
REASON_RESOURCES_PENDING: Final = "ResourcesPending"
REASON_RESOURCES_ACCEPTED: Final = "ResourcesAccepted"
REASON_RESOURCES_RESIZED: Final = "ResourcesResized"
REASON_RESOURCES_DENIED: Final = "ResourcesDenied"
REASON_VIRTUAL_NODE_READY: Final = "VirtualNodeReady"
REASON_VIRTUAL_NODE_NOT_READY: Final = "VirtualNodeNotReady"
#: an Identity's condition: its credential was renewed (True) or the last renewal failed (False)
CONDITION_CREDENTIAL_RENEWED: Final = "CredentialRenewed"
#: a Configuration's condition: every network its peer wrote was accepted by this cluster's IPAM (True), or
#: some were refused (False, reason NetworksRefused, the message naming each network and why)
CONDITION_ACCEPTED: Final = "Accepted"
REASON_NETWORKS_ACCEPTED: Final = "NetworksAccepted"
REASON_NETWORKS_REFUSED: Final = "NetworksRefused"

# The consumer's objects for one provider, in its local tenant namespace `liqo-tenant-<provider name>`.
#: the Secret with the consumer's Ed25519 key pair for that provider: liqo-keys-<provider name>
KEYS_SECRET_PREFIX: Final = "liqo-keys-"
#: the Secret with the kubeconfig for that provider (key `kubeconfig`): liqo-credential-<provider name>
CREDENTIAL_SECRET_PREFIX: Final = "liqo-credential-"
CREDENTIAL_KUBECONFIG_KEY: Final = "kubeconfig"
#: the key of the peering token in the Secret a ForeignCluster's `tokenSecretRef` names
TOKEN_SECRET_KEY: Final = "token"
#: that Secret, as the front ends write it in the runtime's namespace: liqo-token-<provider name>
TOKEN_SECRET_PREFIX: Final = "liqo-token-"
#: the only kind of peering the runtime sets up (a ForeignCluster's `spec.peeringType`)
PEERING_TYPE_OUT_OF_BAND: Final = "OutOfBand"
#: the ForeignCluster status (and Identity spec) field with the pinned SHA-256 of the auth service's key
AUTH_KEY_FINGERPRINT_FIELD: Final = "authServiceKeyFingerprint"
#: the `app.kubernetes.io/component` of the consumer's peering objects (token, key pair and credential Secrets)
COMPONENT_PEERING: Final = "peering"

# Field managers (server-side apply): one per writer, so ownership shows who set what.
FIELD_MANAGER_INSTALL: Final = "liqo-install"
FIELD_MANAGER_TERRAFORM: Final = "liqo-terraform"
FIELD_MANAGER_PULUMI: Final = "liqo-pulumi"
FIELD_MANAGER_CONTROLLER_MANAGER: Final = "liqo-controller-manager"
FIELD_MANAGER_AUTH: Final = "liqo-auth"
FIELD_MANAGER_WEBHOOK: Final = "liqo-webhook"
FIELD_MANAGER_VIRTUAL_KUBELET: Final = "liqo-virtual-kubelet"

# The provider's authentication service.
#: the Secret (in the runtime's namespace) with the auth service's serving key, created once by the controller
#: manager and kept: consumers pin its public key on first use (key `tls.key`, PKCS#8 PEM)
AUTH_SERVING_KEY_SECRET: Final = "liqo-auth-serving-key"
AUTH_SERVING_KEY: Final = "tls.key"
#: the auth service's Service (in the runtime's namespace): its type decides the published `authURL`
AUTH_SERVICE: Final = "liqo-auth"
#: a consumer's ServiceAccount in its tenant namespace (its credential is a token of it; the auth service may
#: make, patch and mint tokens for ServiceAccounts of this name only)
CONSUMER_SERVICE_ACCOUNT: Final = "liqo-consumer"
#: the RoleBinding of `liqo-remote-consumer` to that ServiceAccount (the only RoleBinding the auth service writes)
CONSUMER_ROLE_BINDING: Final = "liqo-remote-consumer"
#: the Secret (in the runtime's namespace) with the webhook's CA, made once by the first webhook to start and
#: kept, so every replica and restart is trusted by the caBundle of the webhook configurations
WEBHOOK_CA_SECRET: Final = "liqo-webhook-ca"
WEBHOOK_CA_CERTIFICATE: Final = "ca.crt"
WEBHOOK_CA_KEY: Final = "ca.key"
#: a ForeignCluster's reason: the provider's auth service presents another key than the one pinned on first use
REASON_AUTH_SERVICE_KEY_CHANGED: Final = "AuthServiceKeyChanged"
