"""The virtual kubelet against two emulators: the consumer it registers the node in, the provider it checks."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import subprocess
from pathlib import Path
from typing import Any

import aiohttp

from runtime.api import constants as c
from runtime.api.crds import VIRTUALNODES
from runtime.api.kinds import LEASES, NODES, SECRETS, SERVICEACCOUNTS
from runtime.api.objects import JSON
from runtime.core import Client, NotFoundError
from runtime.forge.virtualnode import virtual_kubelet, virtual_kubelet_name
from runtime.virtualkubelet.main import main
from tests.playground.conftest import eventually

from .conftest import RESOURCES, Peering, Provider, running, secret_body


async def node_of(client: Client, peering: Peering) -> JSON | None:
    try:
        return await client.get(NODES, peering.node)
    except NotFoundError:
        return None


def ready(node: JSON | None) -> JSON | None:
    for condition in ((node or {}).get("status") or {}).get("conditions") or []:
        if condition["type"] == "Ready":
            return dict(condition)
    return None


async def ready_status(client: Client, peering: Peering) -> str | None:
    condition = ready(await node_of(client, peering))
    return condition["status"] if condition else None


def kubectl(kubeconfig: Path, *args: str) -> str:
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(kubeconfig.parent)},
        check=True,
    )
    return result.stdout


async def test_the_node_stands_for_the_provider(client: Client, consumer: Path, peering: Peering) -> None:
    async with running(client, peering) as kubelet:
        await eventually(lambda: ready_status(client, peering), within=20)
        await eventually(lambda: _is(ready_status(client, peering), "True"), within=20)
        node = await node_of(client, peering)
        assert node is not None
        labels = node["metadata"]["labels"]
        assert labels[c.LABEL_TYPE] == c.TYPE_VIRTUAL_NODE
        assert labels[c.LABEL_REMOTE_CLUSTER_ID] == peering.cluster_id
        assert labels[c.LABEL_ROLE_AGENT] == ""
        assert labels["kubernetes.io/hostname"] == peering.node
        assert labels["kubernetes.io/os"] == "linux"
        assert labels["topology.kubernetes.io/region"] == "eu-south"
        assert node["spec"]["taints"] == [{"key": c.TAINT_VIRTUAL_NODE, "effect": "NoExecute"}]
        assert node["status"]["capacity"] == RESOURCES
        assert node["status"]["allocatable"] == RESOURCES
        assert node["status"]["nodeInfo"]["kubeletVersion"].endswith("-playground")
        assert {"type": "InternalIP", "address": "127.0.0.42"} in node["status"]["addresses"]
        types = {condition["type"]: condition["status"] for condition in node["status"]["conditions"]}
        assert types == {
            "Ready": "True",
            "MemoryPressure": "False",
            "DiskPressure": "False",
            "PIDPressure": "False",
            "NetworkUnavailable": "False",
        }
        assert kubelet.ready()

        listing = kubectl(consumer, "get", "nodes", peering.node, "--no-headers")
        name, status, roles, *_ = listing.split()
        assert (name, status, roles) == (peering.node, "Ready", "agent")

        lease = await client.get(LEASES, peering.node, namespace="kube-node-lease")
        assert lease["spec"]["holderIdentity"] == peering.node
        assert lease["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]

        async def renewed() -> bool:
            again = await client.get(LEASES, peering.node, namespace="kube-node-lease")
            return bool(again["spec"]["renewTime"] != lease["spec"]["renewTime"])

        await eventually(renewed, within=10)


async def test_resources_labels_and_taints_follow_the_virtual_node(client: Client, peering: Peering) -> None:
    async with running(client, peering):
        await eventually(lambda: node_of(client, peering), within=20)
        await client.patch(NODES, peering.node, {"metadata": {"labels": {"team": "blue"}}})
        await client.patch(
            VIRTUALNODES,
            peering.name,
            {
                "spec": {
                    "resources": {"cpu": "2", "memory": "4Gi", "pods": "50", "nvidia.com/gpu": "1"},
                    "labels": {"topology.kubernetes.io/region": None, "tier": "gold"},
                    "taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}],
                }
            },
            namespace=peering.namespace,
        )

        async def updated() -> bool:
            node = await node_of(client, peering)
            return bool(node and node["status"]["capacity"].get("nvidia.com/gpu") == "1")

        await eventually(updated, within=20)
        node = await node_of(client, peering)
        assert node is not None
        assert node["status"]["allocatable"] == {
            "cpu": "2",
            "memory": "4Gi",
            "pods": "50",
            "nvidia.com/gpu": "1",
        }
        labels = node["metadata"]["labels"]
        assert labels["tier"] == "gold"
        assert "topology.kubernetes.io/region" not in labels
        assert labels["team"] == "blue", "a label somebody else set stays"
        assert node["spec"]["taints"] == [
            {"key": c.TAINT_VIRTUAL_NODE, "effect": "NoExecute"},
            {"key": "dedicated", "value": "ml", "effect": "NoSchedule"},
        ]

        await client.patch(VIRTUALNODES, peering.name, {"spec": {"taints": []}}, namespace=peering.namespace)

        async def untainted() -> bool:
            node = await node_of(client, peering)
            return bool(node and len(node["spec"]["taints"]) == 1)

        await eventually(untainted, within=20)


async def test_the_node_turns_not_ready_while_the_provider_is_down(
    client: Client, peering: Peering, restartable: Provider
) -> None:
    provider = restartable
    await client.replace(SECRETS, secret_body(peering, provider.credential()))
    async with running(client, peering):
        await eventually(lambda: _is(ready_status(client, peering), "True"), within=20)
        await asyncio.to_thread(provider.stop)
        await eventually(lambda: _is(ready_status(client, peering), "False"), within=20)
        condition = ready(await node_of(client, peering))
        assert condition is not None
        assert condition["reason"] == "ProviderUnreachable"
        assert (
            f"3 or more consecutive health checks of provider {peering.name} failed" in condition["message"]
        )
        assert (
            f"the API server of provider {peering.name} (https://127.0.0.1:{provider.port}) cannot be reached: the"
            " connection was refused (nothing listens there)" in condition["message"]
        ), condition["message"]

        await asyncio.to_thread(provider.start)
        await eventually(lambda: _is(ready_status(client, peering), "True"), within=20)
        assert ready(await node_of(client, peering))["reason"] == "ProviderReady"  # type: ignore[index]


async def test_a_new_credential_is_used_without_a_restart(
    client: Client, peering: Peering, provider: Provider
) -> None:
    await client.replace(SECRETS, secret_body(peering, provider.credential(token="revoked")))
    async with running(client, peering):
        await eventually(lambda: _is(ready_status(client, peering), "False"), within=20)
        condition = ready(await node_of(client, peering))
        assert condition is not None
        assert condition["message"].endswith(
            f"the API server of provider {peering.name} (https://127.0.0.1:{provider.port}) does not accept the"
            " credentials (user 'kubernetes-admin' in in-memory kubeconfig, a bearer token): 401 Unauthorized"
        ), condition["message"]

        await client.replace(SECRETS, secret_body(peering, provider.credential()))
        await eventually(lambda: _is(ready_status(client, peering), "True"), within=20)


async def test_readiness_and_shutdown(client: Client, peering: Peering) -> None:
    async with running(client, peering) as kubelet, aiohttp.ClientSession() as http:
        await eventually(lambda: kubelet.server is not None and kubelet.server.port is not None, within=20)
        assert kubelet.server is not None
        url = f"http://127.0.0.1:{kubelet.server.port}/readyz"

        async def answers(expected: int) -> bool:
            async with http.get(url) as response:
                return response.status == expected

        await eventually(lambda: answers(200), within=20)
    assert (await node_of(client, peering)) is not None, "stopping the virtual kubelet leaves the Node"


async def test_no_node_when_the_virtual_node_says_so(client: Client, peering: Peering) -> None:
    await client.patch(
        VIRTUALNODES, peering.name, {"spec": {"createNode": False}}, namespace=peering.namespace
    )
    async with running(client, peering) as kubelet:
        await eventually(kubelet.ready, within=20)
        assert await node_of(client, peering) is None


async def test_a_deleted_node_is_registered_again(client: Client, peering: Peering) -> None:
    async with running(client, peering):
        await eventually(lambda: node_of(client, peering), within=20)
        first = await node_of(client, peering)
        assert first is not None
        await client.delete(NODES, peering.node)

        async def again() -> bool:
            node = await node_of(client, peering)
            return bool(node and node["metadata"]["uid"] != first["metadata"]["uid"])

        await eventually(again, within=20)


async def test_the_rights_the_controller_manager_grants_are_enough(client: Client, peering: Peering) -> None:
    """Run as the ServiceAccount `runtime.forge.virtualnode` sets up, with the ClusterRole and Role it makes."""
    virtual_node = await client.get(VIRTUALNODES, peering.name, namespace=peering.namespace)
    for obj in virtual_kubelet(virtual_node, home_cluster_id="home")[:-1]:  # everything but the Deployment
        await client.create(await client.resource_for(obj["apiVersion"], obj["kind"]), obj)
    account = virtual_kubelet_name(virtual_node)
    request = await client.create(
        SERVICEACCOUNTS,
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        },
        namespace=peering.namespace,
        name=account,
        subresource="token",
    )
    config = dataclasses.replace(
        client.config, client_certificate=None, client_key=None, token=request["status"]["token"]
    )
    async with await Client.from_config(config) as restricted, running(restricted, peering):
        await eventually(lambda: _is(ready_status(client, peering), "True"), within=10)
        await eventually(lambda: client.get(LEASES, peering.node, namespace="kube-node-lease"), within=10)


async def test_a_missing_virtual_node_is_an_error(consumer: Path, caplog: Any) -> None:
    code = await main(
        [
            "--virtual-node=nowhere/nothing",
            f"--kubeconfig={consumer}",
            "--health-address=127.0.0.1:0",
            "--home-cluster-id=home",
        ]
    )
    assert code == 1
    assert "nowhere/nothing: VirtualNode not found" in caplog.text


async def _is(value: Any, expected: str) -> bool:
    return bool(await value == expected)


async def test_the_virtual_kubelet_stops_by_itself_when_its_virtual_node_is_deleted(
    client: Client, consumer: Path, peering: Peering
) -> None:
    # a finalizer holds the VirtualNode, as the controller manager's does while it cleans up
    await client.patch(
        VIRTUALNODES,
        peering.name,
        {"metadata": {"finalizers": ["example.com/hold"]}},
        namespace=peering.namespace,
    )
    args = [
        f"--virtual-node={peering.namespace}/{peering.name}",
        f"--kubeconfig={consumer}",
        "--home-cluster-id=home",
        "--kubelet-address=127.0.0.1:0",
    ]
    kubelet = asyncio.create_task(main([*args, "--health-address=127.0.0.1:0"]))
    try:
        await eventually(lambda: _lease(client, peering), within=20)
        await client.delete(VIRTUALNODES, peering.name, namespace=peering.namespace)
        await eventually(kubelet.done, within=20)
        assert kubelet.result() == 0
        # started again (its Deployment not deleted yet), it has nothing to run for
        assert await main([*args, "--health-address=127.0.0.1:0"]) == 0
    finally:
        kubelet.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await kubelet
        await client.patch(
            VIRTUALNODES, peering.name, {"metadata": {"finalizers": []}}, namespace=peering.namespace
        )
    # the Node stays: it is the controller manager's to delete
    assert await node_of(client, peering) is not None


async def _lease(client: Client, peering: Peering) -> JSON | None:
    try:
        return await client.get(LEASES, peering.node, namespace="kube-node-lease")
    except NotFoundError:
        return None
