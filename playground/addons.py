"""The system workloads a fresh kind cluster has, so `kubectl get pods -A` reads like kind's.

kind's `kube-system` runs CoreDNS (a Deployment behind the `kube-dns` Service at the
tenth Service IP), and on every node kindnet (the CNI) and kube-proxy (DaemonSets that
tolerate every taint, on the host network); kubeadm leaves its ClusterConfiguration in
the `kubeadm-config` ConfigMap, where tools (liqoctl, our `liqo_install`) read the pod and
Service subnets. The playground creates the same objects
with the same names, labels, images, tolerations and priorities when a cluster is
first created. Their pods run like any other non-runtime pod (marked Running by the
node agents): nothing here serves DNS, routes pod traffic or programs Services, which
docs/playground.md lists among the differences from kind. They do exercise the
Deployment, DaemonSet, scheduler and node agent paths from the very first second.

Pure builders; `cluster.py` creates them through the API.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import yaml

from playground.apiserver.openapi import KUBERNETES_VERSION
from runtime.api.kinds import CONFIGMAPS, DAEMONSETS, DEPLOYMENTS, SERVICEACCOUNTS, SERVICES
from runtime.api.resource import Resource

JSON = dict[str, Any]
NAMESPACE = "kube-system"
COREDNS_IMAGE = "registry.k8s.io/coredns/coredns:v1.11.3"
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


def coredns() -> JSON:
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
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "tolerations": [
                        {"key": "CriticalAddonsOnly", "operator": "Exists"},
                        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
                    ],
                    "containers": [
                        {
                            "name": "coredns",
                            "image": COREDNS_IMAGE,
                            "args": ["-conf", "/etc/coredns/Corefile"],
                            "ports": [
                                {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                                {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
                                {"name": "metrics", "containerPort": 9153, "protocol": "TCP"},
                            ],
                            "resources": {
                                "requests": {"cpu": "100m", "memory": "70Mi"},
                                "limits": {"memory": "170Mi"},
                            },
                        }
                    ],
                },
            },
        },
    }


def kube_dns(service_cidr: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta("kube-dns", {"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}),
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


def addons(*, cluster_name: str, pod_cidr: str, service_cidr: str) -> list[tuple[Resource, JSON]]:
    """Every object, in creation order (ServiceAccounts before the pods that use them)."""
    return [
        (CONFIGMAPS, kubeadm_config(cluster_name=cluster_name, pod_cidr=pod_cidr, service_cidr=service_cidr)),
        (SERVICEACCOUNTS, _service_account("coredns")),
        (SERVICEACCOUNTS, _service_account("kindnet")),
        (SERVICEACCOUNTS, _service_account("kube-proxy")),
        (SERVICES, kube_dns(service_cidr)),
        (DEPLOYMENTS, coredns()),
        (DAEMONSETS, kindnet()),
        (DAEMONSETS, kube_proxy()),
    ]
