"""What apiextensions-apiserver's CRD controllers do in-process: serve, establish, finalize.

A stored CRD is served at once and gets the status the naming and establishing
controllers give it. A CRD carries the `customresourcecleanup.apiextensions.k8s.io`
finalizer from its creation, so deleting it only marks it; then, as the finalizer
controller does, the CRD gets condition Terminating=True (InstanceDeletionInProgress),
its objects stay served but creates are refused, and each object is deleted through
the ordinary deletion lifecycle (one with finalizers of its own gets a deletionTimestamp
and stays until they are removed). Once none is left the condition turns False
(InstanceDeletionCompleted), the finalizer goes, and with it the CRD and its endpoints.

Objects of a CRD whose finalizer someone removed by hand stay in storage, as they stay
in etcd: they are served again if the CRD is created again.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging

from . import crds, errors
from .identity import MASTERS_GROUP, UserInfo
from .registry import Registry, WriteOptions
from .resources.base import Obj, ResourceType
from .resources.catalog import Catalog
from .resources.extensions import CLEANUP_FINALIZER, CustomResourceStrategy
from .storage import Storage

logger = logging.getLogger(__name__)

SYSTEM_USER = UserInfo(name="system:apiserver", groups=(MASTERS_GROUP,))
#: after a watch on a CRD's objects ended early (overflow, shutdown), wait this long before looking again
REWATCH_DELAY = 0.5
#: after a failed attempt to finalize a CRD, wait this long before the next
RETRY_DELAY = 1.0


class CRDController:
    def __init__(self, catalog: Catalog, registry: Registry, storage: Storage) -> None:
        self._catalog = catalog
        self._registry = registry
        self._storage = storage
        self._finalizers: dict[str, asyncio.Task[None]] = {}

    @property
    def _crd_type(self) -> ResourceType:
        rt = self._catalog.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        if rt is None:
            raise errors.internal("customresourcedefinitions are not served")
        return rt

    def serve_stored(self) -> None:
        """Serve every stored CRD (terminating ones too: their objects stay reachable)."""
        for crd in self._storage.objects(crds.STORAGE_KEY):
            self._serve(crd)

    async def run(self) -> None:
        storage = self._storage
        sub = storage.subscribe(crds.STORAGE_KEY, None)
        try:
            # CRDs deleted before a restart finish finalizing now
            for crd in storage.objects(crds.STORAGE_KEY):
                if crd["metadata"].get("deletionTimestamp"):
                    self._start_finalizer(crd["metadata"]["name"])
            while True:
                event = await sub.queue.get()
                if event is None:
                    return
                try:
                    await self._reconcile(event.type, event.obj)
                except errors.APIError as exc:
                    logger.warning("customresourcedefinition %s: %s", event.obj["metadata"]["name"], exc)
        finally:
            storage.unsubscribe(sub)
            tasks = list(self._finalizers.values())
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def _serve(self, crd: Obj) -> None:
        def strategy(crd_obj: Obj, version: Obj) -> CustomResourceStrategy:
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            return CustomResourceStrategy(schema, kind=crd_obj["spec"]["names"]["kind"])

        self._catalog.replace_crd(
            crd["metadata"]["name"], crds.resource_types(crd, strategy_factory=strategy)
        )

    async def _reconcile(self, event_type: str, stored: Obj) -> None:
        name = stored["metadata"]["name"]
        if event_type == "DELETED":
            task = self._finalizers.pop(name, None)
            if task is not None:
                task.cancel()
            for rt in self._catalog.remove_crd(name):
                self._storage.close_watches(rt.storage_key)
            return
        crd = self._registry.find(self._crd_type, "", name)
        if crd is None:
            return
        if crd["metadata"].get("deletionTimestamp"):
            self._start_finalizer(name)
            return
        self._serve(crd)
        status = crds.established_status(crd)
        if crd.get("status") != status:
            updated = copy.deepcopy(crd)
            updated["status"] = status
            await self._registry.write_internal(self._crd_type, updated, crd, user=SYSTEM_USER)

    # the finalizer controller

    def _start_finalizer(self, name: str) -> None:
        if name in self._finalizers:
            return
        task = asyncio.create_task(self._finalize(name), name=f"apiserver-crd-finalizer-{name}")
        self._finalizers[name] = task
        task.add_done_callback(lambda done: self._finished(name, done))

    def _finished(self, name: str, task: asyncio.Task[None]) -> None:
        if self._finalizers.get(name) is task:
            del self._finalizers[name]
        if not task.cancelled() and task.exception() is not None:
            logger.error(
                "customresourcedefinition %s: its finalizer stopped; restart the API server to resume it",
                name,
                exc_info=task.exception(),
            )

    async def _finalize(self, name: str) -> None:
        """Finalize until done; a failed attempt is retried, as the finalizer's work queue does."""
        while True:
            try:
                await self._finalize_once(name)
                return
            except errors.APIError as exc:
                logger.warning("customresourcedefinition %s: cleaning up its objects failed: %s", name, exc)
            await asyncio.sleep(RETRY_DELAY)

    async def _finalize_once(self, name: str) -> None:
        crd = await self._set_condition(
            name, "True", "InstanceDeletionInProgress", "CustomResource deletion is in progress"
        )
        if crd is None:
            return
        if crds.condition_true(crd, "Established"):
            await self._delete_instances(crd)
            condition = ("False", "InstanceDeletionCompleted", "removed all instances")
        else:
            condition = ("False", "NeverEstablished", "resource was never established")
        current = self._deleting(name)
        if current is None:
            return
        updated = crds.with_condition(current, "Terminating", *condition)
        finalizers = [f for f in current["metadata"].get("finalizers") or [] if f != CLEANUP_FINALIZER]
        if finalizers:
            updated["metadata"]["finalizers"] = finalizers
        else:
            updated["metadata"].pop("finalizers", None)
        await self._registry.write_internal(self._crd_type, updated, current, user=SYSTEM_USER)

    def _deleting(self, name: str) -> Obj | None:
        """The CRD if it is being deleted and still waits for the cleanup finalizer."""
        crd = self._registry.find(self._crd_type, "", name)
        if crd is None or not crd["metadata"].get("deletionTimestamp"):
            return None
        return crd if CLEANUP_FINALIZER in (crd["metadata"].get("finalizers") or []) else None

    async def _set_condition(self, name: str, status: str, reason: str, message: str) -> Obj | None:
        crd = self._deleting(name)
        if crd is None:
            return None
        updated = crds.with_condition(crd, "Terminating", status, reason, message)
        return await self._registry.write_internal(self._crd_type, updated, crd, user=SYSTEM_USER)

    async def _delete_instances(self, crd: Obj) -> None:
        """Delete every object of the CRD (straight from storage, without admission) and wait until none is left."""
        spec = crd["spec"]
        key = f"{spec['names']['plural']}.{spec['group']}"
        rt = self._catalog.storage_version(key)
        if rt is None:
            raise errors.internal(f"customresourcedefinition {crd['metadata']['name']} is not served")
        opts = WriteOptions(user=SYSTEM_USER, field_manager="kube-apiserver", admit=False)
        await self._registry.delete_collection(rt, None, {}, opts, label_selector=None, field_selector=None)
        storage = self._storage
        while storage.count(key):
            sub = storage.subscribe(key, None)
            try:
                while storage.count(key) and await sub.queue.get() is not None:
                    pass
            finally:
                storage.unsubscribe(sub)
            if storage.count(key):
                await asyncio.sleep(REWATCH_DELAY)
