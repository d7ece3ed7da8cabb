"""Pod GC: pods bound to a node that is gone are force-deleted once the node has been missing a while."""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path

from playground.controllers import podgc
from playground.controllers.podgc import failed_status
from playground.controlplane import ControlPlaneOptions
from runtime.api.kinds import NAMESPACES, NODES, PODS, SERVICEACCOUNTS
from runtime.core import Client, NotFoundError
from tests.playground.conftest import eventually, running

OPTIONS = ControlPlaneOptions(pod_gc_quarantine=1.0)


async def _exists(client: Client, namespace: str, name: str) -> bool:
    try:
        await client.get(PODS, name, namespace=namespace)
    except NotFoundError:
        return False
    return True


async def _bound_pod(client: Client, namespace: str, name: str, node: str) -> None:
    spec = {"nodeName": node, "containers": [{"name": "c", "image": "nginx"}]}
    await client.create(PODS, {"metadata": {"name": name}, "spec": spec}, namespace=namespace)


async def test_a_pod_bound_to_a_deleted_node_is_removed(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, podgc.setup, options=OPTIONS) as client:
        ns = f"t-{uuid.uuid4().hex[:10]}"
        await client.create(NAMESPACES, {"metadata": {"name": ns}})
        await client.create(SERVICEACCOUNTS, {"metadata": {"name": "default"}}, namespace=ns)
        for node in ("gone", "back", "kept"):
            await client.create(NODES, {"metadata": {"name": node}})
            await _bound_pod(client, ns, f"on-{node}", node)
        # a pod on a node that never existed is an orphan too
        await _bound_pod(client, ns, "on-nothing", "nothing")

        pod = await client.get(PODS, "on-gone", namespace=ns)
        # replayed from before the node went: every change the controller made to the pod
        events = client.watch(
            PODS,
            namespace=ns,
            field_selector="metadata.name=on-gone",
            resource_version=pod["metadata"]["resourceVersion"],
        )
        await client.delete(NODES, "gone")
        await client.delete(NODES, "back")
        await client.create(NODES, {"metadata": {"name": "back"}})

        async def orphans_gone() -> bool:
            return not await _exists(client, ns, "on-gone") and not await _exists(client, ns, "on-nothing")

        await eventually(orphans_gone, within=20)
        # it was marked Failed with the DisruptionTarget condition before it went
        seen = []
        async with contextlib.aclosing(events):
            async for event in events:
                seen.append((event["type"], event["object"]["status"].get("phase")))
                if event["type"] == "DELETED":
                    break
        assert seen[0] == ("MODIFIED", "Failed")
        assert seen[-1] == ("DELETED", "Failed")
        # the quarantine of "back" ran out together with that of "gone", and it exists again
        assert await _exists(client, ns, "on-back")
        assert await _exists(client, ns, "on-kept")


def test_an_orphan_is_marked_failed_with_kubes_disruption_condition() -> None:
    applied = failed_status({"metadata": {"name": "p", "namespace": "ns", "uid": "u"}})
    assert applied["metadata"] == {"name": "p", "namespace": "ns"}
    assert applied["status"]["phase"] == "Failed"
    assert applied["status"]["conditions"] == [
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "DeletionByPodGC",
            "message": "PodGC: node no longer exists",
        }
    ]
