"""Server-side Tables: columns and cells as kube-apiserver's printers and CRD convertor make them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from playground.apiserver.errors import APIError
from playground.apiserver.resources.base import PrinterColumn, ResourceType
from playground.apiserver.tables import age, human_duration, jsonpath_text, table

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
Obj = dict[str, Any]


def ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def rt(group: str, plural: str, kind: str = "Thing", **extra: Any) -> ResourceType:
    return ResourceType(group=group, version="v1", kind=kind, plural=plural, namespaced=True, **extra)


def row(resource: ResourceType, obj: Obj) -> list[Any]:
    cells: list[Any] = table(resource, [obj], now=NOW)["rows"][0]["cells"]
    return cells


def headers(resource: ResourceType) -> str:
    """Column names as kubectl prints them; `*` marks a wide-only column, `:type` a non-string one."""
    columns = table(resource, [], now=NOW)["columnDefinitions"]
    return ",".join(
        c["name"].upper()
        + ("" if c["type"] == "string" else f":{c['type']}")
        + ("*" if c["priority"] else "")
        for c in columns
    )


# --- durations ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("delta", "expected"),
    [
        (timedelta(seconds=-2), "<invalid>"),
        (timedelta(seconds=-1), "0s"),
        (timedelta(0), "0s"),
        (timedelta(seconds=5), "5s"),
        (timedelta(seconds=119), "119s"),
        (timedelta(minutes=2), "2m"),
        (timedelta(minutes=3, seconds=20), "3m20s"),
        (timedelta(minutes=10), "10m"),
        (timedelta(hours=2, minutes=15), "135m"),
        (timedelta(hours=3), "3h"),
        (timedelta(hours=3, minutes=15), "3h15m"),
        (timedelta(hours=8, minutes=59), "8h"),
        (timedelta(hours=47), "47h"),
        (timedelta(days=3, hours=4), "3d4h"),
        (timedelta(days=8, hours=4), "8d"),
        (timedelta(days=729), "729d"),
        (timedelta(days=730), "2y"),
        (timedelta(days=760), "2y30d"),
        (timedelta(days=365 * 9), "9y"),
    ],
    ids=lambda value: str(value),
)
def test_human_duration_matches_apimachinery(delta: timedelta, expected: str) -> None:
    assert human_duration(delta) == expected


@pytest.mark.parametrize(
    ("timestamp", "now", "expected"),
    [
        (None, NOW, "<unknown>"),
        ("", NOW, "<unknown>"),
        ("yesterday", NOW, "<unknown>"),
        ("2024-05-01T11:59:30Z", NOW, "30s"),
        ("2024-05-01T11:55:00.123456789Z", NOW, "4m59s"),
        ("2024-05-01T13:55:00+02:00", NOW, "5m"),
        ("2024-05-01T11:00:00Z", NOW.replace(tzinfo=None), "60m"),
    ],
    ids=["missing", "empty", "garbage", "seconds", "nanoseconds", "offset", "naive-now-is-utc"],
)
def test_age_of_a_timestamp(timestamp: Any, now: datetime, expected: str) -> None:
    assert age(timestamp, now=now) == expected


# --- the Table envelope -------------------------------------------------------------------------------


def test_table_carries_list_metadata_and_column_definitions() -> None:
    cm = {"metadata": {"name": "cfg", "creationTimestamp": ago(minutes=5)}, "data": {"a": "1"}}
    result = table(
        rt("", "configmaps", "ConfigMap"),
        [cm],
        now=NOW,
        list_meta={"resourceVersion": "42", "continue": "", "remainingItemCount": 7},
    )
    assert result["kind"] == "Table"
    assert result["apiVersion"] == "meta.k8s.io/v1"
    assert result["metadata"] == {"resourceVersion": "42", "remainingItemCount": 7}
    assert result["columnDefinitions"][0] == {
        "name": "Name",
        "type": "string",
        "format": "name",
        "description": result["columnDefinitions"][0]["description"],
        "priority": 0,
    }
    assert result["columnDefinitions"][0]["description"].startswith("Name must be unique within a namespace.")
    assert result["rows"] == [
        {
            "cells": ["cfg", 1, "5m"],
            "object": {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": cm["metadata"],
            },
        }
    ]


@pytest.mark.parametrize(
    ("include_object", "expected"),
    [
        ("None", None),
        ("", {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "x"}}),
        (
            "Metadata",
            {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "x"}},
        ),
        ("Object", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
    ],
    ids=["none", "empty-means-metadata", "metadata", "object"],
)
def test_include_object_controls_the_row_object(include_object: str, expected: Obj | None) -> None:
    result = table(
        rt("", "configmaps", "ConfigMap"),
        [{"metadata": {"name": "x"}}],
        include_object=include_object,
        now=NOW,
    )
    assert result["rows"][0]["object"] == expected


def test_unknown_include_object_is_a_bad_request() -> None:
    with pytest.raises(APIError) as excinfo:
        table(rt("", "configmaps"), [], include_object="Everything", now=NOW)
    assert (excinfo.value.code, excinfo.value.message) == (
        400,
        'unrecognized includeObject value: "Everything"',
    )


def test_no_headers_leaves_out_column_definitions_for_later_watch_events() -> None:
    result = table(rt("", "configmaps"), [{"metadata": {"name": "x"}}], now=NOW, no_headers=True)
    assert result["columnDefinitions"] == []
    assert result["rows"][0]["cells"][0] == "x"


# --- column sets --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "plural", "expected"),
    [
        ("", "pods", "NAME,READY,STATUS,RESTARTS,AGE,IP*,NODE*,NOMINATED NODE*,READINESS GATES*"),
        (
            "",
            "nodes",
            "NAME,STATUS,ROLES,AGE,VERSION,INTERNAL-IP*,EXTERNAL-IP*,OS-IMAGE*,KERNEL-VERSION*,CONTAINER-RUNTIME*",
        ),
        ("", "namespaces", "NAME,STATUS,AGE"),
        ("", "services", "NAME,TYPE,CLUSTER-IP,EXTERNAL-IP,PORT(S),AGE,SELECTOR*"),
        ("", "endpoints", "NAME,ENDPOINTS,AGE"),
        ("discovery.k8s.io", "endpointslices", "NAME,ADDRESSTYPE,PORTS,ENDPOINTS,AGE"),
        ("", "configmaps", "NAME,DATA,AGE"),
        ("", "secrets", "NAME,TYPE,DATA,AGE"),
        ("", "serviceaccounts", "NAME,SECRETS,AGE"),
        ("", "events", "LAST SEEN,TYPE,REASON,OBJECT,SUBOBJECT*,SOURCE*,MESSAGE,FIRST SEEN*,COUNT*,NAME*"),
        (
            "events.k8s.io",
            "events",
            "LAST SEEN,TYPE,REASON,OBJECT,SUBOBJECT*,SOURCE*,MESSAGE,FIRST SEEN*,COUNT*,NAME*",
        ),
        ("coordination.k8s.io", "leases", "NAME,HOLDER,AGE"),
        ("apps", "deployments", "NAME,READY,UP-TO-DATE,AVAILABLE,AGE,CONTAINERS*,IMAGES*,SELECTOR*"),
        (
            "apps",
            "replicasets",
            "NAME,DESIRED:integer,CURRENT:integer,READY:integer,AGE,CONTAINERS*,IMAGES*,SELECTOR*",
        ),
        (
            "apps",
            "daemonsets",
            "NAME,DESIRED:integer,CURRENT:integer,READY:integer,UP-TO-DATE:integer,AVAILABLE:integer,"
            "NODE SELECTOR,AGE,CONTAINERS*,IMAGES*,SELECTOR*",
        ),
        ("apps", "statefulsets", "NAME,READY,AGE,CONTAINERS*,IMAGES*"),
        (
            "",
            "persistentvolumes",
            "NAME,CAPACITY,ACCESS MODES,RECLAIM POLICY,STATUS,CLAIM,STORAGECLASS,VOLUMEATTRIBUTESCLASS,"
            "REASON,AGE,VOLUMEMODE*",
        ),
        (
            "",
            "persistentvolumeclaims",
            "NAME,STATUS,VOLUME,CAPACITY,ACCESS MODES,STORAGECLASS,VOLUMEATTRIBUTESCLASS,AGE,VOLUMEMODE*",
        ),
        (
            "storage.k8s.io",
            "storageclasses",
            "NAME,PROVISIONER,RECLAIMPOLICY,VOLUMEBINDINGMODE,ALLOWVOLUMEEXPANSION,AGE",
        ),
        ("networking.k8s.io", "ingresses", "NAME,CLASS,HOSTS,ADDRESS,PORTS,AGE"),
        ("node.k8s.io", "runtimeclasses", "NAME,HANDLER,AGE"),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            "NAME,AGE,SIGNERNAME,REQUESTOR,REQUESTEDDURATION,CONDITION",
        ),
        ("rbac.authorization.k8s.io", "rolebindings", "NAME,ROLE,AGE,USERS*,GROUPS*,SERVICEACCOUNTS*"),
        ("rbac.authorization.k8s.io", "clusterrolebindings", "NAME,ROLE,AGE,USERS*,GROUPS*,SERVICEACCOUNTS*"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "NAME,WEBHOOKS:integer,AGE"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "NAME,WEBHOOKS:integer,AGE"),
        ("rbac.authorization.k8s.io", "roles", "NAME,CREATED AT:date"),
        ("rbac.authorization.k8s.io", "clusterroles", "NAME,CREATED AT:date"),
        ("apiextensions.k8s.io", "customresourcedefinitions", "NAME,CREATED AT:date"),
    ],
    ids=lambda value: value if isinstance(value, str) and value.islower() and "." not in value else None,
)
def test_columns_match_the_kube_apiserver_printers(group: str, plural: str, expected: str) -> None:
    assert headers(rt(group, plural)) == expected


# --- pods ---------------------------------------------------------------------------------------------


def pod(
    *,
    phase: str = "Running",
    containers: int = 1,
    statuses: list[Obj] | None = None,
    init: list[Obj] | None = None,
    init_statuses: list[Obj] | None = None,
    conditions: list[Obj] | None = None,
    deleting: bool = False,
    reason: str = "",
) -> Obj:
    metadata: Obj = {"name": "web", "creationTimestamp": ago(hours=1)}
    if deleting:
        metadata["deletionTimestamp"] = ago(seconds=10)
    status: Obj = {"phase": phase, "conditions": conditions or []}
    if statuses is not None:
        status["containerStatuses"] = statuses
    if init_statuses is not None:
        status["initContainerStatuses"] = init_statuses
    if reason:
        status["reason"] = reason
    spec: Obj = {"containers": [{"name": f"c{i}"} for i in range(containers)], "initContainers": init or []}
    return {"metadata": metadata, "spec": spec, "status": status}


RUNNING: Obj = {
    "name": "c0",
    "ready": True,
    "restartCount": 0,
    "state": {"running": {"startedAt": ago(hours=1)}},
}
READY_CONDITION = {"type": "Ready", "status": "True"}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (pod(statuses=[RUNNING], conditions=[READY_CONDITION]), ["1/1", "Running", "0"]),
        (pod(phase="Pending"), ["0/1", "Pending", "0"]),
        (
            pod(
                phase="Pending",
                statuses=[{"name": "c0", "state": {"waiting": {"reason": "ContainerCreating"}}}],
            ),
            ["0/1", "ContainerCreating", "0"],
        ),
        (
            pod(
                statuses=[
                    {
                        "name": "c0",
                        "restartCount": 5,
                        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                        "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(minutes=5)}},
                    }
                ]
            ),
            ["0/1", "CrashLoopBackOff", "5 (5m ago)"],
        ),
        (
            pod(
                statuses=[{**RUNNING, "restartCount": 2}, {**RUNNING, "name": "c1", "ready": False}],
                containers=2,
            ),
            ["1/2", "Running", "2"],
        ),
        (
            pod(
                containers=2,
                statuses=[
                    {"name": "c0", "state": {"waiting": {"reason": "ErrImagePull"}}},
                    {"name": "c1", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}},
                ],
            ),
            ["0/2", "ErrImagePull", "0"],
        ),
        (
            pod(
                phase="Pending",
                init=[{"name": "i0"}, {"name": "i1"}],
                init_statuses=[
                    {"name": "i0", "state": {"running": {}}},
                    {"name": "i1", "state": {"waiting": {}}},
                ],
            ),
            ["0/1", "Init:0/2", "0"],
        ),
        (
            pod(
                phase="Pending",
                init=[{"name": "i0"}, {"name": "i1"}],
                init_statuses=[
                    {"name": "i0", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                    {"name": "i1", "state": {"waiting": {"reason": "PodInitializing"}}},
                ],
            ),
            ["0/1", "Init:1/2", "0"],
        ),
        (
            pod(
                phase="Pending",
                init=[{"name": "i0"}],
                init_statuses=[
                    {"name": "i0", "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
                ],
            ),
            ["0/1", "Init:CrashLoopBackOff", "3"],
        ),
        (
            pod(
                phase="Pending",
                init=[{"name": "i0"}],
                init_statuses=[{"name": "i0", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}],
            ),
            ["0/1", "Init:Error", "0"],
        ),
        (
            pod(
                phase="Pending",
                init=[{"name": "i0"}],
                init_statuses=[{"name": "i0", "state": {"terminated": {"exitCode": 3}}}],
            ),
            ["0/1", "Init:ExitCode:3", "0"],
        ),
        (
            pod(
                init=[{"name": "proxy", "restartPolicy": "Always"}],
                init_statuses=[{"name": "proxy", "started": True, "ready": True, "state": {"running": {}}}],
                statuses=[RUNNING],
                conditions=[{"type": "Initialized", "status": "True"}, READY_CONDITION],
            ),
            ["2/2", "Running", "0"],
        ),
        (
            pod(
                phase="Succeeded",
                statuses=[{"name": "c0", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}],
            ),
            ["0/1", "Completed", "0"],
        ),
        (
            pod(
                containers=2,
                statuses=[
                    {"name": "c0", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                    {**RUNNING, "name": "c1"},
                ],
            ),
            ["1/2", "NotReady", "0"],
        ),
        (
            pod(
                phase="Failed",
                statuses=[{"name": "c0", "state": {"terminated": {"exitCode": 137, "signal": 9}}}],
            ),
            ["0/1", "Signal:9", "0"],
        ),
        (pod(phase="Failed", reason="Evicted"), ["0/1", "Evicted", "0"]),
        (pod(statuses=[RUNNING], conditions=[READY_CONDITION], deleting=True), ["1/1", "Terminating", "0"]),
        (pod(phase="Succeeded", deleting=True), ["0/1", "Succeeded", "0"]),
        (pod(statuses=[RUNNING], deleting=True, reason="NodeLost"), ["1/1", "Unknown", "0"]),
        (
            pod(
                phase="Pending",
                conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}],
            ),
            ["0/1", "SchedulingGated", "0"],
        ),
    ],
    ids=[
        "running",
        "pending",
        "container-creating",
        "crash-loop-with-last-restart",
        "partly-ready",
        "first-container-state-wins",
        "first-init-container-running",
        "second-init-container-starting",
        "init-crash-loop",
        "init-error",
        "init-exit-code",
        "sidecar-counts-as-ready",
        "completed",
        "completed-with-one-still-running",
        "killed-by-signal",
        "evicted",
        "terminating",
        "deleting-finished-pod-keeps-phase",
        "node-lost",
        "scheduling-gated",
    ],
)
def test_pod_ready_status_and_restarts_are_derived_like_kubectl(obj: Obj, expected: list[str]) -> None:
    cells = row(rt("", "pods"), obj)
    assert cells[0] == "web"
    assert cells[1:4] == expected
    assert cells[4] == "60m"


@pytest.mark.parametrize(
    ("status", "spec", "expected"),
    [
        ({}, {}, ["<none>", "<none>", "<none>", "<none>"]),
        (
            {
                "podIPs": [{"ip": "10.0.0.5"}, {"ip": "fd00::5"}],
                "podIP": "10.0.0.5",
                "nominatedNodeName": "n2",
            },
            {"nodeName": "n1"},
            ["10.0.0.5", "n1", "n2", "<none>"],
        ),
        ({"podIP": "10.0.0.6"}, {}, ["10.0.0.6", "<none>", "<none>", "<none>"]),
        (
            {
                "conditions": [
                    {"type": "example.com/gate", "status": "True"},
                    {"type": "other", "status": "False"},
                ]
            },
            {"readinessGates": [{"conditionType": "example.com/gate"}, {"conditionType": "other"}]},
            ["<none>", "<none>", "<none>", "1/2"],
        ),
    ],
    ids=["unscheduled", "scheduled-dual-stack", "legacy-pod-ip", "readiness-gates"],
)
def test_pod_wide_columns(status: Obj, spec: Obj, expected: list[str]) -> None:
    obj = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}], **spec}, "status": status}
    assert row(rt("", "pods"), obj)[5:] == expected


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        ("Running", None),
        (
            "Succeeded",
            [
                {
                    "type": "Completed",
                    "status": "True",
                    "reason": "Succeeded",
                    "message": "The pod has completed successfully.",
                }
            ],
        ),
        (
            "Failed",
            [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}],
        ),
    ],
    ids=["running", "succeeded", "failed"],
)
def test_finished_pods_carry_a_completed_row_condition(phase: str, expected: list[Obj] | None) -> None:
    result = table(rt("", "pods"), [pod(phase=phase)], now=NOW)
    assert result["rows"][0].get("conditions") == expected


# --- nodes --------------------------------------------------------------------------------------------


def node(*, labels: Obj | None = None, ready: str | None = "True", unschedulable: bool = False) -> Obj:
    conditions = [{"type": "MemoryPressure", "status": "False"}]
    if ready is not None:
        conditions.append({"type": "Ready", "status": ready})
    return {
        "metadata": {"name": "n1", "labels": labels or {}, "creationTimestamp": ago(days=3, hours=4)},
        "spec": {"unschedulable": unschedulable},
        "status": {"conditions": conditions, "nodeInfo": {"kubeletVersion": "v1.32.0"}},
    }


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (node(labels={"node-role.kubernetes.io/control-plane": ""}), ["Ready", "control-plane"]),
        (node(ready="False"), ["NotReady", "<none>"]),
        (node(ready="Unknown", unschedulable=True), ["NotReady,SchedulingDisabled", "<none>"]),
        (node(ready=None), ["Unknown", "<none>"]),
        (node(unschedulable=True), ["Ready,SchedulingDisabled", "<none>"]),
        (
            node(labels={"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/infra": "yes"}),
            ["Ready", "infra,worker"],
        ),
        (node(labels={"kubernetes.io/role": "edge", "node-role.kubernetes.io/": ""}), ["Ready", "edge"]),
    ],
    ids=[
        "ready-control-plane",
        "not-ready",
        "unknown-and-cordoned",
        "no-ready-condition",
        "cordoned",
        "several-roles-sorted",
        "legacy-role-label",
    ],
)
def test_node_status_and_roles(obj: Obj, expected: list[str]) -> None:
    assert row(rt("", "nodes"), obj)[:5] == ["n1", *expected, "3d4h", "v1.32.0"]


def test_node_wide_columns_show_addresses_and_node_info() -> None:
    obj = node()
    obj["status"]["addresses"] = [
        {"type": "Hostname", "address": "n1"},
        {"type": "InternalIP", "address": "172.18.0.2"},
    ]
    obj["status"]["nodeInfo"].update(
        osImage="Debian GNU/Linux 12", containerRuntimeVersion="containerd://1.7"
    )
    assert row(rt("", "nodes"), obj)[5:] == [
        "172.18.0.2",
        "<none>",
        "Debian GNU/Linux 12",
        "<unknown>",
        "containerd://1.7",
    ]


# --- services -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "status", "expected"),
    [
        (
            {
                "type": "ClusterIP",
                "clusterIP": "10.96.0.10",
                "clusterIPs": ["10.96.0.10"],
                "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}],
                "selector": {"k8s-app": "dns"},
            },
            {},
            ["ClusterIP", "10.96.0.10", "<none>", "53/UDP,53/TCP", "k8s-app=dns"],
        ),
        (
            {
                "type": "NodePort",
                "clusterIP": "10.96.1.1",
                "ports": [{"port": 80, "nodePort": 30080}],
                "externalIPs": ["1.2.3.4"],
            },
            {},
            ["NodePort", "10.96.1.1", "1.2.3.4", "80:30080/TCP", "<none>"],
        ),
        (
            {
                "type": "LoadBalancer",
                "clusterIPs": ["10.96.2.2"],
                "ports": [{"port": 443, "nodePort": 31443, "protocol": "TCP"}],
            },
            {},
            ["LoadBalancer", "10.96.2.2", "<pending>", "443:31443/TCP", "<none>"],
        ),
        (
            {"type": "LoadBalancer", "clusterIPs": ["10.96.2.2"], "externalIPs": ["9.9.9.9"]},
            {"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}, {"hostname": "lb.example.com"}]}},
            ["LoadBalancer", "10.96.2.2", "5.6.7.8,lb.example.com,9.9.9.9", "<none>", "<none>"],
        ),
        (
            {"type": "ExternalName", "externalName": "db.example.com"},
            {},
            ["ExternalName", "<none>", "db.example.com", "<none>", "<none>"],
        ),
        (
            {
                "clusterIP": "None",
                "clusterIPs": ["None"],
                "ports": [{"port": 5432}],
                "selector": {"b": "2", "a": "1"},
            },
            {},
            ["ClusterIP", "None", "<none>", "5432/TCP", "a=1,b=2"],
        ),
    ],
    ids=[
        "cluster-ip-udp-and-tcp",
        "node-port-with-external-ip",
        "load-balancer-pending",
        "load-balancer-ingress-and-external",
        "external-name",
        "headless",
    ],
)
def test_service_cells(spec: Obj, status: Obj, expected: list[str]) -> None:
    obj = {"metadata": {"name": "svc", "creationTimestamp": ago(days=1)}, "spec": spec, "status": status}
    cells = row(rt("", "services"), obj)
    assert cells[0] == "svc"
    assert cells[5] == "24h"
    assert [*cells[1:5], cells[6]] == expected


# --- the other built-in kinds -------------------------------------------------------------------------

META: Obj = {"name": "x", "creationTimestamp": ago(minutes=3, seconds=20)}


@pytest.mark.parametrize(
    ("group", "plural", "obj", "expected"),
    [
        ("", "namespaces", {"status": {"phase": "Terminating"}}, ["x", "Terminating", "3m20s"]),
        ("", "configmaps", {"data": {"a": "1"}, "binaryData": {"b": "AA=="}}, ["x", 2, "3m20s"]),
        (
            "",
            "secrets",
            {"type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}},
            ["x", "kubernetes.io/tls", 2, "3m20s"],
        ),
        ("", "serviceaccounts", {"secrets": [{"name": "t"}]}, ["x", 1, "3m20s"]),
        ("coordination.k8s.io", "leases", {"spec": {"holderIdentity": "node-a"}}, ["x", "node-a", "3m20s"]),
        (
            "",
            "endpoints",
            {
                "subsets": [
                    {
                        "addresses": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}],
                        "ports": [{"port": 80}, {"port": 443}],
                    }
                ]
            },
            ["x", "10.0.0.1:80,[fd00::1]:80,10.0.0.1:443 + 1 more...", "3m20s"],
        ),
        ("", "endpoints", {"subsets": [{"addresses": [{"ip": "10.0.0.1"}]}]}, ["x", "10.0.0.1", "3m20s"]),
        ("", "endpoints", {}, ["x", "<none>", "3m20s"]),
        (
            "discovery.k8s.io",
            "endpointslices",
            {
                "addressType": "IPv4",
                "ports": [{"port": 80}, {"name": "dns"}, {}],
                "endpoints": [
                    {"addresses": ["10.0.0.1"]},
                    {"addresses": ["10.0.0.2", "10.0.0.3", "10.0.0.4"]},
                ],
            },
            ["x", "IPv4", "80,dns,*", "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...", "3m20s"],
        ),
        (
            "discovery.k8s.io",
            "endpointslices",
            {"addressType": "IPv6"},
            ["x", "IPv6", "<unset>", "<unset>", "3m20s"],
        ),
        (
            "apps",
            "deployments",
            {
                "spec": {
                    "replicas": 3,
                    "selector": {
                        "matchLabels": {"app": "web"},
                        "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}],
                    },
                    "template": {
                        "spec": {
                            "containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "envoy"}]
                        }
                    },
                },
                "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
            },
            ["x", "2/3", 3, 2, "3m20s", "a,b", "nginx,envoy", "app=web,env in (dev,prod)"],
        ),
        (
            "apps",
            "replicasets",
            {
                "spec": {
                    "replicas": 2,
                    "selector": {"matchExpressions": [{"key": "gone", "operator": "DoesNotExist"}]},
                },
                "status": {"replicas": 2, "readyReplicas": 1},
            },
            ["x", 2, 2, 1, "3m20s", "", "", "!gone"],
        ),
        (
            "apps",
            "daemonsets",
            {
                "spec": {
                    "selector": {},
                    "template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"}}},
                },
                "status": {
                    "desiredNumberScheduled": 3,
                    "currentNumberScheduled": 3,
                    "numberReady": 2,
                    "updatedNumberScheduled": 3,
                    "numberAvailable": 2,
                },
            },
            ["x", 3, 3, 2, 3, 2, "kubernetes.io/os=linux", "3m20s", "", "", "<none>"],
        ),
        (
            "apps",
            "statefulsets",
            {
                "spec": {
                    "replicas": 3,
                    "template": {"spec": {"containers": [{"name": "db", "image": "postgres"}]}},
                },
                "status": {"readyReplicas": 1},
            },
            ["x", "1/3", "3m20s", "db", "postgres"],
        ),
        (
            "",
            "persistentvolumes",
            {
                "spec": {
                    "capacity": {"storage": "10Gi"},
                    "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "claimRef": {"namespace": "ns", "name": "data"},
                    "storageClassName": "standard",
                },
                "status": {"phase": "Bound"},
            },
            [
                "x",
                "10Gi",
                "RWO,RWX",
                "Retain",
                "Bound",
                "ns/data",
                "standard",
                "<unset>",
                "",
                "3m20s",
                "<unset>",
            ],
        ),
        (
            "",
            "persistentvolumeclaims",
            {
                "spec": {"volumeName": "pv-1", "storageClassName": "standard", "volumeMode": "Filesystem"},
                "status": {
                    "phase": "Bound",
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                },
            },
            ["x", "Bound", "pv-1", "1Gi", "RWO", "standard", "<unset>", "3m20s", "Filesystem"],
        ),
        (
            "",
            "persistentvolumeclaims",
            {
                "metadata": {
                    **META,
                    "annotations": {"volume.beta.kubernetes.io/storage-class": "old"},
                    "deletionTimestamp": ago(seconds=1),
                },
                "spec": {"resources": {"requests": {"storage": "1Gi"}}},
                "status": {"phase": "Pending"},
            },
            ["x", "Terminating", "", "", "", "old", "<unset>", "3m20s", "<unset>"],
        ),
        (
            "storage.k8s.io",
            "storageclasses",
            {
                "metadata": {**META, "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                "provisioner": "rancher.io/local-path",
                "volumeBindingMode": "WaitForFirstConsumer",
            },
            ["x (default)", "rancher.io/local-path", "Delete", "WaitForFirstConsumer", False, "3m20s"],
        ),
        (
            "networking.k8s.io",
            "ingresses",
            {
                "spec": {
                    "ingressClassName": "nginx",
                    "tls": [{}],
                    "rules": [{"host": "a.io"}, {}, {"host": "b.io"}, {"host": "c.io"}, {"host": "d.io"}],
                },
                "status": {"loadBalancer": {"ingress": [{"ip": "1.1.1.1"}]}},
            },
            ["x", "nginx", "a.io,b.io,c.io + 2 more...", "1.1.1.1", "80, 443", "3m20s"],
        ),
        (
            "networking.k8s.io",
            "ingresses",
            {"spec": {"rules": [{}]}},
            ["x", "<none>", "*", "", "80", "3m20s"],
        ),
        ("node.k8s.io", "runtimeclasses", {"handler": "runc"}, ["x", "runc", "3m20s"]),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            {
                "spec": {
                    "signerName": "kubernetes.io/kube-apiserver-client",
                    "username": "alice",
                    "expirationSeconds": 86400,
                },
                "status": {"conditions": [{"type": "Approved"}], "certificate": "LS0tLS1CRUdJTg=="},
            },
            ["x", "3m20s", "kubernetes.io/kube-apiserver-client", "alice", "24h", "Approved,Issued"],
        ),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            {
                "spec": {"username": "bob"},
                "status": {"conditions": [{"type": "Approved"}, {"type": "Denied"}, {"type": "Failed"}]},
            },
            ["x", "3m20s", "<none>", "bob", "<none>", "Denied,Failed"],
        ),
        (
            "rbac.authorization.k8s.io",
            "rolebindings",
            {
                "roleRef": {"kind": "ClusterRole", "name": "edit"},
                "subjects": [
                    {"kind": "User", "name": "alice"},
                    {"kind": "Group", "name": "devs"},
                    {"kind": "ServiceAccount", "namespace": "ci", "name": "bot"},
                    {"kind": "User", "name": "bob"},
                ],
            },
            ["x", "ClusterRole/edit", "3m20s", "alice, bob", "devs", "ci/bot"],
        ),
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
            {"webhooks": [{"name": "a"}, {"name": "b"}]},
            ["x", 2, "3m20s"],
        ),
        (
            "rbac.authorization.k8s.io",
            "roles",
            {"metadata": {"name": "x", "creationTimestamp": "2024-04-30T10:00:00.5+02:00"}},
            ["x", "2024-04-30T08:00:00Z"],
        ),
        ("example.com", "widgets", {"metadata": {"name": "x"}}, ["x", "0001-01-01T00:00:00Z"]),
    ],
    ids=[
        "namespace",
        "configmap-counts-binary-data",
        "secret",
        "serviceaccount",
        "lease",
        "endpoints-with-more",
        "endpoints-without-ports",
        "endpoints-empty",
        "endpointslice",
        "endpointslice-empty",
        "deployment",
        "replicaset",
        "daemonset",
        "statefulset",
        "persistentvolume",
        "persistentvolumeclaim-bound",
        "persistentvolumeclaim-terminating",
        "storageclass-default",
        "ingress",
        "ingress-catch-all",
        "runtimeclass",
        "csr-issued",
        "csr-denied-and-failed",
        "rolebinding",
        "webhooks",
        "role-created-at",
        "unknown-kind-created-at",
    ],
)
def test_builtin_cells(group: str, plural: str, obj: Obj, expected: list[Any]) -> None:
    assert row(rt(group, plural), {"metadata": META, **obj}) == expected


@pytest.mark.parametrize(
    ("group", "event"),
    [
        (
            "",
            {
                "involvedObject": {"kind": "Pod", "name": "web-0", "fieldPath": "spec.containers{app}"},
                "type": "Warning",
                "reason": "BackOff",
                "message": "Back-off restarting\n",
                "source": {"component": "kubelet", "host": "n1"},
                "firstTimestamp": ago(hours=1),
                "lastTimestamp": ago(minutes=2),
                "count": 7,
            },
        ),
        (
            "events.k8s.io",
            {
                "regarding": {"kind": "Pod", "name": "web-0", "fieldPath": "spec.containers{app}"},
                "type": "Warning",
                "reason": "BackOff",
                "note": "Back-off restarting\n",
                "reportingController": "kubelet",
                "reportingInstance": "n1",
                "eventTime": ago(hours=1),
                "series": {"count": 7, "lastObservedTime": ago(minutes=2)},
            },
        ),
    ],
    ids=["core-v1", "events-k8s-io"],
)
def test_event_cells_are_the_same_from_either_api(group: str, event: Obj) -> None:
    cells = row(rt(group, "events"), {"metadata": {"name": "web-0.17a"}, **event})
    assert cells == [
        "2m",
        "Warning",
        "BackOff",
        "pod/web-0",
        "spec.containers{app}",
        "kubelet, n1",
        "Back-off restarting",
        "60m",
        7,
        "web-0.17a",
    ]


def test_singleton_event_without_timestamps_counts_once() -> None:
    cells = row(rt("", "events"), {"metadata": {"name": "e"}, "involvedObject": {"kind": "Node"}})
    assert [cells[0], cells[3], cells[5], cells[7], cells[8]] == ["<unknown>", "node", "", "<unknown>", 1]


# --- custom resources ---------------------------------------------------------------------------------

CRD_COLUMNS = (
    PrinterColumn(name="Phase", type="string", json_path=".status.phase"),
    PrinterColumn(
        name="Replicas", type="integer", json_path=".spec.replicas", description="Desired replicas"
    ),
    PrinterColumn(name="Ready", type="string", json_path='.status.conditions[?(@.type=="Ready")].status'),
    PrinterColumn(name="Ratio", type="number", json_path=".status.ratio", priority=1),
    PrinterColumn(name="Paused", type="boolean", json_path=".spec.paused", priority=1),
    PrinterColumn(name="Started", type="date", json_path=".status.startTime"),
    PrinterColumn(name="Age", type="date", json_path=".metadata.creationTimestamp"),
)


def crd(columns: tuple[PrinterColumn, ...] = CRD_COLUMNS) -> ResourceType:
    return rt("example.com", "widgets", "Widget", crd="widgets.example.com", printer_columns=columns)


def test_crd_column_definitions_come_from_the_printer_columns_without_an_extra_age() -> None:
    assert table(crd(), [], now=NOW)["columnDefinitions"][1:3] == [
        {
            "name": "Phase",
            "type": "string",
            "format": "",
            "description": "Custom resource definition column (in JSONPath format): .status.phase",
            "priority": 0,
        },
        {
            "name": "Replicas",
            "type": "integer",
            "format": "",
            "description": "Desired replicas",
            "priority": 0,
        },
    ]
    assert headers(crd()) == (
        "NAME,PHASE,REPLICAS:integer,READY,RATIO:number*,PAUSED:boolean*,STARTED:date,AGE:date"
    )


def test_crd_without_printer_columns_gets_an_age_column() -> None:
    obj = {"metadata": {"name": "w", "creationTimestamp": ago(minutes=10)}}
    assert headers(crd(())) == "NAME,AGE:date"
    assert row(crd(()), obj) == ["w", "10m"]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            {
                "spec": {"replicas": 3, "paused": False},
                "status": {
                    "phase": "Running",
                    "ratio": 1,
                    "startTime": ago(hours=2),
                    "conditions": [
                        {"type": "Synced", "status": "True"},
                        {"type": "Ready", "status": "False"},
                    ],
                },
            },
            ["Running", 3, "False", 1.0, False, "120m", "3m20s"],
        ),
        ({}, [None, None, None, None, None, None, "3m20s"]),
        (
            {
                "spec": {"replicas": 2.9, "paused": "yes"},
                "status": {"phase": 7, "ratio": "high", "startTime": "soon"},
            },
            ["7", 2, None, None, None, "<invalid>", "3m20s"],
        ),
        (
            {"spec": {"replicas": "3"}, "status": {"phase": {"b": 1, "a": "<x>"}, "startTime": ""}},
            ['{"a":"\\u003cx\\u003e","b":1}', None, None, None, None, "<unknown>", "3m20s"],
        ),
        (
            {"status": {"phase": None, "startTime": None}},
            ["<no value>", None, None, None, None, None, "3m20s"],
        ),
    ],
    ids=["typed-values", "missing-values", "mistyped-values", "map-in-string-column", "null-values"],
)
def test_crd_cells_follow_the_column_types(obj: Obj, expected: list[Any]) -> None:
    cells = row(crd(), {"metadata": META, **obj})
    assert cells == ["x", *expected]


def test_crd_string_column_shows_only_the_first_of_several_results() -> None:
    resource = crd((PrinterColumn(name="Images", type="string", json_path=".spec.containers[*].image"),))
    obj = {"metadata": META, "spec": {"containers": [{"image": "a"}, {"image": "b"}]}}
    assert row(resource, obj) == ["x", "a"]


def test_crd_column_with_an_unparsable_path_is_empty() -> None:
    resource = crd((PrinterColumn(name="Bad", type="string", json_path=".spec..x"),))
    assert row(resource, {"metadata": META, "spec": {"x": 1}}) == ["x", None]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("text", "text"),
        (3, "3"),
        (True, "true"),
        (1.5, "1.5"),
        (3.0, "3"),
        (100000.0, "100000"),
        (1000000.0, "1e+06"),
        (1234567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-2.5e-07, "-2.5e-07"),
        (0.0, "0"),
        ([1, "a"], '[1,"a"]'),
        (None, "<no value>"),
    ],
    ids=lambda value: repr(value),
)
def test_jsonpath_text_prints_scalars_like_go(value: Any, expected: str) -> None:
    assert jsonpath_text(value) == expected
