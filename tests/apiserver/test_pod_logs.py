"""`pods/log` as kube-apiserver answers it before any kubelet is involved: lookup, container choice, options."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from .conftest import Cluster

IMAGE = "registry.k8s.io/pause:3.10"


def _pod(
    core: client.CoreV1Api, namespace: str, name: str, *containers: str, init: tuple[str, ...] = ()
) -> None:
    spec: dict[str, Any] = {"containers": [{"name": c, "image": IMAGE} for c in containers]}
    if init:
        spec["initContainers"] = [{"name": c, "image": IMAGE} for c in init]
    core.create_namespaced_pod(namespace, {"metadata": {"name": name}, "spec": spec})


def _log_error(cluster: Cluster, namespace: str, name: str, **query: str) -> tuple[int, Any]:
    status, body = cluster.json(
        "GET", f"/api/v1/namespaces/{namespace}/pods/{name}/log", query=list(query.items())
    )
    assert status >= 400, body
    return status, body


def test_log_of_a_missing_pod_is_not_found(cluster: Cluster, namespace: str) -> None:
    status, body = _log_error(cluster, namespace, "ghost")
    assert status == 404
    assert (body["reason"], body["message"]) == ("NotFound", 'pods "ghost" not found')


def test_several_containers_need_a_container_name(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    _pod(core, namespace, "multi", "app", "sidecar", init=("setup",))
    status, body = _log_error(cluster, namespace, "multi")
    assert status == 400
    assert body["reason"] == "BadRequest"
    assert (
        body["message"]
        == "a container name must be specified for pod multi, choose one of: [setup app sidecar]"
    )


def test_an_unknown_container_is_a_bad_request(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    _pod(core, namespace, "single", "app")
    status, body = _log_error(cluster, namespace, "single", container="nope")
    assert (status, body["message"]) == (400, "container nope is not valid for pod single")


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"tailLines": "-1"}, "tailLines: Invalid value: -1: must be greater than or equal to 0"),
        ({"limitBytes": "0"}, "limitBytes: Invalid value: 0: must be greater than 0"),
        ({"sinceSeconds": "0"}, "sinceSeconds: Invalid value: 0: must be greater than 0"),
    ],
    ids=["tail", "limit", "since"],
)
def test_invalid_options_are_rejected(
    cluster: Cluster, core: client.CoreV1Api, namespace: str, query: dict[str, str], message: str
) -> None:
    _pod(core, namespace, "opts", "app")
    status, body = _log_error(cluster, namespace, "opts", **query)
    assert status == 422
    assert body["reason"] == "Invalid"
    assert body["message"] == f'PodLogOptions "opts" is invalid: {message}'


def test_an_unscheduled_pod_has_no_log_content(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    _pod(core, namespace, "pending", "app")
    response = cluster.raw(
        "GET", f"/api/v1/namespaces/{namespace}/pods/pending/log", headers={"Accept": "*/*"}
    )
    assert response.status == 204, response.data
    assert response.data == b""


def test_reading_logs_needs_the_pods_log_permission(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    _pod(core, namespace, "guarded", "app")
    status, body = cluster.json(
        "GET",
        f"/api/v1/namespaces/{namespace}/pods/guarded/log",
        headers={"Impersonate-User": "someone"},
    )
    assert status == 403, json.dumps(body)
    assert body["details"] == {"name": "guarded", "kind": "pods"}
    assert 'cannot get resource "pods/log"' in body["message"]
