"""`python -m runtime controller-manager`: its flags, and a run with leader election against an emulator."""

from __future__ import annotations

import asyncio
import contextlib
import re

import aiohttp
import pytest

from runtime.api.kinds import LEASES
from runtime.controllers.main import SETUPS, argument_parser, main, options_from, parse_address
from runtime.controllers.options import ControllerOptions
from runtime.core import NotFoundError, ServerSettings
from runtime.forge.install import InstallOptions, _controller_manager_args
from tests.ports import free_port

from .harness import Clusters

#: every controller of the manager, by the name its work queue is known by in /metrics
CONTROLLERS = {
    "auth-serving-key",
    "configuration",
    "foreigncluster",
    "gatewayclient",
    "gatewayserver",
    "identity",
    "namespacemap",
    "namespaceoffloading",
    "namespaceoffloadingset",
    "peering-token",
    "quota",
    "resourceslice",
    "shadowendpointslice",
    "shadowpod",
    "tenant",
    "twinnamespace",
    "virtualnode",
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10.0.0.7:8080", ServerSettings("10.0.0.7", 8080)),
        (":9090", ServerSettings("0.0.0.0", 9090)),
        ("127.0.0.1", ServerSettings("127.0.0.1", 8080)),
        ("[::1]:0", ServerSettings("::1", 0)),
    ],
    ids=["host-port", "port-only", "host-only", "ipv6"],
)
def test_health_addresses(text: str, expected: ServerSettings) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["host:http", "1.2.3.4:70000", "[::1", "[::1]8080"])
def test_bad_health_addresses_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=text.replace("[", r"\[")):
        parse_address(text)


def test_the_install_manifests_arguments_are_understood() -> None:
    install = InstallOptions(
        cluster_id="0b7c3b5e-2f0a-4c1e-9a51-3c0d6f0f5a10",
        cluster_name="milan",
        api_server_url="https://10.0.0.1:6443",
        pod_cidr="10.244.0.0/16",
        service_cidr="10.96.0.0/12",
        namespace="liqo-system",
        image="registry.example/runtime:1.2.3",
    )
    args = argument_parser().parse_args(
        [*_controller_manager_args(install), "--health-address=10.1.2.3:8080"]
    )
    options = options_from(args)
    assert (options.namespace, options.image) == ("liqo-system", "registry.example/runtime:1.2.3")
    assert args.leader_elect is True
    assert options.unpeer_timeout == ControllerOptions().unpeer_timeout


def test_every_option_is_a_flag() -> None:
    args = argument_parser().parse_args(
        [
            "--unpeer-timeout=5",
            "--tenant-orphan-grace=none",
            "--quota-enforcement=Soft",
            "--resource-slice-poll=0.5",
        ]
    )
    options = options_from(args)
    assert (options.unpeer_timeout, options.tenant_orphan_grace, options.quota_enforcement) == (
        5.0,
        None,
        "Soft",
    )
    assert options.resource_slice_poll == 0.5
    assert options.reflection == ControllerOptions().reflection
    with_reflection = options_from(
        argument_parser().parse_args(["--secret-reflection-workers=0", "--ingress-class=a=b"])
    )
    assert (with_reflection.reflection.secret_workers, dict(with_reflection.reflection.ingress_classes)) == (
        0,
        {"a": "b"},
    )
    with pytest.raises(SystemExit):
        argument_parser().parse_args(["--quota-enforcement=Maybe"])


async def test_the_controller_manager_leads_serves_health_and_stops_on_cancel(
    clusters: Clusters, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert len(SETUPS) == 17  # the gateway module sets up two controllers, one per side
    cluster = await clusters.cluster("rome", components=False)
    monkeypatch.setenv("POD_NAME", "liqo-controller-manager-abc")
    port = free_port()
    argv = [
        f"--kubeconfig={cluster.kubeconfig}",
        "--namespace=liqo",
        "--leader-elect",
        f"--health-address=127.0.0.1:{port}",
    ]
    task = asyncio.create_task(main(argv), name="controller manager under test")

    async def holder() -> str:
        try:
            lease = await cluster.admin.get(LEASES, "liqo-controller-manager", namespace="liqo")
        except NotFoundError:
            return ""
        return str(lease["spec"].get("holderIdentity") or "")

    async def ready() -> bool:
        try:
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"http://127.0.0.1:{port}/readyz") as response,
            ):
                return response.status == 200
        except aiohttp.ClientError:
            return False

    async def metrics() -> str:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{port}/metrics") as response,
        ):
            return await response.text()

    try:
        assert await clusters.eventually(holder) == "liqo-controller-manager-abc"
        await clusters.eventually(ready)
        scraped = await metrics()
        # every controller's queue, and the shared informers, in Prometheus' text format
        queues = set(re.findall(r'^workqueue_depth\{name="([^"]+)"\}', scraped, re.MULTILINE))
        assert queues == CONTROLLERS
        assert 'informer_lists_total{resource="shadowendpointslices.offloading.liqo.io"}' in scraped
        assert 'rest_client_requests_total{client="local",code="200",verb="watch"}' in scraped
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    # on its way out it released the Lease, so a standby takes over at once
    assert await holder() == ""
