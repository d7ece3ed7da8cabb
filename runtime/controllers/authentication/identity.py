"""The Identity controller (consumer side): renews each credential for a provider before it expires.

An Identity (written by the ForeignCluster controller when it authenticated) names the
credential Secret for one provider; its status says when the credential expires and when
to renew it (`renewAfter`: 80 % of its lifetime, `credential_renew_fraction`). At that time
this controller asks the provider's auth service for a fresh one (`POST
/v1/identity/renew`, signed with the consumer's Ed25519 key: no peering token needed) and
stores it in the same Secret, which the virtual kubelet and the peering read through the
API, so the renewal reaches them without restarts.

The auth service's key is checked against the one the peering trusts (`authclient.trusted_key`:
the ForeignCluster's `liqo.io/trust-auth-service-key` annotation, else the key pinned on the
first contact), and the Identity keeps the key the renewal was made with, so a key a user
trusted anew replaces the old pin at the next renewal. A failed renewal is reported in the
Identity's `CredentialRenewed` condition (the failure's reason, worded as the ForeignCluster's
condition would be; the ForeignCluster shows a changed key from there) and retried with
delays growing with how long it has been failing, at most a tenth of the time left (at least
every second, at most every minute); if the credential expires anyway, the ForeignCluster
controller authenticates again with the peering token. Identities whose ForeignCluster is
gone or being deleted are left to the unpeer.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import UTC, datetime

from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS, IDENTITIES
from runtime.api.kinds import CONFIGMAPS, SECRETS
from runtime.api.objects import JSON, nested
from runtime.api.views import IdentitySpec
from runtime.core import Client, Informer, Manager, MapFunc, Request, Result, TemporaryError
from runtime.forge import conditions

from ..core import authclient, keys, objects
from ..core.authenticate import messages
from ..core.credentials import store_credential
from ..core.foreigncluster import PEERING_SECRETS
from ..core.peering import LocalCluster
from ..options import ControllerOptions

logger = logging.getLogger(__name__)


NAME = "identity"
#: bounds of the delay between failed renewals
RETRY_MIN = 1.0
RETRY_MAX = 60.0
#: the CredentialRenewed reason when something here is missing (a failed call gives its own reason)
REASON_RENEWAL_FAILED = "RenewalFailed"


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
        if identity is None or nested(identity, "metadata", "deletionTimestamp"):
            return None
        renew_at = objects.renew_at(identity)
        if renew_at is None:
            return None
        wait = (renew_at - datetime.now(UTC)).total_seconds()
        if wait > 0:
            return Result(requeue_after=wait)
        spec: IdentitySpec = identity.get("spec") or {}
        provider = str(spec.get("clusterName") or request.name)
        foreign_cluster = self._foreign_clusters.store.get(request.name)
        if foreign_cluster is None or nested(foreign_cluster, "metadata", "deletionTimestamp"):
            return None
        auth_url = str(nested(foreign_cluster, "spec", "authURL") or "")
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
        pinned = authclient.trusted_key(foreign_cluster, identity)
        service = authclient.AuthClient(auth_url, timeout=self._options.auth_timeout, pinned=pinned)
        issued_at = datetime.now(UTC)
        try:
            credential = await service.renew(cluster_id=local.cluster_id, sign=key.sign)
        except authclient.AuthServiceError as exc:
            step = messages(exc, provider=provider)
            await self._failed(identity, f"renewal failed: {step.message}", reason=step.reason)
            raise TemporaryError(
                f"{request}: renewal failed: {exc}", delay=self._retry_delay(identity)
            ) from None
        renew = await store_credential(
            self._client,
            provider=request.name,
            namespace=request.namespace,
            credential=credential,
            cluster_labels=objects.cluster_labels_of(identity),
            key_fingerprint=service.key_fingerprint or pinned or "",
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
        """As long as the renewal has been failing (from its condition), within [RETRY_MIN, a tenth of the time
        left, RETRY_MAX]: a provider restarting is retried within seconds, one that stays away every minute."""
        now = datetime.now(UTC)
        expires = objects.expires_at(identity)
        left = (expires - now).total_seconds() if expires is not None else 0.0
        renewal = conditions.find(nested(identity, "status", "conditions"), c.CONDITION_CREDENTIAL_RENEWED)
        failing_for = 0.0
        if renewal is not None and renewal.get("status") == "False":
            with contextlib.suppress(TypeError, ValueError):
                failing_for = (
                    now - datetime.fromisoformat(str(renewal.get("lastTransitionTime")))
                ).total_seconds()
        return max(RETRY_MIN, min(failing_for, left / 10, RETRY_MAX))

    async def _failed(self, identity: JSON, message: str, *, reason: str = REASON_RENEWAL_FAILED) -> None:
        meta = identity["metadata"]
        current = nested(identity, "status", "conditions")
        wanted = conditions.condition(c.CONDITION_CREDENTIAL_RENEWED, False, reason=reason, message=message)
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
        cluster_id = nested(meta, "labels", c.LABEL_REMOTE_CLUSTER_ID) or nested(obj, "spec", "clusterID")
        return [
            Request(str(identity["metadata"]["namespace"]), str(identity["metadata"]["name"]))
            for identity in identities.store
            if identity["metadata"]["name"] == name and nested(identity, "spec", "clusterID") == cluster_id
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
