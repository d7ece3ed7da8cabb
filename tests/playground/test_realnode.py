"""Real nodes without running one: the assets they need, their configuration and command lines, the
plan the supervisor runs, the addons, and the host pieces (mount namespaces, cgroups, kernel
settings) on their own. tests/playground/test_realnodes.py runs whole real-node clusters."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from playground.addons import COREFILE, addons
from playground.cluster import AGENT_NODES_ENV, Cluster, ClusterError, resolve
from playground.controlplane.components import COMPONENTS
from playground.network import names, netns, requirements
from playground.realbinary import (
    ASSETS_ENV,
    Assets,
    Pki,
    apiserver_command,
    find_assets,
    generate_pki,
    node_identity,
)
from playground.realnode import cgroups, mountns, tunables
from playground.realnode import config as realnode
from playground.spec import (
    AGENT_NODES_MODE,
    EMULATOR_MODE,
    REAL_NODES_MODE,
    ClusterPaths,
    ClusterSpec,
    SpecError,
    check_specs,
    commands,
    supervisor_plan,
)
from runtime.api.kinds import DAEMONSETS
from tests.playground.test_realbinary import fake_assets

SANDBOX = "registry.k8s.io/pause:3.10.2"
DNS = "registry.k8s.io/coredns/coredns:v1.15.0"


def real_assets(directory: Path, *, images: bool = True) -> Path:
    """A fake folder of `make real-k8s`: every binary, and (with `images`) the manifest's images."""
    fake_assets(
        directory,
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kubelet",
        "kube-proxy",
        "kubectl",
    )
    if images:
        (directory / "images").mkdir()
        for key in ("pause", "coredns"):
            (directory / "images" / f"{key}.tar").write_bytes(b"")
        manifest = {
            "kubernetes": "v1.36.3",
            "images": {
                "pause": {"archive": "images/pause.tar", "name": SANDBOX},
                "coredns": {"archive": "images/coredns.tar", "name": DNS},
            },
        }
        (directory / "versions.json").write_text(json.dumps(manifest))
    return directory


def _found(directory: Path) -> Assets:
    assets = find_assets({ASSETS_ENV: str(directory)})
    assert assets is not None
    return assets


def test_real_nodes_need_kubelet_kube_proxy_and_both_images(tmp_path: Path) -> None:
    full = _found(real_assets(tmp_path / "full"))
    assert full.runs_real_nodes
    assert (full.kubelet, full.kube_proxy) == (
        tmp_path / "full" / "kubelet",
        tmp_path / "full" / "kube-proxy",
    )
    assert full.image("pause").name == SANDBOX
    assert full.image("coredns").archive == tmp_path / "full" / "images" / "coredns.tar"
    # the lead's folder of today: the control plane only
    assert not _found(fake_assets(tmp_path / "control-plane", "etcd", "kube-apiserver")).runs_real_nodes
    assert not _found(real_assets(tmp_path / "no-images", images=False)).runs_real_nodes
    (tmp_path / "full" / "images" / "pause.tar").unlink()
    assert not _found(tmp_path / "full").runs_real_nodes


def test_new_clusters_run_real_nodes_when_the_assets_can(tmp_path: Path) -> None:
    full = str(real_assets(tmp_path / "full"))
    control_plane = str(fake_assets(tmp_path / "control-plane", "etcd", "kube-apiserver"))
    (real,) = resolve(["a"], state_dir=tmp_path, environ={ASSETS_ENV: full})
    (agents,) = resolve(["b"], state_dir=tmp_path, environ={ASSETS_ENV: control_plane})
    (asked,) = resolve(["c"], state_dir=tmp_path, environ={ASSETS_ENV: full}, real_nodes=False)
    (by_env,) = resolve(["d"], state_dir=tmp_path, environ={ASSETS_ENV: full, AGENT_NODES_ENV: "1"})
    (emulated,) = resolve(["e"], state_dir=tmp_path, environ={})
    assert [spec.mode for spec in (real, agents, asked, by_env, emulated)] == [
        REAL_NODES_MODE,
        AGENT_NODES_MODE,
        AGENT_NODES_MODE,
        AGENT_NODES_MODE,
        EMULATOR_MODE,
    ]
    with pytest.raises(ClusterError, match="real nodes need kubelet, kube-proxy and the sandbox and CoreDNS"):
        resolve(["f"], state_dir=tmp_path, environ={ASSETS_ENV: control_plane}, real_nodes=True)
    with pytest.raises(SpecError, match="real nodes run the real kubelet"):
        check_specs([ClusterSpec("g", real_nodes=True)])


def _spec(tmp_path: Path, *, nodes: int = 2) -> ClusterSpec:
    return ClusterSpec(
        "real",
        nodes=nodes,
        api_server_port=36443,
        assets=str(real_assets(tmp_path / "bin")),
        real_nodes=True,
        node_lease_duration=20,
        node_network="172.30.9.0/24",
        node_addresses=("172.30.9.2", "172.30.9.3")[:nodes],
    )


def test_each_real_node_runs_containerd_kubelet_and_kube_proxy_in_its_namespaces(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    paths = ClusterPaths(tmp_path / "state" / "real")
    assets = _found(tmp_path / "bin")
    plan = supervisor_plan(spec, paths, assets=assets, all_components=list(COMPONENTS))
    nodes = ("real-control-plane", "real-worker")
    assert plan.roles == [
        "etcd",
        "apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "hostport",
        *(f"{role}/{node}" for node in nodes for role in ("containerd", "node", "kube-proxy")),
    ]
    for node in nodes:
        namespace = names.node_netns(tmp_path / "state", node)
        for role in ("containerd", "node", "kube-proxy"):
            process = plan.process(f"{role}/{node}")
            assert (process.netns, process.mntns) == (
                str(netns.path(namespace)),
                str(mountns.path(namespace)),
            )
    # the control plane keeps the host's mount namespace
    assert plan.process("apiserver").mntns is None
    files = realnode.NodeFiles(paths.node("real-worker"))
    assert plan.process("containerd/real-worker").argv == (
        "containerd",
        "--config",
        str(files.containerd_config),
    )
    kubelet = dict(arg.removeprefix("--").split("=", 1) for arg in plan.process("node/real-worker").argv[1:])
    assert plan.process("node/real-worker").argv[0] == str(tmp_path / "bin" / "kubelet")
    assert kubelet == {
        "config": str(files.kubelet_config),
        "kubeconfig": str(paths.component_kubeconfig(node_identity("real-worker"))),
        "hostname-override": "real-worker",
        "node-ip": "172.30.9.3",
    }
    assert plan.process("kube-proxy/real-worker").argv == (
        str(tmp_path / "bin" / "kube-proxy"),
        f"--config={files.kube_proxy_config}",
    )
    # kube-apiserver reaches kubelets at their InternalIP; as kubeadm's, it does not verify their serving
    # certificates (a virtual kubelet's is self-signed: logs and exec of offloaded pods go through it)
    apiserver = dict(arg.removeprefix("--").split("=", 1) for arg in plan.process("apiserver").argv[1:])
    assert apiserver["kubelet-preferred-address-types"] == "InternalIP"
    assert "kubelet-certificate-authority" not in apiserver
    agents = commands(
        dataclasses.replace(spec, real_nodes=False), paths, assets=assets, all_components=list(COMPONENTS)
    )
    assert "containerd/real-worker" not in agents and "--node" in agents["node/real-worker"]


def test_a_real_clusters_files_are_written_before_it_starts(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    cluster = Cluster(spec, state_dir=tmp_path / "state")
    cluster._prepare()
    # kubelets start held: they wait until the node's containerd has the images
    assert json.loads(cluster.paths.held.read_text()) == ["node/real-control-plane", "node/real-worker"]
    worker = realnode.NodeFiles(cluster.paths.node("real-worker"))
    for folder in worker.folders():
        assert folder.is_dir()
    kubelet = yaml.safe_load(worker.kubelet_config.read_text())
    assert kubelet["cgroupRoot"] == cgroups.node_cgroup(names.node_netns(tmp_path / "state", "real-worker"))
    assert kubelet["nodeLeaseDurationSeconds"] == 20
    assert kubelet["address"] == "172.30.9.3"
    serving = x509.load_pem_x509_certificate(Path(kubelet["tlsCertFile"]).read_bytes())
    ca = x509.load_pem_x509_certificate(cluster.paths.pki.ca_cert.read_bytes())
    serving.verify_directly_issued_by(ca)
    san = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "real-worker" in san.get_values_for_type(x509.DNSName)
    assert [str(address) for address in san.get_values_for_type(x509.IPAddress)] == ["172.30.9.3"]
    control_plane = yaml.safe_load(
        realnode.NodeFiles(cluster.paths.node("real-control-plane")).kubelet_config.read_text()
    )
    assert control_plane["registerWithTaints"] == [
        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
    ]
    assert kubelet["registerWithTaints"] == []
    containerd = worker.containerd_config.read_text()
    assert f'sandbox_image = "{SANDBOX}"' in containerd
    cni = json.loads(worker.cni_config.read_text())
    assert cni["plugins"][0]["ipam"]["ranges"] == [[{"subnet": "10.244.1.0/24", "gateway": "10.244.1.1"}]]


def test_kubelet_gets_what_this_host_needs(tmp_path: Path) -> None:
    node = realnode.RealNode("n", "172.30.9.2", "10.244.0.0/24", cgroup="/liqo-playground/pg_x_n")
    credentials = realnode.Credentials(
        kubeconfig=tmp_path / "kc", client_ca=tmp_path / "ca.crt", serving_cert=tmp_path / "s.crt",
        serving_key=tmp_path / "s.key",
    )  # fmt: skip
    config = realnode.kubelet_config(node, credentials, service_cidr="10.100.0.0/16")
    # cgroup v1 with the cgroupfs driver, kubelet's cgroup the node's
    assert (config["failCgroupV1"], config["cgroupDriver"], config["cgroupRoot"]) == (
        False,
        "cgroupfs",
        "/liqo-playground/pg_x_n",
    )
    assert (config["clusterDNS"], config["clusterDomain"]) == (["10.100.0.10"], "cluster.local")
    assert config["containerRuntimeEndpoint"] == "unix:///run/containerd/containerd.sock"
    # kube-apiserver's client certificate is checked against the cluster CA, and asked about with webhooks
    assert config["authentication"]["x509"] == {"clientCAFile": str(tmp_path / "ca.crt")}
    assert config["authentication"]["anonymous"] == {"enabled": False}
    assert config["authorization"] == {"mode": "Webhook"}
    assert (config["tlsCertFile"], config["readOnlyPort"]) == (str(tmp_path / "s.crt"), 0)
    # images come from archives: none is collected, no eviction for a full disk
    assert config["imageGCHighThresholdPercent"] == 100
    assert set(config["evictionHard"].values()) == {"0%"}
    assert config["resolvConf"] == ""
    assert "nodeLeaseDurationSeconds" not in config


def test_containerd_keeps_to_the_nodes_folders_and_runs_without_cap_sys_resource(tmp_path: Path) -> None:
    files = realnode.NodeFiles(tmp_path / "n")
    config = realnode.containerd_config(files, sandbox_image=SANDBOX)
    lines = {line.strip() for line in config.splitlines()}
    assert f'root = "{files.containerd_root}"' in lines
    assert 'state = "/run/containerd/state"' in lines
    assert 'address = "/run/containerd/containerd.sock"' in lines
    assert "restrict_oom_score_adj = true" in lines
    assert "netns_mounts_under_state_dir = true" in lines
    assert 'Root = "/run/containerd/runc"' in lines
    assert "SystemdCgroup = false" in lines
    assert f'conf_dir = "{files.cni_config_dir}"' in lines
    assert '"io.containerd.internal.v1.opt"' in config  # it would make /opt/containerd on the host
    assert config.index("[grpc]") > config.index("disabled_plugins")  # top-level keys come before tables


def test_kube_proxy_runs_in_nftables_mode_and_leaves_the_hosts_conntrack_alone(tmp_path: Path) -> None:
    node = realnode.RealNode("n", "172.30.9.2", "10.244.0.0/24", cgroup="/c")
    config = realnode.kube_proxy_config(node, kubeconfig=tmp_path / "kc", pod_cidr="10.244.0.0/16")
    assert (config["mode"], config["hostnameOverride"], config["clusterCIDR"]) == (
        "nftables",
        "n",
        "10.244.0.0/16",
    )
    assert config["conntrack"]["maxPerCore"] == 0
    assert config["nodePortAddresses"] == ["primary"]


def test_the_cni_bridges_pods_onto_cni0_with_the_nodes_pod_subnet(tmp_path: Path) -> None:
    files = realnode.NodeFiles(tmp_path / "n")
    node = realnode.RealNode("n", "172.30.9.2", "10.244.3.0/24", cgroup="/c")
    bridge, portmap = realnode.cni_config(node, files)["plugins"]
    assert (bridge["type"], bridge["bridge"], bridge["isGateway"], bridge["ipMasq"]) == (
        "bridge",
        "cni0",
        True,
        False,
    )
    assert bridge["ipam"]["dataDir"] == str(files.ipam_dir)
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.244.3.0/24", "gateway": "10.244.3.1"}]]
    assert portmap["type"] == "portmap"


def test_real_nodes_get_kubeadms_coredns_and_no_daemonsets_they_could_not_run() -> None:
    real = addons(cluster_name="c", pod_cidr="10.244.0.0/16", service_cidr="10.96.0.0/16", real_nodes=True)
    agents = addons(cluster_name="c", pod_cidr="10.244.0.0/16", service_cidr="10.96.0.0/16")
    kinds = [body["kind"] for _, body in real]
    assert kinds == [
        "ConfigMap",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Service",
        "Deployment",
    ]
    assert [resource for resource, _ in agents].count(DAEMONSETS) == 2
    deployment = next(body for _, body in real if body["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == DNS
    assert deployment["spec"]["template"]["spec"]["dnsPolicy"] == "Default"
    service = next(body for _, body in real if body["kind"] == "Service")
    assert (service["metadata"]["name"], service["spec"]["clusterIP"]) == ("kube-dns", "10.96.0.10")
    # kubeadm's Corefile, without forwarding outside the machine
    assert "kubernetes cluster.local in-addr.arpa ip6.arpa" in COREFILE
    assert "forward" not in COREFILE


def test_real_nodes_need_containerd_runc_and_the_cni_plugins(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text("CapEff:\t000001ffffffffff\n")
    assert requirements.REAL_NODE_TOOLS["/usr/lib/cni/bridge"] == "containernetworking-plugins"
    found = requirements.problems(status, real_nodes=True)
    missing = [name for name in requirements.REAL_NODE_TOOLS if requirements.tool(name) is None]
    assert bool(found) == bool(missing), found


# the host pieces, on this host (root, as the playground network needs)


def test_the_kernel_settings_kubelet_changes_are_saved_once_and_restored(tmp_path: Path) -> None:
    proc_sys = tmp_path / "sys"
    for name in tunables.TUNABLES:
        (proc_sys / name).parent.mkdir(parents=True, exist_ok=True)
        (proc_sys / name).write_text("0\n")
    registry = tmp_path / "registry"
    with tunables.machine_lock(registry):
        tunables.save(registry=registry, proc_sys=proc_sys)
    (proc_sys / "kernel/panic").write_text("10\n")
    (proc_sys / "vm/overcommit_memory").write_text("1\n")
    # a second node saves nothing: the values are kubelet's by now
    tunables.save(registry=registry, proc_sys=proc_sys)
    assert tunables.restore(registry=registry, proc_sys=proc_sys) == {
        "vm/overcommit_memory": "0",
        "kernel/panic": "0",
    }
    assert tunables.current(proc_sys) == dict.fromkeys(tunables.TUNABLES, "0")
    assert tunables.restore(registry=registry, proc_sys=proc_sys) == {}


def test_cgroup_hierarchies_are_read_from_mountinfo(tmp_path: Path) -> None:
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        "30 24 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
        "31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu\n"
        "40 30 0:36 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
        "41 24 8:1 / / rw - ext4 /dev/vda rw\n"
    )
    assert cgroups.hierarchies(mountinfo) == [Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup/unified")]


@contextlib.contextmanager
def _cgroup() -> Iterator[str]:
    cgroup = cgroups.node_cgroup(f"test-{uuid.uuid4().hex[:8]}")
    try:
        yield cgroup
    finally:
        cgroups.kill(cgroup)
        cgroups.remove(cgroup)


def test_a_nodes_cgroup_is_made_in_every_hierarchy_and_removed_with_what_runs_in_it() -> None:
    with _cgroup() as cgroup:
        cgroups.create(cgroup)
        folders = [root / cgroup.lstrip("/") for root in cgroups.hierarchies()]
        assert all(folder.is_dir() for folder in folders)
        cpuset = next((folder for folder in folders if (folder / "cpuset.cpus").exists()), None)
        if cpuset is not None:
            assert (cpuset / "cpuset.cpus").read_text().strip() == (
                cpuset.parent.parent / "cpuset.cpus"
            ).read_text().strip()
        # a process in a cgroup below the node's (as a pod's container is)
        below = f"{cgroup}/kubepods"
        cgroups.create(below)
        sleeper = subprocess.Popen(["sleep", "60"])
        for root in cgroups.hierarchies():
            (root / below.lstrip("/") / "cgroup.procs").write_text(str(sleeper.pid))
        assert cgroups.processes(cgroup) == {sleeper.pid}
        assert cgroups.kill(cgroup) == set()
        sleeper.wait(5)
        assert cgroups.remove(cgroup) == []
        assert not any(folder.exists() for folder in folders)


def test_a_mount_namespace_keeps_its_mounts_to_itself(tmp_path: Path) -> None:
    name = f"test-{uuid.uuid4().hex[:8]}"
    source, run, bound = tmp_path / "source", tmp_path / "run", tmp_path / "bound"
    source.mkdir()
    (source / "file").write_text("node's\n")
    try:
        namespace = mountns.create(name, tmpfs=[str(run)], binds=[(source, str(bound))])
        inside = subprocess.run(
            [
                "nsenter",
                f"--mount={namespace}",
                "--",
                "sh",
                "-c",
                f"cat {bound}/file && touch {run}/x && ls {run}",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert inside.split() == ["node's", "x"]
        # the host sees the empty mount points only
        assert list(bound.iterdir()) == [] and list(run.iterdir()) == []
        sleeper = subprocess.Popen(["nsenter", f"--mount={namespace}", "--", "sleep", "60"])
        deadline = time.monotonic() + 5
        while sleeper.pid not in mountns.processes(name) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert mountns.processes(name) == [sleeper.pid]
        sleeper.kill()
        sleeper.wait()
    finally:
        assert mountns.delete(name)
    assert not mountns.path(name).exists() and not mountns.delete(name)


def test_kubelet_serving_certificates_are_made_once(tmp_path: Path) -> None:
    pki = Pki(tmp_path / "pki")
    generate_pki(pki, service_cidr="10.96.0.0/16", identities=[], kubelets={"n": "172.30.9.2"})
    before = pki.kubelet_serving_cert("n").read_bytes()
    generate_pki(pki, service_cidr="10.96.0.0/16", identities=[], kubelets={"n": "172.30.9.2"})
    assert pki.kubelet_serving_cert("n").read_bytes() == before
    agents = apiserver_command(
        _found(real_assets(tmp_path / "bin")), pki=pki, etcd_port=1, port=2, service_cidr="10.96.0.0/16"
    )
    assert not any(flag.startswith("--kubelet-certificate-authority") for flag in agents)
