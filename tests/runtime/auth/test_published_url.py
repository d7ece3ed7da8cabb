"""The identity's authURL follows the `liqo-auth` Service and the Nodes while the service runs.

The suite's installation has a ClusterIP Service (the pod address is what the other tests
reach); this test makes it a NodePort, then a LoadBalancer, with two worker Nodes, and
puts everything back when it ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from runtime.api import constants as c
from runtime.api.kinds import CONFIGMAPS, NODES, SERVICES
from runtime.api.objects import JSON
from runtime.core import Client, ServerSettings
from tests.playground.conftest import eventually

from .cluster import NAMESPACE, serving

WORKERS = {"rome-w1": "172.18.0.2", "rome-w2": "172.18.0.3"}


def https_port(node_port: int | None = None) -> JSON:
    port: JSON = {"name": "https", "port": 443, "targetPort": 8443, "protocol": "TCP"}
    if node_port is not None:
        port["nodePort"] = node_port
    return port


async def set_node(admin: Client, name: str, *, address: str, ready: bool = True) -> None:
    await admin.patch_status(
        NODES,
        name,
        {
            "status": {
                "addresses": [
                    {"type": "InternalIP", "address": address},
                    {"type": "Hostname", "address": name},
                ],
                "conditions": [{"type": "Ready", "status": "True" if ready else "False", "reason": "Test"}],
            }
        },
    )


async def set_service(admin: Client, kind: str, node_port: int | None = None) -> None:
    await admin.patch(
        SERVICES,
        c.AUTH_SERVICE,
        {"spec": {"type": kind, "ports": [https_port(node_port)]}},
        namespace=NAMESPACE,
    )


@pytest.fixture
async def workers(admin: Client) -> AsyncIterator[None]:
    """Two Ready workers; afterwards they are gone and the Service is a ClusterIP again."""
    for name, address in WORKERS.items():
        await admin.create(NODES, {"metadata": {"name": name}})
        await set_node(admin, name, address=address)
    try:
        yield
    finally:
        await set_service(admin, "ClusterIP")
        await admin.patch_status(
            SERVICES, c.AUTH_SERVICE, {"status": {"loadBalancer": {}}}, namespace=NAMESPACE
        )
        for name in WORKERS:
            await admin.delete(NODES, name)


async def test_the_auth_url_follows_the_service_and_the_nodes(
    admin: Client, auth_client: Client, workers: None
) -> None:
    async def published() -> str:
        identity = await admin.get(CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace=NAMESPACE)
        return str((identity.get("data") or {}).get(c.IDENTITY_AUTH_URL) or "")

    async def becomes(url: str) -> None:
        async def now() -> bool:
            return await published() == url

        await eventually(now, within=10)

    await set_service(admin, "NodePort", 30443)
    health = ServerSettings(host="127.0.0.1", port=0)
    async with serving(auth_client, node_name="rome-w2", health=health) as server:
        # its own node's address and the nodePort, from the start
        assert await published() == server.url == "https://172.18.0.3:30443"
        await set_service(admin, "NodePort", 31443)
        await becomes("https://172.18.0.3:31443")
        await set_node(admin, "rome-w2", address="172.18.0.13")
        await becomes("https://172.18.0.13:31443")
        # another Ready node while its own is not; kept when its own comes back (consumers hold the URL)
        await set_node(admin, "rome-w2", address="172.18.0.13", ready=False)
        await becomes("https://172.18.0.2:31443")
        await set_node(admin, "rome-w2", address="172.18.0.13")
        await set_service(admin, "NodePort", 32443)
        await becomes("https://172.18.0.2:32443")
        await set_service(admin, "LoadBalancer", 32443)
        await admin.patch_status(
            SERVICES,
            c.AUTH_SERVICE,
            {
                "status": {
                    "loadBalancer": {"ingress": [{"ip": "198.51.100.7", "hostname": "auth.rome.example"}]}
                }
            },
            namespace=NAMESPACE,
        )
        await becomes("https://auth.rome.example")
        await set_service(admin, "ClusterIP")
        assert server.listen_url is not None
        await becomes(server.listen_url)
        assert server.url == server.listen_url
        # the publisher's reconciles and the service's informers, on its /metrics
        assert server.health is not None and server.health.port is not None
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{server.health.port}/metrics") as answer,
        ):
            scraped = await answer.text()
        assert 'controller_runtime_reconcile_total{controller="auth-url",result="success"}' in scraped
        assert 'informer_lists_total{resource="nodes"}' in scraped
