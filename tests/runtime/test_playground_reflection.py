"""Resource reflection on real playground clusters: the runtime as process pods, traffic through Services.

rome (consumer) peers with milan (provider), set up as the Terraform resources do it
(`playground.liqo`), and offloads `shop` (LocalAndRemote). The test then writes only what
a user writes, and goes through issue 11's list in order:

1. a web server that reads a ConfigMap (environment and a volume) and a Secret, two
   replicas at home and two on the virtual node, behind a NodePort Service (milan keeps it a
   NodePort: its max_consumer_service_type allows it): the copies
   are in the twin namespace, the remote replicas run there (they could not start
   without the copies), the EndpointSlices of both clusters list all four replicas (each
   at the address that cluster reaches it by: both use kind's pod CIDR, so the network
   fabric remaps the other cluster's pods), and each cluster's node port is answered by
   the replicas that run in that cluster (pod-to-pod traffic across the fabric is
   test_playground_fabric's);
2. a local edit reaches the copy, an edit of the copy is reverted, a deleted copy comes
   back, skip-reflection keeps an object home;
3. the provider's Events about a remote replica show in `kubectl describe pod` on rome;
4. the virtual kubelet SIGKILLed during a burst of edits and deletions: after its
   restart every copy converges and none is left behind; its /metrics say so;
5. deleting the Service removes every copy (the Service, the ShadowEndpointSlice and
   the provider's EndpointSlice).
"""

from __future__ import annotations

import asyncio
import base64
import os
import signal

import aiohttp
import pytest

from playground import liqo
from playground.cluster import Cluster
from playground.testing import Playground
from runtime.api import constants as c
from runtime.api.crds import CONFIGURATIONS, SHADOWENDPOINTSLICES
from runtime.api.image import runtime_image
from runtime.api.kinds import CONFIGMAPS, DEPLOYMENTS, ENDPOINTSLICES, NODES, PODS, SECRETS, SERVICES
from runtime.api.objects import JSON
from runtime.core import Client
from runtime.forge import virtualnode as forge_vn
from runtime.forge.configmaps import remote_configmap_name
from runtime.forge.ipam import translate
from runtime.forge.networking import Cidrs

from .test_playground_offloading import get, kubectl, offload, pods_of, until, virtual_node_ready

pytestmark = [pytest.mark.slow, pytest.mark.kubectl]

NAMESPACE, TWIN = "shop", "shop-rome"
LOCAL_NODE = "rome-control-plane"
REFLECTED_SLICES = f"{c.LABEL_REFLECTION_MANAGED_BY}={c.MANAGED_BY_SHADOWENDPOINTSLICE}"

SERVER = """
import http.server, os
greeting = os.environ["GREETING"]
from_file = open("/etc/app/greeting").read().strip()
print(f"greeting={greeting} file={from_file} password={os.environ['PASSWORD']}", flush=True)
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"{os.environ['HOSTNAME']} {greeting}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer((os.environ["POD_IP"], 8080), Handler).serve_forever()
"""


def web(name: str, node_selector: dict[str, str]) -> JSON:
    """Two replicas of the web server, placed by `node_selector` (at home, or on the virtual node)."""
    container = {
        "name": "web",
        "image": runtime_image(),
        "command": ["python", "-c", SERVER],
        "ports": [{"name": "http", "containerPort": 8080}],
        "env": [
            {"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "app-config", "key": "greeting"}}},
            {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "app-secret", "key": "password"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ],
        "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web", "placement": name}},
            "template": {
                "metadata": {"labels": {"app": "web", "placement": name}},
                "spec": {
                    "nodeSelector": node_selector,
                    "containers": [container],
                    "volumes": [{"name": "config", "configMap": {"name": "app-config"}}],
                },
            },
        },
    }


async def running_replicas(rome: Client) -> dict[str, str] | None:
    """pod name -> pod IP once the four replicas are Running (None until then)."""
    pods = await pods_of(rome, NAMESPACE, "web")
    if len(pods) != 4 or any((p.get("status") or {}).get("phase") != "Running" for p in pods):
        return None
    if {p["spec"]["nodeName"] for p in pods} != {LOCAL_NODE, "liqo-milan"}:
        return None
    return {p["metadata"]["name"]: str(p["status"].get("podIP") or "") for p in pods}


async def slice_addresses(api: Client, namespace: str) -> list[str]:
    listed = await api.list(ENDPOINTSLICES, namespace=namespace, label_selector=f"{c.LABEL_SERVICE_NAME}=web")
    return sorted(
        address
        for s in listed.items
        for endpoint in s.get("endpoints") or []
        if (endpoint.get("conditions") or {}).get("ready") is not False
        for address in endpoint.get("addresses") or []
    )


async def node_address(api: Client, name: str) -> str:
    node = await api.get(NODES, name)
    return str(next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP"))


async def answered_by(address: str, port: int, *, requests: int) -> set[str]:
    """The web replicas that answered `requests` GETs on `address:port` (a failed request, or an answer from
    anything else, counts as none)."""
    names: set[str] = set()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=3)) as session:
        for _ in range(requests):
            try:
                async with session.get(f"http://{address}:{port}/") as answer:
                    words = (await answer.text()).split()
            except (aiohttp.ClientError, TimeoutError):
                continue
            if answer.status == 200 and words and words[0].startswith("web-"):
                names.add(words[0])
    return names


async def milan_configuration(rome: Client) -> JSON:
    """rome's Configuration of its peering with milan, once both IPAMs mapped the other's pods."""

    async def mapped() -> JSON | None:
        found = await get(rome, CONFIGURATIONS, "milan", namespace="liqo-tenant-milan")
        status = (found or {}).get("status") or {}
        return found if "remote" in status and "local" in status else None

    found: JSON = await until(mapped, "rome: the peering's Configuration mapped both ways")
    return found


async def test_reflection_on_real_processes(playground: Playground) -> None:
    clusters = await playground.up("rome", "milan")
    rome_cluster, milan_cluster = clusters["rome"], clusters["milan"]
    rome_identity, milan_identity = await asyncio.gather(
        liqo.install_runtime(rome_cluster),
        # milan keeps its consumers' NodePort Services as they are (Liqo's behaviour; ClusterIP by default)
        liqo.install_runtime(milan_cluster, max_consumer_service_type="NodePort"),
    )
    async with rome_cluster.client() as rome, milan_cluster.client() as milan:
        await liqo.peer(rome, milan_identity, await liqo.issue_token(milan))
        await until(lambda: virtual_node_ready(rome, "liqo-milan"), "rome: node liqo-milan Ready")
        await offload(rome, NAMESPACE)
        replicas = await step_application(rome_cluster, rome, milan, rome_id=rome_identity.cluster_id)
        await step_copies_follow(rome, milan)
        await step_events(rome_cluster, rome, replicas)
        await step_killed_virtual_kubelet(rome_cluster, rome, milan)
        await step_service_deleted(rome, milan)


async def step_application(
    rome_cluster: Cluster, rome: Client, milan: Client, *, rome_id: str
) -> dict[str, str]:
    await rome.create(
        CONFIGMAPS, {"metadata": {"name": "app-config"}, "data": {"greeting": "hello"}}, namespace=NAMESPACE
    )
    secret = {"metadata": {"name": "app-secret"}, "data": {"password": base64.b64encode(b"s3cret").decode()}}
    await rome.create(SECRETS, secret, namespace=NAMESPACE)
    service = {
        "metadata": {"name": "web"},
        "spec": {
            "type": "NodePort",
            "selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "targetPort": 8080}],
        },
    }
    await rome.create(SERVICES, service, namespace=NAMESPACE)
    await rome.create(
        DEPLOYMENTS, web("web-home", {"kubernetes.io/hostname": LOCAL_NODE}), namespace=NAMESPACE
    )
    await rome.create(DEPLOYMENTS, web("web-away", {c.LABEL_TYPE: c.TYPE_VIRTUAL_NODE}), namespace=NAMESPACE)

    replicas: dict[str, str] = await until(
        lambda: running_replicas(rome), "shop: 2 replicas Running at home, 2 on liqo-milan"
    )
    # the copies, and the remote replicas running on them
    for resource, name in (
        (CONFIGMAPS, "app-config"),
        (SECRETS, "app-secret"),
        (SERVICES, "web"),
        (CONFIGMAPS, remote_configmap_name("kube-root-ca.crt", origin_cluster_id=rome_id)),
    ):
        copy = await get(milan, resource, name, namespace=TWIN)
        assert copy is not None, f"milan: no copy of {resource.kind} {name}"
        assert copy["metadata"]["labels"][c.LABEL_REFLECTION_MANAGED_BY] == c.MANAGED_BY_REFLECTION
    remote = [
        p
        for p in (await milan.list(PODS, namespace=TWIN)).items
        if p["metadata"]["labels"].get("app") == "web"
    ]
    assert len(remote) == 2 and all((p.get("status") or {}).get("phase") == "Running" for p in remote)
    away = next(name for name in replicas if name.startswith("web-away"))
    logs = await until(
        lambda: kubectl(rome_cluster.kubeconfig, "logs", "-n", NAMESPACE, away), "the remote replica's log"
    )
    assert "greeting=hello file=hello password=s3cret" in logs

    # EndpointSlices of both clusters list all four replicas, each where that cluster reaches it
    home = {name for name in replicas if name.startswith("web-home")}
    configuration = await milan_configuration(rome)
    local_pods = Cidrs.of(configuration["spec"]["local"]).pod[0]
    rome_seen_by_milan = Cidrs.of(configuration["status"]["local"]).pod[0]
    on_milan = sorted(
        [translate(replicas[name], source=local_pods, target=rome_seen_by_milan) for name in home]
        + [str(p["status"]["podIP"]) for p in remote]
    )

    async def listed(api: Client, namespace: str, wanted: list[str]) -> bool:
        return await slice_addresses(api, namespace) == wanted

    everyone = sorted(replicas.values())
    await until(
        lambda: listed(rome, NAMESPACE, everyone), "rome: the Service's EndpointSlices list every replica"
    )
    await until(
        lambda: listed(milan, TWIN, on_milan), "milan: the Service's EndpointSlices list every replica"
    )
    reflected = (await milan.list(ENDPOINTSLICES, namespace=TWIN, label_selector=REFLECTED_SLICES)).items
    assert {s["metadata"]["labels"][c.LABEL_ENDPOINTSLICE_MANAGED_BY] for s in reflected} == {
        c.ENDPOINTSLICE_MANAGED_BY_REFLECTION
    }

    # traffic: each cluster's node port reaches the replicas that run in it
    for api, namespace, node, local in (
        (rome, NAMESPACE, LOCAL_NODE, home),
        (milan, TWIN, "milan-control-plane", set(replicas) - home),
    ):
        copy = await api.get(SERVICES, "web", namespace=namespace)
        port = int(copy["spec"]["ports"][0]["nodePort"])
        address = await node_address(api, node)

        async def answered(address: str = address, port: int = port, local: set[str] = local) -> bool:
            return local <= await answered_by(address, port, requests=12)

        await until(answered, f"{node}: the node port answered by the replicas of its cluster")
    return replicas


async def step_copies_follow(rome: Client, milan: Client) -> None:
    async def copy_says(value: str) -> bool:
        found = await get(milan, CONFIGMAPS, "app-config", namespace=TWIN)
        return found is not None and (found.get("data") or {}).get("greeting") == value

    await rome.patch(CONFIGMAPS, "app-config", {"data": {"greeting": "ciao"}}, namespace=NAMESPACE)
    await until(lambda: copy_says("ciao"), "milan: the copy updated by the local edit")
    await milan.patch(CONFIGMAPS, "app-config", {"data": {"greeting": "hacked"}}, namespace=TWIN)
    await until(lambda: copy_says("ciao"), "milan: the edited copy reverted")
    uid = (await milan.get(SECRETS, "app-secret", namespace=TWIN))["metadata"]["uid"]
    await milan.delete(SECRETS, "app-secret", namespace=TWIN)

    async def back() -> bool:
        found = await get(milan, SECRETS, "app-secret", namespace=TWIN)
        return found is not None and found["metadata"]["uid"] != uid

    await until(back, "milan: the deleted copy back")
    skipped = {
        "metadata": {"name": "home-only", "annotations": {c.ANNOTATION_SKIP_REFLECTION: "true"}},
        "data": {"a": "b"},
    }
    await rome.create(CONFIGMAPS, skipped, namespace=NAMESPACE)
    await rome.create(CONFIGMAPS, {"metadata": {"name": "marker"}, "data": {"a": "b"}}, namespace=NAMESPACE)
    await until(
        lambda: get(milan, CONFIGMAPS, "marker", namespace=TWIN), "milan: the marker ConfigMap reflected"
    )
    assert await get(milan, CONFIGMAPS, "home-only", namespace=TWIN) is None
    await rome.patch(
        CONFIGMAPS,
        "home-only",
        {"metadata": {"annotations": {c.ANNOTATION_SKIP_REFLECTION: None}}},
        namespace=NAMESPACE,
    )
    await until(
        lambda: get(milan, CONFIGMAPS, "home-only", namespace=TWIN), "milan: reflected once not skipped"
    )


async def step_events(rome_cluster: Cluster, rome: Client, replicas: dict[str, str]) -> None:
    away = next(name for name in replicas if name.startswith("web-away"))

    async def described() -> str | None:
        text = await kubectl(rome_cluster.kubeconfig, "describe", "pod", "-n", NAMESPACE, away)
        return text if "(milan)" in text else None

    text = await until(described, "kubectl describe pod: milan's Events about the remote replica")
    assert "Started" in text or "Scheduled" in text, text


async def step_killed_virtual_kubelet(rome_cluster: Cluster, rome: Client, milan: Client) -> None:
    names = [f"burst-{i}" for i in range(40)]
    for name in names:
        await rome.create(CONFIGMAPS, {"metadata": {"name": name}, "data": {"v": "0"}}, namespace=NAMESPACE)
    kept, deleted = names[:30], names[30:]

    async def converged(expected: dict[str, str]) -> bool:
        listed = (await milan.list(CONFIGMAPS, namespace=TWIN)).items
        found = {
            cm["metadata"]["name"]: (cm.get("data") or {}).get("v")
            for cm in listed
            if cm["metadata"]["name"].startswith("burst-")
        }
        return found == expected

    await until(lambda: converged(dict.fromkeys(names, "0")), "milan: the burst ConfigMaps reflected")
    (kubelet,) = [
        pod
        for pod in (
            await rome.list(
                PODS,
                namespace="liqo-tenant-milan",
                label_selector=f"{c.LABEL_COMPONENT}={forge_vn.COMPONENT}",
            )
        ).items
        if (pod.get("status") or {}).get("phase") == "Running"
    ]

    async def edit(name: str) -> None:
        await rome.patch(CONFIGMAPS, name, {"data": {"v": "1"}}, namespace=NAMESPACE)

    edits = asyncio.gather(*(edit(name) for name in kept))
    pid = rome_cluster.container_pid(kubelet, kubelet["spec"]["containers"][0]["name"])
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    await edits
    for name in deleted:
        await rome.delete(CONFIGMAPS, name, namespace=NAMESPACE)
    await until(lambda: converged(dict.fromkeys(kept, "1")), "milan: every copy converged, none left behind")

    # its metrics, scraped where Prometheus would (the pod's address, the health port, from inside the cluster)
    async def restarted() -> JSON | None:
        pods = (
            await rome.list(
                PODS,
                namespace="liqo-tenant-milan",
                label_selector=f"{c.LABEL_COMPONENT}={forge_vn.COMPONENT}",
            )
        ).items
        return next(
            (
                p
                for p in pods
                if (p.get("status") or {}).get("podIP") and p["status"].get("phase") == "Running"
            ),
            None,
        )

    pod = await until(restarted, "rome: the virtual kubelet running again")

    async def scraped() -> str | None:
        try:
            status, text = await rome_cluster.http_get(pod["status"]["podIP"], 8080, "/metrics")
        except (OSError, TimeoutError):
            return None
        if status != 200:
            return None
        line = next(
            (
                line
                for line in text.splitlines()
                if line.startswith("liqo_virtual_kubelet_reflection_item_counter{")
                and 'namespace="shop"' in line
                and 'reflector_resource="configmap"' in line
            ),
            "",
        )
        # app-config, home-only, marker, kube-root-ca.crt and the 30 kept
        return text if line.endswith(" 34.0") else None

    text = await until(scraped, "the virtual kubelet's /metrics: 34 ConfigMaps reflected in shop")
    assert 'liqo_virtual_kubelet_offloaded_pods{node_name="liqo-milan",phase="Running"} 2.0' in text


async def step_service_deleted(rome: Client, milan: Client) -> None:
    await rome.delete(SERVICES, "web", namespace=NAMESPACE)

    async def all_gone() -> bool:
        return (
            await get(milan, SERVICES, "web", namespace=TWIN) is None
            and not (await milan.list(SHADOWENDPOINTSLICES, namespace=TWIN)).items
            and not (await milan.list(ENDPOINTSLICES, namespace=TWIN, label_selector=REFLECTED_SLICES)).items
        )

    await until(all_gone, "milan: the Service's copies gone with it")
