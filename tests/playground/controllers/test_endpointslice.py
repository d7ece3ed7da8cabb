"""The EndpointSlice and Endpoints controllers against the emulator: ready pod IPs with resolved ports,
readiness and termination as endpoint conditions, the legacy Endpoints object, what is left alone."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from playground.controllers import endpointslice
from playground.controlplane import ControlPlaneOptions
from runtime.api.kinds import ENDPOINTS, ENDPOINTSLICES, PODS, SERVICES
from runtime.api.objects import JSON
from runtime.core import Client, NotFoundError
from tests.playground.conftest import eventually, running

from .workload_support import bind, node, set_ready, template, with_default_account


async def _service(
    client: Client, namespace: str, *, selector: dict[str, str] | None = None, **spec: Any
) -> JSON:
    body: JSON = {
        "metadata": {"name": "web", "labels": {"team": "a"}},
        "spec": {"ports": [{"name": "http", "port": 80, "targetPort": "http"}], **spec},
    }
    if selector is not None:
        body["spec"]["selector"] = selector
    return await client.create(SERVICES, body, namespace=namespace)


async def _pod(
    client: Client, namespace: str, name: str, *, node_name: str | None, ip: str | None, ready: bool = True
) -> JSON:
    spec = template({"app": "web"}, ports=[{"name": "http", "containerPort": 8080}])["spec"]
    pod = await client.create(
        PODS, {"metadata": {"name": name, "labels": {"app": "web"}}, "spec": spec}, namespace=namespace
    )
    if node_name is not None:
        await bind(client, pod, node_name)
    if ip is not None:
        pod = await set_ready(client, pod, ip=ip, ready=ready)
    return pod


async def _slices(client: Client, namespace: str) -> list[JSON]:
    listed = await client.list(
        ENDPOINTSLICES, namespace=namespace, label_selector="kubernetes.io/service-name=web"
    )
    return listed.items


async def _endpoints_by_pod(client: Client, namespace: str) -> dict[str, JSON]:
    return {
        endpoint["targetRef"]["name"]: endpoint
        for current in await _slices(client, namespace)
        for endpoint in current["endpoints"] or []
    }


async def _subsets(client: Client, namespace: str) -> list[JSON] | None:
    try:
        return list((await client.get(ENDPOINTS, "web", namespace=namespace)).get("subsets") or [])
    except NotFoundError:
        return None


async def _node(client: Client) -> str:
    name = f"node-{uuid.uuid4().hex[:8]}"
    await node(client, name, labels={"topology.kubernetes.io/zone": "zone-a"})
    return name


def _conditions(endpoint: JSON) -> tuple[bool, bool, bool]:
    conditions = endpoint["conditions"]
    return conditions["ready"], conditions["serving"], conditions["terminating"]


async def test_slices_list_pod_ips_and_follow_readiness_and_termination(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    await with_default_account(client, namespace)
    node_name = await _node(client)
    async with running(emulator_kubeconfig, endpointslice.setup):
        service = await _service(client, namespace, selector={"app": "web"})
        first = await _pod(client, namespace, "first", node_name=node_name, ip="10.244.1.10")
        await _pod(client, namespace, "second", node_name=node_name, ip="10.244.1.11")
        await _pod(client, namespace, "no-ip", node_name=node_name, ip=None)

        async def listed(expected: dict[str, tuple[bool, bool, bool]]) -> bool:
            endpoints = await _endpoints_by_pod(client, namespace)
            return {pod: _conditions(endpoint) for pod, endpoint in endpoints.items()} == expected

        await eventually(lambda: listed({"first": (True, True, False), "second": (True, True, False)}))
        [current] = await _slices(client, namespace)
        assert current["metadata"]["name"].startswith("web-")
        assert current["metadata"]["labels"] == {
            "team": "a",
            "kubernetes.io/service-name": "web",
            "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
        }
        owner = current["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "Service",
            "web",
            service["metadata"]["uid"],
            True,
        )
        assert current["addressType"] == "IPv4"
        assert current["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
        endpoint = (await _endpoints_by_pod(client, namespace))["first"]
        assert endpoint["addresses"] == ["10.244.1.10"]
        assert endpoint["nodeName"] == node_name
        assert endpoint["zone"] == "zone-a"
        assert endpoint["targetRef"] == {
            "kind": "Pod",
            "namespace": namespace,
            "name": "first",
            "uid": first["metadata"]["uid"],
        }

        def address(ip: str, pod: str) -> JSON:
            return {
                "ip": ip,
                "nodeName": node_name,
                "targetRef": {"kind": "Pod", "namespace": namespace, "name": pod},
            }

        def without_uids(items: list[JSON] | None) -> list[JSON] | None:
            if items is None:
                return None
            for subset in items:
                for key in ("addresses", "notReadyAddresses"):
                    for entry in subset.get(key) or []:
                        entry["targetRef"].pop("uid", None)
            return items

        ports = [{"name": "http", "port": 8080, "protocol": "TCP"}]

        async def legacy(expected: list[JSON]) -> bool:
            return without_uids(await _subsets(client, namespace)) == expected

        await eventually(
            lambda: legacy(
                [
                    {
                        "addresses": [address("10.244.1.10", "first"), address("10.244.1.11", "second")],
                        "ports": ports,
                    }
                ]
            )
        )
        legacy_object = await client.get(ENDPOINTS, "web", namespace=namespace)
        assert legacy_object["metadata"]["labels"] == {
            "team": "a",
            "endpointslice.kubernetes.io/skip-mirror": "true",
        }

        await set_ready(
            client, await client.get(PODS, "second", namespace=namespace), ip="10.244.1.11", ready=False
        )
        await eventually(lambda: listed({"first": (True, True, False), "second": (False, False, False)}))
        await eventually(
            lambda: legacy(
                [
                    {
                        "addresses": [address("10.244.1.10", "first")],
                        "notReadyAddresses": [address("10.244.1.11", "second")],
                        "ports": ports,
                    }
                ]
            )
        )

        await client.delete(PODS, "first", namespace=namespace)
        await eventually(lambda: listed({"first": (False, True, True), "second": (False, False, False)}))
        await eventually(
            lambda: legacy([{"notReadyAddresses": [address("10.244.1.11", "second")], "ports": ports}])
        )


async def test_publish_not_ready_addresses_marks_every_endpoint_ready(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    await with_default_account(client, namespace)
    node_name = await _node(client)
    async with running(emulator_kubeconfig, endpointslice.setup):
        await _service(
            client, namespace, selector={"app": "web"}, publishNotReadyAddresses=True, clusterIP="None"
        )
        await _pod(client, namespace, "starting", node_name=node_name, ip="10.244.2.10", ready=False)

        async def ready_anyway() -> bool:
            endpoints = await _endpoints_by_pod(client, namespace)
            return "starting" in endpoints and _conditions(endpoints["starting"]) == (True, False, False)

        await eventually(ready_anyway)
        [current] = await _slices(client, namespace)
        assert current["metadata"]["labels"]["service.kubernetes.io/headless"] == ""

        async def legacy_ready() -> bool:
            found = await _subsets(client, namespace)
            return bool(found and [a["ip"] for a in found[0].get("addresses") or []] == ["10.244.2.10"])

        await eventually(legacy_ready)


async def test_a_service_without_endpoints_gets_a_placeholder_and_one_without_selector_is_left_alone(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    async with running(emulator_kubeconfig, endpointslice.setup):
        await _service(client, namespace, selector={"app": "nothing-here"})
        manual = {
            "metadata": {"name": "manual"},
            "spec": {"ports": [{"port": 80}]},
        }
        await client.create(SERVICES, manual, namespace=namespace)

        async def placeholder() -> bool:
            found = await _slices(client, namespace)
            return len(found) == 1 and not found[0]["endpoints"] and not found[0]["ports"]

        await eventually(placeholder)
        await eventually(lambda: _is(_subsets(client, namespace), []))
        all_slices = (await client.list(ENDPOINTSLICES, namespace=namespace)).items
        assert [s["metadata"]["labels"]["kubernetes.io/service-name"] for s in all_slices] == ["web"]
        try:
            await client.get(ENDPOINTS, "manual", namespace=namespace)
        except NotFoundError:
            pass
        else:
            raise AssertionError("the Endpoints of a Service without selector were written by the controller")

        await client.delete(SERVICES, "web", namespace=namespace)
        await eventually(lambda: _is(_subsets(client, namespace), None))


async def _is(value: Awaitable[object], expected: object) -> bool:
    return await value == expected


async def test_slices_hold_at_most_the_configured_number_of_endpoints(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    await with_default_account(client, namespace)
    node_name = await _node(client)
    options = ControlPlaneOptions(max_endpoints_per_slice=2)
    async with running(emulator_kubeconfig, endpointslice.setup, options=options):
        await _service(client, namespace, selector={"app": "web"})
        for index in range(5):
            await _pod(client, namespace, f"pod-{index}", node_name=node_name, ip=f"10.244.3.{index + 10}")

        async def split() -> bool:
            found = await _slices(client, namespace)
            sizes = sorted(len(s["endpoints"]) for s in found)
            return sizes == [1, 2, 2] and len(await _endpoints_by_pod(client, namespace)) == 5

        await eventually(split)
        await client.delete(PODS, "pod-0", namespace=namespace, grace_period_seconds=0)
        await client.delete(PODS, "pod-1", namespace=namespace, grace_period_seconds=0)

        async def shrunk() -> bool:
            return sorted(await _endpoints_by_pod(client, namespace)) == ["pod-2", "pod-3", "pod-4"]

        await eventually(shrunk)
        assert sum(len(s["endpoints"]) for s in await _slices(client, namespace)) == 3
