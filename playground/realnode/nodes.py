"""A cluster's real nodes, as `playground.cluster` sets them up and takes them down.

In order: `write_files` (at every start: each node's folders and configuration, see
`config`), `prepare_host` (each node's mount namespace and cgroup, after the cluster's
network and before its supervisor), `load_images` (once each node's containerd
answers, the assets' images, before kubelet starts: kubelets start held, and the
cluster releases them after this), and at the end `remove_host` (after the supervisor
stopped every process, before the network goes). Blocking: call from a worker thread.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from playground.realbinary import SANDBOX_IMAGE, Assets
from playground.spec import (
    ClusterPaths,
    ClusterSpec,
    kube_proxy_kubeconfig,
    kubelet_credentials,
    node_files,
    node_netns_name,
    node_plans,
    real_node,
)

from . import host, images, mountns
from .config import write_configs

logger = logging.getLogger(__name__)


def _hosts(spec: ClusterSpec, paths: ClusterPaths) -> list[tuple[str, host.NodeHost]]:
    return [
        (plan.name, host.NodeHost(node_netns_name(spec, paths, plan.name), node_files(paths, plan.name)))
        for plan in node_plans(spec)
    ]


def write_files(spec: ClusterSpec, paths: ClusterPaths, assets: Assets) -> None:
    """Every node's folders and configuration files."""
    sandbox = assets.image(SANDBOX_IMAGE).name
    for plan in node_plans(spec):
        write_configs(
            real_node(spec, paths, plan),
            node_files(paths, plan.name),
            kubelet_credentials(paths, plan.name),
            sandbox_image=sandbox,
            service_cidr=spec.service_cidr,
            pod_cidr=spec.pod_cidr,
            kube_proxy_kubeconfig=kube_proxy_kubeconfig(paths),
            lease_duration=spec.node_lease_duration,
        )


def prepare_host(spec: ClusterSpec, paths: ClusterPaths) -> None:
    for _, node in _hosts(spec, paths):
        host.prepare(node)


def remove_host(spec: ClusterSpec, paths: ClusterPaths) -> None:
    """Remove what every node made on the host (whatever state a run or a crash left it in)."""
    for _, node in _hosts(spec, paths):
        host.remove(node)


def load_images(spec: ClusterSpec, paths: ClusterPaths, archives: Sequence[Path], *, timeout: float) -> None:
    """Import `archives` into every node's containerd (all nodes at once), waiting up to `timeout`
    seconds for each containerd to answer; ImageError names the node that failed."""

    def load(name: str, node: host.NodeHost) -> None:
        namespace = mountns.path(node.namespace)
        images.wait_for_containerd(namespace, node=name, timeout=timeout)
        for archive in archives:
            images.import_archive(namespace, archive, node=name)

    with ThreadPoolExecutor(max_workers=max(spec.nodes, 1), thread_name_prefix="images") as pool:
        for future in [pool.submit(load, name, node) for name, node in _hosts(spec, paths)]:
            future.result()
