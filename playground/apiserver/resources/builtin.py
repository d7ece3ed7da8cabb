"""The built-in kinds the emulator serves, with their URL names and strategies.

Names, short names, categories, scopes and subresources are those of kube-apiserver
1.32, so discovery (and therefore kubectl) sees what it expects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .base import ALL_VERBS, Obj, ResourceType, ScaleSubresource, Strategy
from .core import (
    ConfigMapStrategy,
    CSRStrategy,
    EndpointsStrategy,
    EventStrategy,
    LeaseStrategy,
    NamespaceStrategy,
    NodeStrategy,
    PersistentVolumeClaimStrategy,
    PersistentVolumeStrategy,
    RBACStrategy,
    SecretStrategy,
    ServiceAccountStrategy,
    ServiceStrategy,
)
from .events import core_to_events, events_to_core
from .extensions import CRDStrategy, GenerationStrategy, WebhookConfigurationStrategy
from .pods import PodStrategy, PodTemplateStrategy
from .workloads import CronJobStrategy, WorkloadStrategy

REVIEW_VERBS = ("create",)
CREATE_ONLY = REVIEW_VERBS
NO_COLLECTION = tuple(v for v in ALL_VERBS if v != "deletecollection")
REPLICAS = ScaleSubresource(".spec.replicas", ".status.replicas", ".status.selector")


def builtin_types(*, service_cidr: str, services: Callable[[], Iterable[Obj]]) -> list[ResourceType]:
    rbac = RBACStrategy()
    events = EventStrategy()
    generic = Strategy()
    generation = GenerationStrategy()
    t = ResourceType
    return [
        # core/v1
        t(
            "",
            "v1",
            "Namespace",
            "namespaces",
            False,
            short_names=("ns",),
            subresources=("status", "finalize"),
            strategy=NamespaceStrategy(),
            verbs=NO_COLLECTION,
        ),
        t(
            "",
            "v1",
            "Node",
            "nodes",
            False,
            short_names=("no",),
            subresources=("status", "proxy"),
            strategy=NodeStrategy(),
        ),
        t(
            "",
            "v1",
            "Pod",
            "pods",
            True,
            short_names=("po",),
            categories=("all",),
            subresources=(
                "status",
                "binding",
                "eviction",
                "log",
                "exec",
                "attach",
                "portforward",
                "proxy",
                "ephemeralcontainers",
                "resize",
            ),
            strategy=PodStrategy(),
        ),
        t("", "v1", "Binding", "bindings", True, verbs=CREATE_ONLY),
        t("", "v1", "PodTemplate", "podtemplates", True, strategy=PodTemplateStrategy()),
        t(
            "",
            "v1",
            "Service",
            "services",
            True,
            short_names=("svc",),
            categories=("all",),
            subresources=("status", "proxy"),
            verbs=NO_COLLECTION,
            strategy=ServiceStrategy(service_cidr=service_cidr, services=services),
        ),
        t("", "v1", "Endpoints", "endpoints", True, short_names=("ep",), strategy=EndpointsStrategy()),
        t("", "v1", "ConfigMap", "configmaps", True, short_names=("cm",), strategy=ConfigMapStrategy()),
        t("", "v1", "Secret", "secrets", True, strategy=SecretStrategy()),
        t(
            "",
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            True,
            short_names=("sa",),
            subresources=("token",),
            strategy=ServiceAccountStrategy(),
        ),
        t("", "v1", "Event", "events", True, short_names=("ev",), strategy=events, storage="events"),
        t(
            "",
            "v1",
            "PersistentVolume",
            "persistentvolumes",
            False,
            short_names=("pv",),
            subresources=("status",),
            strategy=PersistentVolumeStrategy(),
        ),
        t(
            "",
            "v1",
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            True,
            short_names=("pvc",),
            subresources=("status",),
            strategy=PersistentVolumeClaimStrategy(),
        ),
        t(
            "",
            "v1",
            "ResourceQuota",
            "resourcequotas",
            True,
            short_names=("quota",),
            subresources=("status",),
        ),
        t("", "v1", "LimitRange", "limitranges", True, short_names=("limits",)),
        t(
            "",
            "v1",
            "ReplicationController",
            "replicationcontrollers",
            True,
            short_names=("rc",),
            categories=("all",),
            subresources=("status", "scale"),
            strategy=WorkloadStrategy("ReplicationController"),
            scale=REPLICAS,
        ),
        # events.k8s.io shares storage with core/v1 events
        t(
            "events.k8s.io",
            "v1",
            "Event",
            "events",
            True,
            short_names=("ev",),
            strategy=events,
            storage="events",
            storage_version=False,
            to_storage=events_to_core,
            from_storage=core_to_events,
        ),
        # apps/v1
        t(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            True,
            short_names=("deploy",),
            categories=("all",),
            subresources=("status", "scale"),
            strategy=WorkloadStrategy("Deployment"),
            scale=REPLICAS,
        ),
        t(
            "apps",
            "v1",
            "ReplicaSet",
            "replicasets",
            True,
            short_names=("rs",),
            categories=("all",),
            subresources=("status", "scale"),
            strategy=WorkloadStrategy("ReplicaSet"),
            scale=REPLICAS,
        ),
        t(
            "apps",
            "v1",
            "DaemonSet",
            "daemonsets",
            True,
            short_names=("ds",),
            categories=("all",),
            subresources=("status",),
            strategy=WorkloadStrategy("DaemonSet"),
        ),
        t(
            "apps",
            "v1",
            "StatefulSet",
            "statefulsets",
            True,
            short_names=("sts",),
            categories=("all",),
            subresources=("status", "scale"),
            strategy=WorkloadStrategy("StatefulSet"),
            scale=REPLICAS,
        ),
        t("apps", "v1", "ControllerRevision", "controllerrevisions", True),
        # batch/v1
        t(
            "batch",
            "v1",
            "Job",
            "jobs",
            True,
            categories=("all",),
            subresources=("status",),
            strategy=WorkloadStrategy("Job"),
        ),
        t(
            "batch",
            "v1",
            "CronJob",
            "cronjobs",
            True,
            short_names=("cj",),
            categories=("all",),
            subresources=("status",),
            strategy=CronJobStrategy(),
        ),
        # coordination, discovery, networking, node, scheduling, policy, storage
        t("coordination.k8s.io", "v1", "Lease", "leases", True, strategy=LeaseStrategy()),
        t("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", True, strategy=generic),
        t(
            "networking.k8s.io",
            "v1",
            "Ingress",
            "ingresses",
            True,
            short_names=("ing",),
            subresources=("status",),
            strategy=generation,
        ),
        t("networking.k8s.io", "v1", "IngressClass", "ingressclasses", False, strategy=generic),
        t(
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            "networkpolicies",
            True,
            short_names=("netpol",),
            strategy=generation,
        ),
        t("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", False, strategy=generic),
        t("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, short_names=("pc",)),
        t(
            "policy",
            "v1",
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            True,
            short_names=("pdb",),
            subresources=("status",),
            strategy=generation,
        ),
        t("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, short_names=("sc",)),
        t("storage.k8s.io", "v1", "CSIDriver", "csidrivers", False),
        t("storage.k8s.io", "v1", "CSINode", "csinodes", False),
        t("storage.k8s.io", "v1", "VolumeAttachment", "volumeattachments", False, subresources=("status",)),
        # certificates
        t(
            "certificates.k8s.io",
            "v1",
            "CertificateSigningRequest",
            "certificatesigningrequests",
            False,
            short_names=("csr",),
            subresources=("status", "approval"),
            strategy=CSRStrategy(),
        ),
        # rbac
        t("rbac.authorization.k8s.io", "v1", "Role", "roles", True, strategy=rbac),
        t("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False, strategy=rbac),
        t("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True, strategy=rbac),
        t(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            False,
            strategy=rbac,
        ),
        # admission and API extension
        t(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            False,
            categories=("api-extensions",),
            strategy=WebhookConfigurationStrategy(),
        ),
        t(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            False,
            categories=("api-extensions",),
            strategy=WebhookConfigurationStrategy(),
        ),
        t(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            False,
            short_names=("crd", "crds"),
            categories=("api-extensions",),
            subresources=("status",),
            strategy=CRDStrategy(),
        ),
        # reviews: create-only, never stored
        t("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", False, verbs=CREATE_ONLY),
        t("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", False, verbs=CREATE_ONLY),
        t(
            "authorization.k8s.io",
            "v1",
            "SubjectAccessReview",
            "subjectaccessreviews",
            False,
            verbs=CREATE_ONLY,
        ),
        t(
            "authorization.k8s.io",
            "v1",
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            False,
            verbs=CREATE_ONLY,
        ),
        t(
            "authorization.k8s.io",
            "v1",
            "LocalSubjectAccessReview",
            "localsubjectaccessreviews",
            True,
            verbs=CREATE_ONLY,
        ),
        t(
            "authorization.k8s.io",
            "v1",
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
            False,
            verbs=CREATE_ONLY,
        ),
    ]


REVIEW_RESOURCES = frozenset(
    {
        ("", "bindings"),
        ("authentication.k8s.io", "tokenreviews"),
        ("authentication.k8s.io", "selfsubjectreviews"),
        ("authorization.k8s.io", "subjectaccessreviews"),
        ("authorization.k8s.io", "selfsubjectaccessreviews"),
        ("authorization.k8s.io", "localsubjectaccessreviews"),
        ("authorization.k8s.io", "selfsubjectrulesreviews"),
    }
)
