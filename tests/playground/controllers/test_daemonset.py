"""The DaemonSet controller against an emulator of the test's own (nodes are cluster-wide): one pod per
eligible node, node selectors and taints, default daemon tolerations, revisions, rolling updates."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from pathlib import Path

from playground.controllers import daemonset
from runtime.api.kinds import CONTROLLERREVISIONS, DAEMONSETS, NAMESPACES, NODES
from runtime.api.objects import JSON
from runtime.core import Client
from tests.playground.conftest import eventually, running

from .workload_support import Kubelet, is_ready, live_pods, node, set_ready, with_default_account, workload

SELECTOR = {"matchLabels": {"app": "agent"}}
DEDICATED = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}


async def _namespace(client: Client) -> str:
    name = f"t-{uuid.uuid4().hex[:10]}"
    await client.create(NAMESPACES, {"metadata": {"name": name}})
    return await with_default_account(client, name)


def _target(pod: JSON) -> str:
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [
        {
            "matchFields": [
                {"key": "metadata.name", "operator": "In", "values": terms[0]["matchFields"][0]["values"]}
            ]
        }
    ]
    return str(terms[0]["matchFields"][0]["values"][0])


async def _targets(client: Client, namespace: str) -> list[str]:
    return sorted(_target(pod) for pod in await live_pods(client, namespace, SELECTOR))


async def _status(client: Client, namespace: str) -> JSON:
    return dict((await client.get(DAEMONSETS, "agent", namespace=namespace)).get("status") or {})


async def test_one_pod_per_eligible_node_honouring_selector_and_taints(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, daemonset.setup) as client:
        await node(client, "ssd-1", labels={"disk": "ssd"})
        await node(client, "ssd-tainted", labels={"disk": "ssd"}, taints=[DEDICATED])
        await node(client, "hdd-1", labels={"disk": "hdd"})
        await node(
            client,
            "ssd-not-ready",
            labels={"disk": "ssd"},
            taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}],
        )
        namespace = await _namespace(client)
        body = workload("agent", {"app": "agent"})
        body["spec"]["template"]["spec"]["nodeSelector"] = {"disk": "ssd"}
        ds = await client.create(DAEMONSETS, body, namespace=namespace)

        async def placed(expected: list[str]) -> bool:
            return await _targets(client, namespace) == expected

        await eventually(lambda: placed(["ssd-1", "ssd-not-ready"]))
        pods = await live_pods(client, namespace, SELECTOR)
        for pod in pods:
            assert pod["metadata"]["name"].startswith("agent-")
            assert pod["metadata"]["ownerReferences"][0]["uid"] == ds["metadata"]["uid"]
            tolerations = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]}
            assert {
                ("node.kubernetes.io/not-ready", "NoExecute"),
                ("node.kubernetes.io/unreachable", "NoExecute"),
                ("node.kubernetes.io/disk-pressure", "NoSchedule"),
                ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                ("node.kubernetes.io/pid-pressure", "NoSchedule"),
                ("node.kubernetes.io/unschedulable", "NoSchedule"),
            } <= tolerations
        [revision] = (await client.list(CONTROLLERREVISIONS, namespace=namespace)).items
        revision_hash = revision["metadata"]["labels"]["controller-revision-hash"]
        assert revision["metadata"]["name"] == f"agent-{revision_hash}"
        assert revision["revision"] == 1
        assert {pod["metadata"]["labels"]["controller-revision-hash"] for pod in pods} == {revision_hash}

        async def counted(**expected: int) -> bool:
            status = await _status(client, namespace)
            return all(status.get(field, 0) == value for field, value in expected.items())

        await eventually(
            lambda: counted(
                desiredNumberScheduled=2,
                currentNumberScheduled=2,
                numberMisscheduled=0,
                numberReady=0,
                updatedNumberScheduled=2,
                numberUnavailable=2,
                observedGeneration=1,
            )
        )
        for index, pod in enumerate(pods):
            await set_ready(client, pod, ip=f"10.244.{index}.2")
        await eventually(lambda: counted(numberReady=2, numberAvailable=2, numberUnavailable=0))

        tolerate = {
            "spec": {"template": {"spec": {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}}}
        }
        await client.patch(DAEMONSETS, "agent", tolerate, namespace=namespace, patch_type="strategic")
        await eventually(lambda: placed(["ssd-1", "ssd-not-ready", "ssd-tainted"]), within=20)

        await node(client, "ssd-2", labels={"disk": "ssd"})
        await eventually(lambda: placed(["ssd-1", "ssd-2", "ssd-not-ready", "ssd-tainted"]), within=20)

        await client.patch(NODES, "ssd-1", {"metadata": {"labels": {"disk": "hdd"}}})
        await client.patch(NODES, "ssd-2", {"spec": {"taints": [{"key": "evict", "effect": "NoExecute"}]}})
        await eventually(lambda: placed(["ssd-not-ready", "ssd-tainted"]), within=20)
        await eventually(
            lambda: counted(desiredNumberScheduled=2, currentNumberScheduled=2, numberMisscheduled=0)
        )


async def test_a_node_selector_taint_only_keeps_new_pods_away(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, daemonset.setup) as client:
        await node(client, "worker")
        namespace = await _namespace(client)
        await client.create(DAEMONSETS, workload("agent", {"app": "agent"}), namespace=namespace)
        await eventually(lambda: _equal(_targets(client, namespace), ["worker"]))
        [pod] = await live_pods(client, namespace, SELECTOR)
        await client.patch(NODES, "worker", {"spec": {"taints": [DEDICATED]}})

        async def misscheduled_but_kept() -> bool:
            status = await _status(client, namespace)
            return status.get("desiredNumberScheduled") == 0 and status.get("numberMisscheduled") == 1

        await eventually(misscheduled_but_kept)
        [still] = await live_pods(client, namespace, SELECTOR)
        assert still["metadata"]["uid"] == pod["metadata"]["uid"]


async def _equal(value: Awaitable[object], expected: object) -> bool:
    return await value == expected


async def test_a_template_change_rolls_one_node_at_a_time(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, daemonset.setup) as client:
        for index in range(3):
            await node(client, f"node-{index}")
        namespace = await _namespace(client)
        kubelet = Kubelet(client, namespace)
        await client.create(DAEMONSETS, workload("agent", {"app": "agent"}), namespace=namespace)

        async def all_ready() -> bool:
            await kubelet.ready(SELECTOR)
            status = await _status(client, namespace)
            return status.get("numberAvailable") == 3 and status.get("updatedNumberScheduled") == 3

        await eventually(all_ready)
        image = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.26"}]}}}}
        await client.patch(DAEMONSETS, "agent", image, namespace=namespace, patch_type="strategic")

        async def one_step() -> bool:
            pods = await live_pods(client, namespace, SELECTOR)
            ready_nodes = {_target(pod) for pod in pods if is_ready(pod)}
            assert len(ready_nodes) >= 2, (
                f"more than maxUnavailable=1 node without a ready pod: {ready_nodes}"
            )
            await kubelet.ready(SELECTOR)
            current = await client.get(DAEMONSETS, "agent", namespace=namespace)
            status = current.get("status") or {}
            images = {pod["spec"]["containers"][0]["image"] for pod in pods}
            return (
                status.get("observedGeneration") == current["metadata"]["generation"]
                and status.get("updatedNumberScheduled") == 3
                and status.get("numberAvailable") == 3
                and images == {"nginx:1.26"}
                and len(pods) == 3
            )

        await eventually(one_step, within=30, every=0.05)
        revisions = sorted(
            (await client.list(CONTROLLERREVISIONS, namespace=namespace)).items,
            key=lambda r: int(r["revision"]),
        )
        assert [r["revision"] for r in revisions] == [1, 2]
        new_hash = revisions[1]["metadata"]["labels"]["controller-revision-hash"]
        pods = await live_pods(client, namespace, SELECTOR)
        assert {pod["metadata"]["labels"]["controller-revision-hash"] for pod in pods} == {new_hash}
