"""Garbage collector: delete objects whose owners are gone, and finish foreground and orphan deletions.

kube-apiserver records intent only: `propagationPolicy=Foreground` leaves the owner with
a deletionTimestamp and the `foregroundDeletion` finalizer, `Orphan` with the `orphan`
finalizer, and `Background` (the default) simply removes it. kube-controller-manager's
garbage collector does the rest, and so does this one, as an ordinary API client:

- background: an object whose every owner is gone is deleted (propagating with its own
  `orphan`/`foregroundDeletion` finalizer if it carries one). An owner is gone when no
  object with its uid exists: a same-named object created since is someone else. Owners
  that exist but are deleting their dependents are dropped from the references of an
  object that has another, live owner.
- foreground: the owner's dependents are deleted (those with dependents of their own in
  the foreground too), and its finalizer is removed once no dependent that blocks owner
  deletion (`blockOwnerDeletion: true`) remains.
- orphan: the owner's reference is removed from every dependent, then its finalizer.

A cluster-scoped object cannot have a namespaced owner: such a reference is reported
with a Warning event (`OwnerRefInvalidNamespace`, as kube's) and the object is left alone.

Which kinds to watch comes from discovery (every listable, watchable and deletable
resource but Events), re-read when a CRD changes and every `gc_resync_period`; each
resource gets one shared informer from the manager, indexed by owner uid, in place of
kube's dependency graph. Deletions carry a uid precondition; metadata patches carry the
resourceVersion they were computed from.

Work items are one controller's keys: an object is `Request(namespace, "<resource>/<name>")`
(`<resource>` is `plural.group`, or `plural` in the core group; names never hold a `/`),
and any key without a `/` (the discovery key, or a CRD name) means "sync the informers".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from playground.controlplane import ControlPlaneOptions, Credentials
from runtime.api.kinds import CRDS, NAMESPACES
from runtime.api.objects import JSON
from runtime.api.resource import Resource
from runtime.core import (
    APIError,
    Client,
    ConflictError,
    Controller,
    EventRecorder,
    Informer,
    Manager,
    NotFoundError,
    Request,
    Result,
    TemporaryError,
    owner_uid_index,
)

from .discovery import preferred_resources

logger = logging.getLogger(__name__)

#: the ServiceAccount kube-controller-manager runs this controller as (system:controller:generic-garbage-collector)
ACCOUNT = "generic-garbage-collector"

Policy = Literal["Orphan", "Background", "Foreground"]

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"
#: the index of every watched store: owner uid -> dependents
OWNERS_INDEX = "garbage-collector.owners"
#: kube's garbage collector ignores Events
IGNORED = frozenset({("", "events"), ("events.k8s.io", "events")})
#: the key that (re)reads discovery and starts informers for new resources
DISCOVERY = Request("", "discovery")
#: how soon to look again at an owner whose dependents are not all known yet (informers still listing)
UNSYNCED_RETRY = 0.5
CONFLICT_RETRIES = 3


def resource_id(resource: Resource) -> str:
    return f"{resource.plural}.{resource.group}" if resource.group else resource.plural


def object_request(resource: Resource, obj: JSON) -> Request:
    meta = obj["metadata"]
    return Request(str(meta.get("namespace") or ""), f"{resource_id(resource)}/{meta['name']}")


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _refs(obj: JSON) -> list[JSON]:
    return list(obj["metadata"].get("ownerReferences") or [])


def _finalizers(obj: JSON) -> list[str]:
    return list(obj["metadata"].get("finalizers") or [])


def is_deleting_dependents(obj: JSON) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp")) and FOREGROUND in _finalizers(obj)


def blocks(dependent: JSON, owner_uid: str) -> bool:
    """Whether `dependent`'s reference to the owner holds the owner's foreground deletion."""
    return any(r.get("uid") == owner_uid and r.get("blockOwnerDeletion") for r in _refs(dependent))


def _interesting(obj: JSON) -> bool:
    """An object the collector has work on: it has owners, or it is deleting with one of our finalizers."""
    if _refs(obj):
        return True
    return bool(obj["metadata"].get("deletionTimestamp")) and bool(
        {ORPHAN, FOREGROUND} & set(_finalizers(obj))
    )


def invalid_owner_message(ref: JSON) -> str:
    """kube's OwnerRefInvalidNamespace message for a cluster-scoped object with a namespaced owner."""
    return (
        f"ownerRef [{ref.get('apiVersion')}/{ref.get('kind')}, namespace: , name: {ref.get('name')}, "
        f'uid: {ref.get("uid")}] does not exist in namespace ""'
    )


@dataclass(frozen=True)
class Monitor:
    """One watched resource: its shared informer and the handler this collector put on it."""

    resource: Resource
    informer: Informer
    remove_handler: Callable[[], None]


class GarbageCollector:
    def __init__(self, manager: Manager, options: ControlPlaneOptions, *, client: Client) -> None:
        self._manager = manager
        #: the collector's own client (its reads of what it watches go through the manager's informers)
        self._client = client
        self._options = options
        self._recorder = EventRecorder(client, component="garbage-collector-controller")
        #: resource id -> monitor
        self._monitors: dict[str, Monitor] = {}
        #: (group, kind) -> monitor, to find an owner named by a reference
        self._kinds: dict[tuple[str, str], Monitor] = {}
        self._lock = asyncio.Lock()
        self._synced_at: float | None = None
        #: set by `setup`: the controller whose queue the informer handlers feed
        self.controller: Controller | None = None

    # keys

    def discovery_keys(self, obj: JSON) -> list[Request]:
        """Any namespace event asks for a sync; one is done at most every resync period (see `reconcile`)."""
        return [DISCOVERY]

    def _enqueue(self, request: Request) -> None:
        if self.controller is not None:
            self.controller.enqueue(request)

    # reconcile

    async def reconcile(self, request: Request) -> Result | None:
        resource, _, name = request.name.partition("/")
        if not name:
            return await self._resync(periodic=request == DISCOVERY)
        monitor = self._monitors.get(resource)
        if monitor is None:
            return None
        obj = monitor.informer.store.get(name, namespace=request.namespace or None)
        if obj is None:
            return None
        if obj["metadata"].get("deletionTimestamp"):
            if ORPHAN in _finalizers(obj):
                await self._orphan_dependents(monitor, obj)
            elif FOREGROUND in _finalizers(obj):
                await self._delete_dependents(monitor, obj)
            return None
        if _refs(obj):
            await self._collect(monitor, obj)
        return None

    async def _resync(self, *, periodic: bool) -> Result | None:
        period = self._options.gc_resync_period
        now = asyncio.get_running_loop().time()
        if periodic and self._synced_at is not None and now - self._synced_at < period:
            return Result(requeue_after=period - (now - self._synced_at))
        async with self._lock:
            started = await self._sync_monitors()
        # an owner deleted while a new monitor listed is in no event: its dependents are looked at once it synced
        try:
            await asyncio.wait_for(asyncio.gather(*(m.informer.synced.wait() for m in started)), period)
        except TimeoutError:
            raise TemporaryError(
                f"garbage collector: {', '.join(resource_id(m.resource) for m in started)} not listed yet"
            ) from None
        self._synced_at = now
        for monitor in list(self._monitors.values()):
            for obj in monitor.informer.store:
                if _interesting(obj):
                    self._enqueue(object_request(monitor.resource, obj))
        return Result(requeue_after=period) if periodic else None

    async def _sync_monitors(self) -> list[Monitor]:
        """Watch what discovery serves now; the monitors started for new resources."""
        try:
            found = await preferred_resources(self._client)
        except APIError as exc:
            raise TemporaryError(f"discovery failed: {exc}") from exc
        if found.failed:
            logger.warning("garbage collector: %s; watching the rest", found.error)
        wanted = {
            resource_id(s.resource): s.resource
            for s in found.resources
            if s.supports("list", "watch", "delete") and (s.resource.group, s.resource.plural) not in IGNORED
        }
        unknown_groups = {_group(gv) for gv in found.failed}
        for rid, monitor in list(self._monitors.items()):
            if rid not in wanted and monitor.resource.group not in unknown_groups:
                logger.info("garbage collector: %s is no longer served; not watching it", rid)
                monitor.remove_handler()
                del self._monitors[rid]
        started = [self._monitor(resource) for rid, resource in wanted.items() if rid not in self._monitors]
        self._monitors.update((resource_id(monitor.resource), monitor) for monitor in started)
        self._kinds = {(m.resource.group, m.resource.kind): m for m in self._monitors.values()}
        return started

    def _monitor(self, resource: Resource) -> Monitor:
        informer = self._manager.informer(resource)
        with contextlib.suppress(ValueError):  # indexed already, by a monitor of ours that was removed
            informer.store.add_index(OWNERS_INDEX, owner_uid_index)
        remove = informer.add_handler(self._handler(resource))
        return Monitor(resource, informer, remove)

    def _handler(self, resource: Resource) -> Callable[[str, JSON, JSON | None], None]:
        def on_change(kind: str, obj: JSON, old: JSON | None) -> None:
            if _interesting(obj):
                self._enqueue(object_request(resource, obj))
            if kind == "DELETED":
                for monitor, dependent in self._dependents(str(obj["metadata"].get("uid", ""))):
                    self._enqueue(object_request(monitor.resource, dependent))
            # an owner waiting for its dependents looks again when one of them changes or goes
            namespace = obj["metadata"].get("namespace")
            for version in (obj, old):
                for ref in _refs(version) if version is not None else []:
                    found = self._cached_owner(ref, namespace)
                    if found is not None and found[1]["metadata"].get("deletionTimestamp"):
                        self._enqueue(object_request(found[0].resource, found[1]))

        return on_change

    # the cache

    def _synced(self) -> bool:
        return all(m.informer.synced.is_set() for m in self._monitors.values())

    def _dependents(self, uid: str) -> Iterator[tuple[Monitor, JSON]]:
        if not uid:
            return
        for monitor in list(self._monitors.values()):
            for dependent in monitor.informer.store.by_index(OWNERS_INDEX, uid):
                yield monitor, dependent

    def _cached_owner(self, ref: JSON, namespace: str | None) -> tuple[Monitor, JSON] | None:
        monitor = self._kinds.get((_group(str(ref.get("apiVersion", ""))), str(ref.get("kind", ""))))
        if monitor is None:
            return None
        owner = monitor.informer.store.get(
            str(ref.get("name", "")), namespace=namespace if monitor.resource.namespaced else None
        )
        if owner is None or owner["metadata"].get("uid") != ref.get("uid"):
            return None
        return monitor, owner

    # owners

    async def _owner_resource(self, ref: JSON) -> Resource:
        api_version, kind = str(ref.get("apiVersion", "")), str(ref.get("kind", ""))
        monitor = self._kinds.get((_group(api_version), kind))
        if monitor is not None:
            return monitor.resource
        try:
            return await self._client.resource_for(api_version, kind)
        except NotFoundError as exc:
            raise TemporaryError(f"owner kind {kind} in {api_version} is not served (yet)") from exc

    async def _owner(self, resource: Resource, ref: JSON, namespace: str | None) -> JSON | None:
        """The owner a reference names, if an object with its uid exists (the cache first, then the API)."""
        cached = self._cached_owner(ref, namespace)
        if cached is not None:
            return cached[1]
        try:
            live = await self._client.get(
                resource, str(ref.get("name", "")), namespace=namespace if resource.namespaced else None
            )
        except NotFoundError:
            return None
        return live if live["metadata"].get("uid") == ref.get("uid") else None

    # the three jobs

    async def _collect(self, monitor: Monitor, obj: JSON) -> None:
        """Delete `obj` if none of its owners is alive, or drop the references to owners that are gone."""
        meta = obj["metadata"]
        namespace = meta.get("namespace") or None
        solid: list[JSON] = []
        dangling: list[JSON] = []
        waiting: list[JSON] = []
        for ref in _refs(obj):
            owner_resource = await self._owner_resource(ref)
            if owner_resource.namespaced and namespace is None:
                await self._recorder.record(
                    obj, type="Warning", reason="OwnerRefInvalidNamespace", message=invalid_owner_message(ref)
                )
                return
            owner = await self._owner(owner_resource, ref, namespace)
            if owner is None:
                dangling.append(ref)
            elif is_deleting_dependents(owner):
                waiting.append(ref)
            else:
                solid.append(ref)
        if solid:
            if dangling or waiting:
                gone = {str(r.get("uid")) for r in dangling + waiting}
                await self._update_metadata(monitor.resource, obj, lambda m: _without_owners(m, gone))
                logger.info("%s: dropped references to owners that are gone or deleting: %s", _ref(obj), gone)
            return
        uid = str(meta.get("uid", ""))
        dependents = list(self._dependents(uid))
        if waiting and dependents:
            if any(is_deleting_dependents(d) for _, d in dependents):
                # a dependent waits on us while we would wait on it: do not block our owners (kube's cycle guard)
                await self._update_metadata(monitor.resource, obj, _unblocked)
            await self._delete(
                monitor.resource, obj, "Foreground", why="its owners are deleting their dependents"
            )
            return
        finalizers = _finalizers(obj)
        policy: Policy = (
            "Orphan" if ORPHAN in finalizers else "Foreground" if FOREGROUND in finalizers else "Background"
        )
        why = "its owners are deleting their dependents" if waiting else "no owner is left"
        await self._delete(monitor.resource, obj, policy, why=why)

    async def _delete_dependents(self, monitor: Monitor, owner: JSON) -> None:
        """Foreground: delete the dependents; release the owner once none blocks it."""
        if not self._synced():
            raise TemporaryError(f"{_ref(owner)}: not every dependent is known yet", delay=UNSYNCED_RETRY)
        uid = str(owner["metadata"]["uid"])
        dependents = list(self._dependents(uid))
        if not any(blocks(d, uid) for _, d in dependents):
            await self._update_metadata(monitor.resource, owner, lambda m: _without_finalizer(m, FOREGROUND))
            logger.info("%s: no blocking dependent left; foreground deletion done", _ref(owner))
            return
        for dependent_monitor, dependent in dependents:
            self._enqueue(object_request(dependent_monitor.resource, dependent))

    async def _orphan_dependents(self, monitor: Monitor, owner: JSON) -> None:
        """Orphan: remove the owner from its dependents' references, then its `orphan` finalizer."""
        if not self._synced():
            raise TemporaryError(f"{_ref(owner)}: not every dependent is known yet", delay=UNSYNCED_RETRY)
        uid = str(owner["metadata"]["uid"])
        for dependent_monitor, dependent in list(self._dependents(uid)):
            await self._update_metadata(
                dependent_monitor.resource, dependent, lambda m: _without_owners(m, {uid})
            )
        await self._update_metadata(monitor.resource, owner, lambda m: _without_finalizer(m, ORPHAN))
        logger.info("%s: dependents orphaned", _ref(owner))

    # writes

    async def _delete(self, resource: Resource, obj: JSON, policy: Policy, *, why: str) -> None:
        meta = obj["metadata"]
        try:
            await self._client.delete(
                resource,
                str(meta["name"]),
                namespace=meta.get("namespace") or None,
                propagation_policy=policy,
                preconditions={"uid": meta["uid"]},
            )
        except (NotFoundError, ConflictError):
            return  # gone, or replaced by a new object of the same name (which has its own turn)
        logger.info("%s: deleted (%s propagation): %s", _ref(obj), policy, why)

    async def _update_metadata(
        self, resource: Resource, obj: JSON, change: Callable[[JSON], JSON | None]
    ) -> None:
        """Merge-patch the metadata fields `change` computes (None: nothing to do), guarded by resourceVersion.

        On a conflict the object is read again and the change computed anew.
        """
        current = obj
        meta = obj["metadata"]
        name, namespace = str(meta["name"]), meta.get("namespace") or None
        for _ in range(CONFLICT_RETRIES):
            fields = change(current["metadata"])
            if fields is None:
                return
            patch = {"metadata": {"resourceVersion": current["metadata"]["resourceVersion"], **fields}}
            try:
                await self._client.patch(resource, name, patch, namespace=namespace)
                return
            except NotFoundError:
                return
            except ConflictError:
                try:
                    current = await self._client.get(resource, name, namespace=namespace)
                except NotFoundError:
                    return
                if current["metadata"].get("uid") != meta.get("uid"):
                    return
        raise TemporaryError(f"{_ref(obj)}: it kept changing under our metadata patch")


def _without_owners(meta: JSON, uids: set[str]) -> JSON | None:
    refs = list(meta.get("ownerReferences") or [])
    kept = [r for r in refs if r.get("uid") not in uids]
    if len(kept) == len(refs):
        return None
    return {"ownerReferences": kept or None}


def _without_finalizer(meta: JSON, finalizer: str) -> JSON | None:
    finalizers = list(meta.get("finalizers") or [])
    if finalizer not in finalizers:
        return None
    return {"finalizers": [f for f in finalizers if f != finalizer]}


def _unblocked(meta: JSON) -> JSON | None:
    refs = list(meta.get("ownerReferences") or [])
    if not any(r.get("blockOwnerDeletion") for r in refs):
        return None
    return {"ownerReferences": [{**r, "blockOwnerDeletion": False} for r in refs]}


def _ref(obj: JSON) -> str:
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    return f"{namespace}/{meta['name']}" if namespace else str(meta["name"])


def setup(manager: Manager, options: ControlPlaneOptions, credentials: Credentials) -> None:
    collector = GarbageCollector(manager, options, client=credentials.client(ACCOUNT))
    # CRD changes (new kinds to watch) come as primary keys; namespaces always exist, so their first
    # events start the first sync, and any later one restarts the periodic resync after a leadership change
    controller = manager.controller("garbage-collector", collector, primary=manager.informer(CRDS))
    controller.watches(manager.informer(NAMESPACES), collector.discovery_keys)
    collector.controller = controller
