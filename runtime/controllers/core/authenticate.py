"""The authentication step of a consumer's peering: from a peering token to a credential on the provider.

When a valid credential is already held (its Identity says it expires later than soon), the
step only reads it back from the caches; the Identity controller renews it before it gets
there. Otherwise it:

1. ensures the local tenant namespace `liqo-tenant-<provider>` and the key pair Secret in
   it (created once, then kept: the provider knows this public key);
2. asks `GET /v1/cluster` who answers at the authURL, so an unreachable provider, a
   provider without the runtime and a wrong cluster id are told apart before the token
   is shown to anyone;
3. presents the token (`POST /v1/identity`) and stores the credential Secret and the
   Identity (`credentials.py`).

Failures are remembered per ForeignCluster with what was tried (authURL, cluster id, a hash
of the token), so a status update or a resync does not call the service again before the
backoff has passed: a refused token is not retried until it changes or minutes pass (the
service rate-limits failures), an unreachable provider is retried from 1 s up to 30 s.
Changing the token, the URL or the cluster id, or trusting another key, retries at once.

The authentication service's key is trusted on first use (`authclient`): the first
successful `GET /v1/cluster` records its fingerprint in the status, and later calls refuse
a service with another key (reason AuthServiceKeyChanged, saying how to trust the new one:
the ForeignCluster's `liqo.io/trust-auth-service-key` annotation, which wins over the pin).
A renewal that meets another key while the credential is still held is reported the same
way: the Identity controller records it in the Identity's `CredentialRenewed` condition,
and the step shows it, so the person sees it before the credential expires.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from runtime.api import constants as c
from runtime.api.kinds import NAMESPACES, SECRETS
from runtime.api.objects import JSON, nested
from runtime.api.views import IdentitySpec
from runtime.controllers.options import ControllerOptions
from runtime.core import AlreadyExistsError, Client, EventRecorder, NotFoundError
from runtime.forge import conditions
from runtime.forge import credential as contract
from runtime.forge.peering import token_of
from runtime.forge.tenant import tenant_namespace

from . import authclient, keys, objects
from .credentials import store_credential
from .peering import Blocked, Caches, LocalCluster, PeeringSpec
from .status import Step, done, failed, waiting

logger = logging.getLogger(__name__)


#: a credential closer to its expiry than this is not used: authenticate again
EXPIRY_MARGIN = timedelta(seconds=10)
#: how long a tenant namespace being deleted (an earlier unpeer) is waited for
NAMESPACE_TERMINATING_RETRY = 1.0
#: retry delays after failures, per kind: (first delay, longest delay), doubling in between
_BACKOFF: dict[str, tuple[float, float]] = {
    c.REASON_PROVIDER_UNREACHABLE: (1.0, 30.0),
    c.REASON_RUNTIME_NOT_INSTALLED: (5.0, 300.0),
    c.REASON_CLUSTER_ID_MISMATCH: (5.0, 300.0),
    c.REASON_AUTHENTICATION_FAILED: (60.0, 600.0),
    c.REASON_AUTH_SERVICE_KEY_CHANGED: (30.0, 300.0),
}
_DEFAULT_BACKOFF = (30.0, 600.0)


@dataclass(frozen=True)
class Session:
    """What the later steps need from authentication: the credential and what the provider told."""

    kubeconfig: JSON
    expires_at: datetime
    step: Step
    cluster_labels: dict[str, str] = field(default_factory=dict)
    #: the provider's runtime version, as the Identity keeps it ("" if it does not: keep the status's)
    remote_version: str = ""
    api_server_url: str = ""
    #: the auth service's key fingerprint pinned on the first contact, as the Identity keeps it
    key_fingerprint: str = ""


@dataclass(frozen=True)
class _Failure:
    fingerprint: tuple[str, str, str, str]
    count: int
    retry_at: float
    step: Step


def messages(error: authclient.AuthServiceError, *, provider: str) -> Step:
    """The condition for a failed call to the auth service of `provider`, with what the user should do about it."""
    url = error.url
    if isinstance(error, authclient.AuthenticationFailedError):
        return failed(
            c.REASON_AUTHENTICATION_FAILED,
            f"the authentication service at {url} rejected the peering token: {error.detail} — generate a new"
            f" token on {provider} (liqo_generate) and update cluster_token",
        )
    if isinstance(error, authclient.ProviderUnreachableError):
        return failed(
            c.REASON_PROVIDER_UNREACHABLE,
            f"the authentication service at {url} {error.headline}: {error.detail} — check that {provider} is"
            " up and that its auth_url is reachable from this cluster; retrying",
        )
    if isinstance(error, authclient.RuntimeNotInstalledError):
        return failed(
            c.REASON_RUNTIME_NOT_INSTALLED,
            f"{url} answers but is not a Liqo authentication service ({error.detail}) — is the runtime installed"
            f" on {provider} (liqo_install), and is auth_url its authentication URL?",
        )
    if isinstance(error, authclient.ClusterIDMismatchError):
        return failed(
            c.REASON_CLUSTER_ID_MISMATCH,
            f"{error.detail}: the authentication service at {url} belongs to another cluster — check cluster_id"
            f" and auth_url of the peering with {provider} (liqo_generate on {provider})",
        )
    if isinstance(error, authclient.KeyPinMismatchError):
        return failed(
            c.REASON_AUTH_SERVICE_KEY_CHANGED,
            f"refusing the authentication service at {url}: it presents the key {error.found}, not the key"
            f" {error.pinned} this peering trusts for {provider} (liqo_peer's auth_key_fingerprint, else the key"
            f" met on the first contact) — someone may be impersonating it, or {provider}'s serving key was"
            f" replaced (its Secret {c.AUTH_SERVING_KEY_SECRET} re-created). Ask {provider}'s administrator for"
            f" the key's fingerprint (liqo_generate's auth_key_fingerprint); if it is {error.found}, trust it:"
            f" set liqo_peer's auth_key_fingerprint to it, or run {retrust_command(provider, error.found)}",
        )
    if isinstance(error, authclient.RateLimitedError):
        return failed(
            error.reason,
            f"the authentication service at {url} refuses further attempts for now ({error.detail}); retrying"
            " later",
        )
    if isinstance(error, authclient.InvalidAuthURLError):
        return failed(c.REASON_INVALID_SPEC, f"spec.authURL: {error.detail}")
    return failed(error.reason, f"the authentication service at {url} refused the request: {error.detail}")


def retrust_command(provider: str, fingerprint: str) -> str:
    """What a person types to trust the auth service key `fingerprint` for the peering with `provider`."""
    return (
        f"kubectl annotate foreignclusters.core.liqo.io {provider}"
        f" {c.ANNOTATION_TRUST_AUTH_SERVICE_KEY}={fingerprint} --overwrite"
    )


def authenticated(spec: PeeringSpec, *, namespace: str) -> Step:
    """The condition while a credential is held (the same whether just issued or renewed since)."""
    return done(
        c.REASON_CREDENTIAL_ISSUED,
        f"holding a credential of {spec.name} for its namespace {namespace} (renewed before it expires)",
    )


def token_fingerprint(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Authentication:
    """The authentication step; keeps only the failure memory described in the module docstring."""

    def __init__(
        self, client: Client, caches: Caches, *, options: ControllerOptions, recorder: EventRecorder
    ) -> None:
        self._client = client
        self._caches = caches
        self._options = options
        self._recorder = recorder
        self._failures: dict[str, _Failure] = {}

    def forget(self, name: str) -> None:
        self._failures.pop(name, None)

    def held(self, spec: PeeringSpec) -> Session | None:
        """The credential already held for the provider, if it is still good for a while."""
        namespace = spec.tenant_namespace
        identity = self._caches.identities.get(spec.name, namespace=namespace)
        secret = self._caches.peering_secrets.get(
            objects.credential_secret_name(spec.name), namespace=namespace
        )
        kubeconfig = objects.kubeconfig_of(secret)
        expiry = objects.expires_at(identity)
        if identity is None or kubeconfig is None or expiry is None:
            return None
        if nested(identity, "spec", "clusterID") != spec.cluster_id:
            return None
        if expiry - EXPIRY_MARGIN <= datetime.now(UTC):
            return None
        identity_spec: IdentitySpec = identity.get("spec") or {}
        return Session(
            kubeconfig=kubeconfig,
            expires_at=expiry,
            step=_renewal_refused(identity) or authenticated(spec, namespace=_context_namespace(kubeconfig)),
            cluster_labels=objects.cluster_labels_of(identity),
            remote_version=str(identity_spec.get("remoteVersion") or ""),
            api_server_url=str(identity_spec.get("apiServerURL") or ""),
            key_fingerprint=str(identity_spec.get(c.AUTH_KEY_FINGERPRINT_FIELD) or ""),
        )

    async def ensure(self, foreign_cluster: JSON, spec: PeeringSpec, local: LocalCluster) -> Session:
        """A credential for the provider: the one held, or a new one; Blocked when it cannot be had now."""
        held = self.held(spec)
        if held is not None:
            self.forget(spec.name)
            return held
        await self._ensure_namespace(spec)
        key = await self._ensure_keys(spec)
        token = await self._token(spec)
        identity = self._caches.identities.get(spec.name, namespace=spec.tenant_namespace)
        pinned = authclient.trusted_key(foreign_cluster, identity) or ""
        fingerprint = (spec.auth_url, spec.cluster_id, token_fingerprint(token), pinned)
        loop_time = _loop_time()
        previous = self._failures.get(spec.name)
        if previous is not None and previous.fingerprint == fingerprint and loop_time < previous.retry_at:
            raise Blocked(previous.step, delay=previous.retry_at - loop_time)
        try:
            return await self._authenticate(
                foreign_cluster, spec, local, key=key, token=token, pinned=pinned or None
            )
        except authclient.AuthServiceError as error:
            count = previous.count + 1 if previous is not None and previous.fingerprint == fingerprint else 1
            step = messages(error, provider=spec.name)
            delay = _delay(error, count)
            self._failures[spec.name] = _Failure(fingerprint, count, loop_time + delay, step)
            logger.warning("%s: authentication failed (%s); retrying in %.3g s", spec.name, error, delay)
            if count == 1:
                await self._recorder.record(
                    foreign_cluster, reason=step.reason, message=step.message, type="Warning"
                )
            raise Blocked(step, delay=delay) from None

    async def _authenticate(
        self,
        foreign_cluster: JSON,
        spec: PeeringSpec,
        local: LocalCluster,
        *,
        key: Ed25519PrivateKey,
        token: str,
        pinned: str | None,
    ) -> Session:
        service = authclient.AuthClient(spec.auth_url, timeout=self._options.auth_timeout, pinned=pinned)
        provider = await service.cluster(expected_cluster_id=spec.cluster_id)
        issued_at = datetime.now(UTC)
        credential = await service.identity(
            token=token,
            cluster_id=local.cluster_id,
            cluster_name=local.cluster_name,
            public_key=keys.public_key_bytes(key),
        )
        if credential.cluster_id != spec.cluster_id:
            raise authclient.ClusterIDMismatchError(
                service.url,
                f"the credential is for cluster {credential.cluster_name} ({credential.cluster_id}), not {spec.cluster_id}",
                found=provider.info,
            )
        step = authenticated(spec, namespace=credential.namespace)
        key_fingerprint = service.key_fingerprint or ""
        await store_credential(
            self._client,
            provider=spec.name,
            namespace=spec.tenant_namespace,
            credential=credential,
            cluster_labels=provider.labels,
            key_fingerprint=key_fingerprint,
            issued_at=issued_at,
            renew_fraction=self._options.credential_renew_fraction,
            condition=conditions.condition(
                c.CONDITION_CREDENTIAL_RENEWED, True, reason=c.REASON_CREDENTIAL_ISSUED, message=step.message
            ),
        )
        self.forget(spec.name)
        logger.info(
            "%s: authenticated with %s; credential valid until %s",
            spec.name,
            spec.auth_url,
            _stamp(credential.expires_at),
        )
        await self._recorder.record(foreign_cluster, reason="Authenticated", message=step.message)
        return Session(
            kubeconfig=contract.kubeconfig(credential),
            expires_at=credential.expires_at,
            step=step,
            cluster_labels=provider.labels,
            remote_version=credential.version,
            api_server_url=credential.api_server_url,
            key_fingerprint=key_fingerprint,
        )

    async def _ensure_namespace(self, spec: PeeringSpec) -> None:
        namespace = self._caches.namespaces.get(spec.tenant_namespace)
        if namespace is not None:
            if nested(namespace, "metadata", "deletionTimestamp"):
                raise Blocked(
                    waiting(
                        c.REASON_AUTHENTICATION_PENDING,
                        f"waiting for the namespace {spec.tenant_namespace} of an earlier peering to be deleted",
                    ),
                    delay=NAMESPACE_TERMINATING_RETRY,
                )
            return
        body = tenant_namespace(cluster_id=spec.cluster_id, cluster_name=spec.name)
        try:
            await self._client.create(NAMESPACES, body, field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER)
            logger.info("%s: created the tenant namespace %s", spec.name, spec.tenant_namespace)
        except AlreadyExistsError:
            pass

    async def _ensure_keys(self, spec: PeeringSpec) -> Ed25519PrivateKey:
        namespace = spec.tenant_namespace
        name = keys.keys_secret_name(spec.name)
        secret = self._caches.peering_secrets.get(name, namespace=namespace)
        key = keys.private_key(secret)
        if key is not None:
            return key
        if secret is not None:
            raise Blocked(
                failed(
                    c.REASON_AUTHENTICATION_FAILED,
                    f"the Secret {namespace}/{name} does not hold an Ed25519 private key — delete it to generate a"
                    " new key pair",
                ),
                delay=60.0,
            )
        key = keys.generate()
        body = keys.keys_secret(spec.name, namespace=namespace, cluster_id=spec.cluster_id, key=key)
        try:
            await self._client.create(SECRETS, body, field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER)
        except AlreadyExistsError:
            # created by an earlier reconcile the cache has not seen yet: use that one
            existing = keys.private_key(await self._client.get(SECRETS, name, namespace=namespace))
            if existing is None:
                raise
            return existing
        logger.info("%s: generated the key pair %s/%s", spec.name, namespace, name)
        return key

    async def _token(self, spec: PeeringSpec) -> str:
        if spec.token_namespace == self._options.namespace:
            secret = self._caches.runtime_secrets.get(spec.token_name, namespace=spec.token_namespace)
        else:
            try:
                secret = await self._client.get(SECRETS, spec.token_name, namespace=spec.token_namespace)
            except NotFoundError:
                secret = None
        token = token_of(secret)
        if not token:
            ref = f"{spec.token_namespace}/{spec.token_name}"
            problem = "does not exist" if secret is None else f"has no {c.TOKEN_SECRET_KEY!r} key"
            raise Blocked(
                failed(
                    c.REASON_TOKEN_MISSING,
                    f"the peering token Secret {ref} {problem} — create it with the token liqo_generate gave on"
                    f" {spec.name}",
                ),
                delay=30.0,
            )
        return token


def _renewal_refused(identity: JSON) -> Step | None:
    """A held credential whose renewal met another auth service key: the step says so (and how to trust it)."""
    found = conditions.find(nested(identity, "status", "conditions"), c.CONDITION_CREDENTIAL_RENEWED)
    if (
        found is None
        or found.get("status") != "False"
        or found.get("reason") != c.REASON_AUTH_SERVICE_KEY_CHANGED
    ):
        return None
    return failed(c.REASON_AUTH_SERVICE_KEY_CHANGED, str(found.get("message") or ""))


def _delay(error: authclient.AuthServiceError, count: int) -> float:
    if error.retry_after is not None:
        return max(error.retry_after, 1.0)
    first, longest = _BACKOFF.get(error.reason, _DEFAULT_BACKOFF)
    return float(min(first * 2 ** (count - 1), longest))


def _context_namespace(kubeconfig: JSON) -> str:
    contexts = kubeconfig.get("contexts") or []
    context = (contexts[0].get("context") or {}) if contexts and isinstance(contexts[0], dict) else {}
    return str(context.get("namespace") or "")


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _loop_time() -> float:
    return asyncio.get_running_loop().time()
