"""The Identity controller (consumer side): renews each credential for a provider before it expires.

An Identity (written by the ForeignCluster controller when it authenticated) names the
credential Secret for one provider; its status says when the credential expires and when
to renew it (`renewAfter`: 80 % of its lifetime, `credential_renew_fraction`). At that time
this controller asks the provider's auth service for a fresh one (`POST
/v1/identity/renew`, signed with the consumer's Ed25519 key: no peering token needed) and
stores it in the same Secret, which the virtual kubelet and the peering read through the
API, so the renewal reaches them without restarts.

A failed renewal is reported in the Identity's `CredentialRenewed` condition and retried
with growing delays, at most a tenth of the time left (at least every second, at most
every minute); if the credential expires anyway, the ForeignCluster controller
authenticates again with the peering token. Identities whose ForeignCluster is gone or
being deleted are left to the unpeer.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS, IDENTITIES
from runtime.api.kinds import CONFIGMAPS, SECRETS
from runtime.core import Client, Informer, Manager, MapFunc, Request, Result, TemporaryError
from runtime.forge import conditions

from ..core import authclient, keys, objects
from ..core.credentials import store_credential
from ..core.foreigncluster import PEERING_SECRETS
from ..core.peering import LocalCluster
from ..options import ControllerOptions

logger = logging.getLogger(__name__)

JSON = dict[str, Any]

NAME = "identity"
#: bounds of the delay between failed renewals
RETRY_MIN = 1.0
RETRY_MAX = 60.0


class IdentityReconciler:
    def __init__(
        self,
        client: Client,
        *,
        identities: Informer,
        foreign_clusters: Informer,
        peering_secrets: Informer,
        cluster_identity: Informer,
        options: ControllerOptions,
    ) -> None:
        self._client = client
        self._identities = identities
        self._foreign_clusters = foreign_clusters
        self._peering_secrets = peering_secrets
        self._cluster_identity = cluster_identity
        self._options = options

    async def reconcile(self, request: Request) -> Result | None:
        identity = self._identities.store.get(request.name, namespace=request.namespace)
        if identity is None or (identity.get("metadata") or {}).get("deletionTimestamp"):
            return None
        renew_at = objects.renew_at(identity)
        if renew_at is None:
            return None
        wait = (renew_at - datetime.now(UTC)).total_seconds()
        if wait > 0:
            return Result(requeue_after=wait)
        spec = identity.get("spec") or {}
        provider = str(spec.get("clusterName") or request.name)
        foreign_cluster = self._foreign_clusters.store.get(request.name)
        if foreign_cluster is None or (foreign_cluster.get("metadata") or {}).get("deletionTimestamp"):
            return None
        auth_url = str((foreign_cluster.get("spec") or {}).get("authURL") or "")
        local = LocalCluster.of(next(iter(self._cluster_identity.store), None))
        key = keys.private_key(
            self._peering_secrets.store.get(keys.keys_secret_name(request.name), namespace=request.namespace)
        )
        if local is None or key is None or not auth_url:
            missing = (
                "this cluster's identity"
                if local is None
                else "the key pair"
                if key is None
                else "the authURL"
            )
            await self._failed(identity, f"{missing} is missing; the peering will authenticate again")
            return None
        service = authclient.AuthClient(
            auth_url, timeout=self._options.auth_timeout, pinned=authclient.pinned_key(foreign_cluster)
        )
        issued_at = datetime.now(UTC)
        try:
            credential = await service.renew(cluster_id=local.cluster_id, sign=key.sign)
        except authclient.AuthServiceError as exc:
            await self._failed(identity, f"renewing with {auth_url} failed ({exc.reason}): {exc.detail}")
            raise TemporaryError(
                f"{request}: renewal failed: {exc}", delay=self._retry_delay(identity)
            ) from None
        renew = await store_credential(
            self._client,
            provider=request.name,
            namespace=request.namespace,
            credential=credential,
            cluster_labels=objects.cluster_labels_of(identity),
            key_fingerprint=str((identity.get("spec") or {}).get(c.AUTH_KEY_FINGERPRINT_FIELD) or ""),
            issued_at=issued_at,
            renew_fraction=self._options.credential_renew_fraction,
            condition=conditions.condition(
                c.CONDITION_CREDENTIAL_RENEWED,
                True,
                reason="Renewed",
                message=f"renewed by {provider}; valid until {credential.expires_at.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}",
            ),
        )
        logger.info(
            "%s: renewed the credential for %s; next renewal at %s", request, provider, renew.isoformat()
        )
        return Result(requeue_after=max((renew - datetime.now(UTC)).total_seconds(), RETRY_MIN))

    def _retry_delay(self, identity: JSON) -> float:
        expires = objects.expires_at(identity)
        left = (expires - datetime.now(UTC)).total_seconds() if expires is not None else 0.0
        return min(max(left / 10, RETRY_MIN), RETRY_MAX)

    async def _failed(self, identity: JSON, message: str) -> None:
        meta = identity["metadata"]
        current = (identity.get("status") or {}).get("conditions")
        wanted = conditions.condition(
            c.CONDITION_CREDENTIAL_RENEWED, False, reason="RenewalFailed", message=message
        )
        if not conditions.differs(current, [wanted]):
            return
        merged = conditions.merged(current, [wanted], at=conditions.now())
        logger.warning("%s/%s: %s", meta.get("namespace"), meta.get("name"), message)
        await self._client.patch_status(
            IDENTITIES,
            str(meta["name"]),
            {"status": {"conditions": merged}},
            namespace=str(meta["namespace"]),
            field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
        )


def _identity_of(identities: Informer) -> MapFunc:
    """A ForeignCluster or a key pair Secret -> the Identity for the same provider."""

    def map_to_identity(obj: JSON) -> list[Request]:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        if obj.get("kind") == "Secret":
            name = name.removeprefix(c.KEYS_SECRET_PREFIX)
        cluster_id = ((meta.get("labels") or {}).get(c.LABEL_REMOTE_CLUSTER_ID)) or (
            obj.get("spec") or {}
        ).get("clusterID")
        return [
            Request(str(identity["metadata"]["namespace"]), str(identity["metadata"]["name"]))
            for identity in identities.store
            if identity["metadata"]["name"] == name
            and (identity.get("spec") or {}).get("clusterID") == cluster_id
        ]

    return map_to_identity


def setup(manager: Manager, options: ControllerOptions) -> None:
    """Register the Identity controller with `manager`."""
    identities = manager.informer(IDENTITIES)
    foreign_clusters = manager.informer(FOREIGNCLUSTERS)
    peering_secrets = manager.informer(SECRETS, label_selector=PEERING_SECRETS)
    cluster_identity = manager.informer(
        CONFIGMAPS,
        namespace=options.namespace,
        field_selector=f"metadata.name={c.CLUSTER_IDENTITY_CONFIGMAP}",
    )
    reconciler = IdentityReconciler(
        manager.client,
        identities=identities,
        foreign_clusters=foreign_clusters,
        peering_secrets=peering_secrets,
        cluster_identity=cluster_identity,
        options=options,
    )
    controller = manager.controller(NAME, reconciler, primary=identities)
    controller.watches(foreign_clusters, _identity_of(identities))
    controller.watches(peering_secrets, _identity_of(identities))
