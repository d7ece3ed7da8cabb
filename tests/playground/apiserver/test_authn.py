"""Request authentication: client certificates, admin tokens, ServiceAccount tokens, TokenReview."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from playground.apiserver.authn import (
    CREDENTIAL_ID_KEY,
    LEGACY_INVALID_SINCE_LABEL,
    NODE_NAME_KEY,
    NODE_UID_KEY,
    POD_NAME_KEY,
    POD_UID_KEY,
    AuthenticationError,
    Authenticator,
    bearer_token,
)
from playground.apiserver.errors import APIError
from playground.apiserver.identity import AUTHENTICATED_GROUP, MASTERS_GROUP, UserInfo
from playground.apiserver.pki import CertificateAuthority
from playground.apiserver.tokens import DEFAULT_ISSUER, TokenSigner

NOW = dt.datetime(2025, 1, 1, 12, 0, tzinfo=dt.UTC)
ADMIN_TOKEN = "admin-secret-token"
SA_GROUPS = ("system:serviceaccounts", "system:serviceaccounts:team-a", AUTHENTICATED_GROUP)

Store = dict[tuple[str, str, str], dict[str, Any]]


@pytest.fixture(scope="module")
def signer() -> TokenSigner:
    return TokenSigner.generate(algorithm="ES256")


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority.generate("playground-ca")


def _obj(name: str, uid: str, **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": uid, **extra}}


@pytest.fixture
def store() -> Store:
    return {
        ("serviceaccounts", "team-a", "builder"): _obj("builder", "sa-uid"),
        ("pods", "team-a", "web-0"): _obj("web-0", "pod-uid"),
        ("secrets", "team-a", "bound"): _obj("bound", "secret-uid"),
        ("nodes", "", "n1"): _obj("n1", "node-uid"),
    }


@pytest.fixture
def authn(signer: TokenSigner, store: Store) -> Authenticator:
    def lookup(resource: str) -> Any:
        return lambda namespace, name: store.get((resource, namespace, name))

    return Authenticator(
        admin_tokens={ADMIN_TOKEN: UserInfo(name="admin", groups=(MASTERS_GROUP,))},
        signer=signer,
        service_accounts=lookup("serviceaccounts"),
        secrets=lookup("secrets"),
        pods=lookup("pods"),
        nodes=lookup("nodes"),
    )


def _token(signer: TokenSigner, **overrides: Any) -> str:
    args: dict[str, Any] = {
        "namespace": "team-a",
        "service_account": "builder",
        "service_account_uid": "sa-uid",
    }
    args.update(overrides)
    return signer.issue(now=NOW, **args)[0]


def _bearer(authn: Authenticator, token: str, *, now: dt.datetime = NOW) -> UserInfo | None:
    return authn.authenticate(peer_cert_der=None, authorization=f"Bearer {token}", now=now)


def _der(cert_pem: bytes) -> bytes:
    return x509.load_pem_x509_certificate(cert_pem).public_bytes(serialization.Encoding.DER)


def _iso(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# -- no credential ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization", [None, "", "Basic YWRtaW46YWRtaW4=", "Bearer", "Bearer ", "Token abc"]
)
def test_no_bearer_credential_is_anonymous_material(authn: Authenticator, authorization: str | None) -> None:
    assert authn.authenticate(peer_cert_der=None, authorization=authorization, now=NOW) is None


@pytest.mark.parametrize(
    ("header", "token"),
    [("Bearer abc", "abc"), ("bearer abc", "abc"), ("  Bearer abc  ", "abc"), ("Bearer abc extra", "abc")],
)
def test_bearer_token_is_read_like_kube_does(header: str, token: str) -> None:
    assert bearer_token(header) == token


# -- client certificates ------------------------------------------------------------------------


def test_client_certificate_maps_cn_to_user_and_o_to_groups(
    ca: CertificateAuthority, authn: Authenticator
) -> None:
    der = _der(ca.issue_client("alice", organizations=["devs", MASTERS_GROUP])[0])

    user = authn.authenticate(peer_cert_der=der, authorization=None, now=NOW)

    assert user is not None
    assert user.name == "alice"
    assert user.groups == ("devs", MASTERS_GROUP, AUTHENTICATED_GROUP)
    assert user.extra[CREDENTIAL_ID_KEY][0].startswith("X509SHA256=")


def test_client_certificate_wins_over_a_bad_bearer_token(
    ca: CertificateAuthority, authn: Authenticator
) -> None:
    der = _der(ca.issue_client("alice")[0])

    user = authn.authenticate(peer_cert_der=der, authorization="Bearer garbage", now=NOW)

    assert user is not None and user.name == "alice"


def test_certificate_without_common_name_falls_back_to_the_token(
    ca: CertificateAuthority, authn: Authenticator
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "devs")])
    csr = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
    der = _der(ca.sign_csr(csr.public_bytes(serialization.Encoding.PEM), usages=["client auth"]))

    assert authn.authenticate(peer_cert_der=der, authorization=None, now=NOW) is None
    with pytest.raises(AuthenticationError):
        authn.authenticate(peer_cert_der=der, authorization="Bearer garbage", now=NOW)


# -- static admin tokens ------------------------------------------------------------------------


def test_admin_token_authenticates_its_user(authn: Authenticator) -> None:
    assert _bearer(authn, ADMIN_TOKEN) == UserInfo(name="admin", groups=(MASTERS_GROUP, AUTHENTICATED_GROUP))


@pytest.mark.parametrize("token", ["garbage", ADMIN_TOKEN + "x", ADMIN_TOKEN[:-1], "a.b.c"])
def test_unknown_bearer_token_is_a_401(authn: Authenticator, token: str) -> None:
    with pytest.raises(AuthenticationError) as caught:
        _bearer(authn, token)

    assert caught.value.code == 401
    assert caught.value.status()["reason"] == "Unauthorized"
    assert caught.value.cause == "invalid bearer token"
    assert token not in str(caught.value)


# -- bound ServiceAccount tokens ----------------------------------------------------------------


def test_service_account_token_authenticates_the_service_account(
    signer: TokenSigner, authn: Authenticator
) -> None:
    token = _token(signer)

    user = _bearer(authn, token)

    assert user is not None
    assert user.name == "system:serviceaccount:team-a:builder"
    assert user.uid == "sa-uid"
    assert user.groups == SA_GROUPS
    jti = signer.verify(token, now=NOW).jti
    assert user.extra == {CREDENTIAL_ID_KEY: (f"JTI={jti}",)}


def test_pod_bound_token_carries_pod_and_node_extras(signer: TokenSigner, authn: Authenticator) -> None:
    bound = {"kind": "Pod", "name": "web-0", "uid": "pod-uid", "node": {"name": "n1", "uid": "node-uid"}}

    user = _bearer(authn, _token(signer, bound_object=bound))

    assert user is not None
    assert user.extra[POD_NAME_KEY] == ("web-0",)
    assert user.extra[POD_UID_KEY] == ("pod-uid",)
    assert user.extra[NODE_NAME_KEY] == ("n1",)
    assert user.extra[NODE_UID_KEY] == ("node-uid",)


def _delete(store: Store, key: tuple[str, str, str]) -> None:
    del store[key]


def _recreate(store: Store, key: tuple[str, str, str]) -> None:
    store[key] = _obj(key[2], "new-uid")


def _deleting_long_ago(store: Store, key: tuple[str, str, str]) -> None:
    store[key]["metadata"]["deletionTimestamp"] = _iso(NOW - dt.timedelta(minutes=5))


SA = ("serviceaccounts", "team-a", "builder")
POD = ("pods", "team-a", "web-0")
SECRET = ("secrets", "team-a", "bound")
NODE = ("nodes", "", "n1")


@pytest.mark.parametrize(
    ("bound_object", "change", "key", "cause"),
    [
        (None, _delete, SA, 'serviceaccounts "builder" not found'),
        (None, _recreate, SA, "service account UID (new-uid) does not match claim (sa-uid)"),
        (None, _deleting_long_ago, SA, "service account team-a/builder has been deleted"),
        ({"kind": "Pod", "name": "web-0", "uid": "pod-uid"}, _delete, POD, "has been invalidated"),
        (
            {"kind": "Pod", "name": "web-0", "uid": "pod-uid"},
            _recreate,
            POD,
            "pod UID (new-uid) does not match",
        ),
        ({"kind": "Pod", "name": "web-0", "uid": "pod-uid"}, _deleting_long_ago, POD, "has been invalidated"),
        ({"kind": "Secret", "name": "bound", "uid": "secret-uid"}, _delete, SECRET, "has been invalidated"),
        ({"kind": "Secret", "name": "bound", "uid": "secret-uid"}, _recreate, SECRET, "secret UID (new-uid)"),
        ({"kind": "Node", "name": "n1", "uid": "node-uid"}, _delete, NODE, "has been invalidated"),
        ({"kind": "Node", "name": "n1", "uid": "node-uid"}, _recreate, NODE, "node UID (new-uid)"),
    ],
)
def test_token_naming_an_object_that_is_gone_or_replaced_is_a_401(
    signer: TokenSigner,
    authn: Authenticator,
    store: Store,
    bound_object: dict[str, str] | None,
    change: Any,
    key: tuple[str, str, str],
    cause: str,
) -> None:
    token = _token(signer, bound_object=bound_object)
    assert _bearer(authn, token) is not None
    change(store, key)

    with pytest.raises(AuthenticationError) as caught:
        _bearer(authn, token)

    assert cause in caught.value.cause


def test_bound_pod_being_deleted_within_the_leeway_still_authenticates(
    signer: TokenSigner, authn: Authenticator, store: Store
) -> None:
    token = _token(signer, bound_object={"kind": "Pod", "name": "web-0", "uid": "pod-uid"})
    store[POD]["metadata"]["deletionTimestamp"] = _iso(NOW - dt.timedelta(seconds=30))

    assert _bearer(authn, token) is not None


def test_pod_node_is_not_looked_up_for_a_pod_bound_token(
    signer: TokenSigner, authn: Authenticator, store: Store
) -> None:
    bound = {"kind": "Pod", "name": "web-0", "uid": "pod-uid", "node": {"name": "n1", "uid": "node-uid"}}
    token = _token(signer, bound_object=bound)
    del store[NODE]

    assert _bearer(authn, token) is not None


def test_expired_service_account_token_is_a_401(signer: TokenSigner, authn: Authenticator) -> None:
    token = _token(signer, expiration_seconds=600)

    with pytest.raises(AuthenticationError) as caught:
        _bearer(authn, token, now=NOW + dt.timedelta(hours=1))

    assert caught.value.cause == "service account token has expired"


def test_token_for_another_audience_does_not_authenticate_to_the_api(
    signer: TokenSigner, authn: Authenticator
) -> None:
    with pytest.raises(AuthenticationError) as caught:
        _bearer(authn, _token(signer, audiences=["vault"]))

    assert (
        caught.value.cause
        == f'token audiences ["vault"] is invalid for the target audiences ["{DEFAULT_ISSUER}"]'
    )


# -- legacy Secret tokens -----------------------------------------------------------------------


def _legacy_secret(token: str, **metadata: Any) -> dict[str, Any]:
    secret = _obj("builder-token", "legacy-uid", **metadata)
    secret["type"] = "kubernetes.io/service-account-token"
    secret["data"] = {"token": base64.b64encode(token.encode()).decode()}
    return secret


LEGACY = ("secrets", "team-a", "builder-token")


def test_legacy_token_stored_in_its_secret_authenticates(
    signer: TokenSigner, authn: Authenticator, store: Store
) -> None:
    token = signer.issue_legacy("team-a", "builder", "sa-uid", "builder-token")
    store[LEGACY] = _legacy_secret(token)

    user = _bearer(authn, token, now=NOW + dt.timedelta(days=3650))

    assert user is not None
    assert (user.name, user.uid, user.groups) == ("system:serviceaccount:team-a:builder", "sa-uid", SA_GROUPS)
    assert not user.extra


@pytest.mark.parametrize(
    ("secret", "cause"),
    [
        (None, "Token has been invalidated"),
        (_legacy_secret("another-token"), "Token does not match server's copy"),
        (_legacy_secret("x", deletionTimestamp="2025-01-01T11:59:59Z"), "Token has been invalidated"),
        ("labelled", "has been marked invalid"),
    ],
)
def test_legacy_token_without_its_secret_is_a_401(
    signer: TokenSigner, authn: Authenticator, store: Store, secret: Any, cause: str
) -> None:
    token = signer.issue_legacy("team-a", "builder", "sa-uid", "builder-token")
    if secret == "labelled":
        secret = _legacy_secret(token, labels={LEGACY_INVALID_SINCE_LABEL: "2024-12-01"})
    if secret is not None:
        store[LEGACY] = secret

    with pytest.raises(AuthenticationError) as caught:
        _bearer(authn, token)

    assert cause in caught.value.cause


def test_legacy_token_of_a_recreated_service_account_is_a_401(
    signer: TokenSigner, authn: Authenticator, store: Store
) -> None:
    token = signer.issue_legacy("team-a", "builder", "sa-uid", "builder-token")
    store[LEGACY] = _legacy_secret(token)
    _recreate(store, SA)

    with pytest.raises(AuthenticationError) as caught:
        _bearer(authn, token)

    assert caught.value.cause == "ServiceAccount UID (new-uid) does not match claim (sa-uid)"


# -- TokenReview --------------------------------------------------------------------------------


def test_review_of_a_valid_token_reports_user_and_audiences(
    signer: TokenSigner, authn: Authenticator
) -> None:
    status = authn.review(_token(signer), audiences=[], now=NOW)

    assert status["authenticated"] is True
    assert status["audiences"] == [DEFAULT_ISSUER]
    assert status["user"]["username"] == "system:serviceaccount:team-a:builder"
    assert status["user"]["uid"] == "sa-uid"
    assert status["user"]["groups"] == list(SA_GROUPS)
    assert list(status["user"]["extra"]) == [CREDENTIAL_ID_KEY]


def test_review_for_the_tokens_own_audience_succeeds(signer: TokenSigner, authn: Authenticator) -> None:
    status = authn.review(_token(signer, audiences=["vault", "other"]), audiences=["vault"], now=NOW)

    assert status["authenticated"] is True
    assert status["audiences"] == ["vault"]


def test_review_of_an_admin_token_echoes_the_requested_audiences(authn: Authenticator) -> None:
    status = authn.review(ADMIN_TOKEN, audiences=["anything"], now=NOW)

    assert status["authenticated"] is True
    assert status["audiences"] == ["anything"]
    assert status["user"] == {"username": "admin", "groups": [MASTERS_GROUP, AUTHENTICATED_GROUP]}


@pytest.mark.parametrize(
    ("token", "audiences", "error"),
    [
        ("garbage", [], "invalid bearer token"),
        ("sa-for-vault", [], "token audiences"),
        ("sa", ["vault"], "token audiences"),
    ],
)
def test_review_of_a_bad_token_reports_the_error(
    signer: TokenSigner, authn: Authenticator, token: str, audiences: list[str], error: str
) -> None:
    presented = {"sa-for-vault": _token(signer, audiences=["vault"]), "sa": _token(signer)}.get(token, token)

    status = authn.review(presented, audiences=audiences, now=NOW)

    assert "authenticated" not in status
    assert status["user"] == {}
    assert error in status["error"]


def test_review_without_a_token_is_a_400(authn: Authenticator) -> None:
    with pytest.raises(APIError) as caught:
        authn.review("", audiences=[], now=NOW)

    assert caught.value.code == 400
    assert caught.value.message == "token is required for TokenReview in authentication"
