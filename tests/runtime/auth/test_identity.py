"""Peering token exchange against an emulator: credentials that reach only the tenant namespace, clear refusals."""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509

from runtime.api import constants as c
from runtime.api.crds import RESOURCESLICES, TENANTS
from runtime.api.image import package_version
from runtime.api.kinds import CONFIGMAPS, NAMESPACES, NODES, SECRETS
from runtime.api.timestamps import rfc3339
from runtime.auth.servingkey import key_of
from runtime.controllers.authentication import peeringtoken
from runtime.controllers.options import ControllerOptions
from runtime.core import Client, ForbiddenError
from runtime.forge import credential as contract
from runtime.forge.tenant import tenant_namespace_name
from runtime.forge.tokens import generate_token, token_secret
from tests.playground.conftest import eventually

from .cluster import (
    NAMESPACE,
    OPTIONS,
    Consumer,
    controllers,
    hours_ago,
    new_token,
    raw_request,
    request,
    serving,
)


async def test_cluster_endpoint_says_who_the_provider_is_and_its_url_is_published(
    admin: Client, auth_client: Client
) -> None:
    async with serving(auth_client) as server:
        answer = await request(server, "GET", contract.CLUSTER_PATH)
        identity = await admin.get(CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace=NAMESPACE)
    assert answer.status == 200
    info = contract.parse_cluster_info(answer.body)
    assert (info.cluster_id, info.cluster_name) == (OPTIONS.cluster_id, OPTIONS.cluster_name)
    assert info.version == identity["data"][c.IDENTITY_VERSION] == package_version()
    assert (
        answer.body[c.IDENTITY_CLUSTER_LABELS]
        == OPTIONS.cluster_labels
        == {"topology.liqo.io/region": "south"}
    )
    assert identity["data"][c.IDENTITY_AUTH_URL] == server.url == f"https://127.0.0.1:{server.port}"


async def test_the_serving_key_outlives_a_restart_while_the_certificate_is_signed_anew(
    admin: Client, auth_client: Client
) -> None:
    certificates = []
    for _ in range(2):
        async with serving(auth_client) as server:
            assert server.certificate is not None
            certificates.append(x509.load_pem_x509_certificate(server.certificate))
    first, second = certificates
    assert first.serial_number != second.serial_number
    stored = key_of(await admin.get(SECRETS, c.AUTH_SERVING_KEY_SECRET, namespace=NAMESPACE))
    assert first.public_key() == second.public_key() == stored.public_key()


async def test_advertised_url_is_published_instead_of_the_listen_address(
    admin: Client, auth_client: Client
) -> None:
    async with serving(auth_client, advertise_url="https://auth.rome.example:443"):
        identity = await admin.get(CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace=NAMESPACE)
    assert identity["data"][c.IDENTITY_AUTH_URL] == "https://auth.rome.example:443"


async def test_credential_reaches_the_tenant_namespace_and_nothing_else(
    admin: Client, auth_client: Client
) -> None:
    token, _ = await new_token(admin)
    async with serving(auth_client) as server:
        consumer = Consumer(server)
        credential = await consumer.peer(token)
    namespace = tenant_namespace_name(consumer.name)
    assert credential.namespace == namespace
    assert (credential.cluster_id, credential.cluster_name) == (OPTIONS.cluster_id, OPTIONS.cluster_name)
    assert credential.api_server_url == admin.host
    tenant = await admin.get(TENANTS, consumer.name, namespace=namespace)
    assert tenant["spec"]["clusterID"] == consumer.cluster_id
    assert tenant["status"]["credentialExpiresAt"] == rfc3339(credential.expires_at)
    ns = await admin.get(NAMESPACES, namespace)
    assert ns["metadata"]["labels"][c.LABEL_REMOTE_CLUSTER_ID] == consumer.cluster_id

    async with await Client.from_kubeconfig_dict(contract.kubeconfig(credential)) as remote:
        slice_ = {
            "apiVersion": RESOURCESLICES.api_version,
            "kind": RESOURCESLICES.kind,
            "metadata": {"name": "default", "namespace": namespace},
            "spec": {"consumerClusterID": consumer.cluster_id, "resources": {"cpu": "1"}},
        }
        created = await remote.create(RESOURCESLICES, slice_)
        assert created["metadata"]["namespace"] == namespace
        with pytest.raises(ForbiddenError):
            await remote.list(RESOURCESLICES, namespace="default")
        with pytest.raises(ForbiddenError):
            await remote.create(RESOURCESLICES, {**slice_, "metadata": {"name": "x", "namespace": NAMESPACE}})
        with pytest.raises(ForbiddenError):
            await remote.list(SECRETS, namespace=namespace)
        with pytest.raises(ForbiddenError):
            await remote.get(SECRETS, "anything", namespace=NAMESPACE)
        with pytest.raises(ForbiddenError):
            await remote.list(SECRETS)
        with pytest.raises(ForbiddenError):
            await remote.list(NODES)
        with pytest.raises(ForbiddenError):
            await remote.list(TENANTS, namespace=namespace)


async def test_refusals_look_the_same_whatever_the_cause_and_never_log_the_token(
    admin: Client, auth_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    revoked, revoked_secret = await new_token(admin)
    await admin.delete(SECRETS, revoked_secret, namespace=NAMESPACE)
    expired, _ = await new_token(admin, expires_at=hours_ago(1))
    wrong = "0" * 64
    async with serving(auth_client) as server:
        consumer = Consumer(server)
        answers = [
            await consumer.post(contract.IDENTITY_PATH, consumer.identity_body(t))
            for t in (wrong, revoked, expired)
        ]
    assert [a.status for a in answers] == [401, 401, 401]
    assert answers[0].body["reason"] == contract.INVALID_TOKEN
    assert answers[0].body == answers[1].body == answers[2].body
    for token in (wrong, revoked, expired):
        assert token not in caplog.text


async def test_a_token_revoked_while_the_service_runs_is_refused_at_once(
    admin: Client, auth_client: Client
) -> None:
    token, secret = await new_token(admin)
    async with serving(auth_client) as server:
        await admin.delete(SECRETS, secret, namespace=NAMESPACE)
        consumer = Consumer(server)
        answer = await consumer.post(contract.IDENTITY_PATH, consumer.identity_body(token))
    assert answer.status == 401


async def test_peering_twice_is_idempotent_and_a_taken_name_is_a_conflict(
    admin: Client, auth_client: Client
) -> None:
    token, _ = await new_token(admin)
    impostors_token, _ = await new_token(admin)
    async with serving(auth_client) as server:
        consumer = Consumer(server)
        first = await consumer.peer(token)
        again = await consumer.peer(token)
        impostor = Consumer(server, name=consumer.name)
        taken = await impostor.post(contract.IDENTITY_PATH, impostor.identity_body(impostors_token))
        renamed = Consumer(server, cluster_id=consumer.cluster_id, key=consumer.key)
        twice = await renamed.post(contract.IDENTITY_PATH, renamed.identity_body(token))
    assert first.namespace == again.namespace == tenant_namespace_name(consumer.name)
    assert again.token != first.token
    assert taken.status == 409 and taken.body["reason"] == contract.CLUSTER_ID_CONFLICT
    assert twice.status == 409 and consumer.name in twice.body["message"]
    tenant = await admin.get(TENANTS, consumer.name, namespace=first.namespace)
    assert tenant["spec"]["clusterID"] == consumer.cluster_id


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"clusterID": "not-a-uuid"}, "clusterID"),
        ({"clusterName": "Rome_1"}, "clusterName"),
        ({"publicKey": "c2hvcnQ="}, "publicKey"),
        ({"token": 42}, "token"),
        ({"token": None}, "token"),
    ],
    ids=["cluster-id", "cluster-name", "public-key", "token-type", "token-missing"],
)
async def test_malformed_requests_are_400_naming_the_field(
    auth_client: Client, change: dict[str, object], field: str
) -> None:
    async with serving(auth_client) as server:
        consumer = Consumer(server)
        body = {**consumer.identity_body("0" * 64), **change}
        answer = await consumer.post(contract.IDENTITY_PATH, body)
    assert answer.status == 400
    assert answer.body["reason"] == contract.INVALID_REQUEST
    assert answer.body["message"].startswith(f"{field}: ")


async def test_repeated_failures_from_one_address_are_rate_limited_and_recover(
    admin: Client, auth_client: Client
) -> None:
    async with serving(auth_client, failure_burst=2, failure_refill=2.0) as server:
        consumer = Consumer(server)
        wrong = consumer.identity_body(uuid.uuid4().hex * 2)
        statuses = [(await consumer.post(contract.IDENTITY_PATH, wrong)).status for _ in range(2)]
        limited = await consumer.post(contract.IDENTITY_PATH, wrong)
        assert statuses == [401, 401]
        assert limited.status == 429 and limited.body["reason"] == contract.TOO_MANY_REQUESTS
        assert int(limited.headers["Retry-After"]) >= 1

        async def refused_again() -> bool:
            answer = await consumer.post(contract.IDENTITY_PATH, wrong)
            assert answer.status in (401, 429), answer
            return answer.status == 401

        await eventually(refused_again, within=10, every=0.2)


async def test_garbage_from_a_shared_address_never_throttles_a_consumer_that_authenticates(
    admin: Client, auth_client: Client
) -> None:
    """Consumers behind one NAT share an address: a hostile one spending its budget (the default: 10
    failures, one forgiven every 10 s) must not stop another's peering nor a signed renewal."""
    token, _ = await new_token(admin)
    renewing_token, _ = await new_token(admin)
    async with serving(auth_client) as server:
        peered = Consumer(server)
        await peered.peer(renewing_token)
        hostile = Consumer(server)
        garbage = [
            (contract.IDENTITY_PATH, hostile.identity_body("0" * 64)),
            (contract.RENEW_PATH, {**hostile.signed_body(contract.RENEW), "clusterID": peered.cluster_id}),
            (contract.IDENTITY_PATH, {"token": 1}),
        ]
        statuses = [(await hostile.post(*garbage[n % 3])).status for n in range(12)]
        renewed = await peered.renew()
        newcomer = Consumer(server)
        joined = await newcomer.post(contract.IDENTITY_PATH, newcomer.identity_body(token))
        still_limited = await hostile.post(contract.IDENTITY_PATH, hostile.identity_body("0" * 64))
    assert statuses[:10] == [401, 401, 400] * 3 + [401] and set(statuses[10:]) == {429}, statuses
    assert renewed.status == 200, renewed
    assert joined.status == 200, joined
    assert still_limited.status == 429


async def test_a_consumer_whose_old_tenant_is_still_going_is_told_to_retry(
    admin: Client, auth_client: Client
) -> None:
    token, _ = await new_token(admin)
    async with serving(auth_client) as server:
        consumer = Consumer(server)
        credential = await consumer.peer(token)
        await admin.delete(NAMESPACES, credential.namespace)
        answer = await consumer.post(contract.IDENTITY_PATH, consumer.identity_body(token))
    assert answer.status == 503
    assert answer.body["reason"] == contract.TENANT_TERMINATING
    assert int(answer.headers["Retry-After"]) > 0


async def test_a_drained_consumer_gets_no_credential(admin: Client, auth_client: Client) -> None:
    token, _ = await new_token(admin)
    async with serving(auth_client) as server:
        consumer = Consumer(server)
        credential = await consumer.peer(token)
        await admin.patch(
            TENANTS, consumer.name, {"spec": {"tenantCondition": "Drained"}}, namespace=credential.namespace
        )
        exchanged = await consumer.post(contract.IDENTITY_PATH, consumer.identity_body(token))
        renewed = await consumer.renew()
    for answer in (exchanged, renewed):
        assert answer.status == 403
        assert answer.body["reason"] == contract.TENANT_DRAINED
        assert "tenantCondition" in answer.body["message"]


async def test_bodies_that_are_not_json_objects_or_too_large_are_400(auth_client: Client) -> None:
    async with serving(auth_client, max_body=1024) as server:
        consumer = Consumer(server)
        not_object = await consumer.post(contract.IDENTITY_PATH, ["token"])
        too_large = await consumer.post(contract.RENEW_PATH, {"padding": "x" * 2048})
    assert (not_object.status, not_object.body["message"]) == (400, "body: not a JSON object")
    assert (too_large.status, too_large.body["message"]) == (400, "body: larger than 1024 bytes")


@pytest.mark.parametrize("levels", [5, 1000, 50_000])
async def test_deeply_nested_json_is_a_400_not_a_500(auth_client: Client, levels: int) -> None:
    body = ('{"token": ' + "[" * levels + "]" * levels + "}").encode()
    async with serving(auth_client, max_body=256 * 1024) as server:
        answers = [
            await raw_request(server, path, body) for path in (contract.IDENTITY_PATH, contract.RENEW_PATH)
        ]
    for answer in answers:
        assert answer.status == 400, answer
        assert answer.body == {
            "reason": contract.INVALID_REQUEST,
            "message": "body: nests deeper than 4 levels",
        }


async def test_an_oversize_body_is_refused_before_it_is_read_whole(auth_client: Client) -> None:
    """The default bound (64 KiB): a megabyte of JSON, announced or streamed without a length, is a 400."""
    big = b'{"token": "' + b"0" * (1024 * 1024) + b'"}'

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(big), 65536):
            yield big[start : start + 65536]

    async with serving(auth_client) as server:
        announced = await raw_request(server, contract.IDENTITY_PATH, big)
        streamed = await raw_request(server, contract.IDENTITY_PATH, chunks())
    for answer in (announced, streamed):
        assert (answer.status, answer.body["message"]) == (400, "body: larger than 65536 bytes"), answer


async def test_another_token_holder_cannot_take_a_tenant_over_with_the_victims_cluster_id(
    admin: Client, auth_client: Client
) -> None:
    """A cluster id is no secret: a holder of any valid token presenting a victim's id, name and a key of its
    own gets no credential, and the victim's key stays the one its renewals are checked with."""
    victim_token, _ = await new_token(admin)
    hostile_token, _ = await new_token(admin)
    async with serving(auth_client) as server:
        victim = Consumer(server)
        credential = await victim.peer(victim_token)
        hostile = Consumer(server, name=victim.name, cluster_id=victim.cluster_id)
        takeover = await hostile.post(contract.IDENTITY_PATH, hostile.identity_body(hostile_token))
        forged = Consumer(server, name=victim.name, cluster_id=victim.cluster_id)
        forged_proof = await forged.post(
            contract.IDENTITY_PATH,
            contract.identity_request(
                token=hostile_token,
                cluster_id=victim.cluster_id,
                cluster_name=victim.name,
                public_key=forged.public_key,
                previous_key=hostile.key.sign,
            ),
        )
        hostile_renewal = await hostile.renew()
        victim_renewal = await victim.renew()
    for answer in (takeover, forged_proof):
        assert answer.status == 409, answer
        assert answer.body["reason"] == contract.KEY_CHANGE_REFUSED
        assert "signed by the old one" in answer.body["message"]
    assert hostile_renewal.status == 401
    assert victim_renewal.status == 200
    tenant = await admin.get(TENANTS, victim.name, namespace=credential.namespace)
    assert tenant["spec"]["publicKey"] == base64.b64encode(victim.public_key).decode()


async def test_a_consumer_changes_its_key_with_the_old_keys_signature(
    admin: Client, auth_client: Client
) -> None:
    token, _ = await new_token(admin)
    async with serving(auth_client) as server:
        old = Consumer(server)
        credential = await old.peer(token)
        new = Consumer(server, name=old.name, cluster_id=old.cluster_id)
        changed = await new.post(
            contract.IDENTITY_PATH,
            contract.identity_request(
                token=token,
                cluster_id=old.cluster_id,
                cluster_name=old.name,
                public_key=new.public_key,
                previous_key=old.key.sign,
            ),
        )
        old_renewal = await old.renew()
        new_renewal = await new.renew()
    assert changed.status == 200, changed
    assert (old_renewal.status, new_renewal.status) == (401, 200)
    tenant = await admin.get(TENANTS, old.name, namespace=credential.namespace)
    assert tenant["spec"]["publicKey"] == base64.b64encode(new.public_key).decode()


async def test_a_token_serves_only_the_first_consumer_that_uses_it(
    admin: Client, auth_client: Client, manager_client: Client
) -> None:
    """A token leaked after use is worth nothing to another cluster: refused at once (the Tenant names it),
    and still refused once the first consumer is gone (its cluster id is kept on the token's Secret)."""
    token, secret = await new_token(admin)
    async with (
        serving(auth_client) as server,
        controllers(manager_client, peeringtoken.setup, options=ControllerOptions(namespace=NAMESPACE)),
    ):
        first = Consumer(server)
        credential = await first.peer(token)
        second = Consumer(server)
        reused = await second.post(contract.IDENTITY_PATH, second.identity_body(token))

        async def bound() -> bool:
            stored = await admin.get(SECRETS, secret, namespace=NAMESPACE)
            annotations: dict[str, str] = stored["metadata"].get("annotations") or {}
            return annotations.get(c.ANNOTATION_TOKEN_CONSUMER) == first.cluster_id

        await eventually(bound, within=10, every=0.2)
        await admin.delete(TENANTS, first.name, namespace=credential.namespace)
        await admin.patch(
            TENANTS, first.name, {"metadata": {"finalizers": None}}, namespace=credential.namespace
        )
        again = await first.peer(token)
        await admin.delete(TENANTS, first.name, namespace=credential.namespace)
        await admin.patch(
            TENANTS, first.name, {"metadata": {"finalizers": None}}, namespace=credential.namespace
        )
    async with serving(auth_client) as restarted:
        third = Consumer(restarted)
        after_unpeer = await third.post(contract.IDENTITY_PATH, third.identity_body(token))
    assert again.namespace == credential.namespace
    for answer in (reused, after_unpeer):
        assert answer.status == 401, answer
        assert answer.body["reason"] == contract.INVALID_TOKEN


async def test_a_single_use_token_serves_one_exchange(admin: Client, auth_client: Client) -> None:
    token = generate_token()
    await admin.create(SECRETS, token_secret(token, namespace=NAMESPACE, single_use=True))
    async with serving(auth_client) as server:
        consumer = Consumer(server)
        await consumer.peer(token)
        twice = await consumer.post(contract.IDENTITY_PATH, consumer.identity_body(token))
        renewed = await consumer.renew()
    assert twice.status == 401
    assert renewed.status == 200


async def test_an_expired_token_is_refused_and_its_secret_collected(
    admin: Client, auth_client: Client, manager_client: Client
) -> None:
    expired, expired_secret = await new_token(admin, expires_at=hours_ago(1))
    soon = datetime.now(UTC) + timedelta(seconds=2)
    expiring, expiring_secret = await new_token(admin, expires_at=soon)
    async with serving(auth_client) as server:
        consumer = Consumer(server)
        refused = await consumer.post(contract.IDENTITY_PATH, consumer.identity_body(expired))
        async with controllers(
            manager_client, peeringtoken.setup, options=ControllerOptions(namespace=NAMESPACE)
        ):

            async def collected() -> bool:
                names = {
                    s["metadata"]["name"] for s in (await admin.list(SECRETS, namespace=NAMESPACE)).items
                }
                return not {expired_secret, expiring_secret} & names

            await eventually(collected, within=15, every=0.2)
        late = await consumer.post(contract.IDENTITY_PATH, consumer.identity_body(expiring))
    assert refused.status == 401 and late.status == 401
