"""The resource step of a consumer's peering: its ResourceSlice on the provider, and the provider's answer.

With the credential the provider issued, the consumer keeps one ResourceSlice (named after
itself) in its tenant namespace on the provider, asking for the ForeignCluster's
`resources` (none: the provider's default share). The provider's ResourceSlice controller
answers in the slice's status; until it has answered the current generation, the step is
pending and the ForeignCluster is looked at again shortly (the provider is another cluster:
there is no watch on it here, so this is a short poll while waiting and a slow resync once
established, which also picks up grants that change).

The provider client lives for one reconcile (`remote_client`), so nothing stays open for
providers that are gone. Its requests are bounded by the given timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from runtime.api import constants as c
from runtime.api.crds import RESOURCESLICES
from runtime.api.objects import JSON, nested
from runtime.api.views import ResourceSliceStatus
from runtime.core import APIConnectionError, Client, ForbiddenError, NotFoundError, UnauthorizedError
from runtime.core.failures import explain
from runtime.core.kubeconfig import KubeconfigError, load_kubeconfig_dict
from runtime.forge import conditions
from runtime.forge.resourceslice import resource_slice

from .peering import Blocked, LocalCluster, PeeringSpec
from .status import Step, done, failed, waiting

logger = logging.getLogger(__name__)


#: how soon a provider that failed to answer is tried again
UNREACHABLE_RETRY = 2.0


class CredentialRejectedError(Exception):
    """The provider's API server does not accept the credential (401): it was revoked or the provider reinstalled."""


@dataclass(frozen=True)
class Grant:
    """The provider's answer to the ResourceSlice."""

    step: Step
    #: what was granted (empty unless the step is done)
    resources: dict[str, str] = field(default_factory=dict)
    remote_namespace: str = ""


@contextlib.asynccontextmanager
async def remote_client(kubeconfig: JSON, *, request_timeout: float) -> AsyncIterator[Client]:
    """A client of the provider with the consumer's credential, closed when the block ends."""
    try:
        config = await asyncio.to_thread(load_kubeconfig_dict, kubeconfig)
        client = await Client.from_config(config, request_timeout=request_timeout)
    except KubeconfigError as exc:
        raise CredentialRejectedError(f"the stored credential cannot be used: {exc}") from None
    try:
        yield client
    finally:
        await client.close()


def desired_slice(spec: PeeringSpec, local: LocalCluster, *, namespace: str) -> JSON:
    return resource_slice(
        local.cluster_name,
        namespace=namespace,
        consumer_cluster_id=local.cluster_id,
        provider_cluster_id=spec.cluster_id,
        resources=spec.resources,
    )


def _up_to_date(current: JSON, desired: JSON) -> bool:
    spec = current.get("spec") or {}
    labels = nested(current, "metadata", "labels") or {}
    wanted_labels = desired["metadata"]["labels"]
    return all(spec.get(k) == v for k, v in desired["spec"].items()) and all(
        labels.get(k) == v for k, v in wanted_labels.items()
    )


def answer(resource_slice: JSON, *, provider: str) -> Grant:
    """What the provider answered, as the peering's `ResourcesGranted` step."""
    meta = resource_slice.get("metadata") or {}
    ref = f"{meta.get('namespace')}/{meta.get('name')}"
    status: ResourceSliceStatus = resource_slice.get("status") or {}
    found = conditions.find(status.get("conditions"), c.CONDITION_RESOURCES)
    current = status.get("observedGeneration") == meta.get("generation")
    if found is None or not current:
        return Grant(
            waiting(c.REASON_RESOURCES_PENDING, f"waiting for {provider} to answer the ResourceSlice {ref}"),
            remote_namespace=str(meta.get("namespace") or ""),
        )
    reason, message = found.get("reason"), str(found.get("message") or "")
    namespace = str(meta.get("namespace") or "")
    if reason == c.REASON_DENIED or found.get("status") != "True":
        return Grant(
            failed(
                c.REASON_RESOURCES_DENIED,
                f"{provider} denied the ResourceSlice {ref}: {message} — ask for less (resources of the peering)"
                f" or free resources on {provider}",
            ),
            remote_namespace=namespace,
        )
    granted = {str(k): str(v) for k, v in (status.get("resources") or {}).items()}
    summary = ", ".join(f"{k}={v}" for k, v in sorted(granted.items()))
    if reason == c.REASON_RESIZED:
        step = done(
            c.REASON_RESOURCES_RESIZED, f"{provider} granted less than requested ({summary}): {message}"
        )
    else:
        step = done(c.REASON_RESOURCES_ACCEPTED, f"{provider} granted {summary}")
    return Grant(step, resources=granted, remote_namespace=namespace)


async def negotiate(remote: Client, spec: PeeringSpec, local: LocalCluster) -> Grant:
    """Create or update the ResourceSlice on the provider and read its answer; Blocked if the provider fails."""
    namespace = remote.config.namespace
    desired = desired_slice(spec, local, namespace=namespace)
    name = desired["metadata"]["name"]
    try:
        try:
            current: JSON | None = await remote.get(RESOURCESLICES, name, namespace=namespace)
        except NotFoundError:
            current = None
        if current is None or not _up_to_date(current, desired):
            current = await remote.apply(
                RESOURCESLICES, desired, field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER, force=True
            )
            logger.info("%s: applied the ResourceSlice %s/%s on the provider", spec.name, namespace, name)
    except UnauthorizedError as exc:
        where = f"the API server of {spec.name} ({remote.host})"
        raise CredentialRejectedError(explain(exc, cluster=where, advice=False)) from None
    except ForbiddenError as exc:
        raise Blocked(
            failed(
                c.REASON_RESOURCES_DENIED,
                f"{spec.name} forbids this cluster's ResourceSlice in {namespace}: {exc.message}",
            ),
            delay=30.0,
        ) from None
    except APIConnectionError as exc:
        where = f"the API server of {spec.name} ({remote.host})"
        raise Blocked(
            failed(c.REASON_PROVIDER_UNREACHABLE, f"{explain(exc, cluster=where)} Retrying."),
            delay=UNREACHABLE_RETRY,
        ) from None
    return answer(current, provider=spec.name)


async def withdraw(remote: Client, spec: PeeringSpec, local: LocalCluster) -> None:
    """Delete the ResourceSlice on the provider (gone already is fine); API errors propagate."""
    namespace = remote.config.namespace
    name = local.cluster_name
    with contextlib.suppress(NotFoundError):
        await remote.delete(RESOURCESLICES, name, namespace=namespace)
        logger.info("%s: deleted the ResourceSlice %s/%s on the provider", spec.name, namespace, name)
