"""A provider with the runtime installed, the auth service running in-process, and consumers that talk to it.

The auth service runs in the test's loop with a client whose credential is a token of
the `liqo-auth` ServiceAccount (TokenRequest as admin), and controllers run as the
`liqo-controller-manager` ServiceAccount, so the installation's least-privilege RBAC is
what they are held to. A `Consumer` is what a consumer cluster's runtime would be: a
cluster id, a name and an Ed25519 key, speaking the contract of `runtime.forge.credential`
over HTTPS with the service's own certificate as the only trusted one.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from runtime.api import constants as c
from runtime.api.kinds import SECRETS
from runtime.api.objects import JSON
from runtime.auth.options import AuthOptions
from runtime.auth.server import AuthServer
from runtime.auth.servingkey import generate_key, serving_key_secret
from runtime.controllers.options import ControllerOptions
from runtime.core import Client, Manager, Settings
from runtime.forge import credential as contract
from runtime.forge.install import InstallOptions, install_manifests
from runtime.forge.tokens import generate_token, token_secret
from tests.runtime import serviceaccounts

OPTIONS = InstallOptions(
    cluster_id="5a3e1c2b-7d4f-4e0a-9b61-2c8d7e6f5a41",
    cluster_name="rome",
    api_server_url="https://127.0.0.1:6443",
    pod_cidr="10.244.0.0/16",
    service_cidr="10.96.0.0/16",
    cluster_labels={"topology.liqo.io/region": "south"},
    # in-process the service's own address is reachable: it publishes that (test_published_url changes it)
    auth_service_type="ClusterIP",
)
NAMESPACE = OPTIONS.namespace


async def install(admin: Client) -> None:
    """The installation, but the webhook configuration (no webhook runs here, and it fails closed), and the
    auth service's serving key, which the controller manager would create."""
    for obj in install_manifests(OPTIONS):
        if obj["kind"] == "ValidatingWebhookConfiguration":
            continue
        resource = await admin.resource_for(obj["apiVersion"], obj["kind"])
        await admin.apply(
            resource,
            obj,
            namespace=obj["metadata"].get("namespace"),
            field_manager=c.FIELD_MANAGER_INSTALL,
            force=True,
        )
    await admin.create(SECRETS, serving_key_secret(namespace=NAMESPACE, key=generate_key()))


async def service_account_client(admin: Client, kubeconfig: Path, name: str) -> Client:
    """A client authenticated as the runtime's ServiceAccount `name`."""
    return await serviceaccounts.service_account_client(admin, kubeconfig, name, namespace=NAMESPACE)


async def new_token(admin: Client, *, expires_at: datetime | None = None) -> tuple[str, str]:
    """(token, Secret name): a peering token whose hash is stored in the runtime's namespace."""
    token = generate_token()
    secret = token_secret(token, namespace=NAMESPACE, expires_at=expires_at)
    await admin.create(SECRETS, secret)
    return token, secret["metadata"]["name"]


@contextlib.asynccontextmanager
async def serving(client: Client, **changes: Any) -> AsyncIterator[AuthServer]:
    """The auth service on 127.0.0.1 (any port) until the block ends; a crash fails the test there."""
    options = AuthOptions(**{"namespace": NAMESPACE, "host": "127.0.0.1", "port": 0, **changes})
    server = AuthServer(client, options)
    task = asyncio.create_task(server.run(), name="auth service under test")
    try:
        started = asyncio.create_task(server.started.wait())
        await asyncio.wait({task, started}, timeout=20, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            task.result()
        assert server.started.is_set(), "the auth service did not start within 20 s"
        yield server
    finally:
        started.cancel()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@contextlib.asynccontextmanager
async def controllers(
    client: Client, *setups: Callable[[Manager, ControllerOptions], None], options: ControllerOptions
) -> AsyncIterator[Manager]:
    """Controllers under one manager (no election, no endpoint) until the block ends."""
    manager = Manager(client, settings=Settings(server=None))
    for setup in setups:
        setup(manager, options)
    task = asyncio.create_task(manager.run(), name="controllers under test")
    try:
        await asyncio.wait_for(manager.informers.wait_synced(), 10)
        yield manager
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@dataclass
class Answer:
    status: int
    body: JSON
    headers: dict[str, str]


@dataclass
class Consumer:
    """A consumer cluster's side of the contract."""

    server: AuthServer
    name: str = field(default_factory=lambda: f"c{uuid.uuid4().hex[:10]}")
    cluster_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    key: Ed25519PrivateKey = field(default_factory=Ed25519PrivateKey.generate)

    @property
    def public_key(self) -> bytes:
        return self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    def identity_body(self, token: str) -> JSON:
        return contract.identity_request(
            token=token, cluster_id=self.cluster_id, cluster_name=self.name, public_key=self.public_key
        )

    def signed_body(self, action: contract.SignedAction, *, at: datetime | None = None) -> JSON:
        return contract.signed_request(
            action, cluster_id=self.cluster_id, timestamp=at or datetime.now(UTC), sign=self.key.sign
        )

    async def post(self, path: str, body: object) -> Answer:
        return await request(self.server, "POST", path, body)

    async def peer(self, token: str) -> contract.Credential:
        answer = await self.post(contract.IDENTITY_PATH, self.identity_body(token))
        assert answer.status == 200, answer
        return contract.parse_identity_response(answer.body)

    async def renew(self, *, at: datetime | None = None) -> Answer:
        return await self.post(contract.RENEW_PATH, self.signed_body(contract.RENEW, at=at))

    async def revoke(self, *, at: datetime | None = None) -> Answer:
        return await self.post(contract.REVOKE_PATH, self.signed_body(contract.REVOKE, at=at))


async def request(server: AuthServer, method: str, path: str, body: object = None) -> Answer:
    """One HTTPS request, trusting only the service's certificate (so its SAN for 127.0.0.1 is checked too)."""
    assert server.certificate is not None and server.listen_url is not None
    context = ssl.create_default_context(cadata=server.certificate.decode("ascii"))
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, server.listen_url + path, json=body, ssl=context) as response,
    ):
        return Answer(response.status, await response.json(), dict(response.headers))


async def raw_request(server: AuthServer, path: str, data: Any) -> Answer:
    """One POST of `data` as it is (bytes, or an async iterator of chunks sent without a length)."""
    assert server.certificate is not None and server.listen_url is not None
    context = ssl.create_default_context(cadata=server.certificate.decode("ascii"))
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            server.listen_url + path, data=data, ssl=context, headers={"Content-Type": "application/json"}
        ) as response,
    ):
        return Answer(response.status, await response.json(), dict(response.headers))


def hours_ago(hours: float) -> datetime:
    return datetime.now(UTC) - timedelta(hours=hours)
