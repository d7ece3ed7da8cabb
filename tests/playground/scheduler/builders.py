"""Builders of nodes and pods for the scheduler's tests, as JSON dicts, and API helpers to create them.

Unit tests use the builders alone; behaviour tests create the objects in an emulator of
their own (nodes are cluster-wide, so tests cannot share one) with `add_node` and
`add_namespace`, which write what kubelet and the control plane would (node status,
the `default` ServiceAccount that pod admission requires).
"""

from __future__ import annotations

import itertools
from typing import Any

from runtime.api.kinds import NAMESPACES, NODES, SERVICEACCOUNTS
from runtime.api.objects import JSON
from runtime.core import Client

_uids = itertools.count(1)


def node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    ready: str | None = "True",
    labels: dict[str, str] | None = None,
    taints: list[JSON] | None = None,
    unschedulable: bool = False,
    extra: dict[str, str] | None = None,
) -> JSON:
    """A node as kubelet reports it: hostname label, allocatable, and a Ready condition (`ready=None`: none yet)."""
    spec: JSON = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    status: JSON = {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}}
    status["capacity"] = dict(status["allocatable"])
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready, "reason": "KubeletReady"}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": status,
    }


def container(name: str = "app", *, cpu: str | None = None, memory: str | None = None, **more: Any) -> JSON:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    body: JSON = {"name": name, "image": "registry.example/app:1", **more}
    if requests:
        body["resources"] = {"requests": requests}
    return body


def pod(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = None,
    memory: str | None = None,
    labels: dict[str, str] | None = None,
    node_name: str | None = None,
    phase: str | None = None,
    containers: list[JSON] | None = None,
    **spec: Any,
) -> JSON:
    """A pod with one container (or `containers`); extra keyword arguments go into its spec as given."""
    body: JSON = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{next(_uids)}",
            "labels": labels or {},
        },
        "spec": {"containers": containers or [container(cpu=cpu, memory=memory)], **spec},
    }
    if node_name is not None:
        body["spec"]["nodeName"] = node_name
    if phase is not None:
        body["status"] = {"phase": phase}
    return body


async def add_node(api: Client, body: JSON) -> JSON:
    """Register a node and write its status, as kubelet does (status goes through the status subresource)."""
    created = await api.create(NODES, {k: v for k, v in body.items() if k != "status"})
    created["status"] = body["status"]
    return await api.update_status(NODES, created)


async def add_namespace(api: Client, name: str, *, labels: dict[str, str] | None = None) -> str:
    """A namespace with its `default` ServiceAccount, which pod admission requires."""
    await api.create(NAMESPACES, {"metadata": {"name": name, "labels": labels or {}}})
    await api.create(SERVICEACCOUNTS, {"metadata": {"name": "default", "namespace": name}})
    return name


def api_pod(body: JSON) -> JSON:
    """The pod as a client creates it: no uid (the API server assigns one)."""
    meta = {k: v for k, v in body["metadata"].items() if k != "uid"}
    return {**body, "metadata": meta}
