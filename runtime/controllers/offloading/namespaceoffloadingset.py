"""The NamespaceOffloadingSet controller (consumer side): every namespace a selector picks, offloaded alike.

For each NamespaceOffloadingSet, every reconcile (`runtime.forge.namespaceoffloadingset.select`
decides):

1. creates the NamespaceOffloading `offloading`, from the set's template and labelled with
   its name, in each picked namespace that has none (a create, never an apply: a
   namespace offloaded meanwhile by someone else stays theirs);
2. writes the template again into its own NamespaceOffloadings whose spec differs (a new
   cluster selector moves their twin namespaces; the NamespaceOffloading controller does
   that part);
3. deletes its own NamespaceOffloadings in namespaces that stopped matching (the
   NamespaceOffloading controller unoffloads them);
4. reports the namespaces it offloads and those it leaves alone (a NamespaceOffloading of
   their own) in its status.

Namespaces and NamespaceOffloadings wake every set, so a namespace created or labelled
later is offloaded as it appears, and one whose own NamespaceOffloading goes is taken up.

Deletion (finalizer `offloading.liqo.io/namespaceoffloadingset`): its NamespaceOffloadings
are deleted, and the finalizer goes once they are gone (each waits for its twin
namespaces, bounded by the NamespaceOffloading controller's own deletion timeout).
"""

from __future__ import annotations

import contextlib
import logging

from runtime.api import constants as c
from runtime.api.crds import NAMESPACEOFFLOADINGS, NAMESPACEOFFLOADINGSETS
from runtime.api.kinds import NAMESPACES
from runtime.api.objects import JSON
from runtime.core import (
    AlreadyExistsError,
    Client,
    Informer,
    Manager,
    NotFoundError,
    Request,
    Result,
    TemporaryError,
)
from runtime.forge import namespaceoffloadingset as forge

from ..options import ControllerOptions

logger = logging.getLogger(__name__)


NAME = "namespaceoffloadingset"
#: how soon a deletion waiting for its NamespaceOffloadings to go looks again
DELETION_POLL = 1.0


class NamespaceOffloadingSetReconciler:
    def __init__(
        self,
        client: Client,
        *,
        sets: Informer,
        namespaces: Informer,
        offloadings: Informer,
        options: ControllerOptions,
    ) -> None:
        self._client = client
        self._sets = sets
        self._namespaces = namespaces
        self._offloadings = offloadings
        self._options = options

    async def reconcile(self, request: Request) -> Result | None:
        offloading_set = self._sets.store.get(request.name)
        if offloading_set is None:
            return None
        meta = offloading_set["metadata"]
        deleting = bool(meta.get("deletionTimestamp"))
        finalizers = list(meta.get("finalizers") or [])
        if deleting and c.FINALIZER_NAMESPACEOFFLOADINGSET not in finalizers:
            return None
        if not deleting and c.FINALIZER_NAMESPACEOFFLOADINGSET not in finalizers:
            await self._set_finalizers(offloading_set, [*finalizers, c.FINALIZER_NAMESPACEOFFLOADINGSET])
            return None
        selection = forge.select(
            offloading_set,
            self._namespaces.store,
            self._offloadings.store,
            runtime_namespace=self._options.namespace,
        )
        for namespace in selection.create:
            await self._create(offloading_set, namespace)
        for namespace in selection.update:
            await self._update(offloading_set, namespace)
        for namespace in selection.delete:
            with contextlib.suppress(NotFoundError):
                await self._client.delete(
                    NAMESPACEOFFLOADINGS, c.NAMESPACE_OFFLOADING_NAME, namespace=namespace
                )
            logger.info("%s: unoffloading namespace %s, which it no longer picks", request.name, namespace)
        if deleting:
            return await self._finish(offloading_set, finalizers)
        await self._write_status(offloading_set, forge.set_status(offloading_set, selection))
        return None

    async def _create(self, offloading_set: JSON, namespace: str) -> None:
        try:
            await self._client.create(
                NAMESPACEOFFLOADINGS,
                forge.offloading_of(offloading_set, namespace),
                field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
            )
        except AlreadyExistsError:
            raise TemporaryError(
                f"namespace {namespace} was offloaded meanwhile; looking again", delay=DELETION_POLL
            ) from None
        except NotFoundError:
            return
        logger.info("%s: offloading namespace %s", offloading_set["metadata"]["name"], namespace)

    async def _update(self, offloading_set: JSON, namespace: str) -> None:
        spec = forge.offloading_of(offloading_set, namespace)["spec"]
        with contextlib.suppress(NotFoundError):
            await self._client.patch(
                NAMESPACEOFFLOADINGS,
                c.NAMESPACE_OFFLOADING_NAME,
                {"spec": spec},
                namespace=namespace,
                field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
            )
        logger.info(
            "%s: template written again to namespace %s", offloading_set["metadata"]["name"], namespace
        )

    async def _finish(self, offloading_set: JSON, finalizers: list[str]) -> Result | None:
        name = str(offloading_set["metadata"]["name"])
        left = sorted(
            str(o["metadata"]["namespace"]) for o in self._offloadings.store if forge.owner(o) == name
        )
        if left:
            raise TemporaryError(
                f"waiting for the NamespaceOffloadings of {', '.join(left)} to go", delay=DELETION_POLL
            )
        with contextlib.suppress(NotFoundError):
            await self._set_finalizers(
                offloading_set, [f for f in finalizers if f != c.FINALIZER_NAMESPACEOFFLOADINGSET]
            )
        logger.info("%s: every namespace it offloaded is unoffloaded", name)
        return None

    async def _write_status(self, offloading_set: JSON, desired: JSON) -> None:
        current = offloading_set.get("status") or {}
        if all(current.get(key) == value for key, value in desired.items()):
            return
        with contextlib.suppress(NotFoundError):
            await self._client.patch_status(
                NAMESPACEOFFLOADINGSETS,
                offloading_set["metadata"]["name"],
                {"status": desired},
                field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
            )

    async def _set_finalizers(self, offloading_set: JSON, finalizers: list[str]) -> None:
        meta = offloading_set["metadata"]
        await self._client.patch(
            NAMESPACEOFFLOADINGSETS,
            meta["name"],
            {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}},
            field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
        )


def setup(manager: Manager, options: ControllerOptions) -> None:
    sets = manager.informer(NAMESPACEOFFLOADINGSETS)
    namespaces = manager.informer(NAMESPACES)
    offloadings = manager.informer(NAMESPACEOFFLOADINGS)
    reconciler = NamespaceOffloadingSetReconciler(
        manager.client, sets=sets, namespaces=namespaces, offloadings=offloadings, options=options
    )
    controller = manager.controller(NAME, reconciler, primary=sets)

    def every_set(_: JSON) -> list[Request]:
        return [Request.of(offloading_set) for offloading_set in sets.store]

    for informer in (namespaces, offloadings):
        controller.watches(informer, every_set)
