"""Peering on two real playground clusters: what only the runtime's real processes can show.

rome (consumer) and milan (provider) are playground clusters with the default, overlapping
pod CIDRs. The runtime is installed in both as `liqo_install` does it, so its Deployments'
pods run as local processes under the playground's node agents; rome peers with milan by
server-side applying only what `liqo_peer` writes, with a token issued as `liqo_generate`
issues it (all three through `playground.liqo`). One cluster pair goes through every step:

1. the Ready virtual node `liqo-milan` with issue 4's labels, taint and capacity, and
   `kubectl get foreignclusters` (the real binary) reading like Liqo's docs;
2. the consumer's credential on milan (the Secret the virtual kubelet reads) is refused
   outside its tenant namespace (403) and accepted in it;
3. runtime components killed (pods deleted, a process SIGKILLed) converge on the same
   virtual node (same uid) and no duplicate Tenant, ResourceSlice or VirtualNode;
4. milan's API server stopped turns the virtual node NotReady, started again Ready;
5. unpeer removes the virtual node, Tenant, tenant namespaces and ResourceSlices on both sides.

Step 3 re-creates milan's auth pod: its URL (a node address and the `liqo-auth` NodePort)
must not move, or rome could no longer revoke its identity at unpeer nor renew its
credential (it did move while the auth service advertised its pod's IP).
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
from runtime.api.crds import FOREIGNCLUSTERS, IDENTITIES, RESOURCESLICES, TENANTS, VIRTUALNODES
from runtime.api.kinds import CONFIGMAPS, DEPLOYMENTS, NAMESPACES, NODES, PODS, SECRETS
from runtime.api.objects import JSON
from runtime.api.quantity import parse_quantity
from runtime.controllers.core.objects import kubeconfig_of
from runtime.core import Client, ForbiddenError, NotFoundError
from runtime.forge import install
from runtime.forge import virtualnode as forge_vn
from tests.playground.conftest import eventually
from tests.runtime.liqo_docs import FOREIGNCLUSTERS_HEADER, MILAN_NETWORKED

pytestmark = [pytest.mark.slow, pytest.mark.kubectl]

NAMESPACE = liqo.NAMESPACE
NODE = "liqo-milan"
#: milan's cluster labels, which its virtual node on rome carries
MILAN_LABELS = {"topology.kubernetes.io/region": "north"}
#: the peering's extra node labels (the ForeignCluster's spec.nodeLabels)
NODE_LABELS = {"example.com/tier": "burst"}
#: generous bounds: the machine is shared, and the virtual kubelet needs three failed pings 10 s apart
WITHIN = 180.0


async def get(api: Client, resource: Any, name: str, *, namespace: str | None = None) -> JSON | None:
    try:
        return await api.get(resource, name, namespace=namespace)
    except NotFoundError:
        return None


def ready_status(node: JSON | None) -> str | None:
    for condition in ((node or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return str(condition.get("status"))
    return None


async def virtual_node_ready(rome: Client) -> JSON | None:
    node = await get(rome, NODES, NODE)
    return node if ready_status(node) == "True" else None


async def established(rome: Client) -> JSON | None:
    """milan's ForeignCluster status once its outgoing peering is Established (it lags the node by a reconcile)."""
    status = ((await get(rome, FOREIGNCLUSTERS, "milan")) or {}).get("status") or {}
    return status if status.get("outgoingPeering") == "Established" else None


async def networked(rome: Client) -> JSON | None:
    """milan's ForeignCluster status once the network fabric is up (the gateways' tunnel)."""
    status = ((await get(rome, FOREIGNCLUSTERS, "milan")) or {}).get("status") or {}
    return status if status.get("networking") == "Established" else None


async def until(check: Callable[[], Awaitable[JSON | None]], what: str) -> JSON:
    """The first truthy value of `check`, polled within WITHIN seconds; AssertionError naming `what` otherwise."""
    found: list[JSON] = []

    async def condition() -> bool:
        value = await check()
        if value:
            found.append(value)
        return bool(value)

    try:
        await eventually(condition, within=WITHIN, every=0.25)
    except AssertionError:
        raise AssertionError(f"{what}: not after {WITHIN:g} s") from None
    return found[-1]


async def kubectl(kubeconfig: Path, *args: str) -> str:
    """The real kubectl against a cluster (its discovery cache under the cluster's directory)."""
    process = await asyncio.create_subprocess_exec(
        "kubectl",
        "--kubeconfig",
        str(kubeconfig),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "HOME": str(kubeconfig.parent)},
    )
    out, err = await process.communicate()
    assert process.returncode == 0, f"kubectl {' '.join(args)}: {err.decode()}"
    return out.decode()


async def running_pods(api: Client, namespace: str, component: str) -> list[JSON]:
    pods = (
        await api.list(PODS, namespace=namespace, label_selector=f"{c.LABEL_COMPONENT}={component}")
    ).items
    return [
        pod
        for pod in pods
        if (pod.get("status") or {}).get("phase") == "Running"
        and not pod["metadata"].get("deletionTimestamp")
    ]


async def replaced(api: Client, namespace: str, component: str, old_uid: str) -> JSON | None:
    """The one Running pod of `component` once it is another pod than `old_uid` (its Deployment re-created it)."""
    pods = await running_pods(api, namespace, component)
    fresh = [pod for pod in pods if pod["metadata"]["uid"] != old_uid]
    return fresh[0] if len(pods) == 1 and fresh else None


async def restarted(
    cluster: Cluster, api: Client, namespace: str, component: str, old_pid: int
) -> JSON | None:
    """The pod of `component` once its container runs as another process than `old_pid`."""
    pods = await running_pods(api, namespace, component)
    if len(pods) != 1:
        return None
    pid = cluster.container_pid(pods[0], pods[0]["spec"]["containers"][0]["name"])
    return pods[0] if pid is not None and pid != old_pid else None


async def absent(api: Client, resource: Any, name: str, namespace: str | None) -> JSON | None:
    return None if await get(api, resource, name, namespace=namespace) else {"absent": True}


async def count(api: Client, resource: Any, namespace: str | None = None) -> int:
    return len((await api.list(resource, namespace=namespace)).items)


async def assert_single_peering(rome: Client, milan: Client) -> None:
    """One of each peering object: no duplicates after restarts."""
    assert await count(milan, TENANTS) == 1
    assert await count(milan, RESOURCESLICES) == 1
    assert await count(rome, VIRTUALNODES) == 1
    assert await count(rome, IDENTITIES) == 1
    # the virtual kubelet's and the gateway client's
    deployments = (await rome.list(DEPLOYMENTS, namespace="liqo-tenant-milan")).items
    assert sorted(item["metadata"]["labels"][c.LABEL_COMPONENT] for item in deployments) == [
        "gateway",
        "virtual-kubelet",
    ], deployments
    assert [
        node["metadata"]["name"]
        for node in (await rome.list(NODES)).items
        if node["metadata"]["name"].startswith(c.VIRTUAL_NODE_PREFIX)
    ] == [NODE]


async def test_peering_on_real_processes_survives_kills_and_an_api_server_outage_and_unpeers(
    playground: Playground,
) -> None:
    clusters = await playground.up("rome", "milan")
    rome_cluster, milan_cluster = clusters["rome"], clusters["milan"]
    assert rome_cluster.spec.pod_cidr == milan_cluster.spec.pod_cidr, "the default pod CIDRs overlap"
    _, identity = await asyncio.gather(
        liqo.install_runtime(rome_cluster), liqo.install_runtime(milan_cluster, cluster_labels=MILAN_LABELS)
    )
    async with rome_cluster.client() as rome, milan_cluster.client() as milan:
        await liqo.peer(rome, identity, await liqo.issue_token(milan), node_labels=NODE_LABELS)

        # 1. a Ready virtual node standing for milan, with the labels, taint and capacity of issue 4
        node = await until(lambda: virtual_node_ready(rome), f"rome: node {NODE} Ready")
        uid = node["metadata"]["uid"]
        labels = node["metadata"]["labels"]
        assert labels[c.LABEL_TYPE] == c.TYPE_VIRTUAL_NODE
        assert labels[c.LABEL_REMOTE_CLUSTER_ID] == identity.cluster_id
        assert c.LABEL_ROLE_AGENT in labels
        assert MILAN_LABELS.items() <= labels.items()
        assert NODE_LABELS.items() <= labels.items()
        taint = {"key": c.TAINT_VIRTUAL_NODE, "effect": c.TAINT_VIRTUAL_NODE_EFFECT}
        assert any(taint.items() <= entry.items() for entry in node["spec"].get("taints") or [])
        slice_ = await milan.get(RESOURCESLICES, "rome", namespace="liqo-tenant-rome")
        granted = slice_["status"]["resources"]
        for resource in ("cpu", "memory", "pods"):
            assert parse_quantity(granted[resource]).value > 0, granted
            for field in ("capacity", "allocatable"):
                assert parse_quantity(node["status"][field][resource]) == parse_quantity(granted[resource]), (
                    field,
                    node["status"],
                    granted,
                )
        # the default share: 90 % of milan's free allocatable, so less than its nodes have
        milan_cpu = sum(
            parse_quantity(item["status"]["allocatable"]["cpu"]).value
            for item in (await milan.list(NODES)).items
        )
        assert parse_quantity(granted["cpu"]).value < milan_cpu

        await until(lambda: established(rome), "rome: ForeignCluster milan Established")
        await until(lambda: networked(rome), "rome: the network fabric with milan Established")
        table = (await kubectl(rome_cluster.kubeconfig, "get", "foreignclusters")).splitlines()
        assert table[0].split() == FOREIGNCLUSTERS_HEADER, table
        assert len(table) == 2, table
        assert table[1].split()[:6] == MILAN_NETWORKED
        wide = (await kubectl(rome_cluster.kubeconfig, "get", "foreignclusters", "-o", "wide")).splitlines()
        assert wide[0].split()[-3:] == ["CLUSTER", "ID", "AGE"], wide
        assert wide[1].split()[-2] == identity.cluster_id, wide

        # 2. the credential the virtual kubelet uses reaches only rome's tenant namespace on milan
        secret = await rome.get(SECRETS, f"{c.CREDENTIAL_SECRET_PREFIX}milan", namespace="liqo-tenant-milan")
        config = kubeconfig_of(secret)
        assert config is not None, secret["metadata"]
        async with await Client.from_kubeconfig_dict(config) as credential:
            assert len((await credential.list(RESOURCESLICES, namespace="liqo-tenant-rome")).items) == 1
            for outside in ("default", NAMESPACE):
                with pytest.raises(ForbiddenError) as denied:
                    await credential.list(PODS, namespace=outside)
                assert denied.value.code == 403
                with pytest.raises(ForbiddenError):
                    await credential.list(RESOURCESLICES, namespace=outside)

        # 3. killed components converge: same virtual node, nothing duplicated
        (manager,) = await running_pods(rome, NAMESPACE, install.CONTROLLER_MANAGER)
        (auth,) = await running_pods(milan, NAMESPACE, install.AUTH)
        await rome.delete(PODS, manager["metadata"]["name"], namespace=NAMESPACE)
        await milan.delete(PODS, auth["metadata"]["name"], namespace=NAMESPACE)
        (kubelet,) = await running_pods(rome, "liqo-tenant-milan", forge_vn.COMPONENT)
        (provider_manager,) = await running_pods(milan, NAMESPACE, install.CONTROLLER_MANAGER)
        killed = []
        for cluster, pod in ((rome_cluster, kubelet), (milan_cluster, provider_manager)):
            pid = cluster.container_pid(pod, pod["spec"]["containers"][0]["name"])
            assert pid is not None, f"{cluster.name}: no process for pod {pod['metadata']['name']}"
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        await until(
            lambda: replaced(rome, NAMESPACE, install.CONTROLLER_MANAGER, manager["metadata"]["uid"]),
            "rome: a new controller-manager pod Running",
        )
        await until(
            lambda: replaced(milan, NAMESPACE, install.AUTH, auth["metadata"]["uid"]),
            "milan: a new auth pod Running",
        )
        await until(
            lambda: restarted(rome_cluster, rome, "liqo-tenant-milan", forge_vn.COMPONENT, killed[0]),
            "rome: the virtual kubelet's process restarted after SIGKILL",
        )
        await until(
            lambda: restarted(milan_cluster, milan, NAMESPACE, install.CONTROLLER_MANAGER, killed[1]),
            "milan: the controller manager's process restarted after SIGKILL",
        )
        node = await until(lambda: virtual_node_ready(rome), f"rome: node {NODE} Ready after the kills")
        assert node["metadata"]["uid"] == uid
        published = (await milan.get(CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace=NAMESPACE))["data"]
        assert published[c.IDENTITY_AUTH_URL] == identity.auth_url, "the auth URL moved with its pod"
        await assert_single_peering(rome, milan)

        # 4. milan's API server down: NotReady; up again: Ready, the same node
        await milan_cluster.stop_apiserver()

        async def not_ready() -> JSON | None:
            found = await get(rome, NODES, NODE)
            return found if found is not None and ready_status(found) != "True" else None

        down = await until(not_ready, f"rome: node {NODE} NotReady with milan's API server stopped")
        assert down["metadata"]["uid"] == uid
        await milan_cluster.start_apiserver()
        node = await until(
            lambda: virtual_node_ready(rome), f"rome: node {NODE} Ready after milan's API server restarted"
        )
        assert node["metadata"]["uid"] == uid
        await assert_single_peering(rome, milan)

        # 5. unpeer: everything goes, on both sides
        await rome.delete(FOREIGNCLUSTERS, "milan")
        sides = {"rome": rome, "milan": milan}
        for side, kind, name, namespace in (
            ("rome", FOREIGNCLUSTERS, "milan", None),
            ("rome", NODES, NODE, None),
            ("rome", NAMESPACES, "liqo-tenant-milan", None),
            ("milan", RESOURCESLICES, "rome", "liqo-tenant-rome"),
        ):
            await until(
                functools.partial(absent, sides[side], kind, name, namespace),
                f"{side}: {kind.kind} {namespace or ''}/{name} deleted by the unpeer",
            )
        for side, kind in (("rome", RESOURCESLICES), ("rome", VIRTUALNODES), ("rome", IDENTITIES)):
            assert (await sides[side].list(kind)).items == [], f"{side}: {kind.kind} left after the unpeer"
        for kind, name, namespace in (
            (NAMESPACES, "liqo-tenant-rome", None),
            (TENANTS, "rome", "liqo-tenant-rome"),
        ):
            await until(
                functools.partial(absent, milan, kind, name, namespace),
                f"milan: {kind.kind} {namespace or ''}/{name} deleted by the unpeer",
            )
        assert (await milan.list(TENANTS)).items == []
        assert (await milan.list(RESOURCESLICES)).items == []
