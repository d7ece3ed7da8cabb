"""The scheduler against an emulator of its own: pods created through the API land on the right nodes."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from playground.controlplane import ControlPlaneOptions
from playground.scheduler import setup
from runtime.api.kinds import EVENTS, NODES, PODS, PRIORITYCLASSES
from runtime.api.objects import JSON
from runtime.core import Client
from tests.playground.conftest import eventually, running

from .builders import add_namespace, add_node, api_pod, container, node, pod

NS = "apps"


async def placements(api: Client, namespace: str = NS) -> dict[str, str | None]:
    """Pod name -> the node it is bound to (None: pending)."""
    listed = await api.list(PODS, namespace=namespace)
    return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in listed.items}


async def create_pods(api: Client, *bodies: JSON) -> None:
    await asyncio.gather(*(api.create(PODS, api_pod(body)) for body in bodies))


async def all_bound(api: Client, count: int) -> dict[str, str | None] | None:
    found = await placements(api)
    return found if len(found) == count and all(found.values()) else None


async def bound_count(api: Client, count: int) -> bool:
    return sum(1 for bound in (await placements(api)).values() if bound) == count


async def events_of(api: Client, name: str, reason: str) -> list[JSON]:
    listed = await api.list(EVENTS, namespace=NS)
    return [e for e in listed.items if e["involvedObject"]["name"] == name and e["reason"] == reason]


async def test_pods_spread_over_nodes_and_get_a_scheduled_event(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, setup) as api:
        await add_namespace(api, NS)
        for name in ("n1", "n2", "n3"):
            await add_node(api, node(name))
        await create_pods(api, *(pod(f"p{i}", namespace=NS) for i in range(6)))
        await eventually(lambda: all_bound(api, 6))
        assert Counter((await placements(api)).values()) == {"n1": 2, "n2": 2, "n3": 2}
        scheduled = await events_of(api, "p0", "Scheduled")
        bound = (await api.get(PODS, "p0", namespace=NS))["spec"]["nodeName"]
        assert [e["message"] for e in scheduled] == [f"Successfully assigned {NS}/p0 to {bound}"]
        assert scheduled[0]["source"]["component"] == "default-scheduler"
        conditions = (await api.get(PODS, "p0", namespace=NS))["status"]["conditions"]
        assert {"type": "PodScheduled", "status": "True"}.items() <= conditions[0].items()


async def test_hundred_pods_spread_evenly_over_three_nodes(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, setup) as api:
        await add_namespace(api, NS)
        for name in ("n1", "n2", "n3"):
            await add_node(api, node(name))
        await create_pods(api, *(pod(f"p{i:03}", namespace=NS) for i in range(100)))
        await eventually(lambda: all_bound(api, 100), within=60)
        counts = Counter((await placements(api)).values())
        assert sorted(counts.values()) == [33, 33, 34]


async def test_pods_with_a_node_name_and_of_other_schedulers_are_left_alone(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, setup) as api:
        await add_namespace(api, NS)
        await add_node(api, node("n1", cpu="1"))
        await add_node(api, node("n2"))
        # one after the other: the scheduler must see the pinned pod before it decides on the others
        for body in (
            pod("pinned", namespace=NS, node_name="n1", cpu="800m"),
            pod("other", namespace=NS, schedulerName="my-scheduler"),
            pod("mine", namespace=NS, cpu="500m", nodeSelector={"kubernetes.io/hostname": "n1"}),
        ):
            await create_pods(api, body)
        await eventually(lambda: events_of(api, "mine", "FailedScheduling"))
        found = await placements(api)
        # the pinned pod counts on n1 (800m of 1 cpu), so "mine" does not fit there
        assert found == {"pinned": "n1", "other": None, "mine": None}
        assert await events_of(api, "other", "FailedScheduling") == []


async def test_node_selector_and_required_node_affinity(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, setup) as api:
        await add_namespace(api, NS)
        await add_node(api, node("n1", labels={"disk": "ssd", "gen": "3"}))
        await add_node(api, node("n2", labels={"disk": "hdd", "gen": "5"}))
        await add_node(api, node("n3"))
        terms = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["4"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n3"]}]},
                ]
            }
        }
        pinned = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n3"]}]}
                ]
            }
        }
        await create_pods(
            api,
            pod("ssd", namespace=NS, nodeSelector={"disk": "ssd"}),
            pod("daemon", namespace=NS, affinity={"nodeAffinity": pinned}),
            *(pod(f"new-{i}", namespace=NS, affinity={"nodeAffinity": terms}) for i in range(4)),
        )
        await eventually(lambda: all_bound(api, 6))
        found = await placements(api)
        assert found["ssd"] == "n1"
        assert found["daemon"] == "n3"
        assert {found[f"new-{i}"] for i in range(4)} == {"n2", "n3"}


async def test_taints_keep_pods_off_unless_tolerated(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, setup) as api:
        await add_namespace(api, NS)
        gpu = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
        await add_node(api, node("gpu", taints=gpu))
        await add_node(api, node("cordoned", unschedulable=True))
        await add_node(api, node("booting", ready="False"))
        tolerant = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
        await create_pods(
            api, pod("plain", namespace=NS), pod("tolerant", namespace=NS, tolerations=tolerant)
        )
        await eventually(lambda: events_of(api, "plain", "FailedScheduling"))
        found = await placements(api)
        assert found == {"plain": None, "tolerant": "gpu"}
        [event] = await events_of(api, "plain", "FailedScheduling")
        assert event["type"] == "Warning"
        assert event["message"] == (
            "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, "
            "1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 1 node(s) were unschedulable."
        )


async def test_oversized_pod_stays_pending_with_condition_and_event(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, setup) as api:
        await add_namespace(api, NS)
        for name in ("n1", "n2"):
            await add_node(api, node(name, cpu="2", memory="1Gi"))
        await create_pods(api, pod("huge", namespace=NS, cpu="3", memory="2Gi"))
        message = "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory."

        async def unschedulable() -> JSON | None:
            current = await api.get(PODS, "huge", namespace=NS)
            conditions = (current.get("status") or {}).get("conditions") or []
            return next((c for c in conditions if c["type"] == "PodScheduled"), None)

        await eventually(unschedulable)
        condition = await unschedulable()
        assert condition is not None
        assert (condition["status"], condition["reason"], condition["message"]) == (
            "False",
            "Unschedulable",
            message,
        )
        await eventually(lambda: events_of(api, "huge", "FailedScheduling"))
        [event] = await events_of(api, "huge", "FailedScheduling")
        assert (event["type"], event["message"]) == ("Warning", message)
        assert (await placements(api))["huge"] is None


async def test_pod_count_is_limited_by_allocatable_pods(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, setup) as api:
        await add_namespace(api, NS)
        await add_node(api, node("small", pods="2"))
        await create_pods(api, *(pod(f"p{i}", namespace=NS) for i in range(3)))
        await eventually(lambda: bound_count(api, 2))
        found = await placements(api)
        assert Counter(found.values()) == {"small": 2, None: 1}
        [waiting] = [name for name, bound in found.items() if bound is None]
        await eventually(lambda: events_of(api, waiting, "FailedScheduling"))
        [event] = await events_of(api, waiting, "FailedScheduling")
        assert event["message"] == "0/1 nodes are available: 1 Too many pods."


async def test_anti_affinity_spreads_replicas_one_per_node(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, setup) as api:
        await add_namespace(api, NS)
        for name in ("n1", "n2", "n3"):
            await add_node(api, node(name))
        spread = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        }
        replicas = [pod(f"db-{i}", namespace=NS, labels={"app": "db"}, affinity=spread) for i in range(4)]
        await create_pods(api, *replicas)
        await eventually(lambda: bound_count(api, 3))
        found = await placements(api)
        assert sorted(bound for bound in found.values() if bound) == ["n1", "n2", "n3"]
        [waiting] = [name for name, bound in found.items() if bound is None]
        await eventually(lambda: events_of(api, waiting, "FailedScheduling"))
        [event] = await events_of(api, waiting, "FailedScheduling")
        assert event["message"] == "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."


async def test_pending_pod_is_scheduled_once_a_fitting_node_appears(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, setup) as api:
        await add_namespace(api, NS)
        await create_pods(api, pod("early", namespace=NS, cpu="2"))
        await eventually(lambda: events_of(api, "early", "FailedScheduling"))
        [event] = await events_of(api, "early", "FailedScheduling")
        assert event["message"] == "no nodes available to schedule pods"
        await add_node(api, node("tiny", cpu="1"))

        async def insufficient() -> bool:
            messages = [e["message"] for e in await events_of(api, "early", "FailedScheduling")]
            return "0/1 nodes are available: 1 Insufficient cpu." in messages

        await eventually(insufficient)
        await add_node(api, node("big", cpu="8"))
        await eventually(lambda: all_bound(api, 1))
        assert (await placements(api))["early"] == "big"


async def test_unschedulable_pod_is_retried_when_a_pod_goes_away(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, setup) as api:
        await add_namespace(api, NS)
        await add_node(api, node("n1", cpu="1"))
        await create_pods(api, pod("first", namespace=NS, cpu="800m"))
        await eventually(lambda: all_bound(api, 1))
        await create_pods(api, pod("second", namespace=NS, cpu="800m"))
        await eventually(lambda: events_of(api, "second", "FailedScheduling"))
        await api.delete(PODS, "first", namespace=NS, grace_period_seconds=0)
        await eventually(lambda: all_bound(api, 1))
        assert await placements(api) == {"second": "n1"}


async def test_unschedulable_pods_are_retried_periodically(fresh_emulator: Path) -> None:
    options = ControlPlaneOptions(unschedulable_retry=0.5)
    async with running(fresh_emulator, setup, options=options) as api:
        await add_namespace(api, NS)
        await add_node(api, node("n1", cpu="1"))
        await create_pods(api, pod("big", namespace=NS, cpu="2"))

        async def tried_thrice() -> bool:
            # one aggregated Event whose count grows with every retry
            events = await events_of(api, "big", "FailedScheduling")
            return len(events) == 1 and events[0]["count"] >= 3

        await eventually(tried_thrice, within=20)


async def test_higher_priority_pods_are_scheduled_first(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, setup) as api:
        await add_namespace(api, NS)
        await api.create(PRIORITYCLASSES, {"metadata": {"name": "important"}, "value": 1000})
        await create_pods(
            api,
            pod("low", namespace=NS, cpu="600m"),
            pod("high", namespace=NS, cpu="600m", priorityClassName="important"),
        )
        await eventually(lambda: events_of(api, "high", "FailedScheduling"))
        await eventually(lambda: events_of(api, "low", "FailedScheduling"))
        await add_node(api, node("n1", cpu="1"))
        await eventually(lambda: bound_count(api, 1))
        assert await placements(api) == {"high": "n1", "low": None}


async def test_host_ports_conflict(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, setup) as api:
        await add_namespace(api, NS)
        await add_node(api, node("n1"))
        web = [container(ports=[{"containerPort": 80, "hostPort": 8080}])]
        await create_pods(api, pod("web-1", namespace=NS, containers=web))
        await eventually(lambda: all_bound(api, 1))
        await create_pods(api, pod("web-2", namespace=NS, containers=web))
        await eventually(lambda: events_of(api, "web-2", "FailedScheduling"))
        [event] = await events_of(api, "web-2", "FailedScheduling")
        assert event["message"] == (
            "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."
        )


async def test_uncordoning_a_node_schedules_the_waiting_pod(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, setup) as api:
        await add_namespace(api, NS)
        await add_node(api, node("n1", unschedulable=True))
        await create_pods(api, pod("waiting", namespace=NS))
        await eventually(lambda: events_of(api, "waiting", "FailedScheduling"))
        await api.patch(NODES, "n1", {"spec": {"unschedulable": False}})
        await eventually(lambda: all_bound(api, 1))
        assert await placements(api) == {"waiting": "n1"}
