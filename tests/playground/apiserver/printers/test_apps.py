"""Workload kinds: apps/v1 controllers, ReplicationControllers, PodTemplates and the Scale subresource."""

from __future__ import annotations

from typing import Any

import pytest

from playground.apiserver.printers.table import table

from .support import META, NOW, Obj, headers, row, rt


@pytest.mark.parametrize(
    ("group", "plural", "obj", "expected"),
    [
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
            "replicationcontrollers",
            {
                "spec": {
                    "replicas": 2,
                    "selector": {"app": "web", "tier": "fe"},
                    "template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}},
                },
                "status": {"replicas": 2, "readyReplicas": 1},
            },
            ["x", 2, 2, 1, "3m20s", "web", "nginx", "app=web,tier=fe"],
        ),
        (
            "",
            "podtemplates",
            {
                "template": {
                    "metadata": {"labels": {"b": "2", "a": "1"}},
                    "spec": {"containers": [{"name": "a", "image": "i1"}, {"name": "b", "image": "i2"}]},
                }
            },
            ["x", "a,b", "i1,i2", "a=1,b=2"],
        ),
        ("", "podtemplates", {"template": {}}, ["x", "", "", "<none>"]),
        (
            "apps",
            "controllerrevisions",
            {
                "metadata": {
                    **META,
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "1", "controller": False},
                        {
                            "apiVersion": "apps/v1",
                            "kind": "StatefulSet",
                            "name": "db",
                            "uid": "2",
                            "controller": True,
                        },
                    ],
                },
                "revision": 3,
            },
            ["x", "statefulset.apps/db", 3, "3m20s"],
        ),
        (
            "apps",
            "controllerrevisions",
            {
                "metadata": {
                    **META,
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Service", "name": "s", "uid": "1", "controller": True}
                    ],
                },
                "revision": 1,
            },
            ["x", "service/s", 1, "3m20s"],
        ),
        ("apps", "controllerrevisions", {"revision": 7}, ["x", "<none>", 7, "3m20s"]),
    ],
    ids=[
        "deployment",
        "replicaset",
        "daemonset",
        "statefulset",
        "replicationcontroller",
        "podtemplate",
        "podtemplate-empty",
        "controllerrevision-of-a-statefulset",
        "controllerrevision-core-owner",
        "controllerrevision-orphan",
    ],
)
def test_apps_cells(group: str, plural: str, obj: Obj, expected: list[Any]) -> None:
    """One row per case: every cell of a workload kind's printer."""
    assert row(rt(group, plural), {"metadata": META, **obj}) == expected


SCALE: Obj = {
    "kind": "Scale",
    "apiVersion": "autoscaling/v1",
    "metadata": {**META, "namespace": "ns", "resourceVersion": "7"},
    "spec": {"replicas": 3},
    "status": {"replicas": 2, "selector": "app=web"},
}


def test_scale_subresource_prints_desired_and_available_replicas() -> None:
    deployments = rt("apps", "deployments", "Deployment")
    assert headers(deployments, subresource="scale") == "NAME,DESIRED:integer,AVAILABLE:integer,AGE"
    assert row(deployments, SCALE, subresource="scale") == ["x", 3, 2, "3m20s"]


def test_scale_name_column_has_no_name_format_and_rows_carry_the_scale() -> None:
    result = table(rt("apps", "statefulsets"), [SCALE], include_object="Object", now=NOW, subresource="scale")
    assert result["columnDefinitions"][0]["format"] == ""
    assert result["rows"][0]["object"] == SCALE


def test_status_subresource_prints_like_its_kind() -> None:
    deployments = rt("apps", "deployments", "Deployment")
    assert headers(deployments, subresource="status") == headers(deployments)
