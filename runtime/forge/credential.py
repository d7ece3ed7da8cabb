"""The authentication service's HTTP contract, and the kubeconfig a consumer builds from its answer.

Both ends build and read the same shapes from here: the provider's auth service renders
its answers with `cluster_info` and `identity_response`, the consumer's controllers
send `identity_request` and `signed_request` bodies and read the answers with
`parse_cluster_info` and `parse_identity_response`, which validate every field, so a
provider without our runtime (or a broken one) is told apart from a refusal. The
consumer stores `kubeconfig(credential)` in its credential Secret, and every client of
the provider (controllers, the virtual kubelet) loads it like any kubeconfig.

Signed requests (renew, revoke) carry an Ed25519 signature over
`<action>\\n<clusterID>\\n<timestamp>` made with the consumer's private key; signing
itself is left to the caller (`sign`), so this module stays free of cryptography.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from runtime.api.objects import JSON
from runtime.api.timestamps import parse_rfc3339, rfc3339

#: what `GET /v1/cluster` answers in `runtime`, so a consumer knows it talks to this runtime (the
#: product's name on the wire, whichever distribution carries it)
RUNTIME = "liqo-iac"

CLUSTER_PATH = "/v1/cluster"
IDENTITY_PATH = "/v1/identity"
RENEW_PATH = "/v1/identity/renew"
REVOKE_PATH = "/v1/identity/revoke"

SignedAction = Literal["renew", "revoke"]
RENEW: SignedAction = "renew"
REVOKE: SignedAction = "revoke"

# Error reasons (the `reason` of an error body).
INVALID_REQUEST = "InvalidRequest"
INVALID_TOKEN = "InvalidToken"
INVALID_SIGNATURE = "InvalidSignature"
CLUSTER_ID_CONFLICT = "ClusterIDConflict"
KEY_CHANGE_REFUSED = "KeyChangeRefused"
TOO_MANY_REQUESTS = "TooManyRequests"
TENANT_TERMINATING = "TenantTerminating"
TENANT_DRAINED = "TenantDrained"

#: the user and context names inside a credential kubeconfig
KUBECONFIG_USER = "liqo-consumer"


class CredentialResponseError(ValueError):
    """An answer of the auth service that does not have the contract's shape; `field` names the culprit."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class ClusterInfo:
    cluster_id: str
    cluster_name: str
    version: str


def cluster_info(info: ClusterInfo) -> JSON:
    """The body of `GET /v1/cluster`."""
    return {
        "clusterID": info.cluster_id,
        "clusterName": info.cluster_name,
        "version": info.version,
        "runtime": RUNTIME,
    }


def parse_cluster_info(body: object) -> ClusterInfo:
    """What `GET /v1/cluster` says; CredentialResponseError when the answer is not from this runtime."""
    fields = _object(body)
    if fields.get("runtime") != RUNTIME:
        raise CredentialResponseError("runtime", f"expected {RUNTIME!r}, got {fields.get('runtime')!r}")
    return ClusterInfo(
        cluster_id=_text(fields, "clusterID"),
        cluster_name=_text(fields, "clusterName"),
        version=_text(fields, "version"),
    )


@dataclass(frozen=True, repr=False)
class Credential:
    """A consumer's credential on a provider, as the auth service issued it."""

    cluster_id: str
    cluster_name: str
    version: str
    api_server_url: str
    #: base64 of the PEM CA bundle of the provider's API server ("": trust the system's roots)
    ca_data: str
    #: the consumer's tenant namespace on the provider
    namespace: str
    token: str
    expires_at: datetime

    def __repr__(self) -> str:
        return (
            f"Credential(cluster_id={self.cluster_id!r}, cluster_name={self.cluster_name!r}, "
            f"api_server_url={self.api_server_url!r}, namespace={self.namespace!r}, "
            f"expires_at={rfc3339(self.expires_at)!r}, token=<redacted>)"
        )


def identity_response(credential: Credential) -> JSON:
    """The body of a successful `POST /v1/identity` (or renew)."""
    return {
        "clusterID": credential.cluster_id,
        "clusterName": credential.cluster_name,
        "version": credential.version,
        "apiServer": {"url": credential.api_server_url, "caData": credential.ca_data},
        "namespace": credential.namespace,
        "token": credential.token,
        "expiresAt": rfc3339(credential.expires_at),
    }


def parse_identity_response(body: object) -> Credential:
    """The credential in an identity (or renew) answer; CredentialResponseError naming the bad field."""
    fields = _object(body)
    api_server = fields.get("apiServer")
    if not isinstance(api_server, Mapping):
        raise CredentialResponseError("apiServer", "missing or not an object")
    url = _text(api_server, "url", prefix="apiServer.")
    if not url.startswith("https://"):
        raise CredentialResponseError("apiServer.url", f"{url!r} is not an https:// URL")
    ca_data = api_server.get("caData", "")
    if not isinstance(ca_data, str):
        raise CredentialResponseError("apiServer.caData", "not a string")
    if ca_data:
        try:
            base64.b64decode(ca_data, validate=True)
        except binascii.Error:
            raise CredentialResponseError("apiServer.caData", "not base64") from None
    expires_at = _text(fields, "expiresAt")
    try:
        expiry = parse_rfc3339(expires_at)
    except ValueError as exc:
        raise CredentialResponseError("expiresAt", str(exc)) from None
    return Credential(
        cluster_id=_text(fields, "clusterID"),
        cluster_name=_text(fields, "clusterName"),
        version=_text(fields, "version"),
        api_server_url=url,
        ca_data=ca_data,
        namespace=_text(fields, "namespace"),
        token=_text(fields, "token"),
        expires_at=expiry,
    )


def kubeconfig(credential: Credential) -> JSON:
    """The kubeconfig for the provider: its API server, the tenant namespace as context namespace, the token."""
    cluster: JSON = {"server": credential.api_server_url}
    if credential.ca_data:
        cluster["certificate-authority-data"] = credential.ca_data
    name = credential.cluster_name
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": KUBECONFIG_USER, "user": {"token": credential.token}}],
        "contexts": [
            {
                "name": name,
                "context": {"cluster": name, "user": KUBECONFIG_USER, "namespace": credential.namespace},
            }
        ],
        "current-context": name,
    }


def identity_request(
    *,
    token: str,
    cluster_id: str,
    cluster_name: str,
    public_key: bytes,
    previous_key: Callable[[bytes], bytes] | None = None,
) -> JSON:
    """The body of `POST /v1/identity`: the peering token and the consumer's identity (raw Ed25519 key).

    A consumer already peered that presents a new key proves it holds the old one: `previous_key` is
    that key's `sign`, which signs `key_change_message` into `keyChangeSignature`. Without it, the
    provider refuses a key other than the one it has for the cluster id (KeyChangeRefused).
    """
    encoded = base64.b64encode(public_key).decode("ascii")
    body = {"token": token, "clusterID": cluster_id, "clusterName": cluster_name, "publicKey": encoded}
    if previous_key is not None:
        signature = previous_key(key_change_message(cluster_id=cluster_id, public_key=encoded))
        body["keyChangeSignature"] = base64.b64encode(signature).decode("ascii")
    return body


def key_change_message(*, cluster_id: str, public_key: str) -> bytes:
    """The bytes the old key signs to hand a cluster id over to the new key (base64, as sent)."""
    return f"rekey\n{cluster_id}\n{public_key}".encode()


def signed_message(action: SignedAction, *, cluster_id: str, timestamp: str) -> bytes:
    """The bytes a renew or revoke request signs (the timestamp exactly as sent)."""
    return f"{action}\n{cluster_id}\n{timestamp}".encode()


def signed_request(
    action: SignedAction, *, cluster_id: str, timestamp: datetime, sign: Callable[[bytes], bytes]
) -> JSON:
    """The body of a renew or revoke request; `sign` is the consumer's Ed25519 private key's `sign`."""
    stamp = rfc3339(timestamp, precise=True)
    signature = sign(signed_message(action, cluster_id=cluster_id, timestamp=stamp))
    return {
        "clusterID": cluster_id,
        "timestamp": stamp,
        "signature": base64.b64encode(signature).decode("ascii"),
    }


def error_body(reason: str, message: str) -> JSON:
    """The body of every error answer."""
    return {"reason": reason, "message": message}


def _object(body: object) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise CredentialResponseError("body", "not a JSON object")
    return body


def _text(fields: Mapping[str, Any], key: str, *, prefix: str = "") -> str:
    value = fields.get(key)
    if not isinstance(value, str) or not value:
        raise CredentialResponseError(f"{prefix}{key}", "missing or not a non-empty string")
    return value
