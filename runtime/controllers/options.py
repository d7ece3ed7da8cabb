"""Options every controller of the controller manager reads, as one frozen dataclass.

Passed explicitly to each controller's `setup`, so a test changes one field (a grace
period, say) instead of patching code. Times are in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from runtime.api import constants as c
from runtime.api.image import runtime_image
from runtime.forge.quota import Enforcement
from runtime.forge.reflection import ReflectionOptions


@dataclass(frozen=True)
class ControllerOptions:
    #: the runtime's namespace (identity ConfigMap, token Secrets, leader election Lease)
    namespace: str = c.DEFAULT_NAMESPACE
    #: this cluster's API server as other clusters reach it: offloaded pods talk to it ("": not known)
    api_server_url: str = ""
    #: a deleted Tenant's finalizer is released after this long even if its tenant namespace could not be deleted
    tenant_deletion_timeout: float = 60.0
    #: a Tenant whose last credential expired this long ago is removed with what it holds (its consumer is gone
    #: without revoking: a live one renews its credential before it expires); None: never
    tenant_orphan_grace: float | None = 600.0
    # ResourceSlice (the provider's grants) and VirtualNode (the consumer's virtual kubelets).
    #: how the Quota of each grant is enforced on offloaded workloads: None, Soft or Hard
    quota_enforcement: Enforcement = "None"
    #: the virtual kubelets' image when a VirtualNode names none (the runtime image)
    image: str = field(default_factory=runtime_image)
    #: how long deleting a VirtualNode waits for its virtual kubelet to stop before it removes the Node anyway
    virtual_node_deletion_timeout: float = 30.0
    #: what the virtual kubelets reflect, with how many workers per kind (their flags, as given here)
    reflection: ReflectionOptions = field(default_factory=ReflectionOptions)
    # ForeignCluster (the consumer's peering) and Identity (its credential).
    #: limit of each request to a provider's authentication service
    auth_timeout: float = 10.0
    #: limit of each request to a provider's API server made with the consumer's credential
    remote_timeout: float = 10.0
    #: how long unpeering waits for the virtual node and the provider before it cleans up locally only
    unpeer_timeout: float = 60.0
    #: how soon a peering is looked at again while the provider has not answered its ResourceSlice
    resource_slice_poll: float = 0.25
    #: how often an established peering re-reads its ResourceSlice on the provider (grants change)
    peering_resync: float = 30.0
    #: the fraction of a credential's lifetime after which it is renewed
    credential_renew_fraction: float = 0.8
    # NamespaceOffloading and NamespaceMap (consumer), twin namespaces (provider).
    #: how long unoffloading a namespace waits for the providers to report its twin namespaces gone
    offloading_deletion_timeout: float = 120.0
    #: how often a NamespaceMap whose twin namespaces are not all there yet is carried to its provider again
    namespace_map_poll: float = 0.5
    #: how often a settled NamespaceMap is compared with its copy on the provider
    namespace_map_resync: float = 15.0
    #: how long a deleted NamespaceMap (provider) waits for its twin namespaces to go before it is released
    twin_namespace_deletion_timeout: float = 120.0
    #: the most twin namespaces (provider) one consumer may hold here: namespaces beyond it are refused in its
    #: NamespaceMap's status
    max_twin_namespaces: int = 50
    #: ShadowPods (provider) reconciled at once: each is a few requests, and a burst of offloaded pods is many
    shadow_pod_workers: int = 20
    #: ShadowEndpointSlices (provider) reconciled at once: each is one request when its EndpointSlice changes
    shadow_endpoint_slice_workers: int = 10

    # The network fabric (issue 14): each peering's gateways.
    #: how a provider exposes its gateway servers to consumers
    gateway_service_type: Literal["NodePort", "LoadBalancer"] = "NodePort"
    #: the gateway servers' Service port
    gateway_port: int = 51840
    #: the tunnel interfaces' MTU
    gateway_mtu: int = 1340
    #: which WireGuard the gateways run: the kernel's when present, else wireguard-go (auto), or one of them
    wireguard_implementation: Literal["auto", "kernel", "wireguard-go"] = "auto"
