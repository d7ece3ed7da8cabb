"""Real nodes: containerd, kubelet and kube-proxy v1.36.3 per node, pods as containers, CoreDNS.

What a kind user relies on, checked as they would check it: nodes Ready on containerd,
a pod Running, `kubectl logs`, `exec` and `port-forward` through the kubelet, a
ClusterIP Service through kube-proxy, names resolved by CoreDNS, pods of two nodes
reaching each other, kube-apiserver reaching pods on every node (as it does webhooks),
two clusters with the same pod CIDR side by side, `playground load-image`, and nothing
left on the host after `playground down`. Every test needs `KUBEBUILDER_ASSETS` naming a
folder with kubelet, kube-proxy and their images (`make real-k8s`), and skips without:
the emulator leg never runs real nodes. The tests ask for real nodes, so they run on
them in the real leg too, which runs the other suites on agent nodes.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from playground.cluster import Cluster
from playground.network import names, netns
from playground.processes import read_proc
from playground.realbinary import Assets, find_assets
from playground.realnode import cgroups, images, mountns, tunables
from playground.spec import REAL_NODES_MODE, node_netns_name
from playground.testing import Playground, clusters
from runtime.api.kinds import NODES, PODS, SERVICES
from runtime.api.objects import JSON
from runtime.core import Client
from tests import nodeimages
from tests.playground.conftest import eventually
from tests.playground.hostrules import host_ruleset
from tests.playground.test_network import (
    CURL,
    NGINX,
    WELCOME,
    curl,
    logs,
    new_namespace,
    ready_endpoints,
    web,
)
from tests.runtime.operations.test_install_image import UNPULLABLE, failed_install


@pytest.fixture(scope="module")
def assets() -> Assets:
    found = find_assets(os.environ)
    if found is None or not found.runs_real_nodes:
        pytest.skip(
            "real nodes need KUBEBUILDER_ASSETS naming a folder with kubelet, kube-proxy and the sandbox and "
            "CoreDNS images (make real-k8s)"
        )
    return found


@pytest.fixture(scope="session")
def test_images(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The web server and curl images (tools/images), as archives to load into nodes."""
    return nodeimages.build(tmp_path_factory.mktemp("images"), "test")


@pytest.fixture(scope="module")
def pair(
    assets: Assets, test_images: list[Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """A two-node real cluster (the control plane and one worker) with the test images loaded."""
    with clusters("real", nodes=2, real_nodes=True, state_dir=tmp_path_factory.mktemp("realnodes")) as (
        real,
    ):
        for archive in test_images:
            asyncio.run(real.load_image(archive))
        yield real


@pytest.fixture
async def in_namespace(pair: Cluster) -> AsyncIterator[tuple[Client, str]]:
    """An admin client of `pair`, and a new namespace of it."""
    async with pair.client() as api:
        yield api, await new_namespace(api)


def kubectl(cluster: Cluster, assets: Assets, *args: str, timeout: float = 60) -> str:
    """The version-matched kubectl of the assets, as the cluster's admin; its output."""
    assert assets.kubectl is not None
    return subprocess.run(
        [str(assets.kubectl), "--kubeconfig", str(cluster.kubeconfig), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=timeout,
    ).stdout


def nginx_pod(name: str, *, node: str) -> JSON:
    return {
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "nodeName": node,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "nginx", "image": NGINX, "ports": [{"containerPort": 80}]}],
        },
    }


async def running(api: Client, namespace: str, name: str) -> JSON:
    async def ready() -> JSON | None:
        pod = await api.get(PODS, name, namespace=namespace)
        conditions = pod["status"].get("conditions") or []
        return pod if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions) else None

    await eventually(ready, within=60)
    return await api.get(PODS, name, namespace=namespace)


async def test_nodes_are_ready_on_containerd_with_their_pod_subnets(pair: Cluster, assets: Assets) -> None:
    assert pair.spec.mode == REAL_NODES_MODE
    async with pair.client() as api:
        nodes = {node["metadata"]["name"]: node for node in (await api.list(NODES)).items}
    assert sorted(nodes) == ["real-control-plane", "real-worker"]
    for index, (name, node) in enumerate(sorted(nodes.items())):
        info = node["status"]["nodeInfo"]
        assert info["containerRuntimeVersion"].startswith("containerd://1."), info
        assert info["kubeletVersion"] == "v1.36.3"
        assert any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"]["conditions"])
        assert node["spec"]["podCIDR"] == f"10.244.{index}.0/24"
        addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
        assert addresses["InternalIP"] == pair.spec.node_addresses[index], name
    # the images the nodes need never come from a registry: loaded, on every node
    for name in nodes:
        loaded = await asyncio.to_thread(
            images.image_names, mountns.path(node_netns_name(pair.spec, pair.paths, name))
        )
        assert {image.name for image in assets.images.values()} <= set(loaded)


async def test_a_pod_runs_and_kubectl_reaches_it_through_its_kubelet(
    pair: Cluster, assets: Assets, in_namespace: tuple[Client, str]
) -> None:
    api, namespace = in_namespace
    await api.create(PODS, nginx_pod("web", node="real-worker"), namespace=namespace)
    pod = await running(api, namespace, "web")
    assert pod["status"]["containerStatuses"][0]["containerID"].startswith("containerd://")
    # the container's first process, found on the host by its cgroup (the benches measure containers so)
    pid = await asyncio.to_thread(pair.container_pid, pod, "nginx")
    info = None if pid is None else read_proc(pid)
    assert info is not None and "nginx: master process" in " ".join(info.cmdline), info
    # port-forward: kube-apiserver to the kubelet, the kubelet to containerd's stream server, into the pod
    forward = await asyncio.create_subprocess_exec(
        str(assets.kubectl),
        "--kubeconfig",
        str(pair.kubeconfig),
        "port-forward",
        "-n",
        namespace,
        "pod/web",
        ":80",
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert forward.stdout is not None
        line = (await asyncio.wait_for(forward.stdout.readline(), 30)).decode()
        port = int(re.findall(r"127\.0\.0\.1:(\d+)", line)[0])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.0\r\nHost: web\r\nUser-Agent: forwarded\r\n\r\n")
        assert WELCOME in (await asyncio.wait_for(reader.read(), 10)).decode()
        writer.close()
    finally:
        forward.terminate()
        await forward.wait()
    log = await asyncio.to_thread(kubectl, pair, assets, "logs", "-n", namespace, "web")
    assert "forwarded" in log
    # exec runs in the pod: its network namespace has the pod's address (the image has `ip`, no shell)
    inside = await asyncio.to_thread(
        kubectl,
        pair,
        assets,
        "exec",
        "-n",
        namespace,
        "web",
        "--",
        "ip",
        "-o",
        "-4",
        "addr",
        "show",
        "dev",
        "eth0",
    )
    assert f"inet {pod['status']['podIP']}/24" in inside


async def test_a_cluster_ip_service_and_names_work_through_kube_proxy_and_coredns(
    pair: Cluster, in_namespace: tuple[Client, str]
) -> None:
    api, namespace = in_namespace
    service = await web(api, namespace, service_type="ClusterIP")
    await eventually(lambda: ready_endpoints(api, namespace, 2), within=60)
    by_address = await curl(api, namespace, "by-ip", f"http://{service['spec']['clusterIP']}/")
    assert by_address["status"]["phase"] == "Succeeded"
    # a Service of the pod's own namespace by its name, and another by `<name>.<namespace>`
    by_name = await curl(api, namespace, "by-name", "http://web/")
    assert by_name["status"]["phase"] == "Succeeded"
    # kube-apiserver by the `kubernetes` Service's name, its certificate checked against the pod's CA bundle
    kubernetes = await curl(
        api,
        namespace,
        "kubernetes",
        "https://kubernetes.default/version",
        options=("-s", "--cacert", "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"),
    )
    assert kubernetes["status"]["phase"] == "Succeeded"
    assert '"gitVersion": "v1.36.3"' in await logs(pair, namespace, kubernetes["metadata"]["name"])
    unknown = await curl(api, namespace, "unknown", "http://no-such-service/", exit_code=6)
    assert unknown["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 6


async def test_pods_on_two_nodes_reach_each_other_and_kube_apiserver_reaches_both(
    pair: Cluster, assets: Assets, in_namespace: tuple[Client, str]
) -> None:
    api, namespace = in_namespace
    for node in ("real-control-plane", "real-worker"):
        await api.create(PODS, nginx_pod(node, node=node), namespace=namespace)
    servers = {node: await running(api, namespace, node) for node in ("real-control-plane", "real-worker")}
    assert servers["real-control-plane"]["status"]["podIP"].startswith("10.244.0.")
    assert servers["real-worker"]["status"]["podIP"].startswith("10.244.1.")
    # a pod of the worker fetches from the pod of the control-plane node, across the node routes
    await api.create(
        PODS,
        {
            "metadata": {"name": "across"},
            "spec": {
                "nodeName": "real-worker",
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "curl",
                        "image": CURL,
                        "args": ["-s", f"http://{servers['real-control-plane']['status']['podIP']}/"],
                    }
                ],
            },
        },
        namespace=namespace,
    )

    async def succeeded() -> bool:
        pod = await api.get(PODS, "across", namespace=namespace)
        return bool(pod["status"].get("phase") == "Succeeded")

    await eventually(succeeded, within=60)
    assert WELCOME in await logs(pair, namespace, "across")
    # kube-apiserver, on the control-plane node, reaches a pod on each node (webhooks are served so)
    for node in servers:
        path = f"/api/v1/namespaces/{namespace}/pods/{node}:80/proxy/"
        assert WELCOME in await asyncio.to_thread(kubectl, pair, assets, "get", "--raw", path)


async def test_load_image_reaches_every_node(
    pair: Cluster, in_namespace: tuple[Client, str], test_images: list[Path]
) -> None:
    api, namespace = in_namespace
    for node in pair.node_names:
        loaded = await asyncio.to_thread(
            images.image_names, mountns.path(node_netns_name(pair.spec, pair.paths, node))
        )
        assert any(image.startswith(("docker.io/library/nginx:", "nginx:")) for image in loaded), loaded
        assert any("curl" in image for image in loaded), loaded
    # a pod that must not pull runs on each node from what was loaded
    for node in pair.node_names:
        pod = nginx_pod(f"never-{node}", node=node)
        pod["spec"]["containers"][0]["imagePullPolicy"] = "Never"
        await api.create(PODS, pod, namespace=namespace)
        await running(api, namespace, f"never-{node}")


async def test_an_install_whose_image_no_registry_has_fails_with_the_kubelets_reason(pair: Cluster) -> None:
    failure = await failed_install(pair, UNPULLABLE)

    assert failure.image == UNPULLABLE
    assert failure.reason in ("ErrImagePull", "ImagePullBackOff")
    assert failure.node in pair.node_names
    assert f'cannot pull image "{UNPULLABLE}"' in str(failure)


async def test_two_real_clusters_with_the_same_pod_cidr_run_side_by_side(
    assets: Assets, test_images: list[Path], playground: Playground
) -> None:
    rome, milan = await playground.up("rome", "milan", real_nodes=True)
    assert rome.spec.pod_cidr == milan.spec.pod_cidr
    ips = {}
    for cluster in (rome, milan):
        for archive in test_images:
            await cluster.load_image(archive)
        async with cluster.client() as api:
            await api.create(PODS, nginx_pod("web", node=cluster.node_names[0]), namespace="default")
            await running(api, "default", "web")
            ips[cluster.name] = {pod["status"].get("podIP") for pod in (await api.list(PODS)).items}
    # addresses of the same pod CIDR in use in both clusters at once, each its own pods'
    assert ips["rome"] & ips["milan"] - {None}
    async with rome.client() as in_rome, milan.client() as in_milan:
        await in_milan.create(
            SERVICES,
            {
                "metadata": {"name": "web"},
                "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"port": 80}]},
            },
            namespace="default",
        )
        node_port = (await in_milan.get(SERVICES, "web", namespace="default"))["spec"]["ports"][0]["nodePort"]
        pod = await curl(
            in_rome, "default", "to-milan", f"http://{milan.spec.node_addresses[0]}:{node_port}/"
        )
        assert pod["status"]["phase"] == "Succeeded"
    assert "curl/" in await logs(milan, "default", "web")
    assert "curl/" not in await logs(rome, "default", "web")


def node_leftovers(state_dir: Path, cluster: Cluster) -> list[str]:
    """What of the cluster's nodes is on the host: processes, mounts, cgroups, namespaces."""
    found = []
    for node in cluster.node_names:
        name = names.node_netns(state_dir, node)
        found += [f"process {pid} in {name}" for pid in mountns.processes(name)]
        if mountns.path(name).exists():
            found.append(f"mount namespace {name}")
        found += [
            f"cgroup {root}"
            for root in cgroups.hierarchies()
            if (root / cgroups.node_cgroup(name).lstrip("/")).exists()
        ]
        if netns.path(name).exists():
            found.append(f"netns {name}")
    state = str(state_dir.absolute())
    found += [
        f"mount {line.split()[4]}"
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if state in line
    ]
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if state in cmdline:
                found.append(f"process {proc.name}: {cmdline.replace(chr(0), ' ')[:80]}")
    return found


def _shims(state_dir: Path, cluster: Cluster) -> list[int]:
    """The containerd shims of the cluster's nodes (found by their mount namespace)."""
    return [
        pid
        for node in cluster.node_names
        for pid in mountns.processes(names.node_netns(state_dir, node))
        if "containerd-shim" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
    ]


def host_rules(state_dir: Path) -> tuple[str, str]:
    """The host's nft rules (other playgrounds' bridge tables left out: they come and go meanwhile) and iptables."""
    nft = host_ruleset(state_dir)
    iptables = subprocess.run(["iptables-save"], capture_output=True, text=True, check=True).stdout
    return nft, "\n".join(line for line in iptables.splitlines() if not line.startswith("#"))


async def test_down_leaves_nothing_on_the_host(
    assets: Assets, test_images: list[Path], playground: Playground
) -> None:
    rules = await asyncio.to_thread(host_rules, playground.state_dir)
    others = await asyncio.to_thread(mountns.names)
    settings = await asyncio.to_thread(tunables.current)
    (cluster,) = await playground.up("gone", nodes=2, real_nodes=True)
    for archive in test_images:
        await cluster.load_image(archive)
    async with cluster.client() as api:
        for node in cluster.node_names:
            await api.create(PODS, nginx_pod(node, node=node), namespace="default")
            await running(api, "default", node)
    shims = await asyncio.to_thread(_shims, playground.state_dir, cluster)
    assert len(shims) >= 4  # the CoreDNS pods and the two web pods, each with its shim
    assert len(await asyncio.to_thread(node_leftovers, playground.state_dir, cluster)) > len(shims)
    await playground.close()
    assert await asyncio.to_thread(node_leftovers, playground.state_dir, cluster) == []
    assert [pid for pid in shims if (info := read_proc(pid)) is not None and not info.is_zombie] == []
    assert await asyncio.to_thread(host_rules, playground.state_dir) == rules
    if not others and not await asyncio.to_thread(mountns.names):
        # no other real node on the machine, before or after: kubelet's kernel settings are undone
        assert await asyncio.to_thread(tunables.current) == settings
