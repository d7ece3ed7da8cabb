"""Real-binary mode without the binaries: finding the assets, the PKI, the credentials each
process gets, and the command lines (no etcd or kube-apiserver exists on this machine;
`KUBEBUILDER_ASSETS=... make test` runs the behaviour tests against the real thing)."""

from __future__ import annotations

import base64
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
from playground.spec import ClusterPaths, ClusterSpec, commands, kube_proxy_kubeconfig, node_kubeconfig


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
    assert flags["client-ca-file"] == str(pki.ca_cert)
    assert flags["service-account-key-file"] == str(pki.sa_pub)
    assert flags["service-account-signing-key-file"] == str(pki.sa_key)
    assert flags["kubelet-client-certificate"] == str(pki.kubelet_client_cert)
    assert flags["allow-privileged"] == "true"
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
    assert kcm["root-ca-file"] == kcm["cluster-signing-cert-file"]
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
    assert isinstance(load_pem_private_key(pki.sa_key.read_bytes(), None), rsa.RSAPrivateKey)
    before = {path.name: path.read_bytes() for path in pki.directory.iterdir()}
    generate_pki(pki, service_cidr="10.96.0.0/16", identities=[node_identity("n1")])
    assert {path.name: path.read_bytes() for path in pki.directory.iterdir()} == before
    assert first_service_ip("10.100.0.0/24") == "10.100.0.1"


def test_each_node_agent_gets_a_kubeconfig_of_its_own_node_identity(tmp_path: Path) -> None:
    fake_assets(tmp_path / "bin", "etcd", "kube-apiserver")
    spec = _real_spec(tmp_path)
    cluster = Cluster(spec, state_dir=tmp_path / "state")
    cluster._prepare()
    for node in cluster.node_names:
        config = yaml.safe_load(node_kubeconfig(spec, cluster.paths, node).read_text())
        user = config["users"][0]["user"]
        cert = x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"]))
        assert _subject(cert) == (f"system:node:{node}", ["system:nodes"])
        # kind's kubelets reach the API server at the control-plane node's address
        assert config["clusters"][0]["cluster"]["server"] == "https://172.30.9.2:6443"
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    assert admin["current-context"] == "playground-real"
    assert admin["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:36443"
    proxy = yaml.safe_load(kube_proxy_kubeconfig(spec, cluster.paths).read_text())
    cert = x509.load_pem_x509_certificate(
        base64.b64decode(proxy["users"][0]["user"]["client-certificate-data"])
    )
    assert _subject(cert) == ("system:kube-proxy", [])
    emulated = ClusterSpec("emu")
    assert (
        node_kubeconfig(emulated, ClusterPaths(tmp_path / "emu"), "emu-control-plane")
        == tmp_path / "emu" / "kubeconfig.internal"
    )
