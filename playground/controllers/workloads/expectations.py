"""Expectations: the writes a controller made that its informer has not shown yet.

A ReplicaSet that just created three pods must not count its pods again before the
pod informer has seen them, or it would create three more; an EndpointSlice controller
must not fill a slice it has not seen yet. client-go's controllers guard against that
with `ControllerExpectations` (and the EndpointSlice tracker); this is the same idea
keyed by object: after each create, update or delete the controller records the
objects whose change it still waits for, an informer handler (`observe`) ticks them
off, and the controller only acts while its key is `satisfied`:

- a creation is seen once any event for the object arrives;
- an update is seen once a version other than the one it replaced arrives (or the
  object goes);
- a deletion is seen once the object is gone or being deleted.

Entries expire after `timeout` seconds (kube: 5 minutes), so a lost event cannot stall
a controller for ever. Everything runs on one event loop, and recording checks the
store first, so a watch event that arrived before the API call returned is not waited for.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from runtime.api.objects import JSON
from runtime.core import Informer, Store, object_key

#: kube's ExpectationsTimeout
DEFAULT_TIMEOUT = 300.0


def _rv(obj: JSON | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion", ""))


def _deleting(obj: JSON | None) -> bool:
    return obj is None or bool((obj.get("metadata") or {}).get("deletionTimestamp"))


@dataclass
class _Pending:
    since: float
    creations: set[str] = field(default_factory=set)
    deletions: set[str] = field(default_factory=set)
    #: object key -> the resourceVersion the update replaced
    updates: dict[str, str] = field(default_factory=dict)

    def empty(self) -> bool:
        return not self.creations and not self.deletions and not self.updates

    def objects(self) -> set[str]:
        return self.creations | self.deletions | set(self.updates)


class Expectations:
    def __init__(
        self, store: Store, *, timeout: float = DEFAULT_TIMEOUT, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._store = store
        self._timeout = timeout
        self._clock = clock
        #: controller key -> what it waits for
        self._pending: dict[str, _Pending] = {}
        #: object key -> controller key
        self._waiters: dict[str, str] = {}

    @classmethod
    def of(cls, informer: Informer) -> Expectations:
        """Expectations over `informer`'s cache, ticked off by its events."""
        expectations = cls(informer.store)
        informer.add_handler(expectations.observe, replay=False)
        return expectations

    def _entry(self, key: str) -> _Pending:
        """The key's entry, its clock restarted: the timeout counts from the latest expectation."""
        entry = self._pending.get(key)
        if entry is None:
            entry = self._pending[key] = _Pending(since=self._clock())
        entry.since = self._clock()
        return entry

    def expect_created(self, key: str, objects: Iterable[JSON]) -> None:
        """`objects` (as the API returned them) were created for `key`."""
        for obj in objects:
            object_id = object_key(obj)
            if self._store.get_by_key(object_id) is None:
                self._entry(key).creations.add(object_id)
                self._waiters[object_id] = key

    def expect_updated(self, key: str, replaced: Iterable[JSON]) -> None:
        """The cached versions in `replaced` were overwritten for `key`."""
        for old in replaced:
            object_id = object_key(old)
            cached = self._store.get_by_key(object_id)
            if cached is not None and _rv(cached) == _rv(old):
                self._entry(key).updates[object_id] = _rv(old)
                self._waiters[object_id] = key

    def expect_deleted(self, key: str, objects: Iterable[JSON]) -> None:
        """`objects` were deleted for `key`; they count as gone once deleting or absent."""
        for obj in objects:
            object_id = object_key(obj)
            if not _deleting(self._store.get_by_key(object_id)):
                self._entry(key).deletions.add(object_id)
                self._waiters[object_id] = key

    def observe(self, kind: str, obj: JSON, old: JSON | None) -> None:
        """Informer handler: ticks off what the change shows."""
        object_id = object_key(obj)
        key = self._waiters.get(object_id)
        if key is None:
            return
        entry = self._pending.get(key)
        if entry is None:
            del self._waiters[object_id]
            return
        entry.creations.discard(object_id)
        gone = kind == "DELETED" or _deleting(obj)
        if gone:
            entry.deletions.discard(object_id)
        if object_id in entry.updates and (gone or _rv(obj) != entry.updates[object_id]):
            del entry.updates[object_id]
        if object_id not in entry.objects():
            del self._waiters[object_id]
        if entry.empty():
            del self._pending[key]

    def satisfied(self, key: str) -> bool:
        """Nothing pending for `key` (or what was pending has expired)."""
        entry = self._pending.get(key)
        if entry is None:
            return True
        if self._clock() - entry.since >= self._timeout:
            self.forget(key)
            return True
        return False

    def expires_in(self, key: str) -> float | None:
        entry = self._pending.get(key)
        return None if entry is None else max(entry.since + self._timeout - self._clock(), 0.0)

    def forget(self, key: str) -> None:
        entry = self._pending.pop(key, None)
        if entry is not None:
            for object_id in entry.objects():
                self._waiters.pop(object_id, None)
