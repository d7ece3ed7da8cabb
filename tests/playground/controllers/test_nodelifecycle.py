"""Node lifecycle: silent nodes turn Unknown and get tainted; taint eviction deletes pods that do not tolerate it."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from playground.controllers import nodelifecycle
from playground.controllers.nodelifecycle import condition, desired_taints, eviction
from playground.controlplane import ControlPlaneOptions
from playground.scheduler.taints import tolerates
from runtime.api.kinds import EVENTS, LEASES, NAMESPACES, NODES, PODS, SERVICEACCOUNTS
from runtime.api.objects import JSON
from runtime.core import Client, NotFoundError
from tests.playground.conftest import eventually, running

FAST = ControlPlaneOptions(
    node_monitor_grace_period=1.5, node_monitor_period=0.2, node_startup_grace_period=1.0
)


def _stamp(*, micro: bool = False) -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def _ready(status: str) -> JSON:
    now = _stamp()
    return {
        "type": "Ready",
        "status": status,
        "reason": "KubeletReady",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


class Agent:
    """Stands in for a node agent: renews the node's Lease and posts its Ready condition."""

    def __init__(self, client: Client, node: str) -> None:
        self.client = client
        self.node = node
        self.renewals = 0

    async def register(self) -> None:
        await self.client.create(NODES, {"metadata": {"name": self.node}})
        await self.post("True")
        lease = {
            "metadata": {"name": self.node},
            "spec": {"holderIdentity": self.node, "leaseDurationSeconds": 40},
        }
        await self.client.create(LEASES, lease, namespace="kube-node-lease")

    async def post(self, status: str) -> None:
        await self.client.patch_status(
            NODES, self.node, {"status": {"conditions": [_ready(status)]}}, patch_type="strategic"
        )

    async def renew_forever(self) -> None:
        while True:
            await self.client.patch(
                LEASES, self.node, {"spec": {"renewTime": _stamp(micro=True)}}, namespace="kube-node-lease"
            )
            self.renewals += 1
            await asyncio.sleep(0.1)

    @contextlib.asynccontextmanager
    async def renewing(self) -> AsyncIterator[None]:
        task = asyncio.create_task(self.renew_forever(), name=f"lease renewal of {self.node}")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def _namespace(client: Client) -> str:
    name = f"t-{uuid.uuid4().hex[:10]}"
    await client.create(NAMESPACES, {"metadata": {"name": name}})
    await client.create(SERVICEACCOUNTS, {"metadata": {"name": "default"}}, namespace=name)
    return name


async def _pod(client: Client, namespace: str, name: str, node: str, *tolerations: JSON) -> JSON:
    spec: JSON = {
        "nodeName": node,
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "c", "image": "nginx"}],
    }
    if tolerations:
        spec["tolerations"] = list(tolerations)
    return await client.create(PODS, {"metadata": {"name": name}, "spec": spec}, namespace=namespace)


async def _exists(client: Client, namespace: str, name: str) -> bool:
    try:
        await client.get(PODS, name, namespace=namespace)
    except NotFoundError:
        return False
    return True


async def _node(client: Client, name: str) -> JSON:
    return await client.get(NODES, name)


def _taints(node: JSON) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in (node.get("spec") or {}).get("taints") or []}


async def _taints_are(client: Client, node: str, taints: set[tuple[str, str]]) -> bool:
    return _taints(await _node(client, node)) == taints


def _status(obj: JSON, kind: str) -> str | None:
    found = condition(obj, kind)
    return None if found is None else str(found["status"])


UNREACHABLE_TAINTS = {
    ("node.kubernetes.io/unreachable", "NoSchedule"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
}
NOT_READY_TAINTS = {
    ("node.kubernetes.io/not-ready", "NoSchedule"),
    ("node.kubernetes.io/not-ready", "NoExecute"),
}


async def test_a_node_whose_lease_stops_is_unknown_tainted_and_its_pods_are_evicted(
    fresh_emulator: Path,
) -> None:
    async with running(fresh_emulator, nodelifecycle.setup, options=FAST) as client:
        agent = Agent(client, "n1")
        await agent.register()
        ns = await _namespace(client)
        unreachable = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}
        # a toleration for another value: admission adds no default one, and the taint is not tolerated
        await _pod(client, ns, "intolerant", "n1", {**unreachable, "operator": "Equal", "value": "other"})
        await _pod(client, ns, "patient", "n1", {**unreachable, "tolerationSeconds": 3})
        await _pod(client, ns, "forever", "n1", unreachable)
        await client.patch_status(
            PODS,
            "forever",
            {"status": {"conditions": [_ready("True")]}},
            namespace=ns,
            patch_type="strategic",
        )

        async with agent.renewing():
            await eventually(lambda: agent.renewals >= 20, within=20)  # past the grace period
            node = await _node(client, "n1")
            assert _status(node, "Ready") == "True"
            assert _taints(node) == set()

        async def unknown() -> bool:
            return _status(await _node(client, "n1"), "Ready") == "Unknown"

        await eventually(unknown, within=20)
        node = await _node(client, "n1")
        for kind in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure"):
            assert _status(node, kind) == "Unknown", kind
        ready = condition(node, "Ready")
        assert ready is not None
        assert (ready["reason"], ready["message"]) == (
            "NodeStatusUnknown",
            "Kubelet stopped posting node status.",
        )
        await eventually(lambda: _taints_are(client, "n1", UNREACHABLE_TAINTS), within=20)
        no_execute = next(
            t for t in (await _node(client, "n1"))["spec"]["taints"] if t["effect"] == "NoExecute"
        )
        assert no_execute["timeAdded"]

        async def intolerant_gone() -> bool:
            return not await _exists(client, ns, "intolerant")

        await eventually(intolerant_gone, within=20)
        assert await _exists(client, ns, "patient")  # its 3 s of tolerance are not over yet
        events = (await client.list(EVENTS, namespace=ns)).items
        evictions = [e for e in events if e["reason"] == "TaintManagerEviction"]
        assert [e["message"] for e in evictions] == [f"Marking for deletion Pod {ns}/intolerant"]

        async def patient_gone() -> bool:
            return not await _exists(client, ns, "patient")

        await eventually(patient_gone, within=20)
        forever = await client.get(PODS, "forever", namespace=ns)
        assert _status(forever, "Ready") == "False"

        # the agent comes back: it renews its Lease and posts Ready again
        async with agent.renewing():
            await agent.post("True")
            await eventually(lambda: _taints_are(client, "n1", set()), within=20)
        assert await _exists(client, ns, "forever")


async def test_a_node_reported_not_ready_gets_the_not_ready_taints_until_ready_again(
    fresh_emulator: Path,
) -> None:
    async with running(fresh_emulator, nodelifecycle.setup, options=FAST) as client:
        agent = Agent(client, "n2")
        await agent.register()
        async with agent.renewing():
            await agent.post("False")
            await eventually(lambda: _taints_are(client, "n2", NOT_READY_TAINTS), within=20)
            await agent.post("True")
            await eventually(lambda: _taints_are(client, "n2", set()), within=20)
            await client.patch(NODES, "n2", {"spec": {"unschedulable": True}})
            await eventually(
                lambda: _taints_are(client, "n2", {("node.kubernetes.io/unschedulable", "NoSchedule")}),
                within=20,
            )


async def test_a_pod_that_does_not_tolerate_a_no_execute_taint_is_deleted(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, nodelifecycle.setup, options=FAST) as client:
        agent = Agent(client, "n3")
        await agent.register()
        ns = await _namespace(client)
        await _pod(client, ns, "plain", "n3")
        async with agent.renewing():
            taint = {"key": "example.com/drain", "effect": "NoExecute", "timeAdded": _stamp()}
            await client.patch(NODES, "n3", {"spec": {"taints": [taint]}})

            async def plain_gone() -> bool:
                return not await _exists(client, ns, "plain")

            await eventually(plain_gone, within=20)
            # someone else's taint is left alone
            assert ("example.com/drain", "NoExecute") in _taints(await _node(client, "n3"))


async def test_a_node_that_never_posted_status_turns_unknown_after_the_startup_grace(
    fresh_emulator: Path,
) -> None:
    async with running(fresh_emulator, nodelifecycle.setup, options=FAST) as client:
        await client.create(NODES, {"metadata": {"name": "n4"}})

        async def never_updated() -> bool:
            ready = condition(await _node(client, "n4"), "Ready")
            return ready is not None and ready["reason"] == "NodeStatusNeverUpdated"

        await eventually(never_updated, within=20)
        ready = condition(await _node(client, "n4"), "Ready")
        assert ready is not None
        assert (ready["status"], ready["message"]) == ("Unknown", "Kubelet never posted node status.")


def _node_with(ready: str | None, *, taints: list[JSON] | None = None, **conditions: str) -> JSON:
    all_conditions = [{"type": k, "status": v} for k, v in conditions.items()]
    if ready is not None:
        all_conditions.append({"type": "Ready", "status": ready})
    return {
        "metadata": {"name": "n"},
        "spec": {"taints": taints or []},
        "status": {"conditions": all_conditions},
    }


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        (_node_with("True"), set()),
        (_node_with("False"), NOT_READY_TAINTS),
        (_node_with("Unknown"), UNREACHABLE_TAINTS),
        (_node_with("True", MemoryPressure="True"), {("node.kubernetes.io/memory-pressure", "NoSchedule")}),
        (
            _node_with("True", taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]),
            set(),
        ),
        (
            _node_with("Unknown", taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]),
            UNREACHABLE_TAINTS,
        ),
        (_node_with("True", taints=[{"key": "mine", "effect": "NoExecute"}]), {("mine", "NoExecute")}),
    ],
    ids=["ready", "not-ready", "unknown", "memory-pressure", "recovered", "swapped", "foreign-kept"],
)
def test_desired_taints_follow_the_conditions(node: JSON, expected: set[tuple[str, str]]) -> None:
    taints = desired_taints(node, now="T")
    assert {(t["key"], t["effect"]) for t in taints} == expected
    assert all(t.get("timeAdded") == "T" for t in taints if t["effect"] == "NoExecute" and t["key"] != "mine")


def test_an_existing_taint_keeps_its_time_added() -> None:
    kept = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "EARLIER"}
    taints = desired_taints(_node_with("Unknown", taints=[kept]), now="T")
    assert kept in taints


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        ({"operator": "Exists"}, True),
        ({"key": "k", "operator": "Exists"}, True),
        ({"key": "k", "value": "v"}, True),
        ({"key": "k", "operator": "Equal", "value": "w"}, False),
        ({"key": "other", "operator": "Exists"}, False),
        ({"key": "k", "operator": "Exists", "effect": "NoSchedule"}, False),
    ],
    ids=["wildcard", "key-exists", "equal", "other-value", "other-key", "other-effect"],
)
def test_tolerations_match_taints_like_kube(toleration: JSON, tolerated: bool) -> None:
    assert tolerates(toleration, {"key": "k", "value": "v", "effect": "NoExecute"}) is tolerated


def test_the_first_toleration_to_run_out_sets_the_eviction_time() -> None:
    taints = [{"key": "a", "effect": "NoExecute"}, {"key": "b", "effect": "NoExecute"}]
    added = {("a", ""): 100.0, ("b", ""): 200.0}
    pod = {
        "spec": {
            "tolerations": [
                {"key": "a", "operator": "Exists", "tolerationSeconds": 300},
                {"key": "b", "operator": "Exists", "tolerationSeconds": 50},
            ]
        }
    }
    assert eviction(pod, taints, added=added).at == 250.0
    forever = {"spec": {"tolerations": [{"operator": "Exists"}]}}
    verdict = eviction(forever, taints, added=added)
    assert verdict.tolerated and verdict.at is None
    assert not eviction(
        {"spec": {"tolerations": [{"key": "a", "operator": "Exists"}]}}, taints, added=added
    ).tolerated
    negative = {"spec": {"tolerations": [{"operator": "Exists", "tolerationSeconds": -5}]}}
    assert eviction(negative, taints, added=added).at == 100.0
