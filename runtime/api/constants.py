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
CLUSTER_IDENTITY_CONFIGMAP: Final = "liqo-cluster-identity"
# Keys of the cluster identity ConfigMap (read by `liqo_generate` and the `liqo_cluster` data source).
IDENTITY_CLUSTER_ID: Final = "clusterID"
IDENTITY_CLUSTER_NAME: Final = "clusterName"
IDENTITY_CLUSTER_LABELS: Final = "clusterLabels"
IDENTITY_POD_CIDR: Final = "podCIDR"
IDENTITY_SERVICE_CIDR: Final = "serviceCIDR"
IDENTITY_VERSION: Final = "version"
IDENTITY_AUTH_URL: Final = "authURL"
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

# Annotations.
ANNOTATION_SKIP_REFLECTION: Final = "liqo.io/skip-reflection"
ANNOTATION_TOKEN_EXPIRES_AT: Final = "liqo.io/token-expires-at"

# Taints.
TAINT_VIRTUAL_NODE: Final = "virtual-node.liqo.io/not-allowed"
TAINT_VIRTUAL_NODE_EFFECT: Final = "NoExecute"

# Finalizers.
FINALIZER_FOREIGNCLUSTER: Final = "core.liqo.io/foreigncluster"
FINALIZER_TENANT: Final = "authentication.liqo.io/tenant"
FINALIZER_VIRTUALNODE: Final = "offloading.liqo.io/virtualnode"
FINALIZER_NAMESPACEOFFLOADING: Final = "offloading.liqo.io/namespaceoffloading"
FINALIZER_SHADOWPOD: Final = "offloading.liqo.io/shadowpod"

# Field managers (server-side apply): one per writer, so ownership shows who set what.
FIELD_MANAGER_INSTALL: Final = "liqo-install"
FIELD_MANAGER_TERRAFORM: Final = "liqo-terraform"
FIELD_MANAGER_PULUMI: Final = "liqo-pulumi"
FIELD_MANAGER_CONTROLLER_MANAGER: Final = "liqo-controller-manager"
FIELD_MANAGER_AUTH: Final = "liqo-auth"
FIELD_MANAGER_WEBHOOK: Final = "liqo-webhook"
FIELD_MANAGER_VIRTUAL_KUBELET: Final = "liqo-virtual-kubelet"
