"""The quick start on two playground clusters, as Liqo's "Provision with Terraform" guide does it, in Pulumi:
install Liqo on both clusters, issue a peering token on the provider (milan), peer the consumer (rome) with
it, up to the Ready virtual node liqo-milan, and offload the namespace liqo-demo. See README.md next to this
file."""

import json
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

import pulumi_liqo as liqo

config = pulumi.Config()


def kubeconfig(key: str) -> pulumi.Output[str]:
    """A kubeconfig's content, secret from here on."""
    return pulumi.Output.secret(Path(config.require(key)).expanduser().read_text())


rome_kubeconfig = kubeconfig("romeKubeconfig")
milan_kubeconfig = kubeconfig("milanKubeconfig")
rome_context = config.get("romeContext") or None
milan_context = config.get("milanContext") or None

milan = liqo.Install(
    "milan",
    {
        "kubeconfig": milan_kubeconfig,
        "context": milan_context,
        "cluster_name": config.get("milanName") or "milan",
        "cluster_labels": {"topology.liqo.io/region": "north"},
    },
)

rome = liqo.Install(
    "rome",
    {
        "kubeconfig": rome_kubeconfig,
        "context": rome_context,
        "cluster_name": config.get("romeName") or "rome",
    },
)

# On the provider: a peering token for one consumer (revoked when destroyed).
token = liqo.Generate(
    "milan-token",
    {"kubeconfig": milan_kubeconfig, "context": milan_context},
    pulumi.ResourceOptions(depends_on=[milan]),
)

# On the consumer: the peering, up to a Ready virtual node standing for milan.
peer = liqo.Peer(
    "rome-milan",
    {
        "kubeconfig": rome_kubeconfig,
        "context": rome_context,
        "cluster_id": token.cluster_id,
        "cluster_name": token.cluster_name,
        "cluster_authurl": token.auth_ep,
        "cluster_token": token.local_token,
        "auth_key_fingerprint": token.auth_key_fingerprint,
        "cpu": config.get("cpu") or "2",
        "memory": config.get("memory") or "4Gi",
        "pods": config.get("pods") or "20",
        "node_labels": json.loads(config.get("nodeLabels") or "{}"),
    },
    pulumi.ResourceOptions(depends_on=[rome]),
)

# On the consumer: the namespace liqo-demo, offloaded to milan (a twin namespace liqo-demo-rome there).
demo = k8s.core.v1.Namespace(
    "liqo-demo",
    metadata={"name": config.get("offloadNamespace") or "liqo-demo"},
    opts=pulumi.ResourceOptions(provider=rome.kubernetes),
)
offload = liqo.Offload(
    "liqo-demo",
    {
        "kubeconfig": rome_kubeconfig,
        "context": rome_context,
        # the namespace's name from the resource: the offloading depends on it, and goes before it on destroy
        "namespace": demo.metadata.name,
        "pod_offloading_strategy": config.get("podOffloadingStrategy") or "LocalAndRemote",
    },
    pulumi.ResourceOptions(depends_on=[rome, peer]),
)

pulumi.export("virtual_node", peer.virtual_node)
pulumi.export("milan_cluster_id", milan.cluster_id)
pulumi.export("rome_cluster_id", rome.cluster_id)
pulumi.export("offloading_status", peer.offloading_status)
pulumi.export("offloading_phase", offload.offloading_phase)
pulumi.export("twin_namespace", offload.remote_namespace_name)
