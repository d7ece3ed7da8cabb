"""Options every control-plane component of a playground cluster reads (scheduler and controllers).

One frozen dataclass passed explicitly to each component's `setup`, so a test changes
one field (a grace period, say) instead of patching code. Defaults follow
kube-controller-manager and kube-scheduler; times are in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ControlPlaneOptions:
    #: the cluster's Service CIDR (ClusterIPs are the API server's business; controllers only read it)
    service_cidr: str = "10.96.0.0/12"
    #: the cluster's pod CIDR, split into one /24 per node by the node agents' launcher
    pod_cidr: str = "10.244.0.0/16"
    #: a node whose Lease was not renewed for this long turns NotReady (Ready=Unknown)
    node_monitor_grace_period: float = 40.0
    #: how often the node lifecycle controller checks Leases
    node_monitor_period: float = 5.0
    #: pods of a deleted owner are removed by background GC; orphans wait this long before a recheck
    gc_resync_period: float = 30.0
    #: a node that never posted a Ready condition gets this long (from its creation) before it turns Unknown
    node_startup_grace_period: float = 60.0
    #: pods bound to a node that is gone are force-deleted once it has been missing this long (podgc's quarantine)
    pod_gc_quarantine: float = 40.0
    #: the cluster CA bundle (PEM) published in every namespace as ConfigMap `kube-root-ca.crt` ("": none)
    root_ca: str = ""
    #: the scheduler's name; pods with another `spec.schedulerName` are left alone
    scheduler_name: str = "default-scheduler"
    #: how long a pod that fit nowhere waits before the scheduler tries it again without a cluster change
    unschedulable_retry: float = 30.0
    #: the most endpoints one EndpointSlice holds (kube-controller-manager's --max-endpoints-per-slice)
    max_endpoints_per_slice: int = 100
