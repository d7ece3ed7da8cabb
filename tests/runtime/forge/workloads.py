"""Every workload the runtime's manifests run from the runtime image, as the forge builds them.

The install manifests' Deployments and DaemonSet, a virtual kubelet's Deployment and a
gateway's: what the container tests (here and in tests/tools/images) hold to the image.
"""

from __future__ import annotations

from runtime.api.objects import JSON
from runtime.forge import networking
from runtime.forge import virtualnode as vn
from runtime.forge.install import InstallOptions, install_manifests

WORKLOAD_KINDS = ("Deployment", "DaemonSet")


def install_options() -> InstallOptions:
    return InstallOptions(
        cluster_id="2f0f0b7e-1c1e-4b8e-9d3a-0c1f2e3d4c5b",
        cluster_name="rome",
        api_server_url="https://127.0.0.1:6443",
        pod_cidr="10.200.0.0/16",
        service_cidr="10.96.0.0/12",
    )


def runtime_workloads() -> dict[str, JSON]:
    """The component each workload runs (its container's name) to the workload."""
    workloads = [obj for obj in install_manifests(install_options()) if obj["kind"] in WORKLOAD_KINDS]
    node = vn.virtual_node(
        "milan",
        namespace="liqo-tenant-milan",
        cluster_id="p-id",
        resource_slice_name="rome",
        resources={"cpu": "2", "memory": "4Gi"},
        credential_secret="liqo-credential-milan",
    )
    node["metadata"]["uid"] = "vn-uid"
    workloads.append(vn.deployment(node, home_cluster_id="c-id"))
    workloads.append(
        networking.gateway_deployment(
            "gw-milan",
            namespace="liqo-tenant-milan",
            mode="server",
            remote_cluster_id="p-id",
            remote_cluster_name="milan",
            interface="liqo-0123456789",
            image=install_options().image,
            pod_cidr="10.244.0.0/16",
        )
    )
    return {workload["spec"]["template"]["spec"]["containers"][0]["name"]: workload for workload in workloads}


def pod_spec(workload: JSON) -> JSON:
    spec: JSON = workload["spec"]["template"]["spec"]
    return spec


def container(workload: JSON) -> JSON:
    (only,) = pod_spec(workload)["containers"]
    found: JSON = only
    return found


def run_as_user(workload: JSON) -> int | None:
    """The user the container runs as (its own securityContext, else the pod's; None: the image's)."""
    for context in (
        container(workload).get("securityContext") or {},
        pod_spec(workload).get("securityContext") or {},
    ):
        if "runAsUser" in context:
            return int(context["runAsUser"])
    return None
