"""The IPAM of Configurations against an emulator, as the controller manager's ServiceAccount (issue 20).

What a hostile consumer meets when it writes its Configuration on the provider (it may write
`configurations` and patch `configurations/status` in its tenant namespace): networks no peer
may have are refused by name in the Accepted condition and a Warning Event, `status.remote` is
always what the IPAM derives from the checked `spec.remote` (a patched status is overwritten,
emptied when nothing is accepted), `spec.local` is always this cluster's; and the IPAM gives a
network back when its Configuration goes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.api import constants as c
from runtime.api.crds import CONFIGURATIONS, NETWORKS
from runtime.api.kinds import EVENTS, NAMESPACES
from runtime.controllers.networking import configuration
from runtime.controllers.options import ControllerOptions
from runtime.core import Client, NotFoundError
from runtime.forge import conditions
from runtime.forge import networking as forge
from runtime.forge.networking import Cidrs
from tests.playground.conftest import eventually

from .installed import OPTIONS, running

CONTROLLER_OPTIONS = ControllerOptions(namespace=OPTIONS.namespace)
TENANT = "liqo-tenant-rome"
#: what the IPAM gives rome's 10.244.0.0/16 (the provider's own pod CIDR too): the first free /16 of the pool
REMAPPED = "10.0.0.0/16"


async def configuration_of(admin: Client, name: str, namespace: str, pods: list[Any]) -> None:
    """A consumer's Configuration as its runtime writes it on the provider (`pods`: its pod CIDRs)."""
    await admin.create(NAMESPACES, {"metadata": {"name": namespace}})
    body = forge.configuration(name, namespace=namespace, remote_cluster_id=f"{name}-id")
    body["spec"]["remote"] = {"cidr": {"pod": pods, "external": []}}
    await admin.create(CONFIGURATIONS, body, namespace=namespace)


async def status_remote(admin: Client, name: str = "rome", namespace: str = TENANT) -> list[Any] | None:
    found = await admin.get(CONFIGURATIONS, name, namespace=namespace)
    remote = (found.get("status") or {}).get("remote")
    return None if remote is None else ((remote.get("cidr") or {}).get("pod") or [])


async def refused_with(admin: Client, *texts: str) -> bool:
    """The Accepted condition False naming each text, and a Warning Event naming each."""
    found = await admin.get(CONFIGURATIONS, "rome", namespace=TENANT)
    accepted = conditions.find((found.get("status") or {}).get("conditions"), c.CONDITION_ACCEPTED)
    if accepted is None or accepted["status"] != "False" or accepted["reason"] != c.REASON_NETWORKS_REFUSED:
        return False
    events = [
        e
        for e in (await admin.list(EVENTS, namespace=TENANT)).items
        if e["involvedObject"].get("kind") == "Configuration" and e.get("type") == "Warning"
    ]
    return all(t in accepted["message"] and any(t in e["message"] for e in events) for t in texts)


HOSTILE = ["169.254.169.254/32", "127.0.0.0/8", "224.0.0.0/4", "128.0.0.0/1", "10.0.0.0/16 } ; flush ruleset"]


async def test_a_hostile_consumers_networks_are_refused_by_name_and_its_status_patches_overwritten(
    admin: Client, kubeconfig: Path
) -> None:
    async with running(admin, kubeconfig, configuration.setup, options=CONTROLLER_OPTIONS):
        await configuration_of(admin, "rome", TENANT, ["10.244.0.0/16"])
        await eventually(lambda: status_remote(admin), within=15)
        assert await status_remote(admin) == [REMAPPED]

        # spec.remote: every hostile network refused by name, never in status.remote, the good one kept
        await admin.patch(
            CONFIGURATIONS, "rome", {"spec": {"remote": {"cidr": {"pod": HOSTILE}}}}, namespace=TENANT
        )
        await eventually(lambda: refused_with(admin, *HOSTILE[:4], "flush ruleset"), within=15)
        assert await status_remote(admin) == []

        # status.remote patched by the consumer while nothing is asked for: emptied again
        for network in ["172.18.0.0/16", "169.254.169.254/32", REMAPPED]:
            await admin.patch(
                CONFIGURATIONS,
                "rome",
                {"status": {"remote": {"cidr": {"pod": [network]}}}},
                namespace=TENANT,
                subresource="status",
            )

            async def emptied() -> bool:
                return await status_remote(admin) == []

            await eventually(emptied, within=15)

        # and with a good spec.remote, a patched status.remote goes back to what the IPAM gave
        await admin.patch(
            CONFIGURATIONS,
            "rome",
            {"spec": {"remote": {"cidr": {"pod": ["10.244.0.0/16"]}}}},
            namespace=TENANT,
        )

        async def remapped() -> bool:
            return await status_remote(admin) == [REMAPPED]

        await eventually(remapped, within=15)
        await admin.patch(
            CONFIGURATIONS,
            "rome",
            {"status": {"remote": {"cidr": {"pod": ["10.5.0.0/16", "192.168.0.0/16"]}}}},
            namespace=TENANT,
            subresource="status",
        )
        await eventually(remapped, within=15)
        found = await admin.get(CONFIGURATIONS, "rome", namespace=TENANT)
        accepted = conditions.find(found["status"]["conditions"], c.CONDITION_ACCEPTED)
        assert accepted is not None and accepted["status"] == "True"

        # spec.local is this cluster's, whatever the consumer writes there
        await admin.patch(
            CONFIGURATIONS,
            "rome",
            {"spec": {"local": {"cidr": {"pod": ["172.18.0.0/16"]}}}},
            namespace=TENANT,
        )

        async def ours() -> bool:
            found = await admin.get(CONFIGURATIONS, "rome", namespace=TENANT)
            return Cidrs.of(found["spec"]["local"]).pod == (OPTIONS.pod_cidr,)

        await eventually(ours, within=15)


async def test_a_network_goes_back_to_the_pool_with_its_configuration_or_its_request(
    admin: Client, kubeconfig: Path
) -> None:
    async with running(admin, kubeconfig, configuration.setup, options=CONTROLLER_OPTIONS):
        await configuration_of(admin, "rome", TENANT, ["10.244.0.0/16"])
        await eventually(lambda: status_remote(admin), within=15)
        assert await status_remote(admin) == [REMAPPED]

        # a request changed: the network it no longer asks for is released, and given to the next asking
        await admin.patch(
            CONFIGURATIONS,
            "rome",
            {"spec": {"remote": {"cidr": {"pod": ["10.200.0.0/16"]}}}},
            namespace=TENANT,
        )

        async def moved() -> bool:
            networks = (await admin.list(NETWORKS, namespace=TENANT)).items
            return await status_remote(admin) == ["10.200.0.0/16"] and len(networks) == 1

        await eventually(moved, within=15)
        await configuration_of(admin, "naples", "liqo-tenant-naples", ["10.244.0.0/16"])
        await eventually(lambda: status_remote(admin, "naples", "liqo-tenant-naples"), within=15)
        assert await status_remote(admin, "naples", "liqo-tenant-naples") == [REMAPPED]

        # a Configuration gone: its network goes back to the pool (its Networks go with it, as the garbage
        # collector removes what it owns)
        await admin.delete(CONFIGURATIONS, "naples", namespace="liqo-tenant-naples")
        for network in (await admin.list(NETWORKS, namespace="liqo-tenant-naples")).items:
            try:
                await admin.delete(NETWORKS, network["metadata"]["name"], namespace="liqo-tenant-naples")
            except NotFoundError:
                continue
        await configuration_of(admin, "palermo", "liqo-tenant-palermo", ["10.244.0.0/16"])
        await eventually(lambda: status_remote(admin, "palermo", "liqo-tenant-palermo"), within=15)
        assert await status_remote(admin, "palermo", "liqo-tenant-palermo") == [REMAPPED]
