"""Shared by the workload controllers' tests: object builders and the kubelet's part, played by the test.

No scheduler or node agent runs in these tests, so a test that needs a pod scheduled,
running or ready sets that itself: `bind` sets the node as the scheduler's Binding
does, `set_ready` writes the status a node agent would (phase Running, a Ready
condition, an IP) through the status subresource.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta
from typing import Any

from runtime.api.kinds import EVENTS, NODES, PODS, SERVICEACCOUNTS
from runtime.api.objects import JSON
from runtime.api.selectors import label_selector, selector_string
from runtime.core import AlreadyExistsError, Client


async def with_default_account(client: Client, namespace: str) -> str:
    """Give `namespace` its `default` ServiceAccount (pods cannot be created without it)."""
    with contextlib.suppress(AlreadyExistsError):
        await client.create(SERVICEACCOUNTS, {"metadata": {"name": "default"}}, namespace=namespace)
    return namespace


def template(labels: dict[str, str], *, image: str = "nginx:1.25", ports: list[JSON] | None = None) -> JSON:
    container: JSON = {"name": "app", "image": image}
    if ports:
        container["ports"] = ports
    return {"metadata": {"labels": dict(labels)}, "spec": {"containers": [container]}}


def workload(name: str, labels: dict[str, str], **spec: Any) -> JSON:
    """A Deployment, ReplicaSet, DaemonSet or StatefulSet body: selector, template, extra spec fields."""
    body: JSON = {
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": dict(labels)}, "template": template(labels), **spec},
    }
    return body


async def pods_of(client: Client, namespace: str, selector: JSON) -> list[JSON]:
    listed = await client.list(PODS, namespace=namespace, label_selector=selector_string(selector))
    return sorted(listed.items, key=lambda pod: str(pod["metadata"]["name"]))


async def live_pods(client: Client, namespace: str, selector: JSON) -> list[JSON]:
    """The selected pods that are not being deleted."""
    matching = label_selector(selector)
    return [
        pod
        for pod in await pods_of(client, namespace, selector)
        if not pod["metadata"].get("deletionTimestamp") and matching.matches(pod["metadata"].get("labels"))
    ]


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def set_ready(
    client: Client,
    pod: JSON,
    *,
    ip: str,
    ready: bool = True,
    ready_for: float = 0.0,
    ips: list[str] | None = None,
) -> JSON:
    """Write the status a node agent would: Running, Ready (since `ready_for` seconds ago) or not, an IP."""
    since = datetime.now(UTC) - timedelta(seconds=ready_for)
    status: JSON = {
        "phase": "Running",
        "podIP": ip,
        "podIPs": [{"ip": address} for address in (ips or [ip])],
        "conditions": [
            {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": stamp(since)},
        ],
    }
    return await client.patch_status(
        PODS, pod["metadata"]["name"], {"status": status}, namespace=pod["metadata"]["namespace"]
    )


async def bind(client: Client, pod: JSON, node: str) -> None:
    """Schedule `pod` onto `node` the way the scheduler does (a Binding)."""
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod["metadata"]["name"]},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    await client.create(PODS, binding, namespace=pod["metadata"]["namespace"], subresource="binding")


async def node(
    client: Client, name: str, *, labels: dict[str, str] | None = None, taints: list[JSON] | None = None
) -> JSON:
    body: JSON = {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}}}
    if taints:
        body["spec"] = {"taints": taints}
    return await client.create(NODES, body)


async def events_of(client: Client, obj: JSON) -> list[JSON]:
    listed = await client.list(EVENTS, namespace=obj["metadata"]["namespace"])
    return [event for event in listed.items if event["involvedObject"].get("uid") == obj["metadata"]["uid"]]


class Kubelet:
    """Marks pods Running and Ready the way a node agent would, when the test says so."""

    def __init__(self, client: Client, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self._next_ip = 10

    def ip(self) -> str:
        self._next_ip += 1
        return f"10.244.{self._next_ip // 250}.{self._next_ip % 250 + 1}"

    async def ready(self, selector: JSON, *, limit: int | None = None) -> int:
        """Ready up to `limit` (all when None) of the selected live pods that are not Ready yet."""
        waiting = [pod for pod in await live_pods(self.client, self.namespace, selector) if not is_ready(pod)]
        for pod in waiting[:limit]:
            await set_ready(self.client, pod, ip=self.ip())
        return len(waiting[:limit])


def is_ready(pod: JSON) -> bool:
    conditions = pod.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
