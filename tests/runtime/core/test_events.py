"""The Event recorder against the playground API server: one Event per distinct message, repeats counted."""

from __future__ import annotations

from runtime.core.client import Client
from runtime.core.events import EVENTS, EventRecorder

from .kinds import CONFIGMAPS


async def test_the_event_recorder_aggregates_repeats_into_one_event(client: Client, namespace: str) -> None:
    configmap = await client.create(CONFIGMAPS, {"metadata": {"name": "subject", "namespace": namespace}})
    recorder = EventRecorder(client, component="test-controller", instance="pod-1")
    for _ in range(3):
        last = await recorder.record(configmap, reason="Mirrored", message="Secret subject is up to date")
    await recorder.record(configmap, reason="Failed", message="no space", type="Warning")
    events = (await client.list(EVENTS, namespace=namespace)).items
    by_reason = {e["reason"]: e for e in events}
    assert sorted(by_reason) == ["Failed", "Mirrored"]
    mirrored = by_reason["Mirrored"]
    assert last is not None and last["metadata"]["name"] == mirrored["metadata"]["name"]
    assert (mirrored["count"], mirrored["type"], mirrored["source"]) == (
        3,
        "Normal",
        {"component": "test-controller", "host": "pod-1"},
    )
    assert mirrored["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "subject",
        "namespace": namespace,
        "uid": configmap["metadata"]["uid"],
        "resourceVersion": configmap["metadata"]["resourceVersion"],
    }
    assert (by_reason["Failed"]["count"], by_reason["Failed"]["type"]) == (1, "Warning")

    # the aggregated Event expired (deleted): the next repeat starts a new one
    await client.delete(EVENTS, mirrored["metadata"]["name"], namespace=namespace)
    again = await recorder.record(configmap, reason="Mirrored", message="Secret subject is up to date")
    assert again is not None and again["count"] == 1
    assert again["metadata"]["name"] != mirrored["metadata"]["name"]


async def test_concurrent_repeats_are_all_counted_and_other_objects_do_not_wait(
    client: Client, namespace: str
) -> None:
    import asyncio

    subjects = [
        await client.create(CONFIGMAPS, {"metadata": {"name": f"subject-{i}", "namespace": namespace}})
        for i in range(3)
    ]
    recorder = EventRecorder(client, component="test-controller")
    await asyncio.gather(
        *(
            recorder.record(subject, reason="Mirrored", message="done")
            for subject in subjects
            for _ in range(4)
        )
    )
    events = (await client.list(EVENTS, namespace=namespace)).items
    assert sorted((e["involvedObject"]["name"], e["count"]) for e in events) == [
        (f"subject-{i}", 4) for i in range(3)
    ]
