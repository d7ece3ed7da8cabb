"""Liqo for Pulumi: `Install` the runtime in each cluster, `Generate` a peering token on a provider, `Peer`
a consumer with it, `Offload` a namespace of the consumer.

The same operations as the Terraform provider (`runtime.operations`) on the same objects
(`runtime.forge`): the runtime's manifests are `pulumi_kubernetes` resources; what
Kubernetes resources cannot express (discovery, tokens, waits, unpeer, offloading) are dynamic
resources. Type tokens are `liqo:index:<Name>`.
"""

from .generate import Generate, GenerateArgs
from .install import Install, InstallArgs
from .offload import ClusterSelectorTermArgs, NodeSelectorRequirementArgs, Offload, OffloadArgs
from .peer import Peer, PeerArgs

__all__ = [
    "ClusterSelectorTermArgs",
    "Generate",
    "GenerateArgs",
    "Install",
    "InstallArgs",
    "NodeSelectorRequirementArgs",
    "Offload",
    "OffloadArgs",
    "Peer",
    "PeerArgs",
]
