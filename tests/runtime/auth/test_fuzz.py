"""The authentication service's endpoints under any input: never a 500, never a crash.

Hypothesis throws arbitrary JSON, bodies that are not JSON, deep nesting, and requests of
the contract's shape whose fields hold anything (valid and broken tokens, cluster ids,
keys, timestamps, signatures), at every route, over HTTP, to the service's own handlers
and middleware. Behind them are caches holding a token Secret and a Tenant, so fuzzed
requests reach the token and signature checks; the API client answers every read with
404 (a token revoked or a Tenant gone a moment ago), so nothing needs a cluster. Every
answer is the contract's: a 2xx with a JSON body, or an error status with
`{"reason", "message"}`; a 500 or an unhandled exception fails the test.
"""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import aiohttp
from aiohttp.test_utils import TestServer
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.api.objects import JSON
from runtime.api.timestamps import rfc3339
from runtime.auth.app import Handlers, auth_app
from runtime.auth.identities import (
    CLUSTER_ID_INDEX,
    TOKEN_INDEX,
    IdentityIssuer,
    ProviderIdentity,
    cluster_id_of,
)
from runtime.auth.ratelimit import FailureLimiter
from runtime.auth.renewal import SignedRequests
from runtime.auth.tokens import PeeringTokens
from runtime.core import Client, Informer, NotFoundError, Store
from runtime.forge import credential as contract
from runtime.forge.tenant import tenant
from runtime.forge.tokens import generate_token, tenant_token, token_secret

NAMESPACE = "liqo"
TOKEN = generate_token()
KEY = Ed25519PrivateKey.generate()
PUBLIC_KEY = base64.b64encode(KEY.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()
CLUSTER_ID = str(uuid.UUID(int=7))
ROUTES = [contract.IDENTITY_PATH, contract.RENEW_PATH, contract.REVOKE_PATH, contract.CLUSTER_PATH]
#: the statuses the contract answers with
EXPECTED = {200, 400, 401, 403, 409, 429, 503}


class Gone:
    """An API client for which every object was deleted a moment ago."""

    async def get(self, resource: Any, name: str, *, namespace: str | None = None) -> JSON:
        raise NotFoundError({"code": 404, "reason": "NotFound", "message": f"{name} not found"})


class Cached:
    """An informer's face as the handlers see it: its store."""

    def __init__(self, store: Store) -> None:
        self.store = store


def app() -> aiohttp.web.Application:
    secrets, tenants = Store(), Store()
    tenants.add_index(CLUSTER_ID_INDEX, cluster_id_of)
    tenants.add_index(TOKEN_INDEX, tenant_token)
    secret = token_secret(TOKEN, namespace=NAMESPACE)
    secret["metadata"]["uid"] = "token-uid"
    secrets.upsert(secret)
    consumer = tenant(cluster_id=CLUSTER_ID, cluster_name="rome", public_key=PUBLIC_KEY)
    consumer["metadata"] |= {"uid": "tenant-uid", "resourceVersion": "1"}
    tenants.upsert(consumer)
    client = cast(Client, Gone())
    info = contract.ClusterInfo(cluster_id=str(uuid.UUID(int=1)), cluster_name="milan", version="0.1.0")
    handlers = Handlers(
        cluster=info,
        cluster_labels={"topology.liqo.io/region": "south"},
        tokens=PeeringTokens(client, cast(Informer, Cached(secrets)), namespace=NAMESPACE),
        issuer=IdentityIssuer(
            client,
            cast(Informer, Cached(tenants)),
            provider=ProviderIdentity(
                cluster=info, api_server_url="https://127.0.0.1:6443", certificate_authority=b""
            ),
            token_ttl=3600,
        ),
        signed=SignedRequests(client, cast(Informer, Cached(tenants)), window=300.0),
    )
    return auth_app(handlers, limiter=FailureLimiter(burst=5, refill_per_second=0.5), max_body=4096)


async def _post_everywhere(bodies: list[bytes]) -> list[tuple[str, int, Any]]:
    server = TestServer(app())
    await server.start_server()
    try:
        async with aiohttp.ClientSession() as http:
            answers = []
            for body in bodies:
                for route in ROUTES:
                    method = "GET" if route == contract.CLUSTER_PATH else "POST"
                    async with http.request(method, server.make_url(route), data=body) as answer:
                        text = await answer.text()
                        answers.append((route, answer.status, text))
            return answers
    finally:
        await server.close()


def answered_well(*bodies: bytes) -> None:
    for route, status, text in asyncio.run(_post_everywhere(list(bodies))):
        assert status in EXPECTED, f"{route} answered {status}: {text[:300]}"
        answer = json.loads(text)
        if status != 200:
            assert set(answer) == {"reason", "message"}, (route, answer)
            assert isinstance(answer["message"], str) and answer["message"], (route, answer)


scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=30,
)
#: fields as the contract has them: good values, near misses and anything
tokens = st.sampled_from([TOKEN, "0" * 64, TOKEN.upper(), TOKEN[:-1], "x" * 300]) | values
cluster_ids = st.sampled_from([CLUSTER_ID, CLUSTER_ID.upper(), "not-a-uuid"]) | st.uuids().map(str) | values
names = st.sampled_from(["rome", "Rome", "-x", "a" * 70]) | values
keys = (
    st.sampled_from([PUBLIC_KEY, "c2hvcnQ=", "%%%"])
    | st.binary(min_size=32, max_size=32).map(lambda raw: base64.b64encode(raw).decode())
    | values
)
stamps = (
    st.datetimes(timezones=st.just(UTC)).map(lambda moment: rfc3339(moment, precise=True))
    | st.sampled_from(["2024-01-01T00:00:00", "yesterday"])
    | values
)
signatures = st.binary(max_size=80).map(lambda raw: base64.b64encode(raw).decode()) | values


@st.composite
def contract_bodies(draw: st.DrawFn) -> JSON:
    """Identity, renew and revoke bodies whose fields each may be missing, valid, nearly valid or anything."""
    body: JSON = {}
    for key, strategy in (
        ("token", tokens),
        ("clusterID", cluster_ids),
        ("clusterName", names),
        ("publicKey", keys),
        ("keyChangeSignature", signatures),
        ("timestamp", stamps),
        ("signature", signatures),
    ):
        if draw(st.booleans()):
            body[key] = draw(strategy)
    return body


@st.composite
def signed_by_the_tenant(draw: st.DrawFn) -> JSON:
    """Renewals really signed by the Tenant's key, at any moment around now."""
    offset = draw(st.floats(min_value=-1000, max_value=1000, allow_nan=False))
    action = draw(st.sampled_from([contract.RENEW, contract.REVOKE]))
    moment = datetime.now(UTC) + timedelta(seconds=offset)
    return contract.signed_request(action, cluster_id=CLUSTER_ID, timestamp=moment, sign=KEY.sign)


FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(values)
def test_any_json_body_is_answered_by_the_contract(body: Any) -> None:
    answered_well(json.dumps(body).encode())


@FUZZ
@given(st.lists(contract_bodies(), min_size=1, max_size=4))
def test_contract_shaped_bodies_holding_anything_are_answered(bodies: list[JSON]) -> None:
    answered_well(*(json.dumps(body).encode() for body in bodies))


@FUZZ
@given(signed_by_the_tenant())
def test_signed_requests_reach_the_api_and_are_answered(body: JSON) -> None:
    answered_well(json.dumps(body).encode())


@FUZZ
@given(st.binary(max_size=300))
def test_bodies_that_are_not_json_are_answered(body: bytes) -> None:
    answered_well(body)


def test_deep_nesting_huge_numbers_odd_floats_and_oversize_bodies_are_answered() -> None:
    answered_well(
        b"[" * 2000 + b"]" * 2000,
        b'{"token": ' + b"[" * 1500 + b"]" * 1500 + b"}",
        json.dumps({"token": TOKEN, "clusterID": 10**4000}).encode(),
        b'{"token": NaN, "clusterID": Infinity, "timestamp": -Infinity}',
        b'{"token": "' + b"0" * 10_000 + b'"}',
        '"\udcff"'.encode("utf-8", "surrogatepass"),
    )
