"""The Node's content as pure functions of the VirtualNode and the provider's health, and the node Lease."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.forge.nodestatus import heartbeat_age, report_delay, status_differs
from runtime.forge.virtualnode import virtual_node
from runtime.virtualkubelet.health import Health
from runtime.virtualkubelet.lease import NODE_LEASE_NAMESPACE, lease_time, node_lease
from runtime.virtualkubelet.node import (
    STATUS_FIELDS,
    node_conditions,
    node_object,
    node_status,
    with_labels_and_taints,
)

NOW = "2025-01-01T10:00:00Z"
LATER = "2025-01-01T10:05:00Z"
READY = Health("True", "ProviderReady", "the API server of provider milan answers health checks")
DOWN = Health("False", "ProviderUnreachable", "3 or more consecutive health checks of provider milan failed")


def vn(**spec: Any) -> JSON:
    body = virtual_node(
        "milan",
        namespace="liqo-tenant-milan",
        cluster_id="6a1f2c3d-0000-4000-8000-000000000001",
        resource_slice_name="milan",
        resources={"cpu": "4", "memory": "8Gi"},
        credential_secret="liqo-credential-milan",
        cluster_labels={"region": "eu"},
    )
    body["spec"].update(spec)
    return body


def status(
    virtual: JSON, *, health: Health = READY, current: list[JSON] | None = None, now: str = NOW
) -> JSON:
    return node_status(
        virtual,
        node_name="liqo-milan",
        health=health,
        version="v1.32.0",
        address=None,
        current=current or [],
        now=now,
    )


def registered(virtual: JSON) -> JSON:
    node = node_object(virtual, node_name="liqo-milan", status=status(virtual))
    node["metadata"].update({"uid": "u1", "resourceVersion": "1"})
    return node


def test_the_registered_node() -> None:
    node = registered(vn(taints=[{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]))
    assert node["metadata"]["labels"] == {
        "region": "eu",
        c.LABEL_TYPE: c.TYPE_VIRTUAL_NODE,
        c.LABEL_REMOTE_CLUSTER_ID: "6a1f2c3d-0000-4000-8000-000000000001",
        c.LABEL_ROLE_AGENT: "",
        "kubernetes.io/hostname": "liqo-milan",
        "kubernetes.io/os": "linux",
    }
    assert node["spec"]["taints"] == [
        {"key": "virtual-node.liqo.io/not-allowed", "effect": "NoExecute"},
        {"key": "dedicated", "value": "ml", "effect": "NoSchedule"},
    ]
    assert node["metadata"]["annotations"][c.ANNOTATION_MANAGED_TAINTS] == (
        "dedicated:NoSchedule,virtual-node.liqo.io/not-allowed:NoExecute"
    )
    status = node["status"]
    assert status["capacity"] == status["allocatable"] == {"cpu": "4", "memory": "8Gi"}
    assert status["nodeInfo"]["kubeletVersion"] == "v1.32.0"
    assert status["addresses"] == [{"type": "Hostname", "address": "liqo-milan"}]


def test_the_virtual_node_taint_cannot_be_overridden_by_the_spec() -> None:
    node = registered(
        vn(taints=[{"key": "virtual-node.liqo.io/not-allowed", "effect": "NoExecute", "value": "x"}])
    )
    assert node["spec"]["taints"] == [{"key": "virtual-node.liqo.io/not-allowed", "effect": "NoExecute"}]


def test_unchanged_labels_and_taints_need_no_write() -> None:
    virtual = vn()
    assert with_labels_and_taints(registered(virtual), virtual) is None


def test_only_what_the_virtual_kubelet_set_is_changed() -> None:
    before = vn(taints=[{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}])
    node = registered(before)
    node["metadata"]["labels"]["team"] = "blue"
    lifecycle = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": NOW}
    node["spec"]["taints"].append(lifecycle)
    after = vn(labels={"tier": "gold"}, taints=[])
    updated = with_labels_and_taints(node, after)
    assert updated is not None
    labels = updated["metadata"]["labels"]
    assert labels["team"] == "blue"
    assert labels["tier"] == "gold"
    assert "region" not in labels
    assert updated["spec"]["taints"] == [
        lifecycle,
        {"key": "virtual-node.liqo.io/not-allowed", "effect": "NoExecute"},
    ]
    assert with_labels_and_taints(updated, after) is None


def test_conditions_keep_their_transition_time_while_the_status_holds() -> None:
    first = node_conditions(READY, current=[], now=NOW)
    assert {cond["type"]: cond["status"] for cond in first} == {
        "MemoryPressure": "False",
        "DiskPressure": "False",
        "PIDPressure": "False",
        "NetworkUnavailable": "False",
        "Ready": "True",
    }
    same = node_conditions(READY, current=first, now=LATER)
    assert all(cond["lastTransitionTime"] == NOW and cond["lastHeartbeatTime"] == LATER for cond in same)
    down = {cond["type"]: cond for cond in node_conditions(DOWN, current=same, now=LATER)}
    assert down["Ready"]["lastTransitionTime"] == LATER
    assert down["Ready"]["reason"] == "ProviderUnreachable"
    assert down["MemoryPressure"]["lastTransitionTime"] == NOW


def test_only_heartbeats_are_not_a_change() -> None:
    virtual = vn()
    current = registered(virtual)["status"]
    later = status(virtual, current=current["conditions"], now=LATER)
    assert not status_differs(current, later, fields=STATUS_FIELDS)
    resized = status(vn(resources={"cpu": "2"}), current=current["conditions"], now=LATER)
    assert status_differs(current, resized, fields=STATUS_FIELDS)
    assert status_differs(current, status(virtual, health=DOWN), fields=STATUS_FIELDS)


def test_heartbeat_age() -> None:
    status = registered(vn())["status"]
    at = datetime(2025, 1, 1, 10, 0, 30, tzinfo=UTC)
    assert heartbeat_age(status, at) == 30
    assert heartbeat_age({}, at) is None


def test_the_status_is_due_when_it_changes_or_its_heartbeat_is_stale() -> None:
    virtual = vn()
    current = registered(virtual)["status"]
    same = status(virtual, current=current["conditions"], now=LATER)
    down = status(virtual, health=DOWN)

    def delay(desired: JSON, *, seconds_after_now: int) -> float:
        at = datetime(2025, 1, 1, 10, 0, 0, tzinfo=UTC) + timedelta(seconds=seconds_after_now)
        return report_delay(current, desired, fields=STATUS_FIELDS, now=at, period=300)

    assert delay(same, seconds_after_now=30) == 270
    assert delay(same, seconds_after_now=300) == 0
    assert delay(same, seconds_after_now=-5) == 0
    assert delay(down, seconds_after_now=30) == 0
    unreadable = {
        **current,
        "conditions": [{**cond, "lastHeartbeatTime": "x"} for cond in current["conditions"]],
    }
    assert report_delay(unreadable, unreadable, fields=STATUS_FIELDS, now=datetime.now(UTC), period=300) == 0


def test_the_node_lease() -> None:
    renewed = lease_time(datetime(2025, 1, 1, 10, 0, 0, 123456, tzinfo=UTC))
    assert renewed == "2025-01-01T10:00:00.123456Z"
    lease = node_lease("liqo-milan", duration=40, renew_time=renewed, node_uid="u1")
    assert lease == {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": "liqo-milan",
            "namespace": NODE_LEASE_NAMESPACE,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "liqo-milan", "uid": "u1"}],
        },
        "spec": {"holderIdentity": "liqo-milan", "leaseDurationSeconds": 40, "renewTime": renewed},
    }
    current = {**lease, "metadata": {**lease["metadata"], "resourceVersion": "7"}}
    later = lease_time(datetime(2025, 1, 1, 10, 0, 10, tzinfo=UTC) + timedelta(microseconds=1))
    again = node_lease("liqo-milan", duration=40, renew_time=later, node_uid="u1", current=current)
    assert again["metadata"]["resourceVersion"] == "7"
    assert again["spec"]["renewTime"] == later
    assert "ownerReferences" not in node_lease("n", duration=40, renew_time=later, node_uid=None)["metadata"]
