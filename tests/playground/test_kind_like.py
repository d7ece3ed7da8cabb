"""A playground cluster behaves like a small kind cluster, across all its components.

One three-node cluster (`kind-control-plane`, `kind-worker`, `kind-worker2`) serves the
whole module; each test works in its own namespace and undoes what it changes on the
cluster (a taint, a stopped node agent). The node lifecycle runs on short timings
(Lease renewed every 0.5 s, NotReady after 4 s unrenewed) so a stopped agent shows
quickly. Everything goes through the API, so the module passes unchanged in real-binary
mode (`KUBEBUILDER_ASSETS`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import json
import os
import shutil
import subprocess
import textwrap
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import yaml

from playground.cluster import Cluster
from playground.testing import clusters
from runtime.api.image import runtime_image
from runtime.api.kinds import (
    CONFIGMAPS,
    DEPLOYMENTS,
    NAMESPACES,
    NODES,
    PODS,
    ROLEBINDINGS,
    ROLES,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
)
from runtime.api.objects import JSON
from runtime.core import Client, NotFoundError
from tests.playground.conftest import eventually

WORKER, WORKER2 = "kind-worker", "kind-worker2"


@pytest.fixture(scope="module")
def kind(tmp_path_factory: pytest.TempPathFactory, node_images: list[Path]) -> Iterator[Cluster]:
    with clusters(
        "kind",
        nodes=3,
        state_dir=tmp_path_factory.mktemp("kind-like"),
        images=node_images,
        node_monitor_grace_period=4.0,
        node_monitor_period=0.5,
        node_lease_duration=2,
        node_heartbeat=0.5,
    ) as started:
        yield started[0]


@pytest.fixture
async def api(kind: Cluster) -> AsyncIterator[Client]:
    async with kind.client() as client:
        yield client


@pytest.fixture
async def namespace(api: Client) -> AsyncIterator[str]:
    name = f"t-{uuid.uuid4().hex[:8]}"
    await api.create(NAMESPACES, {"metadata": {"name": name}})
    yield name
    with contextlib.suppress(NotFoundError):
        await api.delete(NAMESPACES, name)


def deployment(name: str, replicas: int, *, tolerations: list[JSON] | None = None) -> JSON:
    spec: JSON = {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}
    if tolerations:
        spec["tolerations"] = tolerations
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


async def pods_of(api: Client, namespace: str, app: str) -> list[JSON]:
    return (await api.list(PODS, namespace=namespace, label_selector=f"app={app}")).items


def running(pods: list[JSON]) -> list[JSON]:
    return [
        pod
        for pod in pods
        if pod["status"].get("phase") == "Running"
        and pod["status"].get("podIP")
        and not pod["metadata"].get("deletionTimestamp")
    ]


async def test_deployment_pods_run_with_ips_from_their_nodes_pod_cidr(api: Client, namespace: str) -> None:
    await api.create(DEPLOYMENTS, deployment("web", 6), namespace=namespace)

    async def all_running() -> list[JSON] | None:
        pods = running(await pods_of(api, namespace, "web"))
        return pods if len(pods) == 6 else None

    await eventually(all_running, within=30)
    nodes = {node["metadata"]["name"]: node for node in (await api.list(NODES)).items}
    pods = running(await pods_of(api, namespace, "web"))
    for pod in pods:
        node = nodes[pod["spec"]["nodeName"]]
        assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(node["spec"]["podCIDR"])
    # the control-plane node is tainted NoSchedule, as in kind: only the workers run them
    assert {pod["spec"]["nodeName"] for pod in pods} == {WORKER, WORKER2}
    assert len({pod["status"]["podIP"] for pod in pods}) == 6


async def test_a_taint_keeps_pods_off_a_node(api: Client, namespace: str) -> None:
    taint = {"key": "example.com/dedicated", "value": "batch", "effect": "NoSchedule"}
    node = await api.get(NODES, WORKER2)
    await api.patch(NODES, WORKER2, {"spec": {"taints": [*(node["spec"].get("taints") or []), taint]}})
    try:
        await api.create(DEPLOYMENTS, deployment("spread", 4), namespace=namespace)
        await eventually(lambda: _count_running(api, namespace, "spread", 4), within=30)
        pods = running(await pods_of(api, namespace, "spread"))
        assert {pod["spec"]["nodeName"] for pod in pods} == {WORKER}
    finally:
        node = await api.get(NODES, WORKER2)
        kept = [t for t in node["spec"].get("taints") or [] if t["key"] != taint["key"]]
        await api.patch(NODES, WORKER2, {"spec": {"taints": kept}})


async def _count_running(api: Client, namespace: str, app: str, count: int) -> bool:
    return len(running(await pods_of(api, namespace, app))) == count


def _ready_status(node: JSON) -> str:
    status: str = next(c["status"] for c in node["status"]["conditions"] if c["type"] == "Ready")
    return status


async def test_a_node_whose_agent_stops_goes_not_ready_and_its_pods_are_evicted(
    kind: Cluster, api: Client, namespace: str
) -> None:
    # tolerationSeconds 0: evicted as soon as the node is tainted unreachable (the default is 300 s)
    tolerations = [
        {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0}
        for key in ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")
    ]
    await api.create(DEPLOYMENTS, deployment("evict", 4, tolerations=tolerations), namespace=namespace)
    await eventually(lambda: _count_running(api, namespace, "evict", 4), within=30)
    before = {pod["metadata"]["uid"] for pod in await pods_of(api, namespace, "evict")}
    on_worker2 = {
        pod["metadata"]["uid"]
        for pod in await pods_of(api, namespace, "evict")
        if pod["spec"]["nodeName"] == WORKER2
    }
    assert on_worker2, "the scheduler spreads four pods over both workers"

    await kind.stop_node(WORKER2)
    try:
        status = kind.status()
        assert (status.state, status.nodes) == ("degraded", "2/3")

        async def not_ready_and_tainted() -> bool:
            node = await api.get(NODES, WORKER2)
            taints = {t["key"] for t in node["spec"].get("taints") or []}
            return _ready_status(node) != "True" and "node.kubernetes.io/unreachable" in taints

        await eventually(not_ready_and_tainted, within=30)

        async def evicted_and_replaced() -> bool:
            pods = await pods_of(api, namespace, "evict")
            evicted = all(
                pod["metadata"].get("deletionTimestamp")
                for pod in pods
                if pod["metadata"]["uid"] in on_worker2
            )
            replacements = [pod for pod in running(pods) if pod["metadata"]["uid"] not in before]
            return (
                evicted
                and len(running(pods)) == 4
                and all(p["spec"]["nodeName"] == WORKER for p in replacements)
            )

        await eventually(evicted_and_replaced, within=30)
    finally:
        await kind.start_node(WORKER2)

    async def ready_again() -> bool:
        node = await api.get(NODES, WORKER2)
        taints = {t["key"] for t in node["spec"].get("taints") or []}
        return _ready_status(node) == "True" and "node.kubernetes.io/unreachable" not in taints

    await eventually(ready_again, within=30)


async def test_deleting_a_namespace_removes_everything_in_it(api: Client) -> None:
    name = f"doomed-{uuid.uuid4().hex[:6]}"
    await api.create(NAMESPACES, {"metadata": {"name": name}})
    await api.create(DEPLOYMENTS, deployment("web", 2), namespace=name)
    await api.create(
        SERVICES,
        {"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
        namespace=name,
    )
    await api.create(CONFIGMAPS, {"metadata": {"name": "settings"}, "data": {"a": "1"}}, namespace=name)
    await eventually(lambda: _count_running(api, name, "web", 2), within=30)

    await api.delete(NAMESPACES, name)

    async def gone() -> bool:
        try:
            await api.get(NAMESPACES, name)
        except NotFoundError:
            return True
        return False

    await eventually(gone, within=30)
    for resource in (PODS, DEPLOYMENTS, SERVICES, CONFIGMAPS, SERVICEACCOUNTS):
        assert (await api.list(resource, namespace=name)).items == []


#: runs in the pod: reads its Secret (file and env), calls the API with its ServiceAccount token (the runtime's
#: client: the runtime image has no other)
POD_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, os
    from runtime.api.kinds import CONFIGMAPS, SECRETS
    from runtime.core import APIStatusError, Client
    async def main():
        namespace = open("/var/run/secrets/kubernetes.io/serviceaccount/namespace").read()
        result = {"file": open("/etc/creds/password").read(), "env": os.environ["PASSWORD"]}
        async with await Client.in_cluster() as api:
            try:
                await api.list(SECRETS, namespace=namespace)
                result["secrets"] = "allowed"
            except APIStatusError as exc:
                result["secrets"] = exc.code
            await api.create(
                CONFIGMAPS, {"metadata": {"name": "result"}, "data": {"result": json.dumps(result)}}, namespace=namespace
            )
    asyncio.run(main())
    """
)


async def test_a_subprocess_pod_gets_its_secret_and_calls_the_api_as_its_service_account(
    api: Client, namespace: str
) -> None:
    await api.create(SERVICEACCOUNTS, {"metadata": {"name": "writer"}}, namespace=namespace)
    await api.create(
        ROLES,
        {
            "metadata": {"name": "configmap-writer"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get"]}],
        },
        namespace=namespace,
    )
    await api.create(
        ROLEBINDINGS,
        {
            "metadata": {"name": "writer"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmap-writer"},
            "subjects": [{"kind": "ServiceAccount", "name": "writer", "namespace": namespace}],
        },
        namespace=namespace,
    )
    password = uuid.uuid4().hex
    await api.create(
        SECRETS,
        {"metadata": {"name": "creds"}, "data": {"password": base64.b64encode(password.encode()).decode()}},
        namespace=namespace,
    )
    await api.create(
        PODS,
        {
            "metadata": {"name": "caller"},
            "spec": {
                "serviceAccountName": "writer",
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "caller",
                        "image": runtime_image(),
                        "command": ["python", "-c", POD_SCRIPT],
                        "env": [
                            {
                                "name": "PASSWORD",
                                "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}},
                            }
                        ],
                        "volumeMounts": [{"name": "creds", "mountPath": "/etc/creds", "readOnly": True}],
                    }
                ],
                "volumes": [{"name": "creds", "secret": {"secretName": "creds"}}],
            },
        },
        namespace=namespace,
    )

    async def finished() -> str | None:
        phase = (await api.get(PODS, "caller", namespace=namespace))["status"].get("phase")
        return phase if phase in ("Succeeded", "Failed") else None

    await eventually(finished, within=45)
    pod = await api.get(PODS, "caller", namespace=namespace)
    assert pod["status"]["phase"] == "Succeeded", json.dumps(pod["status"], indent=1)
    result = json.loads((await api.get(CONFIGMAPS, "result", namespace=namespace))["data"]["result"])
    assert result == {"file": password, "env": password, "secrets": 403}


#: runs in the pod: an HTTP server on $POD_IP:8080 answering with the pod's name
HELLO_SCRIPT = textwrap.dedent(
    """
    import http.server, os
    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = os.environ["POD_NAME"].encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
    http.server.HTTPServer((os.environ["POD_IP"], 8080), Hello).serve_forever()
    """
)


def internal_ips(nodes: list[JSON]) -> dict[str, str]:
    return {
        node["metadata"]["name"]: next(
            a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP"
        )
        for node in nodes
    }


async def answer(address: str, port: int) -> str | None:
    """The body of `GET http://address:port/`, or None when the connection fails or is closed."""
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
    return body.decode() if head.startswith(b"HTTP/1.0 200") else None


async def test_nodes_have_addresses_of_their_own_and_host_network_pods_share_them(
    kind: Cluster, api: Client, namespace: str
) -> None:
    ips = internal_ips((await api.list(NODES)).items)
    assert len(set(ips.values())) == len(ips) == 3
    # addresses on the state dir's playground network, as kind's nodes have on Docker's `kind` network
    network = ipaddress.ip_network(kind.spec.node_network)
    assert all(ipaddress.ip_address(ip) in network for ip in ips.values())
    for node in ips:
        await api.create(PODS, _host_network_pod(node), namespace=namespace)
    # kindnet's and kube-proxy's on agent nodes; real nodes run kube-proxy as a process, no kindnet
    system = 0 if kind.spec.real_nodes else 6

    async def host_network_pods() -> list[JSON]:
        pods = (await api.list(PODS, namespace="kube-system")).items + (
            await api.list(PODS, namespace=namespace)
        ).items
        found = [pod for pod in pods if pod["spec"].get("hostNetwork") and pod["status"].get("podIP")]
        return found if len(found) == system + len(ips) else []

    await eventually(host_network_pods, within=30)
    for pod in await host_network_pods():
        assert pod["status"]["podIP"] == pod["status"]["hostIP"] == ips[pod["spec"]["nodeName"]]


def _host_network_pod(node: str) -> JSON:
    return {
        "metadata": {"name": f"host-{node}"},
        "spec": {
            "nodeName": node,
            "hostNetwork": True,
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {
                    "name": "idle",
                    "image": runtime_image(),
                    "command": ["python", "-c", "import time; time.sleep(600)"],
                }
            ],
        },
    }


async def test_a_process_pod_behind_a_node_port_answers_on_every_node_across_pod_restarts(
    api: Client, namespace: str
) -> None:
    """kind's way to reach a Service from outside: any node's address and the nodePort, whichever pod
    serves it now."""
    container = {
        "name": "hello",
        "image": runtime_image(),
        "command": ["python", "-c", HELLO_SCRIPT],
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ],
        "ports": [{"name": "http", "containerPort": 8080}],
        "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1},
    }
    body = deployment("hello", 1)
    body["spec"]["template"]["spec"]["containers"] = [container]
    await api.create(DEPLOYMENTS, body, namespace=namespace)
    service = await api.create(
        SERVICES,
        {
            "metadata": {"name": "hello"},
            "spec": {
                "type": "NodePort",
                "selector": {"app": "hello"},
                "ports": [{"name": "http", "port": 80, "targetPort": "http"}],
            },
        },
        namespace=namespace,
    )
    node_port = int(service["spec"]["ports"][0]["nodePort"])
    ips = sorted(internal_ips((await api.list(NODES)).items).values())

    async def answers() -> set[str | None]:
        return {await answer(ip, node_port) for ip in ips}

    async def served_by_one_pod() -> str | None:
        answered = await answers()
        return next(iter(answered)) if len(answered) == 1 else None

    await eventually(served_by_one_pod, within=45, every=0.2)
    first = await served_by_one_pod()
    assert first is not None and first.startswith("hello-")
    await api.delete(PODS, first, namespace=namespace)

    async def served_by_the_new_pod() -> bool:
        return (await served_by_one_pod()) not in (None, first)

    await eventually(served_by_the_new_pod, within=45, every=0.2)
    (replacement,) = running(await pods_of(api, namespace, "hello"))
    assert await answers() == {replacement["metadata"]["name"]}
    await api.delete(SERVICES, "hello", namespace=namespace)

    async def closed_everywhere() -> bool:
        return await answers() == {None}

    await eventually(closed_everywhere, within=15, every=0.2)
    for ip in ips:
        with pytest.raises(ConnectionRefusedError):
            _, writer = await asyncio.open_connection(ip, node_port)
            writer.close()


def _kubectl(kind: Cluster, *args: str) -> list[list[str]]:
    output = subprocess.run(
        ["kubectl", "--kubeconfig", str(kind.kubeconfig), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
        env={**os.environ, "HOME": str(Path(kind.kubeconfig).parent)},
    ).stdout
    return [line.split() for line in output.splitlines()]


@pytest.mark.kubectl
async def test_kubectl_sees_a_small_kind_cluster(kind: Cluster, api: Client) -> None:
    assert shutil.which("kubectl"), "kubectl is not on PATH"

    # kind's kindnet and kube-proxy DaemonSets on agent nodes; real nodes run kube-proxy as a process, no kindnet
    daemons = [] if kind.spec.real_nodes else [*["kindnet"] * 3, *["kube-proxy"] * 3]

    async def system_pods_running() -> bool:
        pods = (await api.list(PODS, namespace="kube-system")).items
        return len(pods) == 2 + len(daemons) and all(pod["status"].get("phase") == "Running" for pod in pods)

    await eventually(system_pods_running, within=30)
    nodes = _kubectl(kind, "get", "nodes", "-o", "wide")
    assert nodes[0] == [
        "NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP", "EXTERNAL-IP",
        "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME",
    ]  # fmt: skip
    assert [row[:3] for row in nodes[1:]] == [
        ["kind-control-plane", "Ready", "control-plane"],
        ["kind-worker", "Ready", "<none>"],
        ["kind-worker2", "Ready", "<none>"],
    ]
    internal = [row[5] for row in nodes[1:]]
    network = ipaddress.ip_network(kind.spec.node_network)
    assert len(set(internal)) == 3 and all(ipaddress.ip_address(ip) in network for ip in internal)

    pods = _kubectl(kind, "get", "pods", "-A")
    assert pods[0] == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    system = sorted(row[1].rsplit("-", 1)[0] for row in pods[1:] if row[0] == "kube-system")
    # coredns pods carry their ReplicaSet's hash too
    assert sorted(name.rsplit("-", 1)[0] if name.startswith("coredns") else name for name in system) == [
        "coredns",
        "coredns",
        *daemons,
    ]
    assert all(row[2] == "1/1" and row[3] == "Running" for row in pods[1:] if row[0] == "kube-system")


async def test_kubeadm_config_tells_the_pod_and_service_subnets_as_kinds_does(
    kind: Cluster, api: Client
) -> None:
    configmap = await api.get(CONFIGMAPS, "kubeadm-config", namespace="kube-system")
    configuration = yaml.safe_load(configmap["data"]["ClusterConfiguration"])
    assert configuration["kind"] == "ClusterConfiguration"
    assert configuration["clusterName"] == "kind"
    assert configuration["networking"] == {
        "dnsDomain": "cluster.local",
        "podSubnet": kind.spec.pod_cidr,
        "serviceSubnet": kind.spec.service_cidr,
    }
