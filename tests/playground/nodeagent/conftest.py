"""Fixtures for the node agent: run agents in-process against an emulator of the test's own.

`agent(kubeconfig, options)` runs one `NodeAgent` as a task of the test's event loop
until the block ends (the test fails if the agent crashed), with the identity a real
kubelet has: `system:node:<node>` in `system:nodes`, signed by the emulator's CA
(`kubeconfig` is its admin one; `user` and `groups` give another); `pod(...)` is a minimal pod
bound to a node by `spec.nodeName`, as if the scheduler had placed it.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from playground.nodeagent import NodeAgent, NodeAgentOptions
from runtime.api.kinds import NAMESPACES, PODS, SERVICEACCOUNTS
from runtime.api.objects import JSON
from runtime.core import Client, NotFoundError
from tests.playground.conftest import identity_kubeconfig

#: restart and pull back-off for tests: short enough to see several restarts in a second or two
TEST_BACKOFF = 0.2
NODES_GROUP = "system:nodes"


def options(node: str = "node-1", **overrides: Any) -> NodeAgentOptions:
    defaults: dict[str, Any] = {
        "node_name": node,
        "pod_cidr": "10.244.1.0/24",
        "heartbeat": 0.5,
        "lease_duration": 5,
        "restart_backoff": TEST_BACKOFF,
        "restart_backoff_max": 1.0,
    }
    return NodeAgentOptions(**{**defaults, **overrides})


@contextlib.asynccontextmanager
async def agent(
    kubeconfig: Path,
    agent_options: NodeAgentOptions,
    *,
    user: str | None = None,
    groups: tuple[str, ...] = (NODES_GROUP,),
) -> AsyncIterator[NodeAgent]:
    kubelet = identity_kubeconfig(kubeconfig, user or f"system:node:{agent_options.node_name}", *groups)
    async with await Client.from_kubeconfig(kubelet) as api:
        node_agent = NodeAgent(api, agent_options)
        task = asyncio.create_task(node_agent.run(), name=f"agent under test {agent_options.node_name}")
        ready = asyncio.create_task(node_agent.ready.wait())
        try:
            done, _ = await asyncio.wait({task, ready}, timeout=20, return_when=asyncio.FIRST_COMPLETED)
            if task in done:
                task.result()
            assert ready in done, "the agent did not become ready within 20 s"
            yield node_agent
        finally:
            ready.cancel()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


@pytest.fixture
async def api(fresh_emulator: Path) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(fresh_emulator) as client:
        yield client


@pytest.fixture
async def ns(api: Client) -> AsyncIterator[str]:
    """A namespace with its `default` ServiceAccount (pods need it; no controller makes it here)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    await api.create(NAMESPACES, {"metadata": {"name": name}})
    await api.create(SERVICEACCOUNTS, {"metadata": {"name": "default", "namespace": name}})
    yield name
    with contextlib.suppress(NotFoundError):
        await api.delete(NAMESPACES, name)


def pod(
    name: str,
    *,
    node: str = "node-1",
    image: str = "nginx:1.27",
    restart_policy: str | None = None,
    init_images: tuple[str, ...] = (),
    **spec: Any,
) -> JSON:
    body: JSON = {
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "main", "image": image}],
            "terminationGracePeriodSeconds": 5,
            **spec,
        },
    }
    if restart_policy:
        body["spec"]["restartPolicy"] = restart_policy
    if init_images:
        body["spec"]["initContainers"] = [
            {"name": f"init-{i}", "image": image} for i, image in enumerate(init_images)
        ]
    return body


async def get_pod(api: Client, namespace: str, name: str) -> JSON | None:
    try:
        return await api.get(PODS, name, namespace=namespace)
    except NotFoundError:
        return None


def condition(obj: JSON | None, kind: str) -> JSON:
    for entry in ((obj or {}).get("status") or {}).get("conditions") or []:
        if entry.get("type") == kind:
            return dict(entry)
    return {}


def container_status(obj: JSON | None, name: str = "main") -> JSON:
    status = (obj or {}).get("status") or {}
    for entry in [*(status.get("containerStatuses") or []), *(status.get("initContainerStatuses") or [])]:
        if entry.get("name") == name:
            return dict(entry)
    return {}
