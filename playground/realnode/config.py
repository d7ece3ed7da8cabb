"""What a real node runs, before anything runs: its files, the configuration of containerd, the CNI,
kubelet and kube-proxy, and their command lines (pure).

Paths come in two kinds. The node's folder under the state dir (`NodeFiles`) holds what
survives a restart: containerd's root (images, snapshots), kubelet's folder, pod logs,
the CNI's leases and every configuration file. Inside the node's mount namespace some
of those are mounted where kubelet and containerd expect them (`NodeFiles.binds`), and
`/run/containerd` is a tmpfs of the node's own, for what a reboot forgets: containerd's
state and socket, runc's state, the shims' sockets, the pods' network namespaces
(`netns_mounts_under_state_dir`).

The settings are kind's where kind has one, and otherwise what this host needs:

- containerd: `restrict_oom_score_adj` (root here lacks CAP_SYS_RESOURCE, and runc
  fails every sandbox without it), the cgroupfs driver, the sandbox image of the assets
  (never pulled: imported at start), no plugin that writes outside the node's folders;
- kubelet: `failCgroupV1: false` and `cgroupDriver: cgroupfs` (this host has cgroup
  v1), `cgroupRoot` the node's cgroup, a serving certificate from the cluster CA (which
  kube-apiserver verifies), webhook authentication and authorization as kubeadm sets
  them, kind's eviction thresholds and image garbage collection off (images come from
  archives: one collected could not be pulled back), clusterDNS the tenth Service
  address, `resolvConf: ""` (pods get no nameserver of the host's: nothing leaves the
  machine);
- kube-proxy: nftables mode, conntrack settings left alone (kind's: a node namespace
  cannot set the host's), NodePorts on the node's address;
- the CNI: the bridge plugin on the node's `cni0` with host-local IPAM on its pod /24
  (the fabric made the bridge with the gateway address; kindnet's routes between nodes
  are the fabric's too), no masquerade of its own (the fabric's kindnet table does it),
  hairpin on (a pod reaches itself through its Service), and portmap for hostPorts.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from playground.addons import CLUSTER_DOMAIN, dns_service_ip

#: a tmpfs of the node's mount namespace: containerd's state, socket and runc's root
CONTAINERD_RUN = "/run/containerd"
CONTAINERD_SOCKET = f"{CONTAINERD_RUN}/containerd.sock"
#: containerd's namespace for what the CRI runs (where images must be imported)
CRI_NAMESPACE = "k8s.io"
#: where kubelet keeps its state, and pod logs (fixed paths in kubelet)
KUBELET_ROOT = "/var/lib/kubelet"
POD_LOGS = "/var/log/pods"
CONTAINER_LOGS = "/var/log/containers"
#: Debian's containernetworking-plugins
CNI_BIN_DIR = "/usr/lib/cni"
CNI_NETWORK = "playground"
KUBELET_HEALTHZ_PORT = 10248
KUBE_PROXY_HEALTHZ_PORT = 10256
KUBE_PROXY_METRICS_PORT = 10249
#: containerd plugins that would write outside the node's folders or need what this host lacks
DISABLED_PLUGINS = (
    "io.containerd.internal.v1.opt",
    "io.containerd.snapshotter.v1.aufs",
    "io.containerd.snapshotter.v1.btrfs",
    "io.containerd.snapshotter.v1.devmapper",
    "io.containerd.snapshotter.v1.zfs",
    "io.containerd.tracing.processor.v1.otlp",
)


@dataclass(frozen=True)
class NodeFiles:
    """A real node's folder under the state dir (`<cluster>/nodes/<node>/`)."""

    root: Path

    @property
    def containerd_root(self) -> Path:
        return self.root / "containerd"

    @property
    def containerd_config(self) -> Path:
        return self.root / "containerd.toml"

    @property
    def kubelet_config(self) -> Path:
        return self.root / "kubelet.yaml"

    @property
    def kube_proxy_config(self) -> Path:
        return self.root / "kube-proxy.yaml"

    @property
    def cni_config_dir(self) -> Path:
        return self.root / "cni" / "net.d"

    @property
    def cni_config(self) -> Path:
        return self.cni_config_dir / f"10-{CNI_NETWORK}.conflist"

    @property
    def ipam_dir(self) -> Path:
        """host-local IPAM's leases (its default is the host's /var/lib/cni/networks)."""
        return self.root / "cni" / "networks"

    @property
    def kubelet_dir(self) -> Path:
        return self.root / "kubelet"

    @property
    def pod_logs(self) -> Path:
        return self.root / "logs" / "pods"

    @property
    def container_logs(self) -> Path:
        return self.root / "logs" / "containers"

    def binds(self) -> list[tuple[Path, str]]:
        """(folder of the node, where its mount namespace mounts it), for what kubelet writes at fixed paths."""
        return [
            (self.kubelet_dir, KUBELET_ROOT),
            (self.pod_logs, POD_LOGS),
            (self.container_logs, CONTAINER_LOGS),
        ]

    def folders(self) -> list[Path]:
        """Every folder that must exist before the node's processes start."""
        return [
            self.containerd_root,
            self.cni_config_dir,
            self.ipam_dir,
            *(source for source, _ in self.binds()),
        ]


@dataclass(frozen=True)
class Credentials:
    """What a real node's kubelet authenticates with, and is authenticated by."""

    #: `system:node:<name>` in `system:nodes`
    kubeconfig: Path
    #: the cluster CA: clients of the kubelet API (kube-apiserver) present certificates it issued
    client_ca: Path
    serving_cert: Path
    serving_key: Path


@dataclass(frozen=True)
class RealNode:
    """One real node: its name, its address on the playground network, its pod /24 and its cgroup."""

    name: str
    address: str
    pod_cidr: str
    #: kubelet's `cgroupRoot` (a cgroup path, the same in every hierarchy)
    cgroup: str
    taints: tuple[str, ...] = ()


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def _toml(tables: Mapping[str, Mapping[str, object]], top: Mapping[str, object]) -> str:
    """A TOML document of `top`'s keys, then each table (`tables`' keys are dotted table names)."""
    lines = [f"{key} = {_toml_value(value)}" for key, value in top.items()]
    for table, values in tables.items():
        lines += ["", f"[{table}]", *(f"  {key} = {_toml_value(value)}" for key, value in values.items())]
    return "\n".join(lines) + "\n"


def containerd_config(files: NodeFiles, *, sandbox_image: str) -> str:
    """containerd 1.6's configuration (version 2) for the node."""
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return _toml(
        {
            "grpc": {"address": CONTAINERD_SOCKET},
            "ttrpc": {"address": ""},
            "metrics": {"address": ""},
            cri: {
                "sandbox_image": sandbox_image,
                "restrict_oom_score_adj": True,
                "netns_mounts_under_state_dir": True,
                "disable_apparmor": True,
                "stream_server_address": "127.0.0.1",
                "stream_server_port": "0",
            },
            f"{cri}.containerd": {"snapshotter": "overlayfs", "default_runtime_name": "runc"},
            f"{cri}.containerd.runtimes.runc": {"runtime_type": "io.containerd.runc.v2"},
            f"{cri}.containerd.runtimes.runc.options": {
                "SystemdCgroup": False,
                "Root": f"{CONTAINERD_RUN}/runc",
            },
            f"{cri}.cni": {"bin_dir": CNI_BIN_DIR, "conf_dir": str(files.cni_config_dir), "max_conf_num": 1},
        },
        {
            "version": 2,
            "root": str(files.containerd_root),
            "state": f"{CONTAINERD_RUN}/state",
            "oom_score": 0,
            "disabled_plugins": list(DISABLED_PLUGINS),
        },
    )


def cni_config(node: RealNode, files: NodeFiles) -> dict[str, Any]:
    """The CNI network of the node's pods: the bridge plugin on `cni0`, host-local on the node's /24."""
    network = ipaddress.IPv4Network(node.pod_cidr)
    return {
        "cniVersion": "1.0.0",
        "name": CNI_NETWORK,
        "plugins": [
            {
                "type": "bridge",
                "bridge": "cni0",
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": str(network), "gateway": str(network.network_address + 1)}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(files.ipam_dir),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def kubelet_config(
    node: RealNode,
    credentials: Credentials,
    *,
    service_cidr: str,
    lease_duration: int | None = None,
) -> dict[str, Any]:
    """The node's KubeletConfiguration (see the module docstring for why each setting is what it is)."""
    config: dict[str, Any] = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node.address,
        "port": 10250,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": KUBELET_HEALTHZ_PORT,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(credentials.client_ca)},
        },
        "authorization": {"mode": "Webhook"},
        "tlsCertFile": str(credentials.serving_cert),
        "tlsPrivateKeyFile": str(credentials.serving_key),
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        "containerRuntimeEndpoint": f"unix://{CONTAINERD_SOCKET}",
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": node.cgroup,
        "failCgroupV1": False,
        "failSwapOn": False,
        "clusterDNS": [dns_service_ip(service_cidr)],
        "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": "",
        "evictionHard": {
            "memory.available": "0%",
            "nodefs.available": "0%",
            "nodefs.inodesFree": "0%",
            "imagefs.available": "0%",
        },
        "imageGCHighThresholdPercent": 100,
        "registerWithTaints": [_taint(taint) for taint in node.taints],
    }
    if lease_duration is not None:
        config["nodeLeaseDurationSeconds"] = lease_duration
    return config


def _taint(taint: str) -> dict[str, str]:
    """`key[=value]:Effect` as a Taint."""
    key_value, _, effect = taint.rpartition(":")
    key, _, value = key_value.partition("=")
    return {"key": key, "effect": effect, **({"value": value} if value else {})}


def kube_proxy_config(node: RealNode, *, kubeconfig: Path, pod_cidr: str) -> dict[str, Any]:
    """The node's KubeProxyConfiguration: nftables mode, as kind's kube-proxy is configured otherwise."""
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "nftables",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": node.name,
        "clusterCIDR": pod_cidr,
        "bindAddress": "0.0.0.0",
        "healthzBindAddress": f"127.0.0.1:{KUBE_PROXY_HEALTHZ_PORT}",
        "metricsBindAddress": f"127.0.0.1:{KUBE_PROXY_METRICS_PORT}",
        "nodePortAddresses": ["primary"],
        "conntrack": {
            "maxPerCore": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
    }


def write_configs(
    node: RealNode,
    files: NodeFiles,
    credentials: Credentials,
    *,
    sandbox_image: str,
    service_cidr: str,
    pod_cidr: str,
    kube_proxy_kubeconfig: Path,
    lease_duration: int | None = None,
) -> None:
    """Make the node's folders and write its configuration files (a restart rewrites them)."""
    for folder in files.folders():
        folder.mkdir(parents=True, exist_ok=True)
    files.containerd_config.write_text(containerd_config(files, sandbox_image=sandbox_image))
    files.cni_config.write_text(json.dumps(cni_config(node, files), indent=2) + "\n")
    kubelet = kubelet_config(node, credentials, service_cidr=service_cidr, lease_duration=lease_duration)
    files.kubelet_config.write_text(yaml.safe_dump(kubelet, sort_keys=False))
    proxy = kube_proxy_config(node, kubeconfig=kube_proxy_kubeconfig, pod_cidr=pod_cidr)
    files.kube_proxy_config.write_text(yaml.safe_dump(proxy, sort_keys=False))


def containerd_command(files: NodeFiles) -> list[str]:
    return ["containerd", "--config", str(files.containerd_config)]


def kubelet_command(kubelet: Path, node: RealNode, files: NodeFiles, credentials: Credentials) -> list[str]:
    return [
        str(kubelet),
        f"--config={files.kubelet_config}",
        f"--kubeconfig={credentials.kubeconfig}",
        f"--hostname-override={node.name}",
        f"--node-ip={node.address}",
    ]


def kube_proxy_command(kube_proxy: Path, files: NodeFiles) -> list[str]:
    return [str(kube_proxy), f"--config={files.kube_proxy_config}"]
