"""Request authentication: who sent this request, from its client certificate or bearer token.

It follows kube-apiserver's authenticator chain. A client certificate (already verified
against the cluster CA by the TLS handshake) wins first: CN is the user, O the groups.
Otherwise an `Authorization: Bearer` token is tried against the static admin tokens,
then as a ServiceAccount JWT: signature, issuer, expiry and audiences, and then the
objects it names must still be there with the same uid (the ServiceAccount, a bound
Pod/Secret/Node, a legacy token's Secret, whose stored token must be this one). Every
authenticated user except anonymous also gets `system:authenticated`.

No credential at all gives `None` (the server then chooses anonymous or 401); a
credential that was presented but fails raises `AuthenticationError`, a 401 `APIError`
whose `cause` says why (never the token itself). `review` answers TokenReview the same way.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime as dt
import hashlib
import hmac
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import APIError, bad_request
from .identity import (
    ANONYMOUS_USER,
    AUTHENTICATED_GROUP,
    UNAUTHENTICATED_GROUP,
    UserInfo,
    service_account_user,
)
from .pki import subject_of
from .tokens import LEEWAY, Claims, InvalidTokenError, ObjectRef, TokenSigner

#: reads one object by (namespace, name), namespace "" for Nodes; None when it does not exist.
Lookup = Callable[[str, str], dict[str, Any] | None]

CREDENTIAL_ID_KEY = "authentication.kubernetes.io/credential-id"
POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
NODE_UID_KEY = "authentication.kubernetes.io/node-uid"
LEGACY_INVALID_SINCE_LABEL = "kubernetes.io/legacy-token-invalid-since"
_INVALIDATED = "service account token has been invalidated"


class AuthenticationError(APIError):
    """A presented credential that does not authenticate: answered with 401 Unauthorized."""

    def __init__(self, cause: str) -> None:
        super().__init__(401, "Unauthorized", "Unauthorized", {})
        self.cause = cause

    def __str__(self) -> str:
        return f"401 Unauthorized: {self.cause}"


@dataclass(frozen=True)
class TokenResult:
    """An authenticated token: the user, and the audiences the token was accepted for."""

    user: UserInfo
    audiences: tuple[str, ...]


def with_authenticated_group(user: UserInfo) -> UserInfo:
    """kube's authenticated-group adder: everyone but anonymous is in `system:authenticated`."""
    if user.name == ANONYMOUS_USER or {AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP} & set(user.groups):
        return user
    return dataclasses.replace(user, groups=(*user.groups, AUTHENTICATED_GROUP))


def certificate_user(peer_cert_der: bytes) -> UserInfo | None:
    """The user of a verified client certificate, or None when it has no CommonName."""
    common_name, organizations = subject_of(peer_cert_der)
    if not common_name:
        return None
    credential = "X509SHA256=" + hashlib.sha256(peer_cert_der).hexdigest()
    user = UserInfo(name=common_name, groups=tuple(organizations), extra={CREDENTIAL_ID_KEY: (credential,)})
    return with_authenticated_group(user)


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header; None for no or another scheme."""
    parts = (authorization or "").strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


def _go_quote(values: Sequence[str]) -> str:
    """Go's %q of a []string, as kube's audience error prints it."""
    return "[" + " ".join(f'"{v}"' for v in values) + "]"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _uid(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("uid", ""))


def _deleted_before(obj: Mapping[str, Any], moment: dt.datetime) -> bool:
    stamp = _meta(obj).get("deletionTimestamp")
    if not stamp:
        return False
    return dt.datetime.fromisoformat(str(stamp)) < moment


def _is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool(_meta(obj).get("deletionTimestamp"))


def _stored_token(secret: Mapping[str, Any]) -> bytes:
    data = secret.get("data")
    encoded = data.get("token", "") if isinstance(data, dict) else ""
    try:
        return base64.b64decode(str(encoded), validate=True)
    except (binascii.Error, ValueError):
        return b""


class Authenticator:
    """Maps a request's credentials to a `UserInfo`, reading live objects through lookups."""

    def __init__(
        self,
        *,
        admin_tokens: Mapping[str, UserInfo],
        signer: TokenSigner,
        service_accounts: Lookup,
        secrets: Lookup,
        pods: Lookup,
        nodes: Lookup,
    ) -> None:
        self._admin_tokens = dict(admin_tokens)
        self._signer = signer
        self._service_accounts = service_accounts
        self._secrets = secrets
        self._pods = pods
        self._nodes = nodes

    def authenticate(
        self, *, peer_cert_der: bytes | None, authorization: str | None, now: dt.datetime
    ) -> UserInfo | None:
        """The requesting user; None when no credential was presented.

        Raises `AuthenticationError` when a bearer token was presented and is not valid.
        """
        if peer_cert_der:
            user = certificate_user(peer_cert_der)
            if user is not None:
                return user
        token = bearer_token(authorization)
        if token is None:
            return None
        try:
            return self.authenticate_token(token, now=now).user
        except InvalidTokenError as exc:
            raise AuthenticationError(str(exc)) from exc

    def authenticate_token(
        self, token: str, *, audiences: Sequence[str] = (), now: dt.datetime
    ) -> TokenResult:
        """Authenticate a bearer token for `audiences` (default: the API audiences).

        Raises `InvalidTokenError` with kube's wording of the reason.
        """
        requested = tuple(audiences) or self._signer.api_audiences
        admin = self._admin_user(token)
        if admin is not None:
            return TokenResult(user=admin, audiences=requested)
        claims = self._signer.verify(token, now=now)
        accepted = self._accepted_audiences(claims, requested)
        user = (
            self._validate_legacy(token, claims) if claims.legacy else self._validate_bound(claims, now=now)
        )
        return TokenResult(user=with_authenticated_group(user), audiences=accepted)

    def review(self, token: str, *, audiences: Sequence[str] = (), now: dt.datetime) -> dict[str, Any]:
        """The `status` of an authentication.k8s.io/v1 TokenReview of `token`."""
        if not token:
            raise bad_request("token is required for TokenReview in authentication")
        try:
            result = self.authenticate_token(token, audiences=audiences, now=now)
        except InvalidTokenError as exc:
            return {"user": {}, "error": str(exc)}
        return {"authenticated": True, "user": result.user.as_dict(), "audiences": list(result.audiences)}

    def _admin_user(self, token: str) -> UserInfo | None:
        presented = token.encode()
        for candidate, user in self._admin_tokens.items():
            if hmac.compare_digest(candidate.encode(), presented):
                return with_authenticated_group(user)
        return None

    def _accepted_audiences(self, claims: Claims, requested: tuple[str, ...]) -> tuple[str, ...]:
        token_audiences = claims.audiences or self._signer.api_audiences
        accepted = tuple(a for a in token_audiences if a in requested)
        if not accepted:
            raise InvalidTokenError(
                f"token audiences {_go_quote(token_audiences)} is invalid for the target audiences "
                f"{_go_quote(requested)}"
            )
        return accepted

    def _service_account(self, claims: Claims) -> dict[str, Any]:
        ref = claims.service_account
        account = self._service_accounts(claims.namespace, ref.name)
        if account is None:
            raise InvalidTokenError(f'serviceaccounts "{ref.name}" not found')
        return account

    def _validate_bound(self, claims: Claims, *, now: dt.datetime) -> UserInfo:
        """pkg/serviceaccount/claims.go's validator: every object the token names must still be there."""
        cutoff = now - LEEWAY
        ref, namespace = claims.service_account, claims.namespace
        account = self._service_account(claims)
        if _uid(account) != ref.uid:
            raise InvalidTokenError(f"service account UID ({_uid(account)}) does not match claim ({ref.uid})")
        if _deleted_before(account, cutoff):
            raise InvalidTokenError(f"service account {namespace}/{ref.name} has been deleted")
        if claims.secret is not None:
            self._check_bound("secret", self._secrets(namespace, claims.secret.name), claims.secret, cutoff)
        if claims.pod is not None:
            self._check_bound("pod", self._pods(namespace, claims.pod.name), claims.pod, cutoff)
        elif claims.node is not None:
            self._check_bound("node", self._nodes("", claims.node.name), claims.node, cutoff)
        return _bound_user(claims)

    @staticmethod
    def _check_bound(kind: str, obj: dict[str, Any] | None, ref: ObjectRef, cutoff: dt.datetime) -> None:
        if obj is None:
            raise InvalidTokenError(_INVALIDATED)
        if _uid(obj) != ref.uid:
            raise InvalidTokenError(
                f"{kind} UID ({_uid(obj)}) does not match service account {kind} ref claim ({ref.uid})"
            )
        if _deleted_before(obj, cutoff):
            raise InvalidTokenError(_INVALIDATED)

    def _validate_legacy(self, token: str, claims: Claims) -> UserInfo:
        """pkg/serviceaccount/legacy.go's validator: the Secret must still hold this very token."""
        ref, namespace = claims.service_account, claims.namespace
        secret_name = claims.secret.name if claims.secret else ""
        secret = self._secrets(namespace, secret_name)
        if secret is None or _is_deleting(secret):
            raise InvalidTokenError("Token has been invalidated")
        if not hmac.compare_digest(_stored_token(secret), token.encode()):
            raise InvalidTokenError("Token does not match server's copy")
        account = self._service_account(claims)
        if _is_deleting(account):
            raise InvalidTokenError(f"ServiceAccount {namespace}/{ref.name} has been deleted")
        if _uid(account) != ref.uid:
            raise InvalidTokenError(f"ServiceAccount UID ({_uid(account)}) does not match claim ({ref.uid})")
        labels = _meta(secret).get("labels") or {}
        if labels.get(LEGACY_INVALID_SINCE_LABEL):
            raise InvalidTokenError(
                f"the token in secret {namespace}/{secret_name} for service account {namespace}/{ref.name} "
                "has been marked invalid. Use tokens from the TokenRequest API or manually created "
                f"secret-based tokens, or remove the '{LEGACY_INVALID_SINCE_LABEL}' label from the secret "
                "to temporarily allow use of this token"
            )
        return service_account_user(namespace, ref.name, ref.uid)


def _bound_user(claims: Claims) -> UserInfo:
    user = service_account_user(claims.namespace, claims.service_account.name, claims.service_account.uid)
    extra: dict[str, tuple[str, ...]] = {}
    if claims.pod is not None and claims.pod.uid:
        extra[POD_NAME_KEY] = (claims.pod.name,)
        extra[POD_UID_KEY] = (claims.pod.uid,)
    if claims.jti:
        extra[CREDENTIAL_ID_KEY] = (f"JTI={claims.jti}",)
    if claims.node is not None:
        extra[NODE_NAME_KEY] = (claims.node.name,)
        if claims.node.uid:
            extra[NODE_UID_KEY] = (claims.node.uid,)
    return dataclasses.replace(user, extra=extra) if extra else user
