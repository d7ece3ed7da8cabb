"""Issuing a consumer's identity on this provider: its objects, then a ServiceAccount token.

On a valid peering token the consumer gets its tenant namespace `liqo-tenant-<name>`
(created once, never patched: the service may not change any namespace), then (server-side
apply, field manager `liqo-auth`) its Tenant (cluster id, name,
public key), the ServiceAccount `liqo-consumer` and the RoleBinding of
`liqo-remote-consumer` to it, all described by `runtime.forge.tenant`; then a
TokenRequest for the ServiceAccount gives the credential. Renewal issues a fresh token
for a Tenant that already exists (after `renewal.py` checked the signature).

Names are first come, first served: a cluster name already held by another cluster id,
or a cluster id already peered under another name, is a conflict (409), never a
takeover. A cluster id is bound to its public key as well: presenting another key for a
consumer that has a Tenant needs a signature by the key on record over the new one
(`keyChangeSignature`, `runtime.forge.credential.key_change_message`), else the answer is
409 KeyChangeRefused. A cluster id is no secret (it is on every object the consumer
reflects), so without this, anyone holding a peering token could replace a consumer's key
and take its tenant over, renewals and revocation included. A consumer that lost its key
unpeers (its credential then lapses and the Tenant is collected) or the provider's
administrator deletes its Tenant.

A peering token is bound to the first consumer that uses it (`runtime.forge.tokens`): the
Tenant names the token's Secret (the controller manager copies the consumer's cluster id
onto the Secret, where it outlives the Tenant), and a token that a Tenant of another
cluster id names, that its Secret says is bound to another, or that a single-use Secret
says was used, is refused as any invalid token is (401, the cause in the log). So a token
leaked after use is worth nothing, and one leaked before use is worth one consumer.

Issuing is serialised in this process, so two concurrent exchanges for one name, or for
one token, cannot both pass these checks: the tokens this process bound are remembered
until the Tenant cache shows them (the cache lags behind the apply).
"""

from __future__ import annotations

import asyncio
import base64
import logging
from dataclasses import dataclass
from datetime import datetime

from runtime.api import constants as c
from runtime.api.crds import TENANTS
from runtime.api.kinds import NAMESPACES, ROLEBINDINGS, SERVICEACCOUNTS
from runtime.api.objects import JSON, nested
from runtime.api.timestamps import parse_rfc3339, rfc3339
from runtime.core import AlreadyExistsError, Client, Informer, NotFoundError, Resource
from runtime.forge.credential import ClusterInfo, Credential, key_change_message
from runtime.forge.tenant import (
    CONSUMER_SERVICE_ACCOUNT,
    is_tenant_namespace_of,
    role_binding,
    service_account,
    tenant,
    tenant_namespace,
    tenant_namespace_name,
)
from runtime.forge.tokens import bound_consumer, is_single_use

from .errors import (
    ClusterIDConflictError,
    InvalidTokenError,
    KeyChangeRefusedError,
    TenantDrainedError,
    TenantTerminatingError,
)
from .signatures import is_signed_by

logger = logging.getLogger(__name__)


#: the Tenant informer's index by `spec.clusterID`
CLUSTER_ID_INDEX = "clusterID"
#: the Tenant informer's index by the token Secret its consumer presented (`runtime.forge.tokens.tenant_token`)
TOKEN_INDEX = "peeringToken"
#: how long a consumer is told to wait when its previous tenant is still being removed
TERMINATING_RETRY_AFTER = 5


def cluster_id_of(obj: JSON) -> list[str]:
    """Index function: a Tenant's consumer cluster id."""
    cluster_id = nested(obj, "spec", "clusterID")
    return [str(cluster_id)] if cluster_id else []


def is_deleting(obj: JSON) -> bool:
    return bool(nested(obj, "metadata", "deletionTimestamp"))


def is_drained(obj: JSON) -> bool:
    return bool(nested(obj, "spec", "tenantCondition") == "Drained")


@dataclass(frozen=True)
class IdentityRequest:
    """A consumer's identity, as validated by the app."""

    cluster_id: str
    cluster_name: str
    #: base64 of the raw Ed25519 public key
    public_key: str
    #: the key on record's signature over the new one, when the consumer changes its key
    key_change_signature: bytes | None = None


@dataclass(frozen=True)
class ProviderIdentity:
    """What every credential says about this provider."""

    cluster: ClusterInfo
    #: the API server URL consumers reach (the `--api-server-url`)
    api_server_url: str
    #: PEM CA bundle of that API server (empty: consumers trust their system roots)
    certificate_authority: bytes


class IdentityIssuer:
    def __init__(
        self, client: Client, tenants: Informer, *, provider: ProviderIdentity, token_ttl: int
    ) -> None:
        self._client = client
        self._tenants = tenants
        self._provider = provider
        self._token_ttl = token_ttl
        self._lock = asyncio.Lock()
        #: token Secret name -> cluster id, for tokens bound here that the Tenant cache may not show yet
        self._bound: dict[str, str] = {}

    async def issue(self, request: IdentityRequest, *, token_secret: JSON) -> Credential:
        """Ensure the consumer's objects and return a fresh credential; 401/409/403/503 errors as described above."""
        token_name = str(token_secret["metadata"]["name"])
        async with self._lock:
            namespace = tenant_namespace_name(request.cluster_name)
            self._check_token(token_secret, request)
            if not await self._check(request, namespace):
                await self._create_namespace(request, namespace)
            # the Tenant last, so its controller finds the consumer's access already in place
            await self._ensure_access(request.cluster_id, namespace)
            await self._apply(
                TENANTS,
                tenant(
                    cluster_id=request.cluster_id,
                    cluster_name=request.cluster_name,
                    public_key=request.public_key,
                    peering_token=token_name,
                ),
            )
            self._bound[token_name] = request.cluster_id
            credential = await self._credential(request.cluster_name, namespace)
        logger.info(
            "%s/%s: issued a credential to cluster %s (expires %s)",
            namespace,
            request.cluster_name,
            request.cluster_id,
            rfc3339(credential.expires_at),
        )
        return credential

    async def reissue(self, tenant_obj: JSON) -> Credential:
        """A fresh credential for an existing Tenant (a renewal), repairing its ServiceAccount and RoleBinding."""
        meta, spec = tenant_obj["metadata"], tenant_obj.get("spec") or {}
        if is_drained(tenant_obj):
            raise TenantDrainedError(_drained_message(f"{meta['namespace']}/{meta['name']}"))
        await self._ensure_access(str(spec["clusterID"]), str(meta["namespace"]))
        credential = await self._credential(str(meta["name"]), str(meta["namespace"]))
        logger.info(
            "%s/%s: renewed the credential of cluster %s (expires %s)",
            meta["namespace"],
            meta["name"],
            spec["clusterID"],
            rfc3339(credential.expires_at),
        )
        return credential

    async def revoke(self, tenant_obj: JSON) -> None:
        """Delete the Tenant; its controller removes the tenant namespace and everything in it."""
        meta = tenant_obj["metadata"]
        try:
            await self._client.delete(
                TENANTS, meta["name"], namespace=meta["namespace"], preconditions={"uid": meta["uid"]}
            )
        except NotFoundError:
            return
        logger.info(
            "%s/%s: revoked by its consumer; the Tenant controller removes the tenant namespace",
            meta["namespace"],
            meta["name"],
        )

    def _check_token(self, secret: JSON, request: IdentityRequest) -> None:
        """InvalidTokenError when the token is bound to another consumer, or is single-use and was used."""
        name = str(secret["metadata"]["name"])
        users = {str(nested(t, "spec", "clusterID")) for t in self._tenants.store.by_index(TOKEN_INDEX, name)}
        pending = self._bound.get(name, "")
        if pending in users:
            del self._bound[name]  # the cache caught up
        users |= {user for user in (bound_consumer(secret), pending) if user}
        if is_single_use(secret) and users:
            why = "it is single-use and was used"
        elif users - {request.cluster_id}:
            why = f"it is bound to cluster {', '.join(sorted(users - {request.cluster_id}))}"
        else:
            return
        logger.warning(
            "%s/%s: refused the peering token presented by cluster %s: %s",
            secret["metadata"].get("namespace"),
            name,
            request.cluster_id,
            why,
        )
        raise InvalidTokenError()

    async def _check(self, request: IdentityRequest, namespace: str) -> bool:
        """Refuse a conflicting or terminating request; whether the tenant namespace (this consumer's) exists."""
        ref = f"{namespace}/{request.cluster_name}"
        for other in self._tenants.store.by_index(CLUSTER_ID_INDEX, request.cluster_id):
            other_meta = other["metadata"]
            if other_meta["name"] != request.cluster_name and not is_deleting(other):
                raise ClusterIDConflictError(
                    f"cluster id {request.cluster_id} is already peered as "
                    f"{other_meta['namespace']}/{other_meta['name']}: revoke that identity (unpeer) before "
                    f"peering under the name {request.cluster_name!r}"
                )
        existing = await self._get(TENANTS, request.cluster_name, namespace=namespace)
        if existing is not None:
            if nested(existing, "spec", "clusterID") != request.cluster_id:
                raise ClusterIDConflictError(
                    f"{ref}: the cluster name {request.cluster_name!r} is taken by another cluster id on this "
                    "provider: give the consumer cluster another name, or ask the provider's administrator "
                    "to remove that tenant"
                )
            _check_key_change(existing, request, ref)
            if is_deleting(existing):
                raise _terminating(ref)
            if is_drained(existing):
                raise TenantDrainedError(_drained_message(ref))
        ns = await self._get(NAMESPACES, namespace)
        if ns is not None:
            if is_deleting(ns):
                raise _terminating(ref)
            if not is_tenant_namespace_of(ns, request.cluster_id):
                raise ClusterIDConflictError(
                    f"namespace {namespace} exists and is not the tenant namespace of cluster "
                    f"{request.cluster_id}: give the consumer cluster another name, or remove that namespace"
                )
        return ns is not None

    async def _create_namespace(self, request: IdentityRequest, namespace: str) -> None:
        """Create the tenant namespace; an existing namespace is never changed (the service may not patch any)."""
        body = tenant_namespace(cluster_id=request.cluster_id, cluster_name=request.cluster_name)
        try:
            await self._client.create(NAMESPACES, body, field_manager=c.FIELD_MANAGER_AUTH)
        except AlreadyExistsError:
            await self._check(request, namespace)  # made meanwhile: this consumer's, or refused as any other

    async def _ensure_access(self, cluster_id: str, namespace: str) -> None:
        """The consumer's ServiceAccount and its RoleBinding of `liqo-remote-consumer`."""
        await self._apply(SERVICEACCOUNTS, service_account(cluster_id=cluster_id, namespace=namespace))
        await self._apply(ROLEBINDINGS, role_binding(cluster_id=cluster_id, namespace=namespace))

    async def _credential(self, tenant_name: str, namespace: str) -> Credential:
        """A token of the consumer's ServiceAccount; its expiry is recorded on the Tenant."""
        review = await self._client.create(
            SERVICEACCOUNTS,
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": self._token_ttl},
            },
            namespace=namespace,
            name=CONSUMER_SERVICE_ACCOUNT,
            subresource="token",
            field_manager=c.FIELD_MANAGER_AUTH,
        )
        status = review.get("status") or {}
        expires_at: datetime = parse_rfc3339(str(status["expirationTimestamp"]))
        await self._client.patch_status(
            TENANTS,
            tenant_name,
            {"status": {"tenantNamespace": namespace, "credentialExpiresAt": rfc3339(expires_at)}},
            namespace=namespace,
            field_manager=c.FIELD_MANAGER_AUTH,
        )
        provider = self._provider
        return Credential(
            cluster_id=provider.cluster.cluster_id,
            cluster_name=provider.cluster.cluster_name,
            version=provider.cluster.version,
            api_server_url=provider.api_server_url,
            ca_data=base64.b64encode(provider.certificate_authority).decode("ascii"),
            namespace=namespace,
            token=str(status["token"]),
            expires_at=expires_at,
        )

    async def _apply(self, resource: Resource, body: JSON) -> None:
        await self._client.apply(resource, body, field_manager=c.FIELD_MANAGER_AUTH, force=True)

    async def _get(self, resource: Resource, name: str, *, namespace: str | None = None) -> JSON | None:
        try:
            return await self._client.get(resource, name, namespace=namespace)
        except NotFoundError:
            return None


def _check_key_change(existing: JSON, request: IdentityRequest, ref: str) -> None:
    """KeyChangeRefusedError unless the request keeps the Tenant's key or the key on record signed the new one."""
    on_record = str(nested(existing, "spec", "publicKey") or "")
    if not on_record or on_record == request.public_key:
        return
    proof = request.key_change_signature
    message = key_change_message(cluster_id=request.cluster_id, public_key=request.public_key)
    if proof is not None and is_signed_by(on_record, message, proof):
        logger.info("%s: cluster %s changes its public key (signed by the old one)", ref, request.cluster_id)
        return
    logger.warning(
        "%s: refused a peering of cluster %s with another public key %s (%s)",
        ref,
        request.cluster_id,
        "signed by a key not on record" if proof is not None else "without the old key's signature",
        "a takeover attempt, or a consumer that lost its key",
    )
    raise KeyChangeRefusedError(
        f"{ref}: cluster {request.cluster_id} is peered with another public key; a new key must be signed by "
        "the old one (keyChangeSignature). A consumer that lost its key unpeers first, or the provider's "
        f"administrator deletes the Tenant {ref}"
    )


def _terminating(ref: str) -> TenantTerminatingError:
    return TenantTerminatingError(
        f"{ref}: the previous tenant of this cluster is still being removed; "
        f"try again in {TERMINATING_RETRY_AFTER} s",
        headers={"Retry-After": str(TERMINATING_RETRY_AFTER)},
    )


def _drained_message(ref: str) -> str:
    return (
        f"{ref}: the provider's administrator drained this consumer (tenantCondition Drained); "
        "ask them to set it back to Active"
    )
