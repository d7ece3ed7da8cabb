"""The system workloads a fresh kind cluster has, so `kubectl get pods -A` reads like kind's.

kind's `kube-system` runs CoreDNS (the cluster DNS addon as kubeadm installs it: its
ServiceAccount, the `system:coredns` ClusterRole and binding, the `coredns` ConfigMap
with the Corefile, a Deployment, and the `kube-dns` Service at the tenth Service IP),
and on every node kindnet (the CNI) and kube-proxy (DaemonSets that tolerate every
taint, on the host network); kubeadm leaves its ClusterConfiguration in the
`kubeadm-config` ConfigMap, where tools (liqoctl, our `liqo_install`) read the pod and
Service subnets. The playground creates the same objects with the same names, labels,
images, tolerations and priorities when a cluster is first created.

On real nodes CoreDNS runs, from the image of the assets folder, and answers for
`cluster.local`; its Corefile is kubeadm's without the `forward` to the node's
resolv.conf (pod traffic never leaves the machine: a name outside the cluster fails at
once instead of timing out). kindnet's and kube-proxy's work is done by the playground
network and the supervised kube-proxy of each node, so their DaemonSets are not
created (their images could not be run). On agent nodes every one of these pods is
simulated (marked Running by the node agents): nothing serves DNS, which
docs/playground.md lists among the differences from kind; they still exercise the
Deployment, DaemonSet, scheduler and node agent paths from the very first second.

Pure builders; `cluster.py` creates them through the API.
"""

from __future__ import annotations

import ipaddress

import yaml

from playground.apiserver.openapi import KUBERNETES_VERSION
from runtime.api.kinds import (
    CLUSTERROLEBINDINGS,
    CLUSTERROLES,
    CONFIGMAPS,
    DAEMONSETS,
    DEPLOYMENTS,
    SERVICEACCOUNTS,
    SERVICES,
)
from runtime.api.objects import JSON
from runtime.api.resource import Resource

NAMESPACE = "kube-system"
#: the CoreDNS `make real-k8s` builds (tools/realk8s/coredns) and its image's name
COREDNS_IMAGE = "registry.k8s.io/coredns/coredns:v1.15.0"
CLUSTER_DOMAIN = "cluster.local"
#: kubeadm's Corefile (cmd/kubeadm/app/phases/addons/dns/manifests.go, v1.36) without its `forward`
COREFILE = f""".:53 {{
    errors
    health {{
       lameduck 5s
    }}
    ready
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }}
    prometheus :9153
    cache 30 {{
       disable success {CLUSTER_DOMAIN}
       disable denial {CLUSTER_DOMAIN}
    }}
    loop
    reload
    loadbalance
}}
"""
KINDNET_IMAGE = "docker.io/kindest/kindnetd:v20241108-5c6d2daf"
KUBE_PROXY_IMAGE = f"registry.k8s.io/kube-proxy:{KUBERNETES_VERSION}"
#: tolerate every taint, as kind's DaemonSets do
TOLERATE_ALL = [{"operator": "Exists"}]


def dns_service_ip(service_cidr: str) -> str:
    """kubeadm's choice for `kube-dns`: the tenth address of the Service CIDR (10.96.0.10)."""
    return str(ipaddress.ip_network(service_cidr).network_address + 10)


def _meta(name: str, labels: dict[str, str]) -> JSON:
    return {"name": name, "namespace": NAMESPACE, "labels": labels}


def _service_account(name: str) -> JSON:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": NAMESPACE}}


def coredns(image: str = COREDNS_IMAGE) -> JSON:
    """kubeadm's CoreDNS Deployment."""
    labels = {"k8s-app": "kube-dns"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta("coredns", labels),
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": "coredns",
                    "priorityClassName": "system-cluster-critical",
                    "affinity": {
                        "podAntiAffinity": {
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                                {
                                    "weight": 100,
                                    "podAffinityTerm": {
                                        "labelSelector": {
                                            "matchExpressions": [
                                                {"key": "k8s-app", "operator": "In", "values": ["kube-dns"]}
                                            ]
                                        },
                                        "topologyKey": "kubernetes.io/hostname",
                                    },
                                }
                            ]
                        }
                    },
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "tolerations": [
                        {"key": "CriticalAddonsOnly", "operator": "Exists"},
                        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
                    ],
                    "dnsPolicy": "Default",
                    "containers": [
                        {
                            "name": "coredns",
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "args": ["-conf", "/etc/coredns/Corefile"],
                            "volumeMounts": [
                                {"name": "config-volume", "mountPath": "/etc/coredns", "readOnly": True}
                            ],
                            "ports": [
                                {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                                {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
                                {"name": "metrics", "containerPort": 9153, "protocol": "TCP"},
                                {"name": "liveness-probe", "containerPort": 8080, "protocol": "TCP"},
                                {"name": "readiness-probe", "containerPort": 8181, "protocol": "TCP"},
                            ],
                            "livenessProbe": {
                                "httpGet": {"path": "/health", "port": "liveness-probe", "scheme": "HTTP"},
                                "initialDelaySeconds": 60,
                                "timeoutSeconds": 5,
                                "successThreshold": 1,
                                "failureThreshold": 5,
                            },
                            "readinessProbe": {
                                "httpGet": {"path": "/ready", "port": "readiness-probe", "scheme": "HTTP"}
                            },
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
                                "readOnlyRootFilesystem": True,
                            },
                            "resources": {
                                "requests": {"cpu": "100m", "memory": "70Mi"},
                                "limits": {"memory": "170Mi"},
                            },
                        }
                    ],
                    "volumes": [
                        {
                            "name": "config-volume",
                            "configMap": {
                                "name": "coredns",
                                "items": [{"key": "Corefile", "path": "Corefile"}],
                            },
                        }
                    ],
                },
            },
        },
    }


def coredns_config() -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "coredns", "namespace": NAMESPACE},
        "data": {"Corefile": COREFILE},
    }


def coredns_cluster_role() -> JSON:
    """What CoreDNS's kubernetes plugin reads (kubeadm's `system:coredns`)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "system:coredns"},
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["endpoints", "services", "pods", "namespaces"],
                "verbs": ["list", "watch"],
            },
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
        ],
    }


def coredns_cluster_role_binding() -> JSON:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "system:coredns"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:coredns"},
        "subjects": [{"kind": "ServiceAccount", "name": "coredns", "namespace": NAMESPACE}],
    }


def kube_dns(service_cidr: str) -> JSON:
    metadata = _meta(
        "kube-dns",
        {"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"},
    )
    metadata["annotations"] = {"prometheus.io/port": "9153", "prometheus.io/scrape": "true"}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {
            "selector": {"k8s-app": "kube-dns"},
            "clusterIP": dns_service_ip(service_cidr),
            "ports": [
                {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153},
            ],
        },
    }


def _node_daemon(
    name: str, labels: dict[str, str], *, image: str, service_account: str, requests: dict[str, str] | None
) -> JSON:
    container: JSON = {"name": name, "image": image}
    if requests:
        container["resources"] = {"requests": requests}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": _meta(name, labels),
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "hostNetwork": True,
                    "serviceAccountName": service_account,
                    "priorityClassName": "system-node-critical",
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "tolerations": TOLERATE_ALL,
                    "containers": [container],
                },
            },
        },
    }


def kindnet() -> JSON:
    return _node_daemon(
        "kindnet",
        {"app": "kindnet", "k8s-app": "kindnet", "tier": "node"},
        image=KINDNET_IMAGE,
        service_account="kindnet",
        requests={"cpu": "100m", "memory": "50Mi"},
    )


def kube_proxy() -> JSON:
    return _node_daemon(
        "kube-proxy",
        {"k8s-app": "kube-proxy"},
        image=KUBE_PROXY_IMAGE,
        service_account="kube-proxy",
        requests=None,
    )


def kubeadm_config(*, cluster_name: str, pod_cidr: str, service_cidr: str) -> JSON:
    """kubeadm's record of the cluster's configuration, with the networking kind passes to kubeadm."""
    configuration = {
        "apiVersion": "kubeadm.k8s.io/v1beta4",
        "kind": "ClusterConfiguration",
        "clusterName": cluster_name,
        "controlPlaneEndpoint": f"{cluster_name}-control-plane:6443",
        "kubernetesVersion": KUBERNETES_VERSION,
        "networking": {"dnsDomain": "cluster.local", "podSubnet": pod_cidr, "serviceSubnet": service_cidr},
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kubeadm-config", "namespace": NAMESPACE},
        "data": {"ClusterConfiguration": yaml.safe_dump(configuration, sort_keys=True)},
    }


def addons(
    *,
    cluster_name: str,
    pod_cidr: str,
    service_cidr: str,
    real_nodes: bool = False,
    dns_image: str = COREDNS_IMAGE,
) -> list[tuple[Resource, JSON]]:
    """Every object, in creation order (ServiceAccounts and RBAC before the pods that use them); on real
    nodes, without the kindnet and kube-proxy DaemonSets (see the module docstring)."""
    objects: list[tuple[Resource, JSON]] = [
        (CONFIGMAPS, kubeadm_config(cluster_name=cluster_name, pod_cidr=pod_cidr, service_cidr=service_cidr)),
        (SERVICEACCOUNTS, _service_account("coredns")),
        (CLUSTERROLES, coredns_cluster_role()),
        (CLUSTERROLEBINDINGS, coredns_cluster_role_binding()),
        (CONFIGMAPS, coredns_config()),
        (SERVICES, kube_dns(service_cidr)),
        (DEPLOYMENTS, coredns(dns_image)),
    ]
    if not real_nodes:
        objects += [
            (SERVICEACCOUNTS, _service_account("kindnet")),
            (SERVICEACCOUNTS, _service_account("kube-proxy")),
            (DAEMONSETS, kindnet()),
            (DAEMONSETS, kube_proxy()),
        ]
    return objects
