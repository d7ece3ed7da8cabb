"""The playground's network is kind's: nodes and pods with addresses of their own, Services by kube-proxy.

What a kind user relies on, checked from outside as they would: node addresses on the
playground network (reachable from the host), pods in their own namespaces with IPs of
their node's pod CIDR, a Deployment behind a Service reached by ClusterIP and by name
from another pod and by NodePort from the host, process pods using in-cluster
configuration through the `kubernetes` Service, two clusters with the same CIDRs side
by side, and nothing left on the host after `playground down`, even after a crash.
Everything goes through the API (and the host's network), so the module runs unchanged
in real-binary mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import json
import os
import signal
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from playground import processes
from playground.cluster import Cluster
from playground.network import names, netns
from playground.testing import Playground, clusters
from runtime.api.image import runtime_image
from runtime.api.kinds import DEPLOYMENTS, NAMESPACES, NODES, PODS, SERVICEACCOUNTS, SERVICES
from runtime.api.objects import JSON
from runtime.core import Client, NotFoundError
from tests.playground.conftest import eventually
from tests.playground.hostrules import host_ruleset

NGINX = "nginx:1.27"
CURL = "curlimages/curl:8.11.1"
WELCOME = "<title>Welcome to nginx!</title>"
#: how curl names itself to a server: the stand-in as curl 8.11.1, the test image's Debian curl as 7.88.1
CURL_AGENT = '"curl/'


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory, node_images: list[Path]) -> Iterator[Cluster]:
    """A two-node cluster (the control plane and one worker) for the module's tests."""
    with clusters("net", nodes=2, state_dir=tmp_path_factory.mktemp("network"), images=node_images) as (
        cluster,
    ):
        yield cluster


@pytest.fixture
async def api(pair: Cluster) -> AsyncIterator[Client]:
    async with pair.client() as client:
        yield client


@pytest.fixture
async def namespace(api: Client) -> str:
    return await new_namespace(api)


async def new_namespace(api: Client) -> str:
    """A namespace of a new name, once its `default` ServiceAccount exists."""
    name = f"n-{uuid.uuid4().hex[:8]}"
    await api.create(NAMESPACES, {"metadata": {"name": name}})
    await default_service_account(api, name)
    return name


async def default_service_account(api: Client, namespace: str) -> None:
    """Wait for the namespace's `default` ServiceAccount (pods are refused without it)."""

    async def exists() -> bool:
        try:
            await api.get(SERVICEACCOUNTS, "default", namespace=namespace)
        except NotFoundError:
            return False
        return True

    await eventually(exists, within=30)


def internal_ips(nodes: list[JSON]) -> dict[str, str]:
    return {
        node["metadata"]["name"]: next(
            a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP"
        )
        for node in nodes
    }


async def logs(cluster: Cluster, namespace: str, pod: str) -> str:
    def read() -> str:
        with k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig)) as api_client:
            return str(k8s.CoreV1Api(api_client).read_namespaced_pod_log(pod, namespace))

    return await asyncio.to_thread(read)


async def http_get(address: str, port: int) -> str | None:
    """The body of `GET http://address:port/` from the host, or None when it does not answer 200."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(address, port), 5)
    except (OSError, TimeoutError):
        return None
    try:
        writer.write(f"GET / HTTP/1.0\r\nHost: {address}\r\n\r\n".encode())
        response = await asyncio.wait_for(reader.read(), 10)
    except (OSError, TimeoutError):
        return None
    finally:
        writer.close()
    head, _, body = response.partition(b"\r\n\r\n")
    return body.decode() if head.split(b" ")[1:2] == [b"200"] else None


async def web(api: Client, namespace: str, *, replicas: int = 2, service_type: str = "NodePort") -> JSON:
    """An nginx Deployment behind a Service; the Service."""
    await api.create(
        DEPLOYMENTS,
        {
            "metadata": {"name": "web"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [{"name": "nginx", "image": NGINX, "ports": [{"containerPort": 80}]}]
                    },
                },
            },
        },
        namespace=namespace,
    )
    return await api.create(
        SERVICES,
        {
            "metadata": {"name": "web"},
            "spec": {
                "type": service_type,
                "selector": {"app": "web"},
                "ports": [{"name": "http", "port": 80, "targetPort": 80}],
            },
        },
        namespace=namespace,
    )


async def finished(api: Client, namespace: str, name: str) -> JSON | None:
    pod = await api.get(PODS, name, namespace=namespace)
    return pod if pod["status"].get("phase") in ("Succeeded", "Failed") else None


async def curl(
    api: Client,
    namespace: str,
    name: str,
    url: str,
    *,
    exit_code: int = 0,
    within: float = 45,
    options: tuple[str, ...] = ("-s",),
) -> JSON:
    """A curl pod that fetched `url` once (with curl's `options`) and exited with `exit_code`; one new pod
    per try until one does.

    kube-proxy programs a Service a moment after its endpoints are ready (on a real node
    too), so a first try may come too early.
    """
    deadline = asyncio.get_running_loop().time() + within
    for attempt in range(1000):
        pod_name = f"{name}-{attempt}"
        await api.create(
            PODS,
            {
                "metadata": {"name": pod_name},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "curl", "image": CURL, "args": [*options, url]}],
                },
            },
            namespace=namespace,
        )
        await eventually(functools.partial(finished, api, namespace, pod_name), within=30)
        pod = await api.get(PODS, pod_name, namespace=namespace)
        if pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == exit_code:
            return pod
        if asyncio.get_running_loop().time() > deadline:
            return pod
    raise AssertionError("unreachable")


async def ready_endpoints(api: Client, namespace: str, count: int) -> bool:
    pods = (await api.list(PODS, namespace=namespace, label_selector="app=web")).items
    ready = [
        p
        for p in pods
        if any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or [])
    ]
    return len(ready) == count


async def test_nodes_and_pods_have_addresses_of_their_own(pair: Cluster, api: Client, namespace: str) -> None:
    ips = internal_ips((await api.list(NODES)).items)
    network = ipaddress.ip_network(pair.spec.node_network)
    assert sorted(ips) == ["net-control-plane", "net-worker"]
    assert all(
        ipaddress.ip_address(ip) in network and not ipaddress.ip_address(ip).is_loopback
        for ip in ips.values()
    )
    assert len(set(ips.values())) == 2
    await web(api, namespace)
    await eventually(lambda: ready_endpoints(api, namespace, 2), within=30)
    for pod in (await api.list(PODS, namespace=namespace)).items:
        node = pod["spec"]["nodeName"]
        assert pod["status"]["hostIP"] == ips[node]
        cidr = (await api.get(NODES, node))["spec"]["podCIDR"]
        assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(cidr)


async def test_a_deployment_behind_a_service_is_reached_from_another_pod_and_from_the_host(
    pair: Cluster, api: Client, namespace: str
) -> None:
    service = await web(api, namespace)
    await eventually(lambda: ready_endpoints(api, namespace, 2), within=30)
    cluster_ip, node_port = service["spec"]["clusterIP"], int(service["spec"]["ports"][0]["nodePort"])

    by_ip = await curl(api, namespace, "by-ip", f"http://{cluster_ip}/")
    assert by_ip["status"]["phase"] == "Succeeded"
    assert WELCOME in await logs(pair, namespace, by_ip["metadata"]["name"])
    by_name = await curl(api, namespace, "by-name", f"http://web.{namespace}.svc.cluster.local/")
    assert by_name["status"]["phase"] == "Succeeded"
    assert WELCOME in await logs(pair, namespace, by_name["metadata"]["name"])

    # kind's way in from outside: any node's address and the nodePort
    for address in internal_ips((await api.list(NODES)).items).values():
        await eventually(functools.partial(http_get, address, node_port), within=30)
        body = await http_get(address, node_port)
        assert body is not None and WELCOME in body, address
    served = "".join(
        [
            await logs(pair, namespace, p["metadata"]["name"])
            for p in (await api.list(PODS, namespace=namespace, label_selector="app=web")).items
        ]
    )
    assert '"GET / HTTP/1.1" 200' in served and CURL_AGENT in served


async def test_a_service_without_endpoints_refuses_connections_at_once(api: Client, namespace: str) -> None:
    service = await web(api, namespace, replicas=0, service_type="ClusterIP")
    pod = await curl(api, namespace, "refused", f"http://{service['spec']['clusterIP']}/", exit_code=7)
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (pod["status"]["phase"], terminated["exitCode"]) == ("Failed", 7)


async def test_process_pods_use_in_cluster_configuration_through_the_kubernetes_service(
    pair: Cluster, api: Client, namespace: str
) -> None:
    script = (
        "import asyncio, os\n"
        "from runtime.core import Client\n"
        "async def main():\n"
        "    async with await Client.in_cluster() as c:\n"
        "        version = await c.get_path('/version')\n"
        "    print(os.environ['KUBERNETES_SERVICE_HOST'], os.environ['KUBERNETES_SERVICE_PORT'], c.host, version['major'])\n"
        "asyncio.run(main())\n"
    )
    await api.create(
        PODS,
        {
            "metadata": {"name": "incluster"},
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": runtime_image(), "command": ["python", "-c", script]}],
            },
        },
        namespace=namespace,
    )
    await eventually(lambda: finished(api, namespace, "incluster"), within=30)
    pod = await api.get(PODS, "incluster", namespace=namespace)
    output = await logs(pair, namespace, "incluster")
    assert pod["status"]["phase"] == "Succeeded", output
    kubernetes = await api.get(SERVICES, "kubernetes", namespace="default")
    host, port, url, major = output.split()
    assert (host, port) == (kubernetes["spec"]["clusterIP"], "443")
    assert url == f"https://{host}:443" and major == "1"
    assert not ipaddress.ip_address(pod["status"]["podIP"]).is_loopback


# whole clusters of their own


def _leftovers(state_dir: Path, *cluster_names: str) -> list[str]:
    """Every namespace and host link the playground makes for these clusters that still exists."""
    found = [
        n for n in netns.names() for c in cluster_names if names.cluster_netns_pattern(state_dir, c).match(n)
    ]
    links = [
        link.name
        for link in Path("/sys/class/net").iterdir()
        if link.name == names.bridge_name(state_dir)
        or any(link.name.startswith(names.node_link_prefix(state_dir, c)) for c in cluster_names)
    ]
    return found + links


@pytest.mark.slow
async def test_down_leaves_the_hosts_namespaces_links_and_rules_as_they_were(playground: Playground) -> None:
    ruleset = await asyncio.to_thread(host_ruleset, playground.state_dir)
    (cluster,) = await playground.up("gone", nodes=2)
    async with cluster.client() as client:
        namespace = "default"
        await web(client, namespace)
        await eventually(lambda: ready_endpoints(client, namespace, 2), within=30)
    # nodes, node links, the bridge and, on agent nodes, the pods' (on real nodes the CNI names them)
    pods = 0 if cluster.spec.real_nodes else 2
    assert len(_leftovers(playground.state_dir, "gone")) >= 2 + 2 + 1 + pods
    # meanwhile the host forwards nothing between the playground network and another interface
    bridge = names.bridge_name(playground.state_dir)
    assert f'iifname "{bridge}" oifname != "{bridge}" drop' in await asyncio.to_thread(
        host_ruleset, playground.state_dir
    )
    await playground.close()
    assert _leftovers(playground.state_dir, "gone") == []
    assert await asyncio.to_thread(host_ruleset, playground.state_dir) == ruleset


@pytest.mark.slow
async def test_after_a_crash_down_and_up_remove_what_was_left(playground: Playground) -> None:
    (cluster,) = await playground.up("crash")
    async with cluster.client() as client:
        await web(client, "default", replicas=1)
        await eventually(lambda: ready_endpoints(client, "default", 1), within=30)
    # every process dies at once, as in a crash: nothing gets to clean up
    for record in cluster.records().values():
        for info in processes.owned_processes(record):
            with contextlib.suppress(
                ProcessLookupError
            ):  # a child that exited meanwhile (a probe, a restart)
                os.kill(info.pid, signal.SIGKILL)
    assert _leftovers(playground.state_dir, "crash")
    (again,) = await playground.up("crash")  # removes the leftovers first, then starts afresh
    async with again.client() as client:
        # (the emulator may have lost its last second of writes: a new Deployment shows the network works)
        await client.create(NAMESPACES, {"metadata": {"name": "again"}})
        await default_service_account(client, "again")
        await web(client, "again", replicas=1)
        await eventually(lambda: ready_endpoints(client, "again", 1), within=30)
    await playground.close()
    assert _leftovers(playground.state_dir, "crash") == []


@pytest.mark.slow
async def test_two_clusters_with_the_same_cidrs_run_side_by_side(playground: Playground) -> None:
    rome, milan = await playground.up("rome", "milan")
    assert rome.spec.pod_cidr == milan.spec.pod_cidr and rome.spec.service_cidr == milan.spec.service_cidr
    async with rome.client() as in_rome, milan.client() as in_milan:
        await web(in_rome, "default", replicas=1)
        milan_web = await web(in_milan, "default", replicas=1)
        await eventually(lambda: ready_endpoints(in_rome, "default", 1), within=30)
        await eventually(lambda: ready_endpoints(in_milan, "default", 1), within=30)
        # a pod of rome reaches milan's NodePort at milan's node address (kind's NodePort peering)
        milan_node = internal_ips((await in_milan.list(NODES)).items)["milan-control-plane"]
        node_port = milan_web["spec"]["ports"][0]["nodePort"]
        pod = await curl(in_rome, "default", "to-milan", f"http://{milan_node}:{node_port}/")
        assert pod["status"]["phase"] == "Succeeded"
        (milan_server,) = (await in_milan.list(PODS, namespace="default", label_selector="app=web")).items
        (rome_server,) = (await in_rome.list(PODS, namespace="default", label_selector="app=web")).items
        # pod IPs of the same CIDR on both sides: the request from rome's pod reached milan's server only
        assert CURL_AGENT in await logs(milan, "default", milan_server["metadata"]["name"])
        assert CURL_AGENT not in await logs(rome, "default", rome_server["metadata"]["name"])
    assert json.loads((playground.state_dir / "network.json").read_text())["subnet"] == rome.spec.node_network
