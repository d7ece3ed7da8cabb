"""The provider's Events brought back, as pure functions."""

from __future__ import annotations

import pytest

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.forge import events


def remote_event(kind: str = "Pod", api_version: str = "v1") -> JSON:
    return {
        "metadata": {"name": "web-1.17a", "namespace": "demo-rome", "uid": "e1"},
        "involvedObject": {
            "apiVersion": api_version,
            "kind": kind,
            "name": "web-1",
            "namespace": "demo-rome",
            "uid": "remote-uid",
            "fieldPath": "spec.containers{web}",
        },
        "reason": "BackOff",
        "message": "Back-off restarting failed container",
        "type": "Warning",
        "count": 3,
        "firstTimestamp": "2024-05-01T10:00:00Z",
        "lastTimestamp": "2024-05-01T10:01:00Z",
        "source": {"component": "kubelet", "host": "milan-worker"},
    }


LOCAL_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web-1", "namespace": "demo", "uid": "local-uid"},
}


def test_a_provider_event_speaks_of_the_local_object_and_names_the_provider() -> None:
    copy = events.local_event(
        remote_event(),
        namespace="demo",
        involved=LOCAL_POD,
        provider="milan",
        provider_cluster_id="milan-id",
        origin_cluster_id="rome-id",
    )
    assert copy["metadata"] == {
        "name": "web-1.17a",
        "namespace": "demo",
        "labels": {
            c.LABEL_REFLECTION_MANAGED_BY: "reflection",
            c.LABEL_ORIGIN_CLUSTER_ID: "rome-id",
            c.LABEL_REMOTE_CLUSTER_ID: "milan-id",
        },
    }
    assert copy["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "web-1",
        "namespace": "demo",
        "uid": "local-uid",
        "fieldPath": "spec.containers{web}",
    }
    assert copy["source"] == {"component": "kubelet (milan)", "host": "milan-worker"}
    assert (copy["reason"], copy["type"], copy["count"]) == ("BackOff", "Warning", 3)


@pytest.mark.parametrize(
    ("api_version", "kind", "local"),
    [
        ("v1", "Pod", ("v1", "Pod")),
        ("offloading.liqo.io/v1beta1", "ShadowPod", ("v1", "Pod")),
        ("offloading.liqo.io/v1beta1", "ShadowEndpointSlice", ("discovery.k8s.io/v1", "EndpointSlice")),
        ("v1", "ConfigMap", ("v1", "ConfigMap")),
        ("apps/v1", "ReplicaSet", None),
    ],
    ids=["pod", "shadowpod", "shadowendpointslice", "configmap", "other"],
)
def test_which_events_come_back_and_as_what(
    api_version: str, kind: str, local: tuple[str, str] | None
) -> None:
    assert events.local_kind(remote_event(kind, api_version)) == local


def test_a_repeat_on_the_provider_changes_count_message_and_last_time() -> None:
    first = events.local_event(
        remote_event(),
        namespace="demo",
        involved=LOCAL_POD,
        provider="milan",
        provider_cluster_id="m",
        origin_cluster_id="r",
    )
    repeat = {**remote_event(), "count": 4, "lastTimestamp": "2024-05-01T10:02:00Z"}
    again = events.local_event(
        repeat,
        namespace="demo",
        involved=LOCAL_POD,
        provider="milan",
        provider_cluster_id="m",
        origin_cluster_id="r",
    )
    assert events.event_changes(first, again) == {"count": 4, "lastTimestamp": "2024-05-01T10:02:00Z"}
    assert events.event_changes(again, again) == {}
