"""Real-binary mode without the binaries: finding the assets, the PKI, the credentials each
process gets, and the command lines (no etcd or kube-apiserver exists on this machine;
`KUBEBUILDER_ASSETS=... make test` runs the behaviour tests against the real thing)."""

from __future__ import annotations

import base64
import dataclasses
import ipaddress
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from cryptography.x509.oid import NameOID

from playground.cluster import Cluster, resolve
from playground.controlplane.components import COMPONENTS, CONTROLLERS
from playground.network import names, netns
from playground.realbinary import (
    ASSETS_ENV,
    Assets,
    AssetsError,
    Pki,
    apiserver_command,
    controller_manager_command,
    find_assets,
    first_service_ip,
    generate_pki,
    node_identity,
    replaced_components,
)
from playground.spec import (
    ClusterPaths,
    ClusterSpec,
    commands,
    kube_proxy_kubeconfig,
    node_kubeconfig,
    supervisor_plan,
)
from playground.supervisor import Plan, stop_order


def fake_assets(directory: Path, *names: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        path = directory / name
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    return directory


def test_assets_are_found_only_where_kubebuilder_assets_points(tmp_path: Path) -> None:
    assert find_assets({}) is None
    assert find_assets({ASSETS_ENV: ""}) is None
    with pytest.raises(AssetsError, match="has no executable kube-apiserver: point it at a folder"):
        find_assets({ASSETS_ENV: str(fake_assets(tmp_path / "half", "etcd"))})
    minimal = find_assets({ASSETS_ENV: str(fake_assets(tmp_path / "envtest", "etcd", "kube-apiserver"))})
    assert minimal is not None
    assert (minimal.kube_controller_manager, minimal.kube_scheduler) == (None, None)
    full = find_assets(
        {
            ASSETS_ENV: str(
                fake_assets(
                    tmp_path / "full", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"
                )
            )
        }
    )
    assert full is not None and full.kube_scheduler == tmp_path / "full" / "kube-scheduler"


def test_new_clusters_take_the_mode_from_the_environment(tmp_path: Path) -> None:
    assets = fake_assets(tmp_path / "bin", "etcd", "kube-apiserver")
    (real,) = resolve(["r"], state_dir=tmp_path, environ={ASSETS_ENV: str(assets)})
    (emulated,) = resolve(["e"], state_dir=tmp_path, environ={})
    assert (real.assets, emulated.assets) == (str(assets), None)


def _assets(tmp_path: Path, *optional: str) -> Assets:
    found = find_assets({ASSETS_ENV: str(fake_assets(tmp_path / "bin", "etcd", "kube-apiserver", *optional))})
    assert found is not None
    return found


def _real_spec(tmp_path: Path) -> ClusterSpec:
    return ClusterSpec(
        "real",
        nodes=2,
        api_server_port=36443,
        assets=str(tmp_path / "bin"),
        node_monitor_grace_period=4,
        node_network="172.30.9.0/24",
        node_addresses=("172.30.9.2", "172.30.9.3"),
    )


@pytest.mark.parametrize(
    ("optional", "processes", "disabled"),
    [
        ((), ["etcd", "apiserver", "controlplane"], None),
        (("kube-scheduler",), ["etcd", "apiserver", "kube-scheduler", "controlplane"], "scheduler"),
        (
            ("kube-controller-manager",),
            ["etcd", "apiserver", "kube-controller-manager", "controlplane"],
            ",".join(CONTROLLERS),
        ),
        (
            ("kube-controller-manager", "kube-scheduler"),
            ["etcd", "apiserver", "kube-controller-manager", "kube-scheduler"],
            None,
        ),
    ],
    ids=["apiserver-only", "with-scheduler", "with-controller-manager", "all-binaries"],
)
def test_our_control_plane_runs_only_what_the_binaries_do_not(
    tmp_path: Path, optional: tuple[str, ...], processes: list[str], disabled: str | None
) -> None:
    assets = _assets(tmp_path, *optional)
    spec = _real_spec(tmp_path)
    plan = commands(spec, ClusterPaths(tmp_path / "real"), assets=assets, all_components=list(COMPONENTS))
    nodes = ["node/real-control-plane", "node/real-worker"]
    proxies = ["kube-proxy/real-control-plane", "kube-proxy/real-worker"]
    binaries = [process for process in processes if process != "controlplane"]
    ours = ["controlplane"] if "controlplane" in processes else []
    assert list(plan) == [*binaries, "hostport", *ours, *nodes, *proxies]
    if "controlplane" in plan:
        flags = plan["controlplane"]
        assert (flags[flags.index("--disable") + 1] if "--disable" in flags else None) == disabled
    assert set(replaced_components(assets)) | {name for name in COMPONENTS if "controlplane" in plan} >= set(
        COMPONENTS
    )


def test_kube_apiserver_flags(tmp_path: Path) -> None:
    pki = Pki(tmp_path / "pki")
    command = apiserver_command(
        _assets(tmp_path), pki=pki, etcd_port=2379, port=6443, service_cidr="10.96.0.0/16"
    )
    flags = dict(arg.removeprefix("--").split("=", 1) for arg in command[1:])
    assert command[0] == str(tmp_path / "bin" / "kube-apiserver")
    assert flags["bind-address"] == flags["advertise-address"] == "127.0.0.1"
    assert flags["secure-port"] == "6443"
    assert flags["etcd-servers"] == "http://127.0.0.1:2379"
    assert flags["service-cluster-ip-range"] == "10.96.0.0/16"
    assert flags["authorization-mode"] == "Node,RBAC"
    assert flags["enable-admission-plugins"] == "NodeRestriction"
    assert flags["client-ca-file"] == str(pki.ca_cert)
    assert flags["service-account-key-file"] == str(pki.sa_pub)
    assert flags["service-account-signing-key-file"] == str(pki.sa_key)
    assert flags["kubelet-client-certificate"] == str(pki.kubelet_client_cert)
    assert flags["allow-privileged"] == "true"
    assert flags["enable-bootstrap-token-auth"] == "true"
    assert flags["kubelet-preferred-address-types"] == "InternalIP,ExternalIP,Hostname"
    # kubeadm's front proxy: without it the controllers log `missing content for CA bundle
    # "client-ca::kube-system::extension-apiserver-authentication::requestheader-client-ca-file"`
    assert flags["requestheader-client-ca-file"] == str(pki.front_proxy_ca_cert)
    assert flags["requestheader-allowed-names"] == "front-proxy-client"
    assert flags["requestheader-username-headers"] == "X-Remote-User"
    assert flags["requestheader-group-headers"] == "X-Remote-Group"
    assert flags["requestheader-extra-headers-prefix"] == "X-Remote-Extra-"
    assert flags["proxy-client-cert-file"] == str(pki.front_proxy_client_cert)
    assert flags["proxy-client-key-file"] == str(pki.front_proxy_client_key)
    # webhooks and aggregated APIs by Service reach their endpoints: nothing resolves Service names there
    assert flags["enable-aggregator-routing"] == "true"


def test_in_the_netns_network_the_control_plane_runs_on_its_node_address_with_kinds_ports(
    tmp_path: Path,
) -> None:
    assets = _assets(tmp_path, "kube-controller-manager", "kube-scheduler")
    spec = _real_spec(tmp_path)
    plan = commands(spec, ClusterPaths(tmp_path / "real"), assets=assets, all_components=list(COMPONENTS))
    apiserver = dict(arg.removeprefix("--").split("=", 1) for arg in plan["apiserver"][1:])
    assert apiserver["advertise-address"] == "172.30.9.2"
    assert (apiserver["bind-address"], apiserver["secure-port"]) == ("0.0.0.0", "6443")
    assert apiserver["etcd-servers"] == "http://127.0.0.1:2379"
    etcd = dict(arg.removeprefix("--").split("=", 1) for arg in plan["etcd"][1:])
    assert etcd["listen-client-urls"] == "http://127.0.0.1:2379"
    # only etcd's metrics and health listener is on the node's address (kubeadm's port 2381)
    assert etcd["listen-metrics-urls"] == "http://172.30.9.2:2381"
    assert plan["hostport"][-4:] == ["--listen", "127.0.0.1:36443", "--connect", "172.30.9.2:6443"]
    proxy = plan["kube-proxy/real-worker"]
    assert proxy[proxy.index("--kubeconfig") + 1].endswith("system-kube-proxy.kubeconfig")
    assert proxy[proxy.index("--hostname-override") + 1] == "real-worker"


def test_controller_manager_and_scheduler_flags(tmp_path: Path) -> None:
    assets = _assets(tmp_path, "kube-controller-manager", "kube-scheduler")
    spec = _real_spec(tmp_path)
    plan = commands(spec, ClusterPaths(tmp_path / "real"), assets=assets, all_components=list(COMPONENTS))
    kcm = dict(arg.removeprefix("--").split("=", 1) for arg in plan["kube-controller-manager"][1:])
    assert kcm["secure-port"] == "10257" and kcm["bind-address"] == "172.30.9.2"
    assert kcm["leader-elect"] == "false"
    assert kcm["use-service-account-credentials"] == "true"
    assert kcm["allocate-node-cidrs"] == "false"
    assert kcm["node-monitor-grace-period"] == "4s"
    assert kcm["kubeconfig"].endswith("system-kube-controller-manager.kubeconfig")
    assert kcm["service-account-private-key-file"].endswith("pki/sa.key")
    assert kcm["root-ca-file"] == kcm["cluster-signing-cert-file"] == kcm["client-ca-file"]
    assert kcm["cluster-signing-key-file"].endswith("pki/ca.key")
    assert kcm["requestheader-client-ca-file"].endswith("pki/front-proxy-ca.crt")
    assert kcm["controllers"] == "*,bootstrapsigner,tokencleaner"
    assert (kcm["cluster-cidr"], kcm["service-cluster-ip-range"]) == ("10.244.0.0/16", "10.96.0.0/16")
    scheduler = dict(arg.removeprefix("--").split("=", 1) for arg in plan["kube-scheduler"][1:])
    assert scheduler["secure-port"] == "10259" and scheduler["leader-elect"] == "false"
    assert scheduler["bind-address"] == "172.30.9.2"
    assert controller_manager_command(assets, pki=Pki(tmp_path), kubeconfig=tmp_path, port=1, cluster_name="c",
                                      service_cidr="10.96.0.0/16", pod_cidr="10.244.0.0/16",
                                      node_monitor_period=0.5)[-1] == "--node-monitor-period=0.5s"  # fmt: skip


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _subject(cert: x509.Certificate) -> tuple[str, list[str]]:
    common_name = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    groups = [attr.value for attr in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    return str(common_name), [str(group) for group in groups]


def test_the_pki_has_what_kube_apiserver_and_the_node_authorizer_need(tmp_path: Path) -> None:
    pki = Pki(tmp_path / "pki")
    generate_pki(
        pki, service_cidr="10.96.0.0/16", identities=[node_identity("n1")], hosts=["172.30.9.2", "n1"]
    )
    ca = _cert(pki.ca_cert)
    serving = _cert(pki.apiserver_cert)
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {"localhost", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"} <= set(
        names.get_values_for_type(x509.DNSName)
    )
    assert {"n1"} <= set(names.get_values_for_type(x509.DNSName))
    addresses = {ipaddress.ip_address(a) for a in ("127.0.0.1", "10.96.0.1", "172.30.9.2")}
    assert addresses <= set(names.get_values_for_type(x509.IPAddress))
    assert _subject(_cert(pki.client_cert("system:node:n1"))) == ("system:node:n1", ["system:nodes"])
    assert _subject(_cert(pki.kubelet_client_cert))[1] == ["system:masters"]
    for path in (pki.apiserver_cert, pki.kubelet_client_cert, pki.client_cert("system:node:n1")):
        _cert(path).verify_directly_issued_by(ca)
    # the front proxy has a CA of its own, which signs only the API server's proxy client
    front_proxy_ca = _cert(pki.front_proxy_ca_cert)
    assert front_proxy_ca.subject != ca.subject
    assert _subject(_cert(pki.front_proxy_client_cert)) == ("front-proxy-client", [])
    _cert(pki.front_proxy_client_cert).verify_directly_issued_by(front_proxy_ca)
    assert oct(pki.front_proxy_client_key.stat().st_mode & 0o777) == "0o600"
    assert isinstance(load_pem_private_key(pki.sa_key.read_bytes(), None), rsa.RSAPrivateKey)
    before = {path.name: path.read_bytes() for path in pki.directory.iterdir()}
    generate_pki(pki, service_cidr="10.96.0.0/16", identities=[node_identity("n1")])
    assert {path.name: path.read_bytes() for path in pki.directory.iterdir()} == before
    assert first_service_ip("10.100.0.0/24") == "10.100.0.1"


def _identity(path: Path) -> tuple[str, list[str]]:
    config = yaml.safe_load(path.read_text())
    user = config["users"][0]["user"]
    return _subject(x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"])))


@pytest.mark.parametrize("real", [True, False], ids=["real-binaries", "emulator"])
def test_every_process_gets_the_identity_of_the_real_component(tmp_path: Path, real: bool) -> None:
    fake_assets(tmp_path / "bin", "etcd", "kube-apiserver")
    spec = _real_spec(tmp_path)
    if not real:
        spec = dataclasses.replace(spec, assets=None)
    cluster = Cluster(spec, state_dir=tmp_path / "state")
    cluster._prepare()
    plan = commands(spec, cluster.paths, assets=cluster.assets(), all_components=list(COMPONENTS))
    for node in cluster.node_names:
        agent = plan[f"node/{node}"]
        assert agent[agent.index("--kubeconfig") + 1] == str(node_kubeconfig(cluster.paths, node))
        assert _identity(node_kubeconfig(cluster.paths, node)) == (f"system:node:{node}", ["system:nodes"])
        assert "--role" not in agent
        proxy = plan[f"kube-proxy/{node}"]
        assert proxy[proxy.index("--kubeconfig") + 1] == str(kube_proxy_kubeconfig(cluster.paths))
        # kind's kubelets and kube-proxies reach the API server at the control-plane node's address
        config = yaml.safe_load(node_kubeconfig(cluster.paths, node).read_text())
        assert config["clusters"][0]["cluster"]["server"] == "https://172.30.9.2:6443"
    assert _identity(kube_proxy_kubeconfig(cluster.paths)) == ("system:kube-proxy", [])
    controlplane = plan["controlplane"]
    assert _identity(Path(controlplane[controlplane.index("--kubeconfig") + 1])) == (
        "system:kube-controller-manager",
        [],
    )
    assert _identity(Path(controlplane[controlplane.index("--scheduler-kubeconfig") + 1])) == (
        "system:kube-scheduler",
        [],
    )
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    assert admin["current-context"] == "playground-real"
    assert admin["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:36443"
    assert _identity(cluster.kubeconfig) == ("kubernetes-admin", ["system:masters"])


def test_the_control_plane_starts_in_kubeadms_order_each_in_its_nodes_namespace(tmp_path: Path) -> None:
    assets = _assets(tmp_path, "kube-controller-manager", "kube-scheduler")
    spec = _real_spec(tmp_path)
    paths = ClusterPaths(tmp_path / "real")
    plan = supervisor_plan(spec, paths, assets=assets, all_components=list(COMPONENTS))
    gates = {process.role: process.after for process in plan.processes}
    assert gates == {
        "etcd": (),
        "apiserver": ("etcd",),
        "kube-controller-manager": ("apiserver",),
        "kube-scheduler": ("apiserver",),
        "hostport": (),
        "node/real-control-plane": (),
        "node/real-worker": (),
        "kube-proxy/real-control-plane": (),
        "kube-proxy/real-worker": (),
    }
    # probed where the supervisor, on the host, reaches them: the control-plane node's address, kind's ports
    assert plan.process("etcd").ready == "http://172.30.9.2:2381/readyz"
    assert plan.process("apiserver").ready == "https://172.30.9.2:6443/readyz"
    control_plane = str(netns.path(names.node_netns(tmp_path, "real-control-plane")))
    worker = str(netns.path(names.node_netns(tmp_path, "real-worker")))
    assert {process.role: process.netns for process in plan.processes} == {
        "etcd": control_plane,
        "apiserver": control_plane,
        "kube-controller-manager": control_plane,
        "kube-scheduler": control_plane,
        "hostport": None,
        "node/real-control-plane": control_plane,
        "node/real-worker": worker,
        "kube-proxy/real-control-plane": control_plane,
        "kube-proxy/real-worker": worker,
    }
    assert stop_order(plan, plan.roles)[-3:] == ["kube-controller-manager", "apiserver", "etcd"]
    assert Plan.from_json(plan.as_json()) == plan
    # on the emulator, our control plane waits for the API server the same way
    emulated = supervisor_plan(
        ClusterSpec(
            "emu", api_server_port=7443, node_network="172.30.9.0/24", node_addresses=("172.30.9.4",)
        ),
        ClusterPaths(tmp_path / "emu"),
        assets=None,
        all_components=list(COMPONENTS),
    )
    assert {process.role: process.after for process in emulated.processes} == {
        "apiserver": (),
        "hostport": (),
        "controlplane": ("apiserver",),
        "node/emu-control-plane": (),
        "kube-proxy/emu-control-plane": (),
    }
    assert emulated.process("apiserver").ready == "https://172.30.9.4:6443/readyz"
    # the loopback fallback: no namespaces, the API server probed at its port of the host
    flat = supervisor_plan(
        ClusterSpec("flat", api_server_port=7444, network="loopback"),
        ClusterPaths(tmp_path / "flat"),
        assets=None,
        all_components=list(COMPONENTS),
    )
    assert flat.roles == ["apiserver", "controlplane", "node/flat-control-plane"]
    assert flat.process("apiserver").ready == "https://127.0.0.1:7444/readyz"
    assert all(process.netns is None for process in flat.processes)
