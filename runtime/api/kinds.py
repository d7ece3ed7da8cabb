"""Built-in Kubernetes kinds, as `Resource` values: the one place their group, version and plural are spelled."""

from __future__ import annotations

from .resource import Resource

NAMESPACES = Resource("", "v1", "namespaces", namespaced=False, kind="Namespace")
NODES = Resource("", "v1", "nodes", namespaced=False, kind="Node")
PODS = Resource("", "v1", "pods", kind="Pod")
SERVICES = Resource("", "v1", "services", kind="Service")
ENDPOINTS = Resource("", "v1", "endpoints", kind="Endpoints")
CONFIGMAPS = Resource("", "v1", "configmaps", kind="ConfigMap")
SECRETS = Resource("", "v1", "secrets", kind="Secret")
SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", kind="ServiceAccount")
EVENTS = Resource("", "v1", "events", kind="Event")
PERSISTENTVOLUMECLAIMS = Resource("", "v1", "persistentvolumeclaims", kind="PersistentVolumeClaim")
PERSISTENTVOLUMES = Resource("", "v1", "persistentvolumes", namespaced=False, kind="PersistentVolume")
RESOURCEQUOTAS = Resource("", "v1", "resourcequotas", kind="ResourceQuota")
LIMITRANGES = Resource("", "v1", "limitranges", kind="LimitRange")

DEPLOYMENTS = Resource("apps", "v1", "deployments", kind="Deployment")
REPLICASETS = Resource("apps", "v1", "replicasets", kind="ReplicaSet")
DAEMONSETS = Resource("apps", "v1", "daemonsets", kind="DaemonSet")
STATEFULSETS = Resource("apps", "v1", "statefulsets", kind="StatefulSet")
CONTROLLERREVISIONS = Resource("apps", "v1", "controllerrevisions", kind="ControllerRevision")

JOBS = Resource("batch", "v1", "jobs", kind="Job")
CRONJOBS = Resource("batch", "v1", "cronjobs", kind="CronJob")

ENDPOINTSLICES = Resource("discovery.k8s.io", "v1", "endpointslices", kind="EndpointSlice")
LEASES = Resource("coordination.k8s.io", "v1", "leases", kind="Lease")
EVENTS_V1 = Resource("events.k8s.io", "v1", "events", kind="Event")
INGRESSES = Resource("networking.k8s.io", "v1", "ingresses", kind="Ingress")
PRIORITYCLASSES = Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", namespaced=False, kind="PriorityClass"
)
CSRS = Resource(
    "certificates.k8s.io",
    "v1",
    "certificatesigningrequests",
    namespaced=False,
    kind="CertificateSigningRequest",
)

ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", kind="Role")
ROLEBINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", kind="RoleBinding")
CLUSTERROLES = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterroles", namespaced=False, kind="ClusterRole"
)
CLUSTERROLEBINDINGS = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", namespaced=False, kind="ClusterRoleBinding"
)

SUBJECTACCESSREVIEWS = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", namespaced=False, kind="SubjectAccessReview"
)

CRDS = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    namespaced=False,
    kind="CustomResourceDefinition",
)
VALIDATINGWEBHOOKS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    namespaced=False,
    kind="ValidatingWebhookConfiguration",
)
MUTATINGWEBHOOKS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    namespaced=False,
    kind="MutatingWebhookConfiguration",
)
