"""Peering token Secrets (provider side): bound to the consumer that used them, deleted once expired.

The authentication service may only read Secrets, so what a token's use and age change on
its Secret is written here (`runtime.forge.tokens`):

- **Binding.** The Tenant the auth service creates names the token Secret its consumer
  presented (`authentication.liqo.io/peering-token`); this controller copies that
  consumer's cluster id onto the Secret (`liqo.io/token-consumer`), where it stays when the
  Tenant goes (an unpeer, a collected tenant), so the token never serves another cluster.
  A Secret already bound is left as it is: the auth service refuses the token to any other
  cluster id, so a second Tenant naming it cannot exist.
- **Collection.** A token whose expiry passed is refused by the auth service; its Secret
  is deleted here (with its uid as a precondition) at the expiry, so revoked capability
  leaves nothing behind. A Secret whose expiry annotation is unreadable is reported, not
  deleted (the auth service refuses it; the person who wrote it fixes or deletes it).

A Tenant event maps to the token Secret it names; a Secret is reconciled again at its
expiry.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from runtime.api import constants as c
from runtime.api.crds import TENANTS
from runtime.api.kinds import SECRETS
from runtime.api.objects import JSON, nested
from runtime.auth.tokens import utc_now
from runtime.core import Client, Informer, Manager, NotFoundError, Request, Result
from runtime.forge.tokens import bound_consumer, tenant_token, token_expiry

from ..options import ControllerOptions

logger = logging.getLogger(__name__)

NAME = "peering-token"
#: the Tenant informer's index by the token Secret it names
TOKEN_INDEX = "peeringToken"


class PeeringTokenReconciler:
    def __init__(
        self,
        client: Client,
        *,
        secrets: Informer,
        tenants: Informer,
        now: Callable[[], datetime] = utc_now,
    ) -> None:
        self._client = client
        self._secrets = secrets
        self._tenants = tenants
        self._now = now

    async def reconcile(self, request: Request) -> Result | None:
        secret = self._secrets.store.get(request.name, namespace=request.namespace)
        if secret is None:
            return None
        try:
            expiry = token_expiry(secret)
        except ValueError as exc:
            logger.warning(
                "%s: the token's expiry annotation is unreadable (%s); it is refused", request, exc
            )
            expiry = None
        now = self._now()
        if expiry is not None and expiry <= now:
            await self._collect(request, secret, expiry)
            return None
        await self._bind(request, secret)
        return Result(requeue_after=(expiry - now).total_seconds()) if expiry is not None else None

    async def _collect(self, request: Request, secret: JSON, expiry: datetime) -> None:
        try:
            await self._client.delete(
                SECRETS,
                request.name,
                namespace=request.namespace,
                preconditions={"uid": secret["metadata"]["uid"]},
            )
        except NotFoundError:
            return
        logger.info("%s: deleted the peering token Secret, expired %s", request, expiry.isoformat())

    async def _bind(self, request: Request, secret: JSON) -> None:
        if bound_consumer(secret):
            return
        users = sorted(
            str(nested(tenant, "spec", "clusterID") or "")
            for tenant in self._tenants.store.by_index(TOKEN_INDEX, request.name)
        )
        if not users or not users[0]:
            return
        patch = {
            "metadata": {
                "annotations": {c.ANNOTATION_TOKEN_CONSUMER: users[0]},
                "resourceVersion": secret["metadata"]["resourceVersion"],
            }
        }
        await self._client.patch(
            SECRETS,
            request.name,
            patch,
            namespace=request.namespace,
            field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
        )
        logger.info("%s: the peering token is bound to cluster %s, its first user", request, users[0])


def setup(manager: Manager, options: ControllerOptions) -> None:
    """Register the peering token controller with `manager`."""
    secrets = manager.informer(
        SECRETS, namespace=options.namespace, label_selector=f"{c.LABEL_PEERING_TOKEN}=true"
    )
    tenants = manager.informer(TENANTS)
    tenants.store.add_index(TOKEN_INDEX, tenant_token)
    controller = manager.controller(
        NAME, PeeringTokenReconciler(manager.client, secrets=secrets, tenants=tenants), primary=secrets
    )
    controller.watches(
        tenants, lambda tenant: [Request(options.namespace, name) for name in tenant_token(tenant)]
    )
