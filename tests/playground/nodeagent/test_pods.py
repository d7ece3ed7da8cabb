"""Pods bound to an agent's node, run by the simulated runner, against an emulator of the test's own."""

from __future__ import annotations

import asyncio
import functools
import ipaddress
from pathlib import Path

from kubernetes.client import CoreV1Api

from playground.nodeagent.simulated import CRASH_IMAGE, EXIT0_IMAGE, FAIL_PULL_IMAGE
from runtime.api.image import runtime_image
from runtime.api.kinds import CLUSTERROLEBINDINGS, CLUSTERROLES, EVENTS, NODES, PODS
from runtime.api.objects import JSON
from runtime.core import Client
from tests.apiserver.conftest import api_client
from tests.playground.conftest import eventually

from .conftest import agent, condition, container_status, get_pod, options, pod


def phase(obj: JSON | None) -> str:
    return str(((obj or {}).get("status") or {}).get("phase", ""))


async def events_of(api: Client, namespace: str, name: str) -> list[tuple[str, str, str]]:
    listed = await api.list(EVENTS, namespace=namespace)
    return [
        (e["type"], e["reason"], e["message"])
        for e in listed.items
        if e["involvedObject"].get("name") == name and e.get("source", {}).get("component") == "kubelet"
    ]


async def started_events(
    api: Client, namespace: str, name: str, container: str
) -> list[tuple[str, str, str]]:
    """The pod's kubelet Events once `container`'s Started is among them (empty before)."""
    found = await events_of(api, namespace, name)
    return found if ("Normal", "Started", f"Started container {container}") in found else []


async def running_and_ready(api: Client, namespace: str, name: str) -> JSON | None:
    obj = await get_pod(api, namespace, name)
    ready = phase(obj) == "Running" and condition(obj, "Ready").get("status") == "True"
    return obj if ready else None


async def test_pod_runs_ready_with_an_ip_from_the_node_cidr(
    fresh_emulator: Path, api: Client, ns: str
) -> None:
    async with agent(fresh_emulator, options()) as node_agent:
        await api.create(PODS, pod("web", init_images=("busybox:1.36",)), namespace=ns)
        await eventually(lambda: running_and_ready(api, ns, "web"), within=15)
        obj = await get_pod(api, ns, "web")
        # the kubelet records a container's Events after the status that shows it running
        await eventually(lambda: started_events(api, ns, "web", "main"), within=15)
        kubelet_events = await events_of(api, ns, "web")
        node = await api.get(NODES, "node-1")
    assert obj is not None
    status = obj["status"]
    assert ipaddress.ip_address(status["podIP"]) in ipaddress.ip_network("10.244.1.0/24")
    assert status["podIP"] not in ("10.244.1.0", "10.244.1.1", "10.244.1.255")
    assert status["podIPs"] == [{"ip": status["podIP"]}]
    internal_ip = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
    assert status["hostIP"] == internal_ip == node_agent.address
    assert status["hostIPs"] == [{"ip": internal_ip}]
    assert status["startTime"]
    assert status["qosClass"] == "BestEffort"
    for kind in ("PodReadyToStartContainers", "Initialized", "ContainersReady", "PodScheduled"):
        assert condition(obj, kind)["status"] == "True", kind
    main = container_status(obj)
    assert main["image"] == "nginx:1.27"
    assert main["ready"] is True and main["started"] is True
    assert main["restartCount"] == 0
    assert main["state"]["running"]["startedAt"]
    assert main["containerID"].startswith("simulated://")
    init = container_status(obj, "init-0")
    assert init["state"]["terminated"]["exitCode"] == 0
    assert init["state"]["terminated"]["reason"] == "Completed"
    assert ("Normal", "Pulled", 'Container image "nginx:1.27" already present on machine') in kubelet_events
    assert ("Normal", "Created", "Created container: main") in kubelet_events
    assert ("Normal", "Started", "Started container main") in kubelet_events
    assert ("Normal", "Started", "Started container init-0") in kubelet_events


async def test_pods_start_while_the_kubelets_services_watch_is_refused(
    fresh_emulator: Path, api: Client, ns: str
) -> None:
    """The kubelet's Services informer (the `kubernetes` Service, the names stand-ins resolve) is not
    waited for: a kubelet refused Services still registers its node and runs its pods."""
    node_role = await api.get(CLUSTERROLES, "system:node")
    rules = []
    for rule in node_role["rules"]:
        resources = [r for r in rule.get("resources") or [] if r != "services"]
        if resources or not rule.get("resources"):
            rules.append({**rule, "resources": resources} if rule.get("resources") else rule)
    user = "kubelet-without-services"
    await api.create(CLUSTERROLES, {"metadata": {"name": user}, "rules": rules})
    await api.create(
        CLUSTERROLEBINDINGS,
        {
            "metadata": {"name": user},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        },
    )
    async with agent(fresh_emulator, options(), user=user, groups=()):
        await api.create(PODS, pod("web"), namespace=ns)
        await eventually(lambda: running_and_ready(api, ns, "web"), within=15)


async def test_graceful_deletion_stops_and_removes_the_pod(
    fresh_emulator: Path, api: Client, ns: str
) -> None:
    async with agent(fresh_emulator, options()):
        await api.create(PODS, pod("web"), namespace=ns)
        await eventually(lambda: running_and_ready(api, ns, "web"), within=15)
        deleting = await api.delete(PODS, "web", namespace=ns)
        assert deleting["metadata"]["deletionTimestamp"]  # graceful: the pod lingers until the agent is done

        async def gone() -> bool:
            return await get_pod(api, ns, "web") is None

        await eventually(gone, within=15)
        kubelet_events = await events_of(api, ns, "web")
    assert ("Normal", "Killing", "Stopping container main") in kubelet_events


async def test_image_that_cannot_be_pulled_keeps_the_pod_pending(
    fresh_emulator: Path, api: Client, ns: str
) -> None:
    async with agent(fresh_emulator, options()):
        await api.create(PODS, pod("broken", image=f"{FAIL_PULL_IMAGE}:v1"), namespace=ns)
        seen: set[str] = set()

        async def both_reasons() -> bool:
            obj = await get_pod(api, ns, "broken")
            assert phase(obj) == "Pending"
            seen.add(container_status(obj).get("state", {}).get("waiting", {}).get("reason", ""))
            return {"ErrImagePull", "ImagePullBackOff"} <= seen

        await eventually(both_reasons, within=15, every=0.02)
        kubelet_events = await events_of(api, ns, "broken")
        obj = await get_pod(api, ns, "broken")
    assert condition(obj, "Ready")["status"] == "False"
    assert condition(obj, "Ready")["reason"] == "ContainersNotReady"
    assert ("Warning", "Failed", "Error: ErrImagePull") in kubelet_events
    assert ("Normal", "BackOff", f'Back-off pulling image "{FAIL_PULL_IMAGE}:v1"') in kubelet_events


async def test_crashing_container_restarts_with_back_off(fresh_emulator: Path, api: Client, ns: str) -> None:
    async with agent(fresh_emulator, options()):
        created = await api.create(PODS, pod("crash", image=CRASH_IMAGE), namespace=ns)
        counts: list[int] = []
        waiting: set[str] = set()

        async def restarted_twice() -> bool:
            obj = await get_pod(api, ns, "crash")
            main = container_status(obj)
            counts.append(int(main.get("restartCount", 0)))
            waiting.add(main.get("state", {}).get("waiting", {}).get("reason", ""))
            return counts[-1] >= 2 and "CrashLoopBackOff" in waiting

        await eventually(restarted_twice, within=20, every=0.02)
        obj = await get_pod(api, ns, "crash")
        kubelet_events = await events_of(api, ns, "crash")
    assert counts == sorted(counts)
    assert phase(obj) == "Running"  # restartPolicy Always: restarting counts as running
    last = container_status(obj)["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"]) == (1, "Error")
    uid = created["metadata"]["uid"]
    assert (
        "Warning",
        "BackOff",
        f"Back-off restarting failed container main in pod crash_{ns}({uid})",
    ) in kubelet_events


async def test_crashing_container_without_restarts_fails_the_pod(
    fresh_emulator: Path, api: Client, ns: str
) -> None:
    async with agent(fresh_emulator, options()):
        await api.create(PODS, pod("crash", image=CRASH_IMAGE, restart_policy="Never"), namespace=ns)

        async def failed() -> bool:
            return phase(await get_pod(api, ns, "crash")) == "Failed"

        await eventually(failed, within=15)
        obj = await get_pod(api, ns, "crash")
    assert container_status(obj)["restartCount"] == 0
    assert container_status(obj)["state"]["terminated"]["exitCode"] == 1


async def test_container_that_exits_zero_completes_the_pod(
    fresh_emulator: Path, api: Client, ns: str
) -> None:
    async with agent(fresh_emulator, options()):
        await api.create(PODS, pod("job", image=EXIT0_IMAGE, restart_policy="Never"), namespace=ns)

        async def succeeded() -> bool:
            return phase(await get_pod(api, ns, "job")) == "Succeeded"

        await eventually(succeeded, within=15)
        obj = await get_pod(api, ns, "job")
    terminated = container_status(obj)["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    assert condition(obj, "Ready")["reason"] == "PodCompleted"
    assert condition(obj, "PodReadyToStartContainers")["status"] == "False"


async def test_pod_ips_are_unique_and_reused_after_deletion(
    fresh_emulator: Path, api: Client, ns: str
) -> None:
    async with agent(fresh_emulator, options()):
        await asyncio.gather(*(api.create(PODS, pod(f"p{i}"), namespace=ns) for i in range(50)))

        async def all_have_ips() -> dict[str, str] | None:
            listed = await api.list(PODS, namespace=ns)
            ips = {p["metadata"]["name"]: p.get("status", {}).get("podIP") for p in listed.items}
            return ips if len(ips) == 50 and all(ips.values()) else None

        await eventually(all_have_ips, within=30, every=0.2)
        ips = await all_have_ips()
        assert ips is not None
        assert len(set(ips.values())) == 50
        assert all(ipaddress.ip_address(ip) in ipaddress.ip_network("10.244.1.0/24") for ip in ips.values())
        freed = ips["p7"]
        await api.delete(PODS, "p7", namespace=ns)

        async def gone() -> bool:
            return await get_pod(api, ns, "p7") is None

        await eventually(gone, within=15)
        await api.create(PODS, pod("newcomer"), namespace=ns)

        async def newcomer_ip() -> str | None:
            ip: str | None = ((await get_pod(api, ns, "newcomer")) or {}).get("status", {}).get("podIP")
            return ip

        await eventually(newcomer_ip, within=15)
        assert await newcomer_ip() == freed


async def test_exhausted_pod_cidr_keeps_the_pod_pending_until_an_ip_frees(
    fresh_emulator: Path, api: Client, ns: str
) -> None:
    # a /30 holds one pod IP: .0 is the network, .1 the gateway, .3 the broadcast address
    async with agent(fresh_emulator, options(pod_cidr="10.244.9.0/30")):
        await api.create(PODS, pod("first"), namespace=ns)
        await eventually(lambda: running_and_ready(api, ns, "first"), within=15)
        await api.create(PODS, pod("second"), namespace=ns)

        async def sandbox_failed() -> bool:
            return any(
                reason == "FailedCreatePodSandBox" for _, reason, _ in await events_of(api, ns, "second")
            )

        await eventually(sandbox_failed, within=15)
        kubelet_events = await events_of(api, ns, "second")
        second = await get_pod(api, ns, "second")
        assert phase(second) == "Pending"
        assert condition(second, "PodReadyToStartContainers")["status"] == "False"
        assert container_status(second)["state"]["waiting"]["reason"] == "ContainerCreating"
        message = next(m for _, reason, m in kubelet_events if reason == "FailedCreatePodSandBox")
        assert (
            "failed to allocate for range 0: no IP addresses available in range set: 10.244.9.2-10.244.9.2"
            in message
        )
        await api.delete(PODS, "first", namespace=ns)
        await eventually(lambda: running_and_ready(api, ns, "second"), within=15)
        second = await get_pod(api, ns, "second")
    assert second is not None
    assert second["status"]["podIP"] == "10.244.9.2"


async def test_restarted_agent_keeps_pods_and_their_ips(fresh_emulator: Path, api: Client, ns: str) -> None:
    async with agent(fresh_emulator, options()):
        for name in ("a", "b", "c"):
            await api.create(PODS, pod(name), namespace=ns)
        for name in ("a", "b", "c"):
            await eventually(functools.partial(running_and_ready, api, ns, name), within=15)
        await api.delete(PODS, "a", namespace=ns)

        async def a_gone() -> bool:
            return await get_pod(api, ns, "a") is None

        await eventually(a_gone, within=15)
        before = {name: await get_pod(api, ns, name) for name in ("b", "c")}
    async with agent(fresh_emulator, options()):
        # a new pod created while the agent restarts must not get an IP of the adopted ones
        await api.create(PODS, pod("d"), namespace=ns)
        await eventually(lambda: running_and_ready(api, ns, "d"), within=15)
        after = {name: await get_pod(api, ns, name) for name in ("b", "c", "d")}
    for name in ("b", "c"):
        old, new = before[name], after[name]
        assert old is not None and new is not None
        assert new["metadata"]["uid"] == old["metadata"]["uid"]
        assert new["status"]["podIP"] == old["status"]["podIP"]
        assert container_status(new)["state"] == container_status(old)["state"]
        assert phase(new) == "Running"
    ips = [p["status"]["podIP"] for p in after.values() if p]
    assert len(set(ips)) == 3


async def test_readiness_gates_keep_the_pod_unready_until_their_condition_is_true(
    fresh_emulator: Path, api: Client, ns: str
) -> None:
    gated = pod("gated", readinessGates=[{"conditionType": "example.com/lb-ready"}])
    async with agent(fresh_emulator, options()):
        await api.create(PODS, gated, namespace=ns)

        async def containers_ready() -> bool:
            return condition(await get_pod(api, ns, "gated"), "ContainersReady").get("status") == "True"

        await eventually(containers_ready, within=15)
        obj = await get_pod(api, ns, "gated")
        ready = condition(obj, "Ready")
        assert (ready["status"], ready["reason"]) == ("False", "ReadinessGatesNotReady")
        assert (
            ready["message"]
            == 'corresponding condition of pod readiness gate "example.com/lb-ready" does not exist.'
        )
        await api.patch_status(
            PODS,
            "gated",
            {"status": {"conditions": [{"type": "example.com/lb-ready", "status": "True"}]}},
            namespace=ns,
            patch_type="strategic",
        )
        await eventually(lambda: running_and_ready(api, ns, "gated"), within=15)
        obj = await get_pod(api, ns, "gated")
    assert condition(obj, "example.com/lb-ready")["status"] == "True"


async def test_pod_logs_come_from_the_kubelet_api_of_the_node(
    fresh_emulator: Path, api: Client, ns: str
) -> None:
    """`kubectl logs` goes API server -> the Node's kubelet endpoint -> the agent's kubelet API -> the runner."""
    async with agent(fresh_emulator, options()) as node_agent:
        await api.create(PODS, pod("web"), namespace=ns)
        await eventually(lambda: running_and_ready(api, ns, "web"), within=15)
        node = await api.get(NODES, "node-1")
        core = CoreV1Api(api_client(fresh_emulator))
        text = await asyncio.to_thread(core.read_namespaced_pod_log, "web", ns, container="main")
    assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == node_agent.kubelet_port != 0
    assert text.splitlines()[0] == f"simulated container main of {ns}/web: image nginx:1.27"


async def test_host_network_pods_get_the_node_address_and_runtime_pods_a_loopback_one(
    fresh_emulator: Path, api: Client, ns: str
) -> None:
    """Neither takes an IP from the pod CIDR: host-network pods share the node's address; process pods get
    one of their own in the node's loopback block, so two of them can listen on the same port."""
    runtime_pod = pod("runtime", image=runtime_image())
    runtime_pod["spec"]["containers"][0]["command"] = ["sleep", "60"]
    async with agent(fresh_emulator, options(address="127.0.0.1")):
        await api.create(PODS, pod("host", hostNetwork=True), namespace=ns)
        await api.create(PODS, runtime_pod, namespace=ns)
        await eventually(lambda: running_and_ready(api, ns, "host"), within=15)

        async def runtime_pod_ip() -> str | None:
            ip: str | None = ((await get_pod(api, ns, "runtime")) or {}).get("status", {}).get("podIP")
            return ip

        await eventually(runtime_pod_ip, within=15)
        await api.create(PODS, pod("ordinary"), namespace=ns)
        await eventually(lambda: running_and_ready(api, ns, "ordinary"), within=15)
        host = await get_pod(api, ns, "host")
        ordinary = await get_pod(api, ns, "ordinary")
    assert host is not None and ordinary is not None
    assert host["status"]["podIP"] == "127.0.0.1"
    runtime_pod_address = await runtime_pod_ip()
    assert runtime_pod_address is not None
    runtime_ip = ipaddress.ip_address(runtime_pod_address)
    assert runtime_ip in ipaddress.ip_network("127.0.0.0/8")
    assert runtime_ip not in ipaddress.ip_network("127.0.0.0/16")
    assert ordinary["status"]["podIP"] == "10.244.1.2"  # the first of the CIDR: nobody else took one


async def test_pod_no_runner_runs_is_reported_and_still_deletable(
    fresh_emulator: Path, api: Client, ns: str
) -> None:
    mixed = pod("mixed")
    mixed["spec"]["containers"].append({"name": "runtime", "image": runtime_image()})
    async with agent(fresh_emulator, options()):
        await api.create(PODS, mixed, namespace=ns)

        async def reported() -> bool:
            return any(reason == "Failed" for _, reason, _ in await events_of(api, ns, "mixed"))

        await eventually(reported, within=15)
        assert phase(await get_pod(api, ns, "mixed")) == "Pending"
        await api.delete(PODS, "mixed", namespace=ns)

        async def gone() -> bool:
            return await get_pod(api, ns, "mixed") is None

        await eventually(gone, within=15)
