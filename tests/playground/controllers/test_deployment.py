"""The Deployment controller (with the ReplicaSet controller) against the emulator: ReplicaSets named by
the template hash, scaling, rolling updates within maxSurge/maxUnavailable, Recreate, history, the
conditions `kubectl rollout status` reads, and `kubectl rollout restart`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from playground.controllers import deployment, replicaset
from playground.controllers.workloads.hashing import pod_template_hash
from runtime.api.kinds import DEPLOYMENTS, REPLICASETS
from runtime.api.objects import JSON
from runtime.core import Client
from tests.playground.conftest import eventually, running

from .workload_support import Kubelet, is_ready, live_pods, with_default_account, workload

SELECTOR = {"matchLabels": {"app": "web"}}


async def _deployment(client: Client, namespace: str, replicas: int, **spec: Any) -> JSON:
    return await client.create(
        DEPLOYMENTS, workload("web", {"app": "web"}, replicas=replicas, **spec), namespace=namespace
    )


async def _replica_sets(client: Client, namespace: str) -> list[JSON]:
    listed = await client.list(REPLICASETS, namespace=namespace)
    return sorted(
        listed.items, key=lambda rs: int(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"])
    )


async def _get(client: Client, namespace: str) -> JSON:
    return await client.get(DEPLOYMENTS, "web", namespace=namespace)


def _conditions(obj: JSON) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in obj.get("status", {}).get("conditions") or []}


def _rolled_out(obj: JSON, replicas: int) -> bool:
    """What `kubectl rollout status` waits for, plus kube's completion condition."""
    status = obj.get("status", {})
    return (
        status.get("observedGeneration", 0) >= obj["metadata"]["generation"]
        and status.get("updatedReplicas", 0) == replicas
        and status.get("replicas", 0) == replicas
        and status.get("availableReplicas", 0) == replicas
        and _conditions(obj).get("Progressing") == ("True", "NewReplicaSetAvailable")
    )


async def test_a_deployment_makes_one_replica_set_and_scales_it(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    await with_default_account(client, namespace)
    kubelet = Kubelet(client, namespace)
    async with running(emulator_kubeconfig, deployment.setup, replicaset.setup):
        created = await _deployment(client, namespace, 3)

        async def settled(replicas: int) -> bool:
            await kubelet.ready(SELECTOR)
            return _rolled_out(await _get(client, namespace), replicas) and (
                len(await live_pods(client, namespace, SELECTOR)) == replicas
            )

        await eventually(lambda: settled(3), within=20)
        [rs] = await _replica_sets(client, namespace)
        template_hash = pod_template_hash(created["spec"]["template"])
        assert rs["metadata"]["name"] == f"web-{template_hash}"
        assert rs["metadata"]["labels"] == {"app": "web", "pod-template-hash": template_hash}
        assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": template_hash}
        assert rs["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
        annotations = rs["metadata"]["annotations"]
        assert annotations["deployment.kubernetes.io/revision"] == "1"
        assert annotations["deployment.kubernetes.io/desired-replicas"] == "3"
        assert annotations["deployment.kubernetes.io/max-replicas"] == "4"  # 3 + ceil(25% of 3)
        for pod in await live_pods(client, namespace, SELECTOR):
            assert pod["metadata"]["labels"]["pod-template-hash"] == template_hash
        current = await _get(client, namespace)
        assert current["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
        assert _conditions(current) == {
            "Available": ("True", "MinimumReplicasAvailable"),
            "Progressing": ("True", "NewReplicaSetAvailable"),
        }
        assert current["status"]["readyReplicas"] == 3
        assert "unavailableReplicas" not in current["status"]

        await client.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 5}}, namespace=namespace)
        await eventually(lambda: settled(5), within=20)
        await client.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 1}}, namespace=namespace)
        await eventually(lambda: settled(1), within=20)
        [rs] = await _replica_sets(client, namespace)
        assert rs["spec"]["replicas"] == 1
        assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "1"


@pytest.mark.parametrize(
    ("max_surge", "max_unavailable", "most", "fewest_ready"),
    [(1, 0, 5, 4), (0, 1, 4, 3), ("25%", "25%", 5, 3), ("50%", "10%", 6, 4)],
    ids=["surge-1", "unavailable-1", "quarter-each", "percent-rounding"],
)
async def test_a_template_change_rolls_within_surge_and_unavailability(
    emulator_kubeconfig: Path,
    client: Client,
    namespace: str,
    max_surge: int | str,
    max_unavailable: int | str,
    most: int,
    fewest_ready: int,
) -> None:
    await with_default_account(client, namespace)
    kubelet = Kubelet(client, namespace)
    strategy = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": max_surge, "maxUnavailable": max_unavailable},
    }
    async with running(emulator_kubeconfig, deployment.setup, replicaset.setup):
        await _deployment(client, namespace, 4, strategy=strategy)

        async def initial() -> bool:
            await kubelet.ready(SELECTOR)
            return _rolled_out(await _get(client, namespace), 4)

        await eventually(initial, within=20)
        image = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.26"}]}}}}
        await client.patch(DEPLOYMENTS, "web", image, namespace=namespace, patch_type="strategic")

        async def one_step() -> bool:
            pods = await live_pods(client, namespace, SELECTOR)
            assert len(pods) <= most, f"{len(pods)} pods exceed replicas + maxSurge = {most}"
            ready = sum(is_ready(pod) for pod in pods)
            assert ready >= fewest_ready, f"{ready} ready pods are fewer than replicas - maxUnavailable"
            await kubelet.ready(SELECTOR, limit=1)
            return _rolled_out(await _get(client, namespace), 4)

        await eventually(one_step, within=40, every=0.1)
        old, new = await _replica_sets(client, namespace)
        assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (0, 4)
        assert new["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"
        assert new["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
        current = await _get(client, namespace)
        assert current["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
        assert _conditions(current) == {
            "Available": ("True", "MinimumReplicasAvailable"),
            "Progressing": ("True", "NewReplicaSetAvailable"),
        }
        hashes = {
            pod["metadata"]["labels"]["pod-template-hash"]
            for pod in await live_pods(client, namespace, SELECTOR)
        }
        assert hashes == {new["metadata"]["labels"]["pod-template-hash"]}


async def test_recreate_removes_every_old_pod_before_starting_new_ones(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    await with_default_account(client, namespace)
    kubelet = Kubelet(client, namespace)
    async with running(emulator_kubeconfig, deployment.setup, replicaset.setup):
        await _deployment(client, namespace, 3, strategy={"type": "Recreate"})

        async def initial() -> bool:
            await kubelet.ready(SELECTOR)
            return _rolled_out(await _get(client, namespace), 3)

        await eventually(initial, within=20)
        restart = {"spec": {"template": {"metadata": {"annotations": {"restarted": "now"}}}}}
        await client.patch(DEPLOYMENTS, "web", restart, namespace=namespace)

        async def step() -> bool:
            pods = await live_pods(client, namespace, SELECTOR)
            hashes = {pod["metadata"]["labels"]["pod-template-hash"] for pod in pods}
            assert len(hashes) <= 1, f"old and new pods run side by side: {hashes}"
            await kubelet.ready(SELECTOR)
            return _rolled_out(await _get(client, namespace), 3)

        await eventually(step, within=30, every=0.05)
        old, new = await _replica_sets(client, namespace)
        assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (0, 3)
        assert "deployment.kubernetes.io/max-replicas" in new["metadata"]["annotations"]
        assert new["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "3"


async def test_old_replica_sets_beyond_the_history_limit_are_deleted(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    await with_default_account(client, namespace)
    kubelet = Kubelet(client, namespace)
    async with running(emulator_kubeconfig, deployment.setup, replicaset.setup):
        await _deployment(client, namespace, 1, revisionHistoryLimit=1)
        for version in range(3):

            async def rolled() -> bool:
                await kubelet.ready(SELECTOR)
                return _rolled_out(await _get(client, namespace), 1)

            await eventually(rolled, within=20)
            change = {"spec": {"template": {"metadata": {"annotations": {"version": str(version)}}}}}
            await client.patch(DEPLOYMENTS, "web", change, namespace=namespace)

        async def pruned() -> bool:
            await kubelet.ready(SELECTOR)
            revisions = [
                rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                for rs in await _replica_sets(client, namespace)
            ]
            return _rolled_out(await _get(client, namespace), 1) and revisions == ["3", "4"]

        await eventually(pruned, within=20)


async def test_a_paused_deployment_scales_but_does_not_roll(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    await with_default_account(client, namespace)
    kubelet = Kubelet(client, namespace)
    async with running(emulator_kubeconfig, deployment.setup, replicaset.setup):
        await _deployment(client, namespace, 2)

        async def rolled(replicas: int) -> bool:
            await kubelet.ready(SELECTOR)
            return _rolled_out(await _get(client, namespace), replicas)

        await eventually(lambda: rolled(2), within=20)
        await client.patch(DEPLOYMENTS, "web", {"spec": {"paused": True}}, namespace=namespace)

        async def paused_condition() -> bool:
            return _conditions(await _get(client, namespace)).get("Progressing") == (
                "Unknown",
                "DeploymentPaused",
            )

        await eventually(paused_condition)
        change = {"spec": {"replicas": 3, "template": {"metadata": {"annotations": {"v": "2"}}}}}
        await client.patch(DEPLOYMENTS, "web", change, namespace=namespace)

        async def scaled() -> bool:
            await kubelet.ready(SELECTOR)
            sets = await _replica_sets(client, namespace)
            return (
                len(sets) == 1
                and sets[0]["spec"]["replicas"] == 3
                and sets[0]["status"].get("readyReplicas") == 3
            )

        await eventually(scaled, within=20)
        await client.patch(DEPLOYMENTS, "web", {"spec": {"paused": False}}, namespace=namespace)

        async def resumed() -> bool:
            await kubelet.ready(SELECTOR)
            return len(await _replica_sets(client, namespace)) == 2 and _rolled_out(
                await _get(client, namespace), 3
            )

        await eventually(resumed, within=30)


async def test_a_stuck_rollout_exceeds_its_progress_deadline(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    await with_default_account(client, namespace)
    async with running(emulator_kubeconfig, deployment.setup, replicaset.setup):
        await _deployment(client, namespace, 1, progressDeadlineSeconds=1)

        async def timed_out() -> bool:
            current = await _get(client, namespace)
            return _conditions(current) == {
                "Available": ("False", "MinimumReplicasUnavailable"),
                "Progressing": ("False", "ProgressDeadlineExceeded"),
            }

        await eventually(timed_out, within=20)


async def _kubectl(kubeconfig: Path, *args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        "kubectl",
        "--kubeconfig",
        str(kubeconfig),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "HOME": str(kubeconfig.parent)},
    )
    output, _ = await process.communicate()
    return int(process.returncode or 0), output.decode()


@pytest.mark.kubectl
async def test_kubectl_rollout_restart_rolls_and_rollout_status_succeeds(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is not on PATH: this test drives it")
    await with_default_account(client, namespace)
    kubelet = Kubelet(client, namespace)

    async def kubelet_loop() -> None:
        while True:
            await kubelet.ready(SELECTOR)
            await asyncio.sleep(0.1)

    async with running(emulator_kubeconfig, deployment.setup, replicaset.setup):
        await _deployment(client, namespace, 2)
        ready_task = asyncio.create_task(kubelet_loop(), name="test kubelet")
        try:
            code, output = await _kubectl(
                emulator_kubeconfig, "-n", namespace, "rollout", "status", "deployment/web", "--timeout=60s"
            )
            assert code == 0, output
            assert 'deployment "web" successfully rolled out' in output
            code, output = await _kubectl(
                emulator_kubeconfig, "-n", namespace, "rollout", "restart", "deployment/web"
            )
            assert code == 0, output
            code, output = await _kubectl(
                emulator_kubeconfig, "-n", namespace, "rollout", "status", "deployment/web", "--timeout=60s"
            )
            assert code == 0, output
            assert 'deployment "web" successfully rolled out' in output
        finally:
            ready_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ready_task
        assert len(await _replica_sets(client, namespace)) == 2
        code, output = await _kubectl(
            emulator_kubeconfig, "-n", namespace, "rollout", "history", "deployment/web"
        )
        assert code == 0, output
        assert [line.split()[0] for line in output.splitlines()[2:] if line.strip()] == ["1", "2"]


async def test_pods_the_api_refuses_show_as_a_replica_failure_of_the_deployment(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    # without its `default` ServiceAccount the namespace refuses pods, as a real cluster does
    async with running(emulator_kubeconfig, deployment.setup, replicaset.setup):
        await _deployment(client, namespace, 1)

        async def failing() -> bool:
            return _conditions(await _get(client, namespace)).get("ReplicaFailure") == (
                "True",
                "FailedCreate",
            )

        await eventually(failing, within=20)
        await with_default_account(client, namespace)

        async def recovered() -> bool:
            current = await _get(client, namespace)
            return (
                "ReplicaFailure" not in _conditions(current)
                and current.get("status", {}).get("replicas") == 1
            )

        await eventually(recovered, within=30)
