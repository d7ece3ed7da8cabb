"""The Quota controller (provider side): each Quota's `status.used`, what its consumer's pods take now.

A consumer's Quotas (one per granted ResourceSlice, in its tenant namespace) bound what its
ShadowPods may take; the admission webhook enforces them (`runtime.webhook.shadowpods`).
This controller writes what the consumer's ShadowPods take, in every twin namespace of
it, into the Quotas' `status.used` (`runtime.forge.quota.distributed`: filled in name
order up to each one's limits), so `kubectl get quotas -o yaml` shows the use, and the
ResourceSlice controller never grants a slice less than is in use. The use is summed per
namespace as the ShadowPod informer's events arrive (`runtime.forge.quota.Usage`), so a
reconcile adds up the consumer's twin namespaces, not its every pod.
"""

from __future__ import annotations

import contextlib
import logging

from runtime.api import constants as c
from runtime.api.crds import QUOTAS, SHADOWPODS
from runtime.api.kinds import NAMESPACES
from runtime.api.objects import nested
from runtime.core import Client, Informer, Manager, NotFoundError, Request, Result
from runtime.forge import quota as forge

from ..options import ControllerOptions

logger = logging.getLogger(__name__)


NAME = "quota"


class QuotaReconciler:
    def __init__(self, client: Client, *, quotas: Informer, shadow_pods: Informer, twins: Informer) -> None:
        self._client = client
        self._quotas = quotas
        self._twins = twins
        #: what the cached ShadowPods take, by namespace, kept from the informer's events
        self._usage = forge.Usage()
        shadow_pods.add_handler(self._usage.observe)

    async def reconcile(self, request: Request) -> Result | None:
        found = self._quotas.store.get(request.name, namespace=request.namespace)
        if found is None or found["metadata"].get("deletionTimestamp"):
            return None
        tenant = request.namespace
        twins = [
            str(twin["metadata"]["name"]) for twin in self._twins.store if forge.tenant_of(twin) == tenant
        ]
        in_use = self._usage.taken(twins)
        wanted = forge.distributed(in_use, self._quotas.store.items(namespace=tenant))[request.name]
        have = nested(found, "status", "used") or {}
        if have == wanted:
            return None
        with contextlib.suppress(NotFoundError):
            await self._client.patch_status(
                QUOTAS,
                request.name,
                {"status": {"used": {**{name: None for name in have if name not in wanted}, **wanted}}},
                namespace=request.namespace,
                field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
            )
        logger.info(
            "%s: used %s", request, ", ".join(f"{k}={v}" for k, v in sorted(wanted.items())) or "nothing"
        )
        return None


def setup(manager: Manager, options: ControllerOptions) -> None:
    quotas = manager.informer(QUOTAS)
    shadow_pods = manager.informer(SHADOWPODS)
    twins = manager.informer(NAMESPACES, label_selector=c.LABEL_ORIGIN_CLUSTER_ID)
    reconciler = QuotaReconciler(manager.client, quotas=quotas, shadow_pods=shadow_pods, twins=twins)
    controller = manager.controller(NAME, reconciler, primary=quotas)

    def of_tenant(tenant: str) -> list[Request]:
        return [Request.of(item) for item in quotas.store.items(namespace=tenant)] if tenant else []

    controller.watches(
        shadow_pods,
        lambda shadow: of_tenant(forge.tenant_of(twins.store.get(str(shadow["metadata"].get("namespace"))))),
    )
    controller.watches(twins, lambda twin: of_tenant(forge.tenant_of(twin)))
