"""The StatefulSet controller against the emulator: ordered creation with PVCs first, identity, scale down
from the highest ordinal with PVCs kept, Parallel, rolling updates from the top with a partition."""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from playground.controllers import statefulset
from playground.controllers.workloads.hashing import controller_revision_hash
from playground.controllers.workloads.history import revision_data
from runtime.api.kinds import CONTROLLERREVISIONS, EVENTS, PERSISTENTVOLUMECLAIMS, PODS, STATEFULSETS
from runtime.api.objects import JSON
from runtime.core import Client, NotFoundError
from tests.playground.conftest import eventually, running

from .workload_support import Kubelet, live_pods, set_ready, with_default_account, workload

SELECTOR = {"matchLabels": {"app": "db"}}
CLAIM_TEMPLATE = {
    "metadata": {"name": "data"},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
}


async def _statefulset(client: Client, namespace: str, replicas: int, **spec: Any) -> JSON:
    body = workload("web", {"app": "db"}, replicas=replicas, serviceName="web-headless", **spec)
    return await client.create(STATEFULSETS, body, namespace=namespace)


async def _names(client: Client, namespace: str) -> list[str]:
    return [pod["metadata"]["name"] for pod in await live_pods(client, namespace, SELECTOR)]


async def _claims(client: Client, namespace: str) -> list[str]:
    return sorted(
        claim["metadata"]["name"]
        for claim in (await client.list(PERSISTENTVOLUMECLAIMS, namespace=namespace)).items
    )


async def _get_pod(client: Client, namespace: str, name: str) -> JSON | None:
    try:
        return await client.get(PODS, name, namespace=namespace)
    except NotFoundError:
        return None


async def _status(client: Client, namespace: str) -> JSON:
    return dict((await client.get(STATEFULSETS, "web", namespace=namespace)).get("status") or {})


async def test_pods_start_in_order_each_after_its_predecessor_is_ready(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    await with_default_account(client, namespace)
    async with running(emulator_kubeconfig, statefulset.setup):
        sts = await _statefulset(client, namespace, 3, volumeClaimTemplates=[CLAIM_TEMPLATE])

        async def only(names: list[str]) -> bool:
            status = await _status(client, namespace)
            return await _names(client, namespace) == names and status.get("replicas") == len(names)

        await eventually(lambda: only(["web-0"]))
        assert await _claims(client, namespace) == ["data-web-0"]
        # the controller has seen web-0 (status counts it) and still waits for it to be Ready
        assert await _get_pod(client, namespace, "web-1") is None
        web0 = await client.get(PODS, "web-0", namespace=namespace)
        labels = web0["metadata"]["labels"]
        assert labels["statefulset.kubernetes.io/pod-name"] == "web-0"
        assert labels["apps.kubernetes.io/pod-index"] == "0"
        assert web0["spec"]["hostname"] == "web-0"
        assert web0["spec"]["subdomain"] == "web-headless"
        assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}} in web0["spec"][
            "volumes"
        ]
        assert web0["metadata"]["ownerReferences"][0]["uid"] == sts["metadata"]["uid"]
        [revision] = (await client.list(CONTROLLERREVISIONS, namespace=namespace)).items
        assert labels["controller-revision-hash"] == revision["metadata"]["name"]
        status = await _status(client, namespace)
        assert status["currentRevision"] == status["updateRevision"] == revision["metadata"]["name"]
        claim = await client.get(PERSISTENTVOLUMECLAIMS, "data-web-0", namespace=namespace)
        assert claim["metadata"]["labels"] == {"app": "db"}
        assert not claim["metadata"].get("ownerReferences")

        await set_ready(client, web0, ip="10.244.0.30")
        await eventually(lambda: only(["web-0", "web-1"]))
        assert await _get_pod(client, namespace, "web-2") is None
        await set_ready(client, await client.get(PODS, "web-1", namespace=namespace), ip="10.244.0.31")
        await eventually(lambda: only(["web-0", "web-1", "web-2"]))
        await set_ready(client, await client.get(PODS, "web-2", namespace=namespace), ip="10.244.0.32")

        async def all_ready() -> bool:
            status = await _status(client, namespace)
            return (
                status.get("readyReplicas"),
                status.get("availableReplicas"),
                status.get("currentReplicas"),
            ) == (
                3,
                3,
                3,
            )

        await eventually(all_ready)
        assert await _claims(client, namespace) == ["data-web-0", "data-web-1", "data-web-2"]

        await client.patch(STATEFULSETS, "web", {"spec": {"replicas": 1}}, namespace=namespace)

        async def shrinking_from_the_top() -> bool:
            names = await _names(client, namespace)
            assert names == [f"web-{i}" for i in range(len(names))], f"not a prefix of the ordinals: {names}"
            return names == ["web-0"]

        await eventually(shrinking_from_the_top, every=0.02)
        deletions = [
            e["message"]
            for e in (await client.list(EVENTS, namespace=namespace)).items
            if e["reason"] == "SuccessfulDelete"
        ]
        assert deletions == [
            "delete Pod web-2 in StatefulSet web successful",
            "delete Pod web-1 in StatefulSet web successful",
        ]
        assert await _claims(client, namespace) == ["data-web-0", "data-web-1", "data-web-2"]


async def test_parallel_pods_start_together(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    await with_default_account(client, namespace)
    async with running(emulator_kubeconfig, statefulset.setup):
        await _statefulset(client, namespace, 3, podManagementPolicy="Parallel")
        await eventually(lambda: _equal(_names(client, namespace), ["web-0", "web-1", "web-2"]))


async def _equal(value: Awaitable[object], expected: object) -> bool:
    return await value == expected


async def test_a_rolling_update_replaces_from_the_highest_ordinal_down_to_the_partition(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    await with_default_account(client, namespace)
    kubelet = Kubelet(client, namespace)
    async with running(emulator_kubeconfig, statefulset.setup):
        strategy = {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}
        await _statefulset(client, namespace, 3, updateStrategy=strategy)

        async def ready(count: int) -> bool:
            await kubelet.ready(SELECTOR)
            return (await _status(client, namespace)).get("readyReplicas") == count

        await eventually(lambda: ready(3), within=20)
        old = await _status(client, namespace)
        image = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.26"}]}}}}
        await client.patch(STATEFULSETS, "web", image, namespace=namespace, patch_type="strategic")

        async def partitioned() -> bool:
            await kubelet.ready(SELECTOR)
            status = await _status(client, namespace)
            return status.get("updatedReplicas") == 2 and status.get("readyReplicas") == 3

        await eventually(partitioned, within=30)
        status = await _status(client, namespace)
        assert status["currentRevision"] == old["currentRevision"] != status["updateRevision"]
        images = {
            pod["metadata"]["name"]: pod["spec"]["containers"][0]["image"]
            for pod in await live_pods(client, namespace, SELECTOR)
        }
        assert images == {"web-0": "nginx:1.25", "web-1": "nginx:1.26", "web-2": "nginx:1.26"}

        await client.patch(
            STATEFULSETS,
            "web",
            {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}},
            namespace=namespace,
        )

        async def completed() -> bool:
            await kubelet.ready(SELECTOR)
            status = await _status(client, namespace)
            return (
                status.get("currentRevision") == status.get("updateRevision")
                and status.get("updatedReplicas") == 3
            )

        await eventually(completed, within=30)
        revisions = (await client.list(CONTROLLERREVISIONS, namespace=namespace)).items
        assert sorted(r["revision"] for r in revisions) == [1, 2]


async def test_revision_names_hash_the_revision_data_like_kube(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    await with_default_account(client, namespace)
    async with running(emulator_kubeconfig, statefulset.setup):
        sts = await _statefulset(client, namespace, 0)

        async def revision() -> JSON | None:
            items = (await client.list(CONTROLLERREVISIONS, namespace=namespace)).items
            return items[0] if items else None

        await eventually(revision)
        created = await revision()
        assert created is not None
        assert created["data"] == revision_data(sts)
        assert created["metadata"]["name"] == f"web-{controller_revision_hash(revision_data(sts), 0)}"
        assert created["metadata"]["labels"]["controller.kubernetes.io/hash"] == controller_revision_hash(
            revision_data(sts), 0
        )
        assert (await _status(client, namespace)).get("collisionCount") == 0
