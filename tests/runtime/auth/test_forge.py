"""The pure builders the auth service and its clients share: tokens, tenant objects, the HTTP contract."""

from __future__ import annotations

import base64
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from runtime.api import constants as c
from runtime.auth.signatures import is_signed_by
from runtime.forge import credential as contract
from runtime.forge import tokens
from runtime.forge.rbac import REMOTE_CONSUMER_ROLE
from runtime.forge.tenant import (
    CONSUMER_SERVICE_ACCOUNT,
    consumer_user,
    is_tenant_namespace_of,
    role_binding,
    tenant,
    tenant_namespace,
    tenant_namespace_name,
)

CLUSTER_ID = "3f2c5a8e-1b4d-4c6e-8f0a-9d7b6c5e4a32"
MOMENT = datetime(2030, 5, 1, 10, 0, 0, tzinfo=UTC)


# tokens


def test_tokens_are_64_hex_digits_and_differ() -> None:
    first, second = tokens.generate_token(), tokens.generate_token()
    assert tokens.is_token(first) and tokens.is_token(second)
    assert first != second


@pytest.mark.parametrize("text", ["", "0" * 63, "0" * 65, "G" * 64, "A" * 64, "0" * 63 + "\n"])
def test_anything_but_64_lower_case_hex_digits_is_not_a_token(text: str) -> None:
    assert not tokens.is_token(text)


def test_the_secret_holds_only_the_hash_and_its_name_derives_from_it() -> None:
    token = tokens.generate_token()
    secret = tokens.token_secret(token, namespace="liqo", expires_at=MOMENT)
    assert token not in str(secret)
    assert secret["metadata"]["name"] == tokens.token_secret_name(token)
    assert secret["metadata"]["name"].startswith(tokens.SECRET_PREFIX)
    assert secret["metadata"]["labels"][c.LABEL_PEERING_TOKEN] == "true"
    assert tokens.stored_hash(secret) == tokens.token_hash(token).encode()
    assert tokens.token_expiry(secret) == MOMENT
    assert secret["metadata"]["annotations"][c.ANNOTATION_TOKEN_EXPIRES_AT] == "2030-05-01T10:00:00Z"


def test_a_secret_without_expiry_never_expires_and_a_bad_one_is_malformed() -> None:
    secret = tokens.token_secret(tokens.generate_token(), namespace="liqo")
    assert "annotations" not in secret["metadata"]
    assert tokens.token_expiry(secret) is None
    secret["metadata"]["annotations"] = {c.ANNOTATION_TOKEN_EXPIRES_AT: "tomorrow"}
    with pytest.raises(ValueError, match="tomorrow"):
        tokens.token_expiry(secret)
    secret["data"] = {tokens.HASH_KEY: "not base64!"}
    assert tokens.stored_hash(secret) is None


# tenant objects


def test_tenant_namespace_names_fit_a_namespace_and_stay_distinct() -> None:
    assert tenant_namespace_name("milan") == "liqo-tenant-milan"
    long_a, long_b = "a" * 57 + "x", "a" * 57 + "y"
    names = {tenant_namespace_name(long_a), tenant_namespace_name(long_b)}
    assert len(names) == 2
    for name in names:
        assert len(name) <= 63 and name.startswith("liqo-tenant-") and name[-1].isalnum()
    assert tenant_namespace_name(long_a) == tenant_namespace_name(long_a)


def test_tenant_objects_carry_the_consumer_and_bind_only_the_consumer_role() -> None:
    namespace = tenant_namespace(cluster_id=CLUSTER_ID, cluster_name="milan")
    assert is_tenant_namespace_of(namespace, CLUSTER_ID)
    assert not is_tenant_namespace_of(namespace, str(uuid.uuid4()))
    obj = tenant(cluster_id=CLUSTER_ID, cluster_name="milan", public_key="a2V5")
    assert obj["metadata"]["namespace"] == "liqo-tenant-milan"
    assert obj["metadata"]["finalizers"] == [c.FINALIZER_TENANT]
    assert obj["spec"] == {
        "clusterID": CLUSTER_ID,
        "clusterName": "milan",
        "publicKey": "a2V5",
        "serviceAccountName": CONSUMER_SERVICE_ACCOUNT,
    }
    binding = role_binding(cluster_id=CLUSTER_ID, namespace="liqo-tenant-milan")
    assert binding["roleRef"]["name"] == REMOTE_CONSUMER_ROLE
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": CONSUMER_SERVICE_ACCOUNT, "namespace": "liqo-tenant-milan"}
    ]
    assert consumer_user("liqo-tenant-milan") == "system:serviceaccount:liqo-tenant-milan:liqo-consumer"


# the HTTP contract


def _credential() -> contract.Credential:
    return contract.Credential(
        cluster_id=CLUSTER_ID,
        cluster_name="rome",
        version="0.1.0",
        api_server_url="https://10.0.0.1:6443",
        ca_data=base64.b64encode(b"-----BEGIN CERTIFICATE-----").decode(),
        namespace="liqo-tenant-milan",
        token="secret-token",
        expires_at=MOMENT,
    )


def test_an_identity_answer_parses_back_and_becomes_a_kubeconfig_for_the_tenant_namespace() -> None:
    credential = _credential()
    body = contract.identity_response(credential)
    assert body["expiresAt"] == "2030-05-01T10:00:00Z"
    assert contract.parse_identity_response(body) == credential
    assert "secret-token" not in repr(credential)
    config = contract.kubeconfig(credential)
    context = config["contexts"][0]["context"]
    assert context["namespace"] == "liqo-tenant-milan"
    assert config["current-context"] == config["contexts"][0]["name"]
    assert config["clusters"][0]["cluster"] == {
        "server": "https://10.0.0.1:6443",
        "certificate-authority-data": credential.ca_data,
    }
    assert config["users"][0]["user"] == {"token": "secret-token"}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"token": ""}, "token"),
        ({"namespace": None}, "namespace"),
        ({"apiServer": "https://x"}, "apiServer"),
        ({"apiServer": {"url": "http://x", "caData": ""}}, "apiServer.url"),
        ({"apiServer": {"url": "https://x", "caData": "%%%"}}, "apiServer.caData"),
        ({"expiresAt": "soon"}, "expiresAt"),
        ({"expiresAt": "2030-05-01T10:00:00"}, "expiresAt"),
    ],
    ids=["token", "namespace", "api-server", "url", "ca-data", "expiry", "expiry-without-zone"],
)
def test_a_broken_identity_answer_names_the_field(change: dict[str, Any], field: str) -> None:
    body = {**contract.identity_response(_credential()), **change}
    with pytest.raises(contract.CredentialResponseError) as caught:
        contract.parse_identity_response(body)
    assert caught.value.field == field


def test_cluster_info_tells_our_runtime_from_anything_else() -> None:
    info = contract.ClusterInfo(cluster_id=CLUSTER_ID, cluster_name="rome", version="0.1.0")
    assert contract.parse_cluster_info(contract.cluster_info(info)) == info
    with pytest.raises(contract.CredentialResponseError) as caught:
        contract.parse_cluster_info({"clusterID": CLUSTER_ID, "clusterName": "rome", "version": "1"})
    assert caught.value.field == "runtime"
    with pytest.raises(contract.CredentialResponseError):
        contract.parse_cluster_info(["not", "an", "object"])


def test_signed_requests_sign_action_cluster_and_timestamp() -> None:
    key = Ed25519PrivateKey.generate()
    public = base64.b64encode(key.public_key().public_bytes_raw()).decode()
    body = contract.signed_request(contract.RENEW, cluster_id=CLUSTER_ID, timestamp=MOMENT, sign=key.sign)
    assert body["timestamp"] == "2030-05-01T10:00:00.000000Z"
    signature = base64.b64decode(body["signature"])
    message = contract.signed_message(contract.RENEW, cluster_id=CLUSTER_ID, timestamp=body["timestamp"])
    assert message == f"renew\n{CLUSTER_ID}\n2030-05-01T10:00:00.000000Z".encode()
    assert is_signed_by(public, message, signature)
    for other in (
        contract.signed_message(contract.REVOKE, cluster_id=CLUSTER_ID, timestamp=body["timestamp"]),
        contract.signed_message(contract.RENEW, cluster_id=str(uuid.uuid4()), timestamp=body["timestamp"]),
        contract.signed_message(
            contract.RENEW, cluster_id=CLUSTER_ID, timestamp="2030-05-01T10:00:01.000000Z"
        ),
    ):
        assert not is_signed_by(public, other, signature)
    stranger = base64.b64encode(Ed25519PrivateKey.generate().public_key().public_bytes_raw()).decode()
    assert not is_signed_by(stranger, message, signature)
    assert not is_signed_by("not a key", message, signature)


def test_identity_requests_carry_the_raw_public_key_in_base64() -> None:
    raw = Ed25519PrivateKey.generate().public_key().public_bytes_raw()
    body = contract.identity_request(token="t", cluster_id=CLUSTER_ID, cluster_name="milan", public_key=raw)
    assert base64.b64decode(body["publicKey"]) == raw
    assert set(body) == {"token", "clusterID", "clusterName", "publicKey"}
