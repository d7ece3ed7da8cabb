"""What a playground cluster is, before anything runs: its spec, its validation, its nodes,
its files and the command line of each of its processes.

All pure (no I/O), so every rule is unit-tested as a table: names are DNS-1123 labels
short enough for the node names made from them (kind's `<name>-control-plane`,
`<name>-worker`, `<name>-worker2`, ...), node `i` gets the `i`-th /24 of the pod CIDR
(kube-controller-manager's nodeipam hands them out the same way), and the control-plane
node is tainted `NoSchedule` only when there are workers, as in kind. `cluster.py`
runs what this module describes.

Networks (`network`): `netns`, the default, is kind's: every node is a network namespace
on the state dir's bridge with an address of its own (`node_addresses`, from the state
dir's /24 `node_network`, see `playground.network`); the API server (the emulator, or
etcd and kube-apiserver) and the control plane run in the control-plane node's
namespace and listen on kind's ports there (6443, 2379, 2381, 10257, 10259), the node
agents and kube-proxies in their nodes' namespaces, and `hostport` forwards 127.0.0.1:<api
server port> on the host to the API server (kind's port mapping). `loopback` is the old
model, kept as an emulator-only fallback for hosts without CAP_NET_ADMIN: every process
on the host's loopback addresses, no Services (kube refuses loopback endpoints).

Nodes (`real_nodes`): with real binaries and assets that have kubelet, kube-proxy and
their images, each node runs containerd, kubelet and kube-proxy (`playground.realnode`),
each in its node's network and mount namespaces (`role_mntns`); otherwise each node
runs our node agent and kube-proxy (`playground.nodeagent`, `playground.kubeproxy`).

The cluster's supervisor runs every process (`supervisor_plan`): each in its namespaces
(`role_netns`, `role_mntns`), in kubeadm's order, gated on and probed at the
control-plane node's address and kind's ports.
"""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playground.network import names, netns
from playground.network.fabric import ClusterNetwork, NodeNetwork
from playground.realbinary import (
    ADMIN,
    CONTROLLER_MANAGER,
    KUBE_PROXY,
    SCHEDULER,
    Assets,
    AssetsError,
    ClientIdentity,
    Pki,
    apiserver_command,
    controller_manager_command,
    etcd_command,
    node_identity,
    replaced_components,
    scheduler_command,
)
from playground.realnode import cgroups, mountns
from playground.realnode import config as realnode
from playground.supervisor import Plan, ProcessPlan

NETNS = "netns"
LOOPBACK = "loopback"
NETWORKS = (NETNS, LOOPBACK)
#: kind's ports, inside the control-plane node's namespace
API_SERVER_PORT = 6443
ETCD_PORT = 2379
ETCD_PEER_PORT = 2380
#: etcd's metrics listener, where kubeadm's probes ask /readyz (on the node's address here: the
#: supervisor probes from the host)
ETCD_METRICS_PORT = 2381
CONTROLLER_MANAGER_PORT = 10257
SCHEDULER_PORT = 10259
KUBELET_PORT = 10250
DEFAULT_POD_CIDR = "10.244.0.0/16"
DEFAULT_SERVICE_CIDR = "10.96.0.0/16"
CONTEXT_PREFIX = "playground-"
CONTROL_PLANE_TAINT = "node-role.kubernetes.io/control-plane:NoSchedule"
NODE_PREFIX_LENGTH = 24
#: a node name is also the `kubernetes.io/hostname` label's value: at most 63 characters
MAX_NODE_NAME = 63
MAX_NODES = 100
#: a DNS-1123 label (cluster names)
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

#: roles of a cluster's processes (besides `node/<name>`)
APISERVER = "apiserver"
ETCD = "etcd"
CONTROLPLANE = "controlplane"
KUBE_CONTROLLER_MANAGER = "kube-controller-manager"
KUBE_SCHEDULER = "kube-scheduler"
#: the host's port forwarded to the API server (kind's port mapping), in the netns network
HOSTPORT = "hostport"
#: a node's kubelet: the node agent, or on real nodes kubelet itself
NODE_ROLE_PREFIX = "node/"
KUBE_PROXY_ROLE_PREFIX = "kube-proxy/"
#: a real node's containerd
CONTAINERD_ROLE_PREFIX = "containerd/"
#: the roles of a node's processes, which run in its namespaces
NODE_PROCESS_PREFIXES = (CONTAINERD_ROLE_PREFIX, NODE_ROLE_PREFIX, KUBE_PROXY_ROLE_PREFIX)
#: what `playground up` and `status` call each mode
EMULATOR_MODE = "emulator"
AGENT_NODES_MODE = "real control plane, agent nodes"
REAL_NODES_MODE = "real nodes"


class SpecError(ValueError):
    """One or more problems with what was asked for; the message lists them all, one a line."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)


@dataclass(frozen=True)
class ClusterSpec:
    """One cluster, as `playground up` was asked for it and as `cluster.json` stores it."""

    name: str
    nodes: int = 1
    pod_cidr: str = DEFAULT_POD_CIDR
    service_cidr: str = DEFAULT_SERVICE_CIDR
    #: the API server's port on 127.0.0.1 (0: pick a free one when the cluster is created)
    api_server_port: int = 0
    #: the control plane's node-monitor flags and the node agents' Lease timing (None: their defaults)
    node_monitor_grace_period: float | None = None
    node_monitor_period: float | None = None
    node_lease_duration: int | None = None
    node_heartbeat: float | None = None
    #: real-binary mode: the `KUBEBUILDER_ASSETS` folder (None: the emulator)
    assets: str | None = None
    #: `netns` (kind's network) or `loopback` (the emulator-only fallback)
    network: str = NETNS
    #: real-binary mode: nodes run containerd, kubelet and kube-proxy (else our node agent and kube-proxy)
    real_nodes: bool = False
    #: the netns network: the state dir's /24 and each node's address on it ("" and (): assigned when created)
    node_network: str = ""
    node_addresses: tuple[str, ...] = ()

    @property
    def context(self) -> str:
        """The kubeconfig's context, cluster and user name (kind's `kind-<name>`)."""
        return f"{CONTEXT_PREFIX}{self.name}"

    @property
    def api_server_url(self) -> str:
        """Where the user's kubeconfig reaches the API server: a port of the host's 127.0.0.1 (kind's)."""
        return f"https://127.0.0.1:{self.api_server_port}"

    @property
    def mode(self) -> str:
        """What runs the cluster: the emulator, the real control plane with agent nodes, or real nodes."""
        if self.assets is None:
            return EMULATOR_MODE
        return REAL_NODES_MODE if self.real_nodes else AGENT_NODES_MODE

    @property
    def control_plane_address(self) -> str:
        """The address the cluster's own processes reach the control plane on (kind's control-plane node's)."""
        if self.network != NETNS:
            return "127.0.0.1"
        if not self.node_addresses:
            raise ValueError(f"cluster {self.name}: node addresses are assigned when it is first started")
        return self.node_addresses[0]

    @property
    def internal_api_server_url(self) -> str:
        """Where nodes, pods and other clusters reach the API server (`kind get kubeconfig --internal`)."""
        if self.network == NETNS:
            return f"https://{self.control_plane_address}:{API_SERVER_PORT}"
        return self.api_server_url

    def as_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["node_addresses"] = list(self.node_addresses)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClusterSpec:
        known = {spec_field.name for spec_field in dataclasses.fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        # a cluster stored before the netns network existed ran on loopback addresses
        values.setdefault("network", LOOPBACK)
        values["node_addresses"] = tuple(values.get("node_addresses") or ())
        return cls(**values)


@dataclass(frozen=True)
class NodePlan:
    name: str
    #: `control-plane` (labelled so once registered, as kubeadm does) or `worker`
    role: str
    pod_cidr: str
    taints: tuple[str, ...] = ()


def node_names(cluster: str, count: int) -> list[str]:
    """kind's node names: `<cluster>-control-plane`, `<cluster>-worker`, `<cluster>-worker2`, ..."""
    workers = [f"{cluster}-worker{index if index > 1 else ''}" for index in range(1, count)]
    return [f"{cluster}-control-plane", *workers]


def node_pod_cidrs(pod_cidr: str, count: int) -> list[str]:
    """The first `count` /24 subnets of `pod_cidr`, in order (node i gets number i)."""
    network = ipaddress.ip_network(pod_cidr)
    subnets = network.subnets(new_prefix=NODE_PREFIX_LENGTH)
    return [str(next(subnets)) for _ in range(count)]


def node_plans(spec: ClusterSpec) -> list[NodePlan]:
    names = node_names(spec.name, spec.nodes)
    cidrs = node_pod_cidrs(spec.pod_cidr, spec.nodes)
    taints = (CONTROL_PLANE_TAINT,) if spec.nodes > 1 else ()
    plans = [NodePlan(names[0], "control-plane", cidrs[0], taints)]
    plans += [NodePlan(name, "worker", cidr) for name, cidr in zip(names[1:], cidrs[1:], strict=True)]
    return plans


# validation


def name_problems(name: str) -> list[str]:
    if not name:
        return ["a cluster name cannot be empty"]
    if not _LABEL.match(name):
        return [
            f"cluster name {name!r}: use lowercase letters, digits and '-', starting and ending "
            "with a letter or digit (a DNS-1123 label, like kind's)"
        ]
    longest = max(node_names(name, 2), key=len)
    if len(longest) > MAX_NODE_NAME:
        limit = MAX_NODE_NAME - (len(longest) - len(name))
        return [
            f"cluster name {name!r} is too long: its node names (like {longest}) must fit in "
            f"{MAX_NODE_NAME} characters, so use at most {limit}"
        ]
    return []


def _ipv4_network(value: str, flag: str) -> tuple[ipaddress.IPv4Network | None, list[str]]:
    try:
        if "/" not in value:
            raise ValueError(value)
        network = ipaddress.ip_network(value, strict=False)
    except ValueError:
        return None, [f"{flag} {value!r} is not a network in CIDR notation (like 10.244.0.0/16)"]
    if network.version != 4:
        return None, [f"{flag} {value}: only IPv4 is supported (the node agents and Services are IPv4-only)"]
    assert isinstance(network, ipaddress.IPv4Network)
    if str(network) != value:
        return None, [f"{flag} {value} has host bits set: did you mean {network}?"]
    return network, []


def cidr_problems(spec: ClusterSpec) -> list[str]:
    pods, problems = _ipv4_network(spec.pod_cidr, "--pod-cidr")
    services, service_problems = _ipv4_network(spec.service_cidr, "--service-cidr")
    problems += service_problems
    if pods is not None:
        if pods.prefixlen > NODE_PREFIX_LENGTH:
            problems.append(
                f"--pod-cidr {pods} is too small: every node gets a /{NODE_PREFIX_LENGTH}, so use a "
                f"/{NODE_PREFIX_LENGTH} or larger"
            )
        elif 2 ** (NODE_PREFIX_LENGTH - pods.prefixlen) < spec.nodes:
            needed = NODE_PREFIX_LENGTH - max(spec.nodes - 1, 1).bit_length()
            problems.append(
                f"--pod-cidr {pods} holds only {2 ** (NODE_PREFIX_LENGTH - pods.prefixlen)} node "
                f"subnets (/{NODE_PREFIX_LENGTH}) for {spec.nodes} nodes: use a /{needed} or larger"
            )
    if services is not None and not 12 <= services.prefixlen <= 28:
        problems.append(
            f"--service-cidr {services}: use a prefix between /12 (kube-apiserver's largest) and /28"
        )
    if pods is not None and services is not None and pods.overlaps(services):
        problems.append(f"--pod-cidr {pods} and --service-cidr {services} overlap: pick disjoint ranges")
    return problems


def network_problems(spec: ClusterSpec) -> list[str]:
    if spec.network not in NETWORKS:
        return [f"--network {spec.network!r}: use {' or '.join(NETWORKS)}"]
    if spec.real_nodes and spec.assets is None:
        return ["real nodes run the real kubelet: set KUBEBUILDER_ASSETS to a folder with it (make real-k8s)"]
    if spec.network == LOOPBACK and spec.assets is not None:
        return [
            "--network loopback cannot run real binaries: kube-apiserver refuses loopback endpoint addresses "
            "(its own, and every pod's); use the default network (it needs CAP_NET_ADMIN), or unset "
            "KUBEBUILDER_ASSETS to use the emulator"
        ]
    if not spec.node_network:
        return []
    node_network = ipaddress.ip_network(spec.node_network)
    problems = []
    for flag, cidr in (("--pod-cidr", spec.pod_cidr), ("--service-cidr", spec.service_cidr)):
        with contextlib.suppress(ValueError):
            if ipaddress.ip_network(cidr).overlaps(node_network):
                problems.append(
                    f"{flag} {cidr} overlaps the playground network {node_network} of this state dir: "
                    "pick another range"
                )
    return problems


def spec_problems(spec: ClusterSpec) -> list[str]:
    """Everything wrong with `spec`, each with what to do about it (empty: fine)."""
    problems = name_problems(spec.name)
    if not 1 <= spec.nodes <= MAX_NODES:
        problems.append(f"--nodes {spec.nodes}: a cluster has between 1 and {MAX_NODES} nodes")
        return problems
    problems += cidr_problems(spec)
    problems += network_problems(spec)
    if not 0 <= spec.api_server_port < 65536:
        problems.append(f"--api-server-port {spec.api_server_port}: must be between 1 and 65535")
    heartbeat, lease = spec.node_heartbeat, spec.node_lease_duration
    if heartbeat is not None and lease is not None and not 0 < heartbeat < lease:
        problems.append("the node heartbeat must be positive and shorter than the node lease duration")
    return problems


def check_specs(specs: Sequence[ClusterSpec]) -> None:
    """Raise `SpecError` listing every problem of every spec, and names given twice."""
    problems = [problem for spec in specs for problem in spec_problems(spec)]
    names = [spec.name for spec in specs]
    for name in sorted({name for name in names if names.count(name) > 1}):
        problems.append(f"cluster name {name!r} is given more than once")
    ports = [spec.api_server_port for spec in specs if spec.api_server_port]
    for port in sorted({port for port in ports if ports.count(port) > 1}):
        problems.append(f"port {port} is asked for more than once")
    if problems:
        raise SpecError(problems)


def unassigned_ports(spec: ClusterSpec) -> list[str]:
    """The port fields of `spec` still 0 (the host's port of the API server; the rest are kind's, in the nodes)."""
    return ["api_server_port"] if spec.api_server_port == 0 else []


def ports_of(spec: ClusterSpec) -> dict[str, int]:
    """The fixed ports of the host's 127.0.0.1 that `spec`'s processes listen on, by what they are for."""
    return {"API server": spec.api_server_port} if spec.api_server_port else {}


# files


@dataclass(frozen=True)
class ClusterPaths:
    """The files of one cluster under `<state-dir>/<name>/`."""

    root: Path

    @property
    def spec(self) -> Path:
        return self.root / "cluster.json"

    @property
    def processes(self) -> Path:
        return self.root / "processes.json"

    @property
    def lock(self) -> Path:
        return self.root / ".lock"

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def internal_kubeconfig(self) -> Path:
        """The admin's credentials at the internal API server URL (`kind get kubeconfig --internal`)."""
        return self.root / "kubeconfig.internal"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def apiserver(self) -> Path:
        """The emulator's state dir (CA, ServiceAccount key, stored objects)."""
        return self.root / "apiserver"

    @property
    def controlplane(self) -> Path:
        return self.root / "controlplane"

    @property
    def pki(self) -> Pki:
        """Real-binary mode's certificates and keys."""
        return Pki(self.root / "pki")

    @property
    def etcd(self) -> Path:
        return self.root / "etcd"

    @property
    def supervisor(self) -> Path:
        """The supervisor's plan and held roles (its state is `processes`)."""
        return self.root / "supervisor"

    @property
    def plan(self) -> Path:
        return self.supervisor / "plan.json"

    @property
    def held(self) -> Path:
        return self.supervisor / "held.json"

    def node(self, name: str) -> Path:
        return self.root / "nodes" / name

    def component_kubeconfig(self, identity: ClientIdentity) -> Path:
        return self.root / "kubeconfigs" / f"{identity.user.replace(':', '-')}.kubeconfig"

    def log(self, role: str) -> Path:
        return self.logs / f"{role.replace('/', '-')}.log"


# processes


def client_identities(spec: ClusterSpec) -> list[ClientIdentity]:
    """The client certificates a cluster's processes use: admin, components, kube-proxy, one per node.

    The same in emulator and real-binary mode: each process is an API client with the
    identity the real component has.
    """
    return [
        ADMIN,
        CONTROLLER_MANAGER,
        SCHEDULER,
        KUBE_PROXY,
        *(node_identity(node.name) for node in node_plans(spec)),
    ]


def node_kubeconfig(paths: ClusterPaths, node: str) -> Path:
    """The node agent's kubelet credentials: `system:node:<name>` in `system:nodes`."""
    return paths.component_kubeconfig(node_identity(node))


def kube_proxy_kubeconfig(paths: ClusterPaths) -> Path:
    """kube-proxy's credentials: `system:kube-proxy`, which the bootstrap policy binds to `system:node-proxier`."""
    return paths.component_kubeconfig(KUBE_PROXY)


def controlplane_components(spec: ClusterSpec, assets: Assets | None) -> list[str]:
    """`--disable` for our control plane: what kube-scheduler / kube-controller-manager run instead."""
    return replaced_components(assets) if assets is not None else []


def node_netns_name(spec: ClusterSpec, paths: ClusterPaths, node: str) -> str:
    """The network namespace of `node` (its name; see playground.network.names)."""
    return names.node_netns(paths.root.parent, node)


def role_netns(spec: ClusterSpec, paths: ClusterPaths, role: str) -> str | None:
    """The network namespace the process of `role` runs in (None: the host's).

    As on kind: the control plane in the control-plane node's, each node agent (kubelet)
    and kube-proxy in its node's, and the host port forwarder on the host.
    """
    if spec.network != NETNS or role == HOSTPORT:
        return None
    node = _node_of_role(role)
    if node is not None:
        return node_netns_name(spec, paths, node)
    return node_netns_name(spec, paths, node_names(spec.name, 1)[0])


def _node_of_role(role: str) -> str | None:
    """The node whose process `role` is (containerd, kubelet or node agent, kube-proxy), else None."""
    for prefix in NODE_PROCESS_PREFIXES:
        if role.startswith(prefix):
            return role.removeprefix(prefix)
    return None


def role_mntns(spec: ClusterSpec, paths: ClusterPaths, role: str) -> Path | None:
    """The mount namespace the process of `role` runs in (None: the host's): a real node's own, for
    its containerd, kubelet and kube-proxy."""
    node = _node_of_role(role)
    if not spec.real_nodes or node is None:
        return None
    return mountns.path(node_netns_name(spec, paths, node))


def real_node(spec: ClusterSpec, paths: ClusterPaths, plan: NodePlan) -> realnode.RealNode:
    """`plan`'s node as a real node: its address, pod /24, taints and cgroup."""
    index = node_names(spec.name, spec.nodes).index(plan.name)
    return realnode.RealNode(
        name=plan.name,
        address=spec.node_addresses[index],
        pod_cidr=plan.pod_cidr,
        cgroup=cgroups.node_cgroup(node_netns_name(spec, paths, plan.name)),
        taints=plan.taints,
    )


def node_files(paths: ClusterPaths, node: str) -> realnode.NodeFiles:
    return realnode.NodeFiles(paths.node(node))


def kubelet_credentials(paths: ClusterPaths, node: str) -> realnode.Credentials:
    """A real node's kubelet credentials: `system:node:<name>`, and its serving certificate from the cluster CA."""
    return realnode.Credentials(
        kubeconfig=node_kubeconfig(paths, node),
        client_ca=paths.pki.ca_cert,
        serving_cert=paths.pki.kubelet_serving_cert(node),
        serving_key=paths.pki.kubelet_serving_key(node),
    )


def cluster_network(spec: ClusterSpec, paths: ClusterPaths) -> ClusterNetwork:
    """What `playground.network.fabric` makes for the cluster (netns network only)."""
    return ClusterNetwork(
        state_dir=paths.root.parent,
        cluster=spec.name,
        subnet=spec.node_network,
        pod_cidr=spec.pod_cidr,
        nodes=tuple(
            NodeNetwork(name=plan.name, index=index, address=address, pod_cidr=plan.pod_cidr)
            for index, (plan, address) in enumerate(zip(node_plans(spec), spec.node_addresses, strict=True))
        ),
    )


def api_server_cert_hosts(spec: ClusterSpec) -> list[str]:
    """Names and addresses besides kube-apiserver's own the serving certificate needs (kubeadm's certSANs)."""
    if spec.network != NETNS:
        return []
    return [spec.control_plane_address, node_names(spec.name, 1)[0]]


def commands(
    spec: ClusterSpec, paths: ClusterPaths, *, assets: Assets | None, all_components: Sequence[str]
) -> dict[str, list[str]]:
    """Every process of the cluster by role, in start order; `all_components` is our control plane's registry."""
    python = sys.executable
    in_netns = spec.network == NETNS
    control_plane = spec.control_plane_address
    result: dict[str, list[str]] = {}
    if assets is None:
        listen = f"0.0.0.0:{API_SERVER_PORT}" if in_netns else f"127.0.0.1:{spec.api_server_port}"
        result[APISERVER] = [
            python,
            "-m",
            "playground.apiserver",
            "--listen",
            listen,
            "--state-dir",
            str(paths.apiserver),
            "--service-cidr",
            spec.service_cidr,
            "--cluster-name",
            spec.context,
        ]
        if in_netns:
            result[APISERVER] += ["--advertise-address", control_plane]
            for host in api_server_cert_hosts(spec):
                result[APISERVER] += ["--cert-san", host]
    else:
        # real binaries run only in the netns network (network_problems): kind's ports, in the node
        result[ETCD] = etcd_command(
            assets,
            data_dir=paths.etcd,
            client_port=ETCD_PORT,
            peer_port=ETCD_PEER_PORT,
            metrics_url=f"http://{control_plane}:{ETCD_METRICS_PORT}",
        )
        result[APISERVER] = apiserver_command(
            assets,
            pki=paths.pki,
            etcd_port=ETCD_PORT,
            port=API_SERVER_PORT,
            service_cidr=spec.service_cidr,
            advertise_address=control_plane,
            bind_address="0.0.0.0",
            real_nodes=spec.real_nodes,
        )
        if assets.kube_controller_manager is not None:
            result[KUBE_CONTROLLER_MANAGER] = controller_manager_command(
                assets,
                pki=paths.pki,
                kubeconfig=paths.component_kubeconfig(CONTROLLER_MANAGER),
                port=CONTROLLER_MANAGER_PORT,
                bind_address=control_plane,
                cluster_name=spec.context,
                service_cidr=spec.service_cidr,
                pod_cidr=spec.pod_cidr,
                node_monitor_grace_period=spec.node_monitor_grace_period,
                node_monitor_period=spec.node_monitor_period,
            )
        if assets.kube_scheduler is not None:
            result[KUBE_SCHEDULER] = scheduler_command(
                assets,
                kubeconfig=paths.component_kubeconfig(SCHEDULER),
                port=SCHEDULER_PORT,
                bind_address=control_plane,
            )
    if in_netns:
        result[HOSTPORT] = [
            python,
            "-m",
            "playground.network.hostport",
            "--listen",
            f"127.0.0.1:{spec.api_server_port}",
            "--connect",
            f"{control_plane}:{API_SERVER_PORT}",
        ]
    disabled = controlplane_components(spec, assets)
    if any(name not in disabled for name in all_components):
        controlplane = [
            python,
            "-m",
            "playground.controlplane",
            "--kubeconfig",
            str(paths.component_kubeconfig(CONTROLLER_MANAGER)),
            "--scheduler-kubeconfig",
            str(paths.component_kubeconfig(SCHEDULER)),
            "--pod-cidr",
            spec.pod_cidr,
            "--service-cidr",
            spec.service_cidr,
            "--state-dir",
            str(paths.controlplane),
            "--bind-address",
            control_plane,
        ]
        if disabled:
            controlplane += ["--disable", ",".join(disabled)]
        if spec.node_monitor_grace_period is not None:
            controlplane += ["--node-monitor-grace-period", f"{spec.node_monitor_grace_period:g}"]
        if spec.node_monitor_period is not None:
            controlplane += ["--node-monitor-period", f"{spec.node_monitor_period:g}"]
        result[CONTROLPLANE] = controlplane
    if spec.real_nodes and assets is not None:
        result.update(real_node_commands(spec, paths, assets))
        return result
    for index, node in enumerate(node_plans(spec)):
        result[NODE_ROLE_PREFIX + node.name] = node_agent_command(spec, paths, node, index=index)
    if in_netns:
        for node in node_plans(spec):
            result[KUBE_PROXY_ROLE_PREFIX + node.name] = kube_proxy_command(spec, paths, node)
    return result


def real_node_commands(spec: ClusterSpec, paths: ClusterPaths, assets: Assets) -> dict[str, list[str]]:
    """Each real node's containerd, kubelet and kube-proxy, by role."""
    if assets.kubelet is None or assets.kube_proxy is None:
        raise AssetsError(f"{assets.directory} has no kubelet or kube-proxy: real nodes need both")
    result: dict[str, list[str]] = {}
    for plan in node_plans(spec):
        node = real_node(spec, paths, plan)
        files = node_files(paths, plan.name)
        result[CONTAINERD_ROLE_PREFIX + plan.name] = realnode.containerd_command(files)
        result[NODE_ROLE_PREFIX + plan.name] = realnode.kubelet_command(
            assets.kubelet, node, files, kubelet_credentials(paths, plan.name)
        )
        result[KUBE_PROXY_ROLE_PREFIX + plan.name] = realnode.kube_proxy_command(assets.kube_proxy, files)
    return result


#: roles that start only once the API server is ready (kubeadm's order: they fail against one still
#: bootstrapping its RBAC); node agents and kube-proxies start at once, as kubelets and kube-proxy's
#: DaemonSet pods do, and retry until it answers
_AFTER_API_SERVER = (KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER, CONTROLPLANE)


def probes(spec: ClusterSpec) -> dict[str, str]:
    """The readiness probe of each probed role: the URL kubeadm's static pod probes ask, at the address
    the supervisor reaches from the host (the control-plane node's; in the loopback fallback the host port)."""
    if spec.network != NETNS:
        return {APISERVER: f"{spec.api_server_url}/readyz"}
    return {
        ETCD: f"http://{spec.control_plane_address}:{ETCD_METRICS_PORT}/readyz",
        APISERVER: f"{spec.internal_api_server_url}/readyz",
    }


def supervisor_plan(
    spec: ClusterSpec, paths: ClusterPaths, *, assets: Assets | None, all_components: Sequence[str]
) -> Plan:
    """What the cluster's supervisor runs: `commands` in order, each in its network namespace, with
    kubeadm's start gates and probes."""
    ready = probes(spec)
    plans = []
    for role, argv in commands(spec, paths, assets=assets, all_components=all_components).items():
        after: tuple[str, ...] = ()
        if role == APISERVER and assets is not None:
            after = (ETCD,)
        elif role in _AFTER_API_SERVER:
            after = (APISERVER,)
        namespace = role_netns(spec, paths, role)
        mounts = role_mntns(spec, paths, role)
        plans.append(
            ProcessPlan(
                role=role,
                argv=tuple(argv),
                log=str(paths.log(role)),
                after=after,
                ready=ready.get(role),
                netns=None if namespace is None else str(netns.path(namespace)),
                mntns=None if mounts is None else str(mounts),
            )
        )
    return Plan(processes=tuple(plans))


def node_agent_command(
    spec: ClusterSpec, paths: ClusterPaths, node: NodePlan, *, index: int = 0
) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "playground.nodeagent",
        "--kubeconfig",
        str(node_kubeconfig(paths, node.name)),
        "--node",
        node.name,
        "--pod-cidr",
        node.pod_cidr,
        "--state-dir",
        str(paths.node(node.name)),
    ]
    if spec.network == NETNS:
        command += [
            "--address",
            spec.node_addresses[index],
            "--kubelet-port",
            str(KUBELET_PORT),
            "--pod-netns-prefix",
            names.node_pods_netns_prefix(paths.root.parent, node.name),
        ]
    for taint in node.taints:
        command += ["--taint", taint]
    if spec.node_lease_duration is not None:
        command += ["--lease-duration", str(spec.node_lease_duration)]
    if spec.node_heartbeat is not None:
        command += ["--heartbeat", f"{spec.node_heartbeat:g}"]
    return command


def kube_proxy_command(spec: ClusterSpec, paths: ClusterPaths, node: NodePlan) -> list[str]:
    """kube-proxy of `node`, as kind's DaemonSet runs it (nftables mode)."""
    return [
        sys.executable,
        "-m",
        "playground.kubeproxy",
        "--kubeconfig",
        str(kube_proxy_kubeconfig(paths)),
        "--hostname-override",
        node.name,
        "--cluster-cidr",
        spec.pod_cidr,
    ]
