"""Core kinds: nodes (status and roles), namespaces, config, accounts and resource quotas."""

from __future__ import annotations

from typing import Any

import pytest

from .support import META, Obj, ago, row, rt

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


# --- the others --------------------------------------------------------------------------------------


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
        (
            "",
            "resourcequotas",
            {
                "status": {
                    "hard": {
                        "requests.cpu": "1",
                        "pods": "10",
                        "limits.memory": "2Gi",
                        "limits.cpu": "2",
                        "limitsx": "3",
                    },
                    "used": {"pods": "3", "limits.cpu": "500m"},
                }
            },
            [
                "x",
                "limitsx: 0/3, pods: 3/10, requests.cpu: 0/1",
                "limits.cpu: 500m/2, limits.memory: 0/2Gi",
                "3m20s",
            ],
        ),
        ("", "resourcequotas", {"spec": {"hard": {"pods": "1"}}}, ["x", "", "", "3m20s"]),
    ],
    ids=[
        "namespace",
        "configmap-counts-binary-data",
        "secret",
        "serviceaccount",
        "resourcequota",
        "resourcequota-without-status",
    ],
)
def test_core_cells(group: str, plural: str, obj: Obj, expected: list[Any]) -> None:
    """One row per case: every cell of a core kind's printer."""
    assert row(rt(group, plural), {"metadata": META, **obj}) == expected
