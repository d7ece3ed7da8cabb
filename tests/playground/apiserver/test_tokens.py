"""ServiceAccount JWTs: issuing, verifying, TokenRequest rules, key files and the public key set."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from playground.apiserver.errors import APIError
from playground.apiserver.tokens import (
    DEFAULT_ISSUER,
    LEGACY_ISSUER,
    SA_KEY_FILE,
    InvalidTokenError,
    ObjectRef,
    TokenSigner,
    bind_object,
    validate_expiration,
)

NOW = dt.datetime(2025, 1, 1, 12, 0, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def es256() -> TokenSigner:
    return TokenSigner.generate(algorithm="ES256")


@pytest.fixture(scope="module")
def rs256() -> TokenSigner:
    return TokenSigner.generate(algorithm="RS256")


@pytest.fixture(params=["ES256", "RS256"])
def signer(request: pytest.FixtureRequest, es256: TokenSigner, rs256: TokenSigner) -> TokenSigner:
    return es256 if request.param == "ES256" else rs256


def _segment(token: str, index: int) -> dict[str, Any]:
    part = token.split(".")[index]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return decoded


def _b64(value: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def _issue(signer: TokenSigner, **overrides: Any) -> str:
    args: dict[str, Any] = {
        "namespace": "team-a",
        "service_account": "builder",
        "service_account_uid": "sa-uid",
        "now": NOW,
    }
    args.update(overrides)
    return signer.issue(**args)[0]


# -- bound tokens -------------------------------------------------------------------------------


def test_bound_token_has_kube_apiserver_claims(signer: TokenSigner) -> None:
    token, expires_at = signer.issue(
        namespace="team-a",
        service_account="builder",
        service_account_uid="sa-uid",
        audiences=[],
        expiration_seconds=1200,
        bound_object=None,
        now=NOW,
    )

    payload = _segment(token, 1)
    assert expires_at == NOW + dt.timedelta(seconds=1200)
    assert payload["iss"] == DEFAULT_ISSUER
    assert payload["sub"] == "system:serviceaccount:team-a:builder"
    assert payload["aud"] == [DEFAULT_ISSUER]
    assert payload["iat"] == payload["nbf"] == int(NOW.timestamp())
    assert payload["exp"] == int(NOW.timestamp()) + 1200
    assert payload["jti"]
    assert payload["kubernetes.io"] == {
        "namespace": "team-a",
        "serviceaccount": {"name": "builder", "uid": "sa-uid"},
    }


def test_token_header_names_the_algorithm_and_kubes_key_id(signer: TokenSigner) -> None:
    jwk = signer.jwks()["keys"][0]
    header = _segment(_issue(signer), 0)

    assert header["alg"] == signer.algorithm
    assert header["kid"] == signer.key_id == jwk["kid"]


def test_verify_round_trips_the_claims(signer: TokenSigner) -> None:
    token = _issue(
        signer,
        audiences=["vault"],
        bound_object={
            "kind": "Pod",
            "name": "web-0",
            "uid": "pod-uid",
            "node": {"name": "n1", "uid": "node-uid"},
        },
    )

    claims = signer.verify(token, now=NOW + dt.timedelta(minutes=5))

    assert claims.namespace == "team-a"
    assert claims.service_account == ObjectRef("builder", "sa-uid")
    assert claims.audiences == ("vault",)
    assert claims.pod == ObjectRef("web-0", "pod-uid")
    assert claims.node == ObjectRef("n1", "node-uid")
    assert claims.secret is None and not claims.legacy
    assert claims.expires_at == NOW + dt.timedelta(hours=1)


@pytest.mark.parametrize(
    ("bound_object", "claim"),
    [
        ({"kind": "Secret", "name": "s", "uid": "s-uid"}, {"secret": {"name": "s", "uid": "s-uid"}}),
        ({"kind": "Node", "name": "n1", "uid": "n-uid"}, {"node": {"name": "n1", "uid": "n-uid"}}),
        ({"kind": "Pod", "name": "p", "uid": "p-uid"}, {"pod": {"name": "p", "uid": "p-uid"}}),
    ],
)
def test_bound_object_is_named_in_the_kubernetes_claim(
    es256: TokenSigner, bound_object: dict[str, str], claim: dict[str, Any]
) -> None:
    kube = _segment(_issue(es256, bound_object=bound_object), 1)["kubernetes.io"]

    assert {k: v for k, v in kube.items() if k not in ("namespace", "serviceaccount")} == claim


def test_kubelet_style_pod_token_is_extended_to_a_year_with_warnafter(es256: TokenSigner) -> None:
    token, expires_at = es256.issue(
        namespace="team-a",
        service_account="builder",
        service_account_uid="sa-uid",
        expiration_seconds=3607,
        bound_object={"kind": "Pod", "name": "p", "uid": "p-uid"},
        now=NOW,
    )

    payload = _segment(token, 1)
    assert expires_at == NOW + dt.timedelta(seconds=3607)
    assert payload["exp"] == int(NOW.timestamp()) + 365 * 24 * 3600
    assert payload["kubernetes.io"]["warnafter"] == int(NOW.timestamp()) + 3607


def test_3607_second_token_for_another_audience_is_not_extended(es256: TokenSigner) -> None:
    token = _issue(
        es256,
        audiences=["vault"],
        expiration_seconds=3607,
        bound_object={"kind": "Pod", "name": "p", "uid": "u"},
    )

    assert _segment(token, 1)["exp"] == int(NOW.timestamp()) + 3607


@pytest.mark.parametrize(
    ("seconds", "message"),
    [
        (599, "may not specify a duration less than 10 minutes"),
        (0, "may not specify a duration less than 10 minutes"),
        ((1 << 32) + 1, "may not specify a duration larger than 2^32 seconds"),
    ],
)
def test_expiration_outside_bounds_is_a_422(es256: TokenSigner, seconds: int, message: str) -> None:
    with pytest.raises(APIError) as caught:
        _issue(es256, expiration_seconds=seconds)

    assert caught.value.code == 422
    assert caught.value.details["causes"][0]["field"] == "spec.expirationSeconds"
    assert message in caught.value.message
    assert caught.value.message.startswith('TokenRequest.authentication.k8s.io "" is invalid')


@pytest.mark.parametrize("seconds", [600, 3600, 1 << 32])
def test_expiration_within_bounds_is_accepted(seconds: int) -> None:
    validate_expiration(seconds)


def test_api_audiences_can_be_configured() -> None:
    signer = TokenSigner(ec.generate_private_key(ec.SECP256R1()), api_audiences=["api", "other"])

    assert _segment(_issue(signer), 1)["aud"] == ["api", "other"]


# -- rejection ----------------------------------------------------------------------------------


def _tamper_payload(token: str) -> str:
    header, _, signature = token.split(".")
    claims = _segment(token, 1)
    claims["kubernetes.io"]["serviceaccount"]["name"] = "admin"
    return ".".join([header, _b64(claims), signature])


def _alg_none(token: str) -> str:
    return ".".join([_b64({"alg": "none"}), token.split(".")[1], ""])


def _truncated_signature(token: str) -> str:
    return token[:-10]


def _wrong_kid(token: str) -> str:
    _, payload, signature = token.split(".")
    return ".".join([_b64({"alg": "ES256", "kid": "someone-else"}), payload, signature])


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (_tamper_payload, "invalid signature"),
        (_alg_none, "invalid signature"),
        (_truncated_signature, "invalid signature"),
        (_wrong_kid, "no keys found"),
        (lambda t: "garbage", "invalid bearer token"),
        (lambda t: "a.b.c", "invalid bearer token"),
        (lambda t: t + ".x", "invalid bearer token"),
    ],
)
def test_malformed_or_tampered_token_is_rejected(es256: TokenSigner, mangle: Any, message: str) -> None:
    with pytest.raises(InvalidTokenError, match=message):
        es256.verify(mangle(_issue(es256)), now=NOW)


def test_token_signed_by_another_key_is_rejected(es256: TokenSigner) -> None:
    other = TokenSigner.generate(algorithm="ES256")

    with pytest.raises(InvalidTokenError):
        es256.verify(_issue(other), now=NOW)


def test_token_of_another_issuer_is_not_ours() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    foreign = TokenSigner(key, issuer="https://elsewhere")

    with pytest.raises(InvalidTokenError, match="invalid bearer token"):
        TokenSigner(key).verify(_issue(foreign), now=NOW)


@pytest.mark.parametrize(
    ("offset", "message"),
    [
        (dt.timedelta(seconds=600 + 61), "service account token has expired"),
        (dt.timedelta(seconds=-61), "service account token is not valid yet"),
    ],
)
def test_token_outside_its_validity_window_is_rejected(
    es256: TokenSigner, offset: dt.timedelta, message: str
) -> None:
    token = _issue(es256, expiration_seconds=600)

    with pytest.raises(InvalidTokenError, match=message):
        es256.verify(token, now=NOW + offset)


@pytest.mark.parametrize("offset", [dt.timedelta(seconds=600 + 59), dt.timedelta(seconds=-59)])
def test_a_minute_of_clock_skew_is_tolerated(es256: TokenSigner, offset: dt.timedelta) -> None:
    es256.verify(_issue(es256, expiration_seconds=600), now=NOW + offset)


# -- legacy tokens ------------------------------------------------------------------------------


def test_legacy_token_has_the_secret_token_claims_and_never_expires(signer: TokenSigner) -> None:
    token = signer.issue_legacy("team-a", "builder", "sa-uid", "builder-token")

    payload = _segment(token, 1)
    claims = signer.verify(token, now=NOW + dt.timedelta(days=3650))
    assert payload == {
        "iss": LEGACY_ISSUER,
        "sub": "system:serviceaccount:team-a:builder",
        "kubernetes.io/serviceaccount/namespace": "team-a",
        "kubernetes.io/serviceaccount/secret.name": "builder-token",
        "kubernetes.io/serviceaccount/service-account.name": "builder",
        "kubernetes.io/serviceaccount/service-account.uid": "sa-uid",
    }
    assert claims.legacy
    assert claims.secret == ObjectRef("builder-token")
    assert claims.service_account == ObjectRef("builder", "sa-uid")
    assert claims.expires_at is None


# -- bound object references --------------------------------------------------------------------

OBJECTS: dict[tuple[str, str, str], dict[str, Any]] = {
    ("Pod", "team-a", "web-0"): {
        "metadata": {"name": "web-0", "uid": "pod-uid"},
        "spec": {"serviceAccountName": "builder", "nodeName": "n1"},
    },
    ("Pod", "team-a", "other"): {"metadata": {"name": "other", "uid": "o-uid"}, "spec": {}},
    ("Node", "", "n1"): {"metadata": {"name": "n1", "uid": "node-uid"}},
    ("Secret", "team-a", "s"): {"metadata": {"name": "s", "uid": "s-uid"}},
}


def _get(kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    return OBJECTS.get((kind, namespace, name))


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        (None, None),
        (
            {"kind": "Pod", "apiVersion": "v1", "name": "web-0"},
            {"kind": "Pod", "name": "web-0", "uid": "pod-uid", "node": {"name": "n1", "uid": "node-uid"}},
        ),
        ({"kind": "Secret", "name": "s", "uid": "s-uid"}, {"kind": "Secret", "name": "s", "uid": "s-uid"}),
        ({"kind": "Node", "name": "n1"}, {"kind": "Node", "name": "n1", "uid": "node-uid"}),
    ],
)
def test_bind_object_resolves_the_reference(
    ref: dict[str, str] | None, expected: dict[str, Any] | None
) -> None:
    assert bind_object(ref, namespace="team-a", service_account="builder", get=_get) == expected


@pytest.mark.parametrize(
    ("ref", "code", "message"),
    [
        (
            {"kind": "ConfigMap", "apiVersion": "v1", "name": "x"},
            400,
            "cannot bind token to object of type /v1, Kind=ConfigMap",
        ),
        ({"kind": "Pod", "apiVersion": "apps/v1", "name": "web-0"}, 400, "apps/v1, Kind=Pod"),
        ({"kind": "Pod", "name": "missing"}, 404, 'pods "missing" not found'),
        (
            {"kind": "Secret", "name": "s", "uid": "stale"},
            409,
            "the UID in the bound object reference (stale)",
        ),
        ({"kind": "Pod", "name": "other"}, 400, "to pod running with different serviceaccount name"),
    ],
)
def test_bind_object_refuses_what_token_request_refuses(ref: dict[str, str], code: int, message: str) -> None:
    with pytest.raises(APIError) as caught:
        bind_object(ref, namespace="team-a", service_account="builder", get=_get)

    assert caught.value.code == code
    assert message in caught.value.message


# -- keys ---------------------------------------------------------------------------------------


def test_saved_key_is_private_and_loads_into_an_equivalent_signer(
    signer: TokenSigner, tmp_path: Path
) -> None:
    signer.save(tmp_path)

    loaded = TokenSigner.load(tmp_path)

    assert stat.S_IMODE(os.stat(tmp_path / SA_KEY_FILE).st_mode) == 0o600
    assert loaded.key_id == signer.key_id and loaded.algorithm == signer.algorithm
    assert loaded.verify(_issue(signer), now=NOW).service_account.name == "builder"


def test_key_id_is_the_base64url_sha256_of_the_der_public_key(es256: TokenSigner) -> None:
    jwk = es256.jwks()["keys"][0]
    x = int.from_bytes(base64.urlsafe_b64decode(jwk["x"] + "=="))
    y = int.from_bytes(base64.urlsafe_b64decode(jwk["y"] + "=="))
    public = ec.EllipticCurvePublicNumbers(x, y, ec.SECP256R1()).public_key()
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)

    assert base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode() == es256.key_id


def test_rsa_jwk_is_the_signers_public_key(rs256: TokenSigner, tmp_path: Path) -> None:
    jwk = rs256.jwks()["keys"][0]
    n = int.from_bytes(base64.urlsafe_b64decode(jwk["n"] + "=="))
    e = int.from_bytes(base64.urlsafe_b64decode(jwk["e"] + "=="))
    rs256.save(tmp_path)
    key = serialization.load_pem_private_key((tmp_path / SA_KEY_FILE).read_bytes(), password=None)

    assert isinstance(key, rsa.RSAPrivateKey)
    assert (jwk["kty"], jwk["alg"], jwk["use"]) == ("RSA", "RS256", "sig")
    assert key.public_key().public_numbers() == rsa.RSAPublicNumbers(e, n)


def test_openid_configuration_names_the_issuer_and_algorithm(rs256: TokenSigner) -> None:
    document = rs256.openid_configuration(jwks_uri="https://127.0.0.1:6443/openid/v1/jwks")

    assert document["issuer"] == DEFAULT_ISSUER
    assert document["id_token_signing_alg_values_supported"] == ["RS256"]
    assert document["jwks_uri"].endswith("/openid/v1/jwks")


def test_ecdsa_key_on_another_curve_is_refused() -> None:
    with pytest.raises(ValueError, match="P-256"):
        TokenSigner(ec.generate_private_key(ec.SECP384R1()))
