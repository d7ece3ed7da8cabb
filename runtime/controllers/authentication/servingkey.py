"""The auth service's serving key (provider side): created once, then left alone.

The authentication service may only read Secrets, so the controller manager creates the
Secret `liqo-auth-serving-key` in the runtime's namespace when it is missing
(`runtime.auth.servingkey`), and never replaces it: consumers pinned its public key on
their first contact, and a new key makes them refuse the service until a user trusts it
again. A Secret that holds no usable key is reported, not overwritten (the auth service
names it too); deleting it makes this controller create a new key.

The identity ConfigMap, which every installation has, wakes the controller when the
Secret does not exist yet, since there is no object of its own to watch then.
"""

from __future__ import annotations

import asyncio
import logging

from runtime.api import constants as c
from runtime.api.kinds import CONFIGMAPS, SECRETS
from runtime.auth.servingkey import generate_key, key_of, serving_key_secret
from runtime.core import AlreadyExistsError, Client, Informer, Manager, Request, Result

from ..options import ControllerOptions

logger = logging.getLogger(__name__)

NAME = "auth-serving-key"


class ServingKeyReconciler:
    def __init__(self, client: Client, *, secrets: Informer) -> None:
        self._client = client
        self._secrets = secrets

    async def reconcile(self, request: Request) -> Result | None:
        secret = self._secrets.store.get(request.name, namespace=request.namespace)
        if secret is not None:
            try:
                key_of(secret)
            except ValueError as exc:
                logger.error(
                    "%s: the auth service's serving key is unusable (%s); delete the Secret to create a new one",
                    request,
                    exc,
                )
            return None
        key = await asyncio.to_thread(generate_key)
        try:
            await self._client.create(
                SECRETS,
                serving_key_secret(namespace=request.namespace, key=key),
                field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
            )
        except AlreadyExistsError:
            return None
        logger.info("%s: created the auth service's serving key", request)
        return None


def setup(manager: Manager, options: ControllerOptions) -> None:
    """Register the serving key controller with `manager`."""
    named = f"metadata.name={c.AUTH_SERVING_KEY_SECRET}"
    secrets = manager.informer(SECRETS, namespace=options.namespace, field_selector=named)
    cluster_identity = manager.informer(
        CONFIGMAPS,
        namespace=options.namespace,
        field_selector=f"metadata.name={c.CLUSTER_IDENTITY_CONFIGMAP}",
    )
    controller = manager.controller(
        NAME, ServingKeyReconciler(manager.client, secrets=secrets), primary=secrets
    )
    key = Request(options.namespace, c.AUTH_SERVING_KEY_SECRET)
    controller.watches(cluster_identity, lambda _: [key])
