"""Kubernetes' well-known label, annotation and taint keys and the controllers' names.

Spelled once here so the controllers, their tests and readers agree on them; the values
are kube's (`k8s.io/api/apps/v1`, `k8s.io/api/core/v1`, `k8s.io/api/discovery/v1`).
"""

from __future__ import annotations

#: the field manager kube-controller-manager writes with (its user agent)
FIELD_MANAGER = "kube-controller-manager"

# Deployments and ReplicaSets
POD_TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
DEPRECATED_ROLLBACK_TO = "deprecated.deployment.rollback.to"
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"

# DaemonSets and StatefulSets
CONTROLLER_REVISION_HASH = "controller-revision-hash"
#: the hash label of a StatefulSet's ControllerRevisions (DaemonSets' use CONTROLLER_REVISION_HASH)
CONTROLLER_HASH = "controller.kubernetes.io/hash"
STATEFULSET_POD_NAME = "statefulset.kubernetes.io/pod-name"
POD_INDEX = "apps.kubernetes.io/pod-index"

# EndpointSlices and Endpoints
SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
ENDPOINTSLICE_CONTROLLER = "endpointslice-controller.k8s.io"
SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
HEADLESS = "service.kubernetes.io/headless"
TOPOLOGY_ZONE = "topology.kubernetes.io/zone"

# node taints the node lifecycle controller and the kubelet set
TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_DISK_PRESSURE = "node.kubernetes.io/disk-pressure"
TAINT_MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
TAINT_PID_PRESSURE = "node.kubernetes.io/pid-pressure"
TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
TAINT_NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"
