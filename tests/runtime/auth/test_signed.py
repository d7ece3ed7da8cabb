"""Renewal and revocation, signed with the consumer's key, against an emulator."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from playground.controllers import namespace as namespace_controller
from runtime.api import constants as c
from runtime.api.crds import TENANTS
from runtime.api.kinds import NAMESPACES
from runtime.controllers.authentication import tenant as tenant_controller
from runtime.controllers.options import ControllerOptions
from runtime.core import Client, NotFoundError, UnauthorizedError
from runtime.forge import credential as contract
from runtime.forge.tenant import tenant_namespace_name
from tests.playground.conftest import eventually, running

from .cluster import NAMESPACE, Consumer, controllers, new_token, serving


async def test_renewal_with_a_valid_signature_gives_a_fresh_token(admin: Client, auth_client: Client) -> None:
    token, _ = await new_token(admin)
    async with serving(auth_client) as server:
        consumer = Consumer(server)
        first = await consumer.peer(token)
        answer = await consumer.renew()
    assert answer.status == 200, answer
    renewed = contract.parse_identity_response(answer.body)
    assert renewed.token != first.token
    assert renewed.namespace == first.namespace
    # the consumer's credential may not read its Tenant (least privilege): the provider's admin does
    tenant = await admin.get(TENANTS, consumer.name, namespace=renewed.namespace)
    assert tenant["metadata"]["annotations"][c.ANNOTATION_LAST_SIGNED_REQUEST]


async def test_bad_signatures_old_and_replayed_timestamps_are_refused_alike(
    admin: Client, auth_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="runtime.auth")
    token, _ = await new_token(admin)
    async with serving(auth_client) as server:
        consumer = Consumer(server)
        await consumer.peer(token)
        forged = Consumer(server, cluster_id=consumer.cluster_id, key=Ed25519PrivateKey.generate())
        bad_signature = await forged.renew()
        old = await consumer.renew(at=datetime.now(UTC) - timedelta(minutes=10))
        future = await consumer.renew(at=datetime.now(UTC) + timedelta(minutes=10))
        body = consumer.signed_body(contract.RENEW)
        accepted = await consumer.post(contract.RENEW_PATH, body)
        replayed = await consumer.post(contract.RENEW_PATH, body)
        unknown = await Consumer(server).renew()
        tampered = {**consumer.signed_body(contract.RENEW), "clusterID": Consumer(server).cluster_id}
        swapped = await consumer.post(contract.RENEW_PATH, tampered)
    assert accepted.status == 200
    refusals = [bad_signature, old, future, replayed, unknown, swapped]
    assert [a.status for a in refusals] == [401] * len(refusals)
    assert all(a.body == refusals[0].body for a in refusals)
    assert refusals[0].body["reason"] == contract.INVALID_SIGNATURE
    assert "not newer than the last accepted one" in caplog.text
    assert "more than 300 s" in caplog.text


async def test_a_revoke_request_cannot_be_replayed_as_a_renewal(admin: Client, auth_client: Client) -> None:
    token, _ = await new_token(admin)
    async with serving(auth_client) as server:
        consumer = Consumer(server)
        await consumer.peer(token)
        revoke = consumer.signed_body(contract.REVOKE)
        answer = await consumer.post(contract.RENEW_PATH, revoke)
    assert answer.status == 401


async def test_revoke_deletes_the_tenant_and_the_controller_removes_its_namespace(
    admin: Client, auth_client: Client, manager_client: Client, installed_kubeconfig: Path
) -> None:
    token, _ = await new_token(admin)
    options = ControllerOptions(namespace=NAMESPACE)
    async with (
        serving(auth_client) as server,
        controllers(manager_client, tenant_controller.setup, options=options),
        running(installed_kubeconfig, namespace_controller.setup),
    ):
        consumer = Consumer(server)
        credential = await consumer.peer(token)
        namespace = tenant_namespace_name(consumer.name)

        async def finalizer_added() -> bool:
            tenant = await admin.get(TENANTS, consumer.name, namespace=namespace)
            return c.FINALIZER_TENANT in tenant["metadata"].get("finalizers", [])

        await eventually(finalizer_added)
        answer = await consumer.revoke()
        assert answer.status == 200 and answer.body == {}

        async def namespace_gone() -> bool:
            try:
                await admin.get(NAMESPACES, namespace)
            except NotFoundError:
                return True
            return False

        await eventually(namespace_gone, within=20)
        again = await consumer.renew()
    assert again.status == 401
    async with await Client.from_kubeconfig_dict(contract.kubeconfig(credential)) as remote:
        with pytest.raises(UnauthorizedError):
            await remote.get(TENANTS, consumer.name, namespace=namespace)
