"""The Node and its Lease, as the agent registers and heartbeats them (against an emulator)."""

from __future__ import annotations

import asyncio
import ipaddress
from pathlib import Path

from playground.nodeagent import Taint
from playground.nodeagent.node import KUBELET_VERSION
from runtime.api.kinds import LEASES, NODES
from runtime.api.objects import JSON
from runtime.core import Client, NotFoundError
from runtime.virtualkubelet.lease import NODE_LEASE_NAMESPACE
from tests.playground.conftest import eventually

from .conftest import agent, condition, options


async def test_node_registers_ready_with_capacity_labels_and_addresses(
    fresh_emulator: Path, api: Client
) -> None:
    node_options = options(
        "cp-1",
        address="127.0.0.2",
        cpu="4",
        memory="8Gi",
        pods=50,
        labels={"topology.kubernetes.io/zone": "z1"},
        taints=(Taint(key="dedicated", value="infra", effect="NoSchedule"),),
    )
    async with agent(fresh_emulator, node_options):
        node = await api.get(NODES, "cp-1")
    labels = node["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == "cp-1"
    assert labels["kubernetes.io/os"] == labels["beta.kubernetes.io/os"] == "linux"
    assert labels["kubernetes.io/arch"] == labels["beta.kubernetes.io/arch"] != ""
    # role labels are kubeadm's to set (with admin rights): NodeRestriction refuses them to a kubelet
    assert not [key for key in labels if key.startswith("node-role.kubernetes.io/")]
    assert labels["topology.kubernetes.io/zone"] == "z1"
    assert node["spec"]["podCIDR"] == "10.244.1.0/24"
    assert node["spec"]["podCIDRs"] == ["10.244.1.0/24"]
    assert node["spec"]["taints"] == [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
    status = node["status"]
    assert status["capacity"] == {"cpu": "4", "memory": "8Gi", "pods": "50", "ephemeral-storage": "100Gi"}
    assert status["allocatable"] == status["capacity"]
    assert {"type": "InternalIP", "address": "127.0.0.2"} in status["addresses"]
    assert {"type": "Hostname", "address": "cp-1"} in status["addresses"]
    assert status["nodeInfo"]["kubeletVersion"] == KUBELET_VERSION
    assert status["nodeInfo"]["containerRuntimeVersion"].startswith("playground://")
    assert status["nodeInfo"]["operatingSystem"] == "linux"
    ready = condition(node, "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "True",
        "KubeletReady",
        "kubelet is posting ready status",
    )
    for kind, reason in (
        ("MemoryPressure", "KubeletHasSufficientMemory"),
        ("DiskPressure", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "KubeletHasSufficientPID"),
    ):
        assert (condition(node, kind)["status"], condition(node, kind)["reason"]) == ("False", reason)


async def test_worker_node_has_no_role_label_and_no_taints(fresh_emulator: Path, api: Client) -> None:
    async with agent(fresh_emulator, options("worker-1")):
        node = await api.get(NODES, "worker-1")
    assert "node-role.kubernetes.io/control-plane" not in node["metadata"]["labels"]
    assert not node["spec"].get("taints")


async def test_lease_is_owned_by_the_node_and_renewed(fresh_emulator: Path, api: Client) -> None:
    async with agent(fresh_emulator, options("node-1", lease_duration=7)):
        node = await api.get(NODES, "node-1")

        async def lease() -> JSON:
            try:
                return await api.get(LEASES, "node-1", namespace=NODE_LEASE_NAMESPACE)
            except NotFoundError:
                return {}

        await eventually(lease, within=10)
        first = await lease()

        async def renewed() -> bool:
            current = await lease()
            return bool(current) and current["spec"]["renewTime"] != first["spec"]["renewTime"]

        await eventually(renewed, within=10)
        last = await lease()
    assert last["spec"]["holderIdentity"] == "node-1"
    assert last["spec"]["leaseDurationSeconds"] == 7
    assert last["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "node-1", "uid": node["metadata"]["uid"]}
    ]


async def test_deleted_node_is_registered_again(fresh_emulator: Path, api: Client) -> None:
    async with agent(fresh_emulator, options("node-1")):
        old = await api.get(NODES, "node-1")
        await api.delete(NODES, "node-1")

        async def registered_again() -> bool:
            try:
                node = await api.get(NODES, "node-1")
            except NotFoundError:
                return False
            return (
                node["metadata"]["uid"] != old["metadata"]["uid"]
                and condition(node, "Ready").get("status") == "True"
            )

        await eventually(registered_again, within=15)


async def test_node_status_is_restored_when_someone_else_changes_it(
    fresh_emulator: Path, api: Client
) -> None:
    """The node lifecycle controller marks a silent node Ready=Unknown; a live agent puts it back at once."""
    async with agent(fresh_emulator, options("node-1")):
        node = await api.get(NODES, "node-1")
        conditions = [
            {
                **c,
                "status": "Unknown",
                "reason": "NodeStatusUnknown",
                "message": "Kubelet stopped posting node status.",
            }
            if c["type"] == "Ready"
            else c
            for c in node["status"]["conditions"]
        ]
        await api.patch_status(
            NODES, "node-1", {"status": {"conditions": conditions}}, patch_type="strategic"
        )

        async def ready_again() -> bool:
            return condition(await api.get(NODES, "node-1"), "Ready").get("status") == "True"

        await eventually(ready_again, within=10)


async def test_restarted_agent_adopts_its_node(fresh_emulator: Path, api: Client) -> None:
    async with agent(fresh_emulator, options("node-1")):
        first = await api.get(NODES, "node-1")
    async with agent(fresh_emulator, options("node-1", labels={"extra": "yes"})):
        second = await api.get(NODES, "node-1")
    assert second["metadata"]["uid"] == first["metadata"]["uid"]
    assert second["metadata"]["labels"]["extra"] == "yes"
    assert ipaddress.ip_network(second["spec"]["podCIDR"]) == ipaddress.ip_network("10.244.1.0/24")


async def test_unchanged_status_is_reported_again_every_report_period(
    fresh_emulator: Path, api: Client
) -> None:
    async with agent(fresh_emulator, options("node-1", node_status_report_period=1.0)):
        first = condition(await api.get(NODES, "node-1"), "Ready")

        async def heartbeat_moved() -> bool:
            ready = condition(await api.get(NODES, "node-1"), "Ready")
            return bool(ready["lastHeartbeatTime"] != first["lastHeartbeatTime"])

        await eventually(heartbeat_moved, within=10)
        ready = condition(await api.get(NODES, "node-1"), "Ready")
    assert ready["lastTransitionTime"] == first["lastTransitionTime"]


async def test_deleted_lease_is_created_again(fresh_emulator: Path, api: Client) -> None:
    async with agent(fresh_emulator, options("node-1")):

        async def lease_uid() -> str | None:
            try:
                return str(
                    (await api.get(LEASES, "node-1", namespace=NODE_LEASE_NAMESPACE))["metadata"]["uid"]
                )
            except NotFoundError:
                return None

        await eventually(lease_uid, within=10)
        old = await lease_uid()
        await api.delete(LEASES, "node-1", namespace=NODE_LEASE_NAMESPACE)

        async def recreated() -> bool:
            uid = await lease_uid()
            return uid is not None and uid != old

        await eventually(recreated, within=10)


def internal_ip(node: JSON) -> str:
    return str(next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP"))


async def test_each_node_is_the_first_address_of_its_loopback_block_across_restarts(
    fresh_emulator: Path, api: Client, tmp_path: Path
) -> None:
    """Without --address a node's InternalIP is `.1` of its loopback /24 (pods get `.2` and up): one per
    node, the same after a restart, and where its kubelet API listens."""
    first, second = options("node-1", state_dir=tmp_path / "n1"), options("node-2", state_dir=tmp_path / "n2")
    async with agent(fresh_emulator, first) as one, agent(fresh_emulator, second) as two:
        nodes = [await api.get(NODES, "node-1"), await api.get(NODES, "node-2")]
        kubelet = await asyncio.open_connection(one.address, one.kubelet_port)
        kubelet[1].close()
    addresses = [internal_ip(node) for node in nodes]
    assert addresses == [one.address, two.address] and addresses[0] != addresses[1]
    block = (tmp_path / "n1" / "loopback-block").read_text()
    assert ipaddress.ip_network(block).network_address + 1 == ipaddress.ip_address(addresses[0])
    async with agent(fresh_emulator, first) as again:
        assert internal_ip(await api.get(NODES, "node-1")) == again.address == addresses[0]
