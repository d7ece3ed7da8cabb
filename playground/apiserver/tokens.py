"""ServiceAccount tokens: signed JWTs shaped like the ones kube-apiserver issues and accepts.

Bound tokens (TokenRequest, projected volumes) carry `iss`, `sub`, `aud`, `exp`, `iat`,
`nbf`, `jti` and a `kubernetes.io` claim naming the namespace, the ServiceAccount and the
object the token is bound to (Pod, Secret or Node), exactly as pkg/serviceaccount/claims.go
builds them. Legacy tokens (Secrets of type `kubernetes.io/service-account-token`) carry
the flat `kubernetes.io/serviceaccount/...` claims, the `kubernetes/serviceaccount` issuer
and no expiry. Clients treat tokens as opaque; other services may check them against the
public key set, so the signature is real: RS256 with an RSA key (kube's default) or ES256
with a P-256 key, with kube's key id (the base64url SHA-256 of the DER public key).

`TokenSigner.verify` checks the signature, the issuer and the time claims only; whether
the ServiceAccount and the bound object still exist is the authenticator's business.
This module also holds the TokenRequest rules that do not need a store: the expiration
bounds, the default audiences, the pod-bound 3607-second extension, and the checks on a
`boundObjectRef` given a way to read objects.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, utils

from .errors import Cause, bad_request, conflict, invalid, not_found
from .identity import SERVICE_ACCOUNT_PREFIX
from .pki import PrivateKey, write_file_atomically

SA_KEY_FILE = "sa.key"
DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
LEGACY_ISSUER = "kubernetes/serviceaccount"
#: go-jose's DefaultLeeway, applied to exp/nbf/iat and to deletion timestamps.
LEEWAY = dt.timedelta(minutes=1)
DEFAULT_EXPIRATION_SECONDS = 3600
MIN_EXPIRATION_SECONDS = 600
MAX_EXPIRATION_SECONDS = 1 << 32
#: what kubelet asks for; pod-bound tokens for it are silently extended to a year.
WARN_ONLY_EXPIRATION_SECONDS = 3607
EXTENDED_EXPIRATION_SECONDS = 365 * 24 * 3600

Algorithm = Literal["RS256", "ES256"]
#: reads one object: (kind, namespace, name) -> the object, or None when it does not exist.
ObjectGetter = Callable[[str, str, str], dict[str, Any] | None]
_BINDABLE_KINDS = {"Pod": "pods", "Secret": "secrets", "Node": "nodes"}
_TOKEN_REQUEST_GROUP = "authentication.k8s.io"


class InvalidTokenError(Exception):
    """A presented token that must not authenticate; the message is safe to show the client."""


@dataclass(frozen=True)
class ObjectRef:
    name: str
    uid: str = ""

    def as_claim(self) -> dict[str, str]:
        out = {"name": self.name}
        if self.uid:
            out["uid"] = self.uid
        return out


@dataclass(frozen=True)
class Claims:
    """What a verified token says. `legacy` tokens name their Secret in `secret` and have no expiry."""

    issuer: str
    subject: str
    namespace: str
    service_account: ObjectRef
    audiences: tuple[str, ...] = ()
    legacy: bool = False
    pod: ObjectRef | None = None
    secret: ObjectRef | None = None
    node: ObjectRef | None = None
    jti: str = ""
    issued_at: dt.datetime | None = None
    not_before: dt.datetime | None = None
    expires_at: dt.datetime | None = None
    warn_after: dt.datetime | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _json_segment(value: Mapping[str, Any]) -> str:
    return _b64(json.dumps(value, separators=(",", ":"), sort_keys=True).encode())


def _ts(moment: dt.datetime) -> int:
    return int(moment.timestamp())


def _from_ts(value: Any, claim: str) -> dt.datetime | None:
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise InvalidTokenError(f"invalid {claim} claim")
    return dt.datetime.fromtimestamp(value, dt.UTC)


def _int_bytes(value: int, length: int) -> bytes:
    return value.to_bytes(length, "big")


def service_account_username(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"


def validate_expiration(expiration_seconds: int) -> None:
    """TokenRequest's static validation: between ten minutes and 2^32 seconds, else 422."""
    causes = []
    if expiration_seconds < MIN_EXPIRATION_SECONDS:
        message = f"Invalid value: {expiration_seconds}: may not specify a duration less than 10 minutes"
        causes.append(Cause("spec.expirationSeconds", message))
    if expiration_seconds > MAX_EXPIRATION_SECONDS:
        message = f"Invalid value: {expiration_seconds}: may not specify a duration larger than 2^32 seconds"
        causes.append(Cause("spec.expirationSeconds", message))
    if causes:
        raise invalid("TokenRequest", "", causes, group=_TOKEN_REQUEST_GROUP)


def _uid_of(obj: Mapping[str, Any]) -> str:
    return str(obj.get("metadata", {}).get("uid", ""))


def _get_bound(ref: Mapping[str, Any], *, namespace: str, get: ObjectGetter) -> dict[str, Any]:
    kind, name = str(ref.get("kind", "")), str(ref.get("name", ""))
    api_version = str(ref.get("apiVersion", "v1") or "v1")
    if kind not in _BINDABLE_KINDS or "/" in api_version:
        group, _, version = api_version.rpartition("/")
        raise bad_request(f"cannot bind token to object of type {group}/{version}, Kind={kind}")
    obj = get(kind, "" if kind == "Node" else namespace, name)
    if obj is None:
        raise not_found(_BINDABLE_KINDS[kind], name)
    return obj


def bind_object(
    ref: Mapping[str, Any] | None, *, namespace: str, service_account: str, get: ObjectGetter
) -> dict[str, Any] | None:
    """Resolve a TokenRequest `spec.boundObjectRef` into the `bound_object` for `TokenSigner.issue`.

    Mirrors the TokenRequest REST handler: only core Pods, Secrets and Nodes bind (400
    otherwise), the object must exist (404), a given uid must match (409), a Pod must run
    as the requesting ServiceAccount (400), and a Pod's node is recorded when it is known.
    """
    if not ref:
        return None
    obj = _get_bound(ref, namespace=namespace, get=get)
    kind, name, uid = str(ref["kind"]), str(ref.get("name", "")), _uid_of(obj)
    if ref.get("uid") and ref["uid"] != uid:
        why = (
            f"the UID in the bound object reference ({ref['uid']}) does not match the UID in record. "
            "The object might have been deleted and then recreated"
        )
        raise conflict(kind, name, why=why)
    bound: dict[str, Any] = {"kind": kind, "name": name, "uid": uid}
    if kind == "Pod":
        spec = obj.get("spec", {})
        if spec.get("serviceAccountName", "default") != service_account:
            raise bad_request(
                f'cannot bind token for serviceaccount "{service_account}" to pod running with '
                "different serviceaccount name."
            )
        node_name = str(spec.get("nodeName", ""))
        if node_name:
            node = get("Node", "", node_name)
            bound["node"] = {"name": node_name, "uid": _uid_of(node) if node else ""}
    return bound


class TokenSigner:
    """Signs and verifies ServiceAccount JWTs with one key (file `sa.key`)."""

    def __init__(
        self,
        private_key: PrivateKey,
        *,
        issuer: str = DEFAULT_ISSUER,
        api_audiences: Sequence[str] | None = None,
    ) -> None:
        if isinstance(private_key, ec.EllipticCurvePrivateKey) and private_key.curve.name != "secp256r1":
            raise ValueError("an ECDSA service account key must use the P-256 curve")
        self._key = private_key
        self.issuer = issuer
        #: kube-apiserver's --api-audiences: what a token must be for to authenticate to the API.
        self.api_audiences: tuple[str, ...] = tuple(api_audiences or (issuer,))
        self.algorithm: Algorithm = "RS256" if isinstance(private_key, rsa.RSAPrivateKey) else "ES256"
        der = private_key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        self.key_id = _b64(hashlib.sha256(der).digest())

    @classmethod
    def generate(
        cls,
        *,
        algorithm: Algorithm = "RS256",
        issuer: str = DEFAULT_ISSUER,
        api_audiences: Sequence[str] | None = None,
    ) -> TokenSigner:
        key: PrivateKey
        key = (
            rsa.generate_private_key(public_exponent=65537, key_size=2048)
            if algorithm == "RS256"
            else ec.generate_private_key(ec.SECP256R1())
        )
        return cls(key, issuer=issuer, api_audiences=api_audiences)

    @classmethod
    def load(
        cls, directory: Path, *, issuer: str = DEFAULT_ISSUER, api_audiences: Sequence[str] | None = None
    ) -> TokenSigner:
        key = serialization.load_pem_private_key((directory / SA_KEY_FILE).read_bytes(), password=None)
        if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
            raise ValueError(f"{directory / SA_KEY_FILE}: need an RSA or P-256 ECDSA key")
        return cls(key, issuer=issuer, api_audiences=api_audiences)

    def save(self, directory: Path) -> None:
        pem = self._key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        write_file_atomically(directory / SA_KEY_FILE, pem)

    # -- signing ---------------------------------------------------------------------------------

    def _signature(self, signing_input: bytes) -> bytes:
        if isinstance(self._key, rsa.RSAPrivateKey):
            return self._key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
        r, s = utils.decode_dss_signature(self._key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
        return _int_bytes(r, 32) + _int_bytes(s, 32)

    def _encode(self, payload: Mapping[str, Any]) -> str:
        signing_input = (
            f"{_json_segment({'alg': self.algorithm, 'kid': self.key_id})}.{_json_segment(payload)}"
        )
        return f"{signing_input}.{_b64(self._signature(signing_input.encode('ascii')))}"

    def issue(
        self,
        *,
        namespace: str,
        service_account: str,
        service_account_uid: str,
        audiences: Sequence[str] = (),
        expiration_seconds: int = DEFAULT_EXPIRATION_SECONDS,
        bound_object: Mapping[str, Any] | None = None,
        now: dt.datetime,
    ) -> tuple[str, dt.datetime]:
        """A bound token, as TokenRequest issues it; returns (token, status.expirationTimestamp).

        `audiences` defaults to the API audiences; `expiration_seconds` outside
        [600, 2^32] raises a 422 APIError. `bound_object` is what `bind_object` returns
        ({"kind": "Pod"|"Secret"|"Node", "name", "uid", and for a Pod optionally "node"}).
        A pod-bound request for 3607 seconds with API audiences gets a one-year token with
        `warnafter`, as kube-apiserver's --service-account-extend-token-expiration does.
        """
        validate_expiration(expiration_seconds)
        auds = list(audiences) or list(self.api_audiences)
        lifetime = expiration_seconds
        kube: dict[str, Any] = {
            "namespace": namespace,
            "serviceaccount": ObjectRef(service_account, service_account_uid).as_claim(),
        }
        if bound_object:
            kube.update(_bound_claims(bound_object))
        if self._extends(bound_object, expiration_seconds, auds):
            kube["warnafter"] = _ts(now) + expiration_seconds
            lifetime = EXTENDED_EXPIRATION_SECONDS
        payload = {
            "iss": self.issuer,
            "sub": service_account_username(namespace, service_account),
            "aud": auds,
            "iat": _ts(now),
            "nbf": _ts(now),
            "exp": _ts(now) + lifetime,
            "jti": str(uuid.uuid4()),
            "kubernetes.io": kube,
        }
        return self._encode(payload), now + dt.timedelta(seconds=expiration_seconds)

    def _extends(
        self, bound_object: Mapping[str, Any] | None, expiration_seconds: int, auds: list[str]
    ) -> bool:
        return (
            bound_object is not None
            and bound_object.get("kind") == "Pod"
            and expiration_seconds == WARN_ONLY_EXPIRATION_SECONDS
            and set(auds) <= set(self.api_audiences)
        )

    def issue_legacy(
        self, namespace: str, service_account: str, service_account_uid: str, secret_name: str
    ) -> str:
        """A long-lived token for a `kubernetes.io/service-account-token` Secret (legacy claim shape)."""
        payload = {
            "iss": LEGACY_ISSUER,
            "sub": service_account_username(namespace, service_account),
            "kubernetes.io/serviceaccount/namespace": namespace,
            "kubernetes.io/serviceaccount/secret.name": secret_name,
            "kubernetes.io/serviceaccount/service-account.name": service_account,
            "kubernetes.io/serviceaccount/service-account.uid": service_account_uid,
        }
        return self._encode(payload)

    # -- verification ----------------------------------------------------------------------------

    def _check_signature(self, signing_input: bytes, signature: bytes) -> None:
        public = self._key.public_key()
        try:
            if isinstance(public, rsa.RSAPublicKey):
                public.verify(signature, signing_input, padding.PKCS1v15(), hashes.SHA256())
                return
            if len(signature) != 64:
                raise InvalidSignature
            der = utils.encode_dss_signature(int.from_bytes(signature[:32]), int.from_bytes(signature[32:]))
            public.verify(der, signing_input, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature as exc:
            raise InvalidTokenError("invalid signature") from exc

    def _decode(self, token: str) -> dict[str, Any]:
        """The payload of a well-formed token of ours whose signature verifies."""
        parts = token.split(".")
        if len(parts) != 3 or token.lstrip().startswith("{"):
            raise InvalidTokenError("invalid bearer token")
        try:
            header = json.loads(_unb64(parts[0]))
            payload = json.loads(_unb64(parts[1]))
            signature = _unb64(parts[2])
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidTokenError("invalid bearer token") from exc
        if not isinstance(header, dict) or not isinstance(payload, dict):
            raise InvalidTokenError("invalid bearer token")
        if payload.get("iss") not in (self.issuer, LEGACY_ISSUER):
            raise InvalidTokenError("invalid bearer token")
        if header.get("alg") != self.algorithm or header.get("kid", self.key_id) != self.key_id:
            raise InvalidTokenError("invalid signature, no keys found")
        self._check_signature(f"{parts[0]}.{parts[1]}".encode("ascii"), signature)
        return payload

    def verify(self, token: str, *, now: dt.datetime) -> Claims:
        """Check signature, issuer, shape and time claims; raise `InvalidTokenError` otherwise."""
        payload = self._decode(token)
        if payload["iss"] == LEGACY_ISSUER:
            return _legacy_claims(payload)
        claims = _bound_token_claims(payload)
        _check_times(claims, now)
        return claims

    # -- discovery -------------------------------------------------------------------------------

    def jwks(self) -> dict[str, Any]:
        """The public key set served at /openid/v1/jwks."""
        public = self._key.public_key()
        key: dict[str, Any] = {"use": "sig", "kid": self.key_id, "alg": self.algorithm}
        if isinstance(public, rsa.RSAPublicKey):
            numbers = public.public_numbers()
            key |= {"kty": "RSA", "n": _b64(_int_bytes(numbers.n, (numbers.n.bit_length() + 7) // 8))}
            key["e"] = _b64(_int_bytes(numbers.e, (numbers.e.bit_length() + 7) // 8))
        else:
            ec_numbers = public.public_numbers()
            key |= {"kty": "EC", "crv": "P-256", "x": _b64(_int_bytes(ec_numbers.x, 32))}
            key["y"] = _b64(_int_bytes(ec_numbers.y, 32))
        return {"keys": [key]}

    def openid_configuration(self, *, jwks_uri: str) -> dict[str, Any]:
        """The document served at /.well-known/openid-configuration."""
        return {
            "issuer": self.issuer,
            "jwks_uri": jwks_uri,
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": [self.algorithm],
        }


def _bound_claims(bound_object: Mapping[str, Any]) -> dict[str, Any]:
    kind = bound_object["kind"]
    ref = ObjectRef(str(bound_object["name"]), str(bound_object.get("uid", "")))
    claims: dict[str, Any] = {kind.lower(): ref.as_claim()}
    node = bound_object.get("node")
    if kind == "Pod" and node:
        claims["node"] = ObjectRef(str(node["name"]), str(node.get("uid", ""))).as_claim()
    return claims


def _ref(value: Any, claim: str) -> ObjectRef | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise InvalidTokenError(f"invalid {claim} claim")
    return ObjectRef(value["name"], str(value.get("uid", "")))


def _audiences(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(a, str) for a in value):
        return tuple(value)
    if value is None:
        return ()
    raise InvalidTokenError("invalid aud claim")


def _bound_token_claims(payload: Mapping[str, Any]) -> Claims:
    kube = payload.get("kubernetes.io")
    if not isinstance(kube, dict):
        raise InvalidTokenError(
            "service account token claims could not be validated: kubernetes.io claim is missing"
        )
    service_account = _ref(kube.get("serviceaccount"), "kubernetes.io.serviceaccount")
    namespace = kube.get("namespace")
    if service_account is None or not isinstance(namespace, str) or not namespace:
        raise InvalidTokenError(
            "service account token claims could not be validated: namespace claim is missing"
        )
    return Claims(
        issuer=str(payload["iss"]),
        subject=str(payload.get("sub", "")),
        namespace=namespace,
        service_account=service_account,
        audiences=_audiences(payload.get("aud")),
        pod=_ref(kube.get("pod"), "kubernetes.io.pod"),
        secret=_ref(kube.get("secret"), "kubernetes.io.secret"),
        node=_ref(kube.get("node"), "kubernetes.io.node"),
        jti=str(payload.get("jti", "")),
        issued_at=_from_ts(payload.get("iat"), "iat"),
        not_before=_from_ts(payload.get("nbf"), "nbf"),
        expires_at=_from_ts(payload.get("exp"), "exp"),
        warn_after=_from_ts(kube.get("warnafter"), "warnafter"),
        raw=payload,
    )


def _check_times(claims: Claims, now: dt.datetime) -> None:
    if claims.expires_at is None or now > claims.expires_at + LEEWAY:
        raise InvalidTokenError("service account token has expired")
    if claims.not_before is not None and now + LEEWAY < claims.not_before:
        raise InvalidTokenError("service account token is not valid yet")
    if claims.issued_at is not None and now + LEEWAY < claims.issued_at:
        raise InvalidTokenError("service account token is issued in the future")


_LEGACY_CLAIMS = {
    "namespace": "kubernetes.io/serviceaccount/namespace",
    "secretName": "kubernetes.io/serviceaccount/secret.name",
    "serviceAccountName": "kubernetes.io/serviceaccount/service-account.name",
    "serviceAccountUID": "kubernetes.io/serviceaccount/service-account.uid",
}


def _legacy_claims(payload: Mapping[str, Any]) -> Claims:
    subject = payload.get("sub")
    if not isinstance(subject, str) or not subject:
        raise InvalidTokenError("sub claim is missing")
    values: dict[str, str] = {}
    for label, claim in _LEGACY_CLAIMS.items():
        value = payload.get(claim)
        if not isinstance(value, str) or not value:
            raise InvalidTokenError(f"{label} claim is missing")
        values[label] = value
    if subject != service_account_username(values["namespace"], values["serviceAccountName"]):
        raise InvalidTokenError("sub claim is invalid")
    return Claims(
        issuer=LEGACY_ISSUER,
        subject=subject,
        namespace=values["namespace"],
        service_account=ObjectRef(values["serviceAccountName"], values["serviceAccountUID"]),
        audiences=_audiences(payload.get("aud")),
        legacy=True,
        secret=ObjectRef(values["secretName"]),
        raw=payload,
    )
