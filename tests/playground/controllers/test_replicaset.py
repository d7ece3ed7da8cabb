"""The ReplicaSet controller against the emulator: pods from the template, adoption, replacement,
kube's scale-down order, status, and a refused creation reported as ReplicaFailure."""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from playground.controllers import replicaset
from playground.controllers.replicaset import next_availability, replica_set_status
from runtime.api.kinds import PODS, REPLICASETS
from runtime.api.objects import JSON
from runtime.core import Client, InvalidError
from tests.playground.conftest import eventually, running

from .workload_support import events_of, live_pods, set_ready, template, with_default_account, workload

SELECTOR = {"matchLabels": {"app": "web"}}


async def _rs(client: Client, namespace: str, replicas: int, **spec: Any) -> JSON:
    body = workload("web", {"app": "web"}, replicas=replicas, **spec)
    return await client.create(REPLICASETS, body, namespace=namespace)


async def _count(client: Client, namespace: str, count: int) -> bool:
    return len(await live_pods(client, namespace, SELECTOR)) == count


async def test_pods_are_created_from_the_template_and_a_deleted_one_is_replaced(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    await with_default_account(client, namespace)
    async with running(emulator_kubeconfig, replicaset.setup):
        rs = await _rs(client, namespace, 3)
        await eventually(lambda: _count(client, namespace, 3))
        pods = await live_pods(client, namespace, SELECTOR)
        for pod in pods:
            assert pod["metadata"]["name"].startswith("web-")
            assert len(pod["metadata"]["name"]) == len("web-") + 5
            assert pod["metadata"]["labels"] == {"app": "web"}
            assert pod["metadata"]["ownerReferences"] == [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web",
                    "uid": rs["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
        await client.delete(PODS, pods[0]["metadata"]["name"], namespace=namespace)

        async def replaced() -> bool:
            names = {pod["metadata"]["name"] for pod in await live_pods(client, namespace, SELECTOR)}
            return len(names) == 3 and pods[0]["metadata"]["name"] not in names

        await eventually(replaced)

        async def status_counts() -> bool:
            current = await client.get(REPLICASETS, "web", namespace=namespace)
            status = current["status"]
            return bool(status.get("replicas") == 3 and status.get("observedGeneration") == 1)

        await eventually(status_counts)
        reasons = [(e["reason"], e["message"][:12]) for e in await events_of(client, rs)]
        assert reasons.count(("SuccessfulCreate", "Created pod:")) == 4


async def test_an_orphan_pod_is_adopted_and_a_relabelled_pod_released(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    await with_default_account(client, namespace)
    pod = {"metadata": {"name": "orphan", "labels": {"app": "web"}}, "spec": template({"app": "web"})["spec"]}
    orphan = await client.create(PODS, pod, namespace=namespace)
    async with running(emulator_kubeconfig, replicaset.setup):
        rs = await _rs(client, namespace, 2)
        await eventually(lambda: _count(client, namespace, 2))
        adopted = await client.get(PODS, "orphan", namespace=namespace)
        assert adopted["metadata"]["uid"] == orphan["metadata"]["uid"]
        assert adopted["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]

        await client.patch(PODS, "orphan", {"metadata": {"labels": {"app": "other"}}}, namespace=namespace)

        async def released() -> bool:
            pod = await client.get(PODS, "orphan", namespace=namespace)
            return not pod["metadata"].get("ownerReferences") and await _count(client, namespace, 2)

        await eventually(released)


async def test_scale_down_removes_not_ready_then_most_recently_ready_pods(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    await with_default_account(client, namespace)
    async with running(emulator_kubeconfig, replicaset.setup):
        await _rs(client, namespace, 3)
        await eventually(lambda: _count(client, namespace, 3))
        oldest_ready, newest_ready, not_ready = await live_pods(client, namespace, SELECTOR)
        await set_ready(client, oldest_ready, ip="10.244.0.10", ready_for=300)
        await set_ready(client, newest_ready, ip="10.244.0.11", ready_for=30)
        await set_ready(client, not_ready, ip="10.244.0.12", ready=False)

        async def ready_counted() -> bool:
            current = await client.get(REPLICASETS, "web", namespace=namespace)
            return bool(current["status"].get("readyReplicas") == 2)

        await eventually(ready_counted)
        await client.patch(REPLICASETS, "web", {"spec": {"replicas": 1}}, namespace=namespace)
        await eventually(lambda: _count(client, namespace, 1))
        [kept] = await live_pods(client, namespace, SELECTOR)
        assert kept["metadata"]["name"] == oldest_ready["metadata"]["name"]


async def test_scaling_up_and_to_zero(emulator_kubeconfig: Path, client: Client, namespace: str) -> None:
    await with_default_account(client, namespace)
    async with running(emulator_kubeconfig, replicaset.setup):
        await _rs(client, namespace, 1)
        await eventually(lambda: _count(client, namespace, 1))
        await client.patch(REPLICASETS, "web", {"spec": {"replicas": 7}}, namespace=namespace)
        await eventually(lambda: _count(client, namespace, 7))
        await client.patch(REPLICASETS, "web", {"spec": {"replicas": 0}}, namespace=namespace)
        await eventually(lambda: _count(client, namespace, 0))

        async def zero() -> bool:
            current = await client.get(REPLICASETS, "web", namespace=namespace)
            return bool(current["status"] == {"replicas": 0, "observedGeneration": 3})

        await eventually(zero)


async def test_a_refused_creation_is_a_replica_failure_until_it_succeeds(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    # no `default` ServiceAccount yet: the API server refuses the pods (403), as a real one does
    async with running(emulator_kubeconfig, replicaset.setup):
        rs = await _rs(client, namespace, 2)

        async def failing() -> JSON | None:
            current = await client.get(REPLICASETS, "web", namespace=namespace)
            conditions = current["status"].get("conditions") or []
            return conditions[0] if conditions else None

        await eventually(failing)
        condition = await failing()
        assert condition is not None
        assert (condition["type"], condition["status"], condition["reason"]) == (
            "ReplicaFailure",
            "True",
            "FailedCreate",
        )
        assert 'serviceaccount "default" not found' in condition["message"]
        warnings = [e for e in await events_of(client, rs) if e["reason"] == "FailedCreate"]
        assert warnings and warnings[0]["type"] == "Warning"
        assert warnings[0]["message"].startswith("Error creating: ")

        await with_default_account(client, namespace)

        async def recovered() -> bool:
            current = await client.get(REPLICASETS, "web", namespace=namespace)
            return await _count(client, namespace, 2) and not current["status"].get("conditions")

        await eventually(recovered, within=30)


async def test_available_replicas_wait_for_min_ready_seconds(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    await with_default_account(client, namespace)
    async with running(emulator_kubeconfig, replicaset.setup):
        await _rs(client, namespace, 1, minReadySeconds=2)
        await eventually(lambda: _count(client, namespace, 1))
        [pod] = await live_pods(client, namespace, SELECTOR)
        await set_ready(client, pod, ip="10.244.0.20")

        async def counts() -> tuple[int, int]:
            status = (await client.get(REPLICASETS, "web", namespace=namespace))["status"]
            return status.get("readyReplicas", 0), status.get("availableReplicas", 0)

        await eventually(lambda: _equals(counts(), (1, 0)))
        await eventually(lambda: _equals(counts(), (1, 1)), within=15)


async def _equals(value: Awaitable[object], expected: object) -> bool:
    return await value == expected


async def test_an_invalid_template_is_refused_by_the_api(client: Client, namespace: str) -> None:
    body = workload("bad", {"app": "web"}, replicas=1)
    body["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    try:
        await client.create(REPLICASETS, body, namespace=namespace)
    except InvalidError:
        return
    raise AssertionError("a template the selector does not match was accepted")


def _pod(name: str, *, ready: bool, labels: dict[str, str]) -> JSON:
    conditions = [
        {
            "type": "Ready",
            "status": "True" if ready else "False",
            "lastTransitionTime": "2024-01-01T00:00:00Z",
        }
    ]
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {"phase": "Running", "conditions": conditions},
    }


def test_status_counts_labelled_ready_and_available_pods() -> None:
    rs = {
        "metadata": {"generation": 4},
        "spec": {
            "replicas": 3,
            "minReadySeconds": 10,
            "template": {"metadata": {"labels": {"app": "web", "tier": "a"}}},
        },
        "status": {"replicas": 1},
    }
    owned = [
        _pod("a", ready=True, labels={"app": "web", "tier": "a"}),
        _pod("b", ready=True, labels={"app": "web"}),
        _pod("c", ready=False, labels={"app": "web", "tier": "a", "extra": "x"}),
    ]
    now = datetime(2024, 1, 1, 0, 0, 5, tzinfo=UTC)
    assert replica_set_status(rs, owned, error=None, now=now) == {
        "replicas": 3,
        "fullyLabeledReplicas": 2,
        "readyReplicas": 2,
        "observedGeneration": 4,
    }
    assert next_availability(owned, 10, now) == 5.5
    later = datetime(2024, 1, 1, 0, 0, 11, tzinfo=UTC)
    assert replica_set_status(rs, owned, error=None, now=later)["availableReplicas"] == 2
    failed = replica_set_status(rs, owned[:1], error=RuntimeError("quota exceeded"), now=now)
    assert [(c["type"], c["reason"], c["message"]) for c in failed["conditions"]] == [
        ("ReplicaFailure", "FailedCreate", "quota exceeded")
    ]
