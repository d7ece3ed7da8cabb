"""Offloading on real playground clusters: one consumer, two providers, the runtime as process pods.

rome (consumer) peers with milan (region north) and naples (region south), set up as the
Terraform resources do it (`playground.liqo`); the tests then write only what a user
writes: namespaces, NamespaceOffloadings (as `liqo_offload` does), Deployments. One
cluster trio goes through every step of issue 10's list, in order:

1. each pod offloading strategy with and without a cluster selector puts twin namespaces
   and pods where it should, and a 10-replica LocalAndRemote Deployment is spread over the
   local and the virtual nodes, all Running (`kubectl get pods -o wide` shows them);
2. an offloaded process pod authenticates to its home API server as its own ServiceAccount
   through the reflected token, and `kubectl logs` (`-c`, `--tail`, `--since`, `--previous`,
   `-f`) returns its output from the provider through the virtual kubelet's kubelet API;
3. rome's runtime stopped (its node agent down, a partition): the remote pods keep running
   and one deleted on naples comes back; rome back, its restart count says so;
4. the virtual kubelet SIGKILLed while a Deployment scales up: no remote pod duplicated,
   every replica Running;
5. unoffloading cleans both sides and brings the pods home; unpeering with offloaded pods
   cleans both sides too.
"""

from __future__ import annotations

import asyncio
import functools
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from playground import liqo
from playground.cluster import Cluster
from playground.testing import Playground
from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS, NAMESPACEOFFLOADINGS, SHADOWPODS, TENANTS
from runtime.api.image import runtime_image
from runtime.api.kinds import DEPLOYMENTS, NAMESPACES, NODES, PODS
from runtime.api.objects import JSON
from runtime.core import Client, NotFoundError
from runtime.forge import virtualnode as forge_vn
from runtime.forge.namespaceoffloading import namespace_offloading
from tests.playground.conftest import eventually

pytestmark = [pytest.mark.slow, pytest.mark.kubectl]

#: generous bounds: the machine is shared, and three clusters run their runtime as processes
WITHIN = 180.0
NORTH = {"topology.liqo.io/region": "north"}
SOUTH = {"topology.liqo.io/region": "south"}
LOCAL_NODE = "rome-control-plane"


async def get(api: Client, resource: Any, name: str, *, namespace: str | None = None) -> JSON | None:
    try:
        return await api.get(resource, name, namespace=namespace)
    except NotFoundError:
        return None


async def until(check: Callable[[], Awaitable[Any]], what: str, *, within: float = WITHIN) -> Any:
    """The first truthy value of `check`, polled within `within` seconds; AssertionError naming `what` otherwise."""
    found: list[Any] = []

    async def condition() -> bool:
        value = await check()
        if value:
            found.append(value)
        return bool(value)

    try:
        await eventually(condition, within=within, every=0.25)
    except AssertionError:
        raise AssertionError(f"{what}: not after {within:g} s") from None
    return found[-1]


async def _kubectl_process(kubeconfig: Path, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        "kubectl",
        "--kubeconfig",
        str(kubeconfig),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "HOME": str(kubeconfig.parent)},
    )


async def kubectl(kubeconfig: Path, *args: str) -> str:
    process = await _kubectl_process(kubeconfig, *args)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, f"kubectl {' '.join(args)}: {err.decode()}"
    return out.decode()


async def kubectl_for(kubeconfig: Path, *args: str, seconds: float) -> str:
    """What a kubectl that does not end by itself (`logs -f`) prints within `seconds`."""
    process = await _kubectl_process(kubeconfig, *args)
    assert process.stdout is not None
    printed = b""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    try:
        while (left := deadline - loop.time()) > 0:
            try:
                chunk = await asyncio.wait_for(process.stdout.read(4096), left)
            except TimeoutError:
                break
            if not chunk:
                break
            printed += chunk
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
    return printed.decode()


def deployment(name: str, replicas: int, **spec: Any) -> JSON:
    containers = spec.pop("containers", [{"name": "web", "image": "nginx"}])
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": containers, **spec}},
        },
    }


async def create_deployment(api: Client, namespace: str, body: JSON) -> None:
    """Create a Deployment (its pods are admitted once the namespace's offloading is processed)."""
    await api.create(DEPLOYMENTS, body, namespace=namespace)


async def pods_of(api: Client, namespace: str, app: str) -> list[JSON]:
    listed = (await api.list(PODS, namespace=namespace, label_selector=f"app={app}")).items
    return [pod for pod in listed if not pod["metadata"].get("deletionTimestamp")]


async def placed(api: Client, namespace: str, app: str, replicas: int) -> dict[str, list[str]] | None:
    """node -> pod names once `replicas` pods of `app` are Running (None until then)."""
    pods = await pods_of(api, namespace, app)
    if len(pods) != replicas or any((p.get("status") or {}).get("phase") != "Running" for p in pods):
        return None
    nodes: dict[str, list[str]] = {}
    for pod in pods:
        nodes.setdefault(pod["spec"]["nodeName"], []).append(pod["metadata"]["name"])
    return nodes


async def offload(api: Client, namespace: str, **spec: Any) -> None:
    await api.create(NAMESPACES, {"metadata": {"name": namespace}})
    await api.create(NAMESPACEOFFLOADINGS, namespace_offloading(namespace, **spec))

    async def ready() -> JSON | None:
        found = await get(api, NAMESPACEOFFLOADINGS, "offloading", namespace=namespace)
        status = (found or {}).get("status") or {}
        return status if status.get("offloadingPhase") == c.PHASE_READY else None

    await until(ready, f"rome: namespace {namespace} offloaded")


def region(name: str) -> list[JSON]:
    return [{"matchExpressions": [{"key": "topology.liqo.io/region", "operator": "In", "values": [name]}]}]


async def remote_names(api: Client, namespace: str) -> list[str]:
    return sorted(pod["metadata"]["name"] for pod in (await api.list(PODS, namespace=namespace)).items)


async def virtual_node_ready(rome: Client, name: str) -> bool:
    node = await get(rome, NODES, name)
    return any(
        cond.get("type") == "Ready" and cond.get("status") == "True"
        for cond in ((node or {}).get("status") or {}).get("conditions") or []
    )


async def three_regions(
    playground: Playground,
) -> tuple[Cluster, Cluster, Cluster, liqo.Identity, liqo.Identity]:
    """rome, milan (region north) and naples (region south) up, the runtime installed in each; the clusters and
    the providers' identities."""
    clusters = await playground.up("rome", "milan", "naples")
    rome_cluster, milan_cluster, naples_cluster = clusters["rome"], clusters["milan"], clusters["naples"]
    _, milan_identity, naples_identity = await asyncio.gather(
        liqo.install_runtime(rome_cluster),
        liqo.install_runtime(milan_cluster, cluster_labels=NORTH),
        liqo.install_runtime(naples_cluster, cluster_labels=SOUTH),
    )
    return rome_cluster, milan_cluster, naples_cluster, milan_identity, naples_identity


async def rome_and_milan(playground: Playground) -> tuple[Cluster, Cluster, liqo.Identity]:
    """rome and milan up, the runtime installed in each; the clusters and milan's identity (to peer with)."""
    clusters = await playground.up("rome", "milan")
    rome_cluster, milan_cluster = clusters["rome"], clusters["milan"]
    _, milan_identity = await asyncio.gather(
        liqo.install_runtime(rome_cluster), liqo.install_runtime(milan_cluster)
    )
    return rome_cluster, milan_cluster, milan_identity


async def test_offloading_on_real_processes(playground: Playground) -> None:
    rome_cluster, milan_cluster, naples_cluster, milan_identity, naples_identity = await three_regions(
        playground
    )
    async with (
        rome_cluster.client() as rome,
        milan_cluster.client() as milan,
        naples_cluster.client() as naples,
    ):
        await liqo.peer(rome, milan_identity, await liqo.issue_token(milan))
        await liqo.peer(rome, naples_identity, await liqo.issue_token(naples))
        for node in ("liqo-milan", "liqo-naples"):
            await until(functools.partial(virtual_node_ready, rome, node), f"rome: node {node} Ready")
        await step_strategies(rome_cluster, rome, milan, naples)
        await step_tokens_and_logs(rome_cluster, rome, naples)
        await step_partition(rome_cluster, rome, naples)
        await step_virtual_kubelet_killed(rome_cluster, rome, milan, naples)
        await step_unoffload_and_unpeer(rome, milan, naples)


async def step_strategies(rome_cluster: Cluster, rome: Client, milan: Client, naples: Client) -> None:
    # Remote, south only, same name: every pod on liqo-naples, the twin namespace only there
    await offload(
        rome,
        "south",
        pod_offloading_strategy="Remote",
        namespace_mapping_strategy="EnforceSameName",
        cluster_selector_terms=region("south"),
    )
    # Remote, no selector: virtual nodes only, either provider
    await offload(rome, "remote", pod_offloading_strategy="Remote")
    # Local: twin namespaces exist, pods stay home
    await offload(rome, "home", pod_offloading_strategy="Local")
    # LocalAndRemote, north only: the local node or liqo-milan
    await offload(rome, "north", cluster_selector_terms=region("north"))
    # LocalAndRemote, everywhere: the quick start's liqo-demo
    await offload(rome, "liqo-demo")
    await create_deployment(rome, "south", deployment("web", 2))
    await create_deployment(rome, "remote", deployment("web", 4))
    await create_deployment(rome, "home", deployment("web", 2))
    await create_deployment(rome, "north", deployment("web", 4))
    await create_deployment(rome, "liqo-demo", deployment("nginx", 10))

    south = await until(lambda: placed(rome, "south", "web", 2), "south: 2 pods Running")
    assert set(south) == {"liqo-naples"}
    assert await remote_names(naples, "south") == sorted(south["liqo-naples"])
    assert await get(milan, NAMESPACES, "south") is None
    remote = await until(lambda: placed(rome, "remote", "web", 4), "remote: 4 pods Running")
    assert set(remote) <= {"liqo-milan", "liqo-naples"}
    home = await until(lambda: placed(rome, "home", "web", 2), "home: 2 pods Running")
    assert set(home) == {LOCAL_NODE}
    for provider in (milan, naples):
        assert await get(provider, NAMESPACES, "home-rome") is not None
        assert await remote_names(provider, "home-rome") == []
    north = await until(lambda: placed(rome, "north", "web", 4), "north: 4 pods Running")
    assert set(north) <= {LOCAL_NODE, "liqo-milan"}
    assert await get(naples, NAMESPACES, "north-rome") is None
    demo = await until(
        lambda: placed(rome, "liqo-demo", "nginx", 10), "liqo-demo: 10 pods Running", within=WITHIN * 2
    )
    assert LOCAL_NODE in demo and ({"liqo-milan", "liqo-naples"} & set(demo)), f"not spread: {demo}"
    for node, provider in (("liqo-milan", milan), ("liqo-naples", naples)):
        assert await remote_names(provider, "liqo-demo-rome") == sorted(demo.get(node, []))
    wide = await kubectl(rome_cluster.kubeconfig, "get", "pods", "-n", "liqo-demo", "-o", "wide")
    rows = [line.split() for line in wide.splitlines()[1:]]
    assert len(rows) == 10 and {row[2] for row in rows} == {"Running"}
    assert {row[6] for row in rows} == set(demo)


PROBE = """
import json, os, ssl, sys, time, urllib.request
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
token = open(f"{sa}/token").read()
context = ssl.create_default_context(cafile=f"{sa}/ca.crt")
host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
body = json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).encode()
request = urllib.request.Request(
    f"https://{host}:{port}/apis/authentication.k8s.io/v1/selfsubjectreviews", data=body, method="POST",
    headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
user = json.load(urllib.request.urlopen(request, context=context))["status"]["userInfo"]["username"]
print(f"home namespace {open(sa + '/namespace').read()} user {user}", flush=True)
for i in range(1000):
    print(f"tick {i}", flush=True)
    time.sleep(0.5)
"""

CRASHER = "import sys, time; print('crasher ran at', time.time(), flush=True); sys.exit(1)"


async def step_tokens_and_logs(rome_cluster: Cluster, rome: Client, naples: Client) -> None:
    containers = [
        {"name": "probe", "image": runtime_image(), "command": ["python", "-c", PROBE]},
        {"name": "crasher", "image": runtime_image(), "command": ["python", "-c", CRASHER]},
    ]
    await create_deployment(rome, "south", deployment("probe", 1, containers=containers))

    async def crashed_once() -> JSON | None:
        pods = await pods_of(rome, "south", "probe")
        statuses = (
            {s["name"]: s for s in ((pods[0].get("status") or {}).get("containerStatuses") or [])}
            if pods
            else {}
        )
        crasher = statuses.get("crasher") or {}
        return pods[0] if int(crasher.get("restartCount") or 0) >= 1 else None

    pod = await until(crashed_once, "south: the probe pod offloaded, its crasher restarted")
    name = pod["metadata"]["name"]
    assert pod["spec"]["nodeName"] == "liqo-naples"
    config = rome_cluster.kubeconfig

    async def logs(*args: str) -> str:
        return await kubectl(config, "logs", "-n", "south", name, *args)

    async def two_ticks() -> str | None:
        text = await logs("-c", "probe")
        return text if "tick 1" in text else None

    first = await until(two_ticks, "kubectl logs -c probe: two ticks written")
    assert "home namespace south user system:serviceaccount:south:default" in first, first
    tail = await logs("-c", "probe", "--tail=2")
    assert len(tail.splitlines()) == 2 and all(line.startswith("tick") for line in tail.splitlines()), tail
    assert "tick 0" in await logs("-c", "probe", "--since=1h")
    previous = await logs("-c", "crasher", "--previous")
    assert "crasher ran at" in previous
    followed = await kubectl_for(
        config, "logs", "-n", "south", name, "-c", "probe", "-f", "--tail=1", seconds=5.0
    )
    ticks = [line for line in followed.splitlines() if line.startswith("tick")]
    assert len(ticks) >= 2, f"kubectl logs -f streamed {followed!r}"


async def step_partition(rome_cluster: Cluster, rome: Client, naples: Client) -> None:
    before = await remote_names(naples, "south")
    victim = next(n for n in before if n.startswith("web-"))
    uid = (await naples.get(PODS, victim, namespace="south"))["metadata"]["uid"]
    await rome_cluster.stop_node(LOCAL_NODE)
    try:
        await naples.delete(PODS, victim, namespace="south")

        async def back() -> JSON | None:
            found = await get(naples, PODS, victim, namespace="south")
            if found is None or found["metadata"]["uid"] == uid:
                return None
            return found if (found.get("status") or {}).get("phase") == "Running" else None

        await until(back, "naples: the deleted pod back while rome's runtime is down")
        assert await remote_names(naples, "south") == before, "remote pods kept running through the partition"
    finally:
        await rome_cluster.start_node(LOCAL_NODE)

    async def counted() -> bool:
        pod = await get(rome, PODS, victim, namespace="south")
        statuses = ((pod or {}).get("status") or {}).get("containerStatuses") or []
        return bool(statuses) and statuses[0]["restartCount"] >= 1

    await until(counted, "rome: the recreation counted as a restart")


async def step_virtual_kubelet_killed(
    rome_cluster: Cluster, rome: Client, milan: Client, naples: Client
) -> None:
    await rome.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 8}}, namespace="remote")
    (kubelet,) = [
        pod
        for pod in (
            await rome.list(
                PODS,
                namespace="liqo-tenant-naples",
                label_selector=f"{c.LABEL_COMPONENT}={forge_vn.COMPONENT}",
            )
        ).items
        if (pod.get("status") or {}).get("phase") == "Running"
    ]
    pid = rome_cluster.container_pid(kubelet, kubelet["spec"]["containers"][0]["name"])
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    spread = await until(lambda: placed(rome, "remote", "web", 8), "remote: 8 pods Running after the kill")
    for node, provider in (("liqo-milan", milan), ("liqo-naples", naples)):
        names = await remote_names(provider, "remote-rome")
        assert names == sorted(spread.get(node, [])), f"{node}: remote {names}, local {spread.get(node)}"
        shadows = [
            s["metadata"]["name"] for s in (await provider.list(SHADOWPODS, namespace="remote-rome")).items
        ]
        assert sorted(shadows) == names


async def step_unoffload_and_unpeer(rome: Client, milan: Client, naples: Client) -> None:
    # unoffloading "south": its twin namespace goes, and its pods come home (the webhook no longer sends them away)
    await rome.delete(NAMESPACEOFFLOADINGS, "offloading", namespace="south")

    async def home() -> dict[str, list[str]] | None:
        where = await placed(rome, "south", "web", 2)
        gone = await get(naples, NAMESPACES, "south") is None
        return where if where is not None and set(where) == {LOCAL_NODE} and gone else None

    await until(home, "south: unoffloaded, pods Running at home")
    # unpeering naples with pods offloaded there: both sides clean, the pods rescheduled
    await rome.delete(FOREIGNCLUSTERS, "naples")

    async def unpeered() -> bool:
        demo = await placed(rome, "liqo-demo", "nginx", 10)
        return (
            demo is not None
            and "liqo-naples" not in demo
            and await get(rome, NODES, "liqo-naples") is None
            and await get(naples, NAMESPACES, "liqo-demo-rome") is None
            and not (await naples.list(TENANTS)).items
        )

    await until(
        unpeered,
        "naples unpeered: its twin namespaces and tenant gone, the pods elsewhere",
        within=WITHIN * 2,
    )
    offloading = await rome.get(NAMESPACEOFFLOADINGS, "offloading", namespace="liqo-demo")
    assert set(offloading["status"]["remoteNamespacesConditions"]) == {"milan"}
    assert await remote_names(milan, "liqo-demo-rome")
