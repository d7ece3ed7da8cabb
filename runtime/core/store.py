"""The informer's in-memory cache: objects by `namespace/name`, with custom indexes.

Reconcilers read current state from here rather than from the API server (level
triggering makes that safe: a stale read is followed by another event and another
reconcile). Everything runs on one event loop, so the store needs no locks. Stored
dicts are shared with every reader: treat them as read-only, and deep-copy before
changing one to send it back.

Only the informer writes (`upsert`, `remove`, `replace`); each write returns the
previous version so the informer can tell handlers what changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Literal

from runtime.api.objects import JSON, nested

JSONList = list[JSON]
#: ADDED, MODIFIED or DELETED, as the cache saw the change
Change = tuple[Literal["ADDED", "MODIFIED", "DELETED"], JSON, JSON | None]
#: the values an object is indexed under (for example its owners' uids, or one label's value)
IndexFunc = Callable[[JSON], Iterable[str]]


def object_key(obj: Mapping[str, Any]) -> str:
    """`namespace/name`, or `name` for cluster-scoped objects (client-go's MetaNamespaceKeyFunc)."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta['name']}" if namespace else str(meta["name"])


def label_index(label: str) -> IndexFunc:
    """An index of objects by the value of one label (objects without it are not indexed)."""

    def values(obj: JSON) -> Iterable[str]:
        labels = nested(obj, "metadata", "labels") or {}
        return [labels[label]] if label in labels else []

    return values


def owner_uid_index(obj: JSON) -> Iterable[str]:
    """An index of objects by the uids of their owners."""
    return [ref["uid"] for ref in nested(obj, "metadata", "ownerReferences") or [] if "uid" in ref]


class Store:
    def __init__(self) -> None:
        self._objects: dict[str, JSON] = {}
        self._index_funcs: dict[str, IndexFunc] = {}
        #: index name -> value -> keys
        self._indexes: dict[str, dict[str, set[str]]] = {}

    # reads

    def __len__(self) -> int:
        return len(self._objects)

    def __iter__(self) -> Iterator[JSON]:
        return iter(list(self._objects.values()))

    def get(self, name: str, *, namespace: str | None = None) -> JSON | None:
        return self._objects.get(f"{namespace}/{name}" if namespace else name)

    def get_by_key(self, key: str) -> JSON | None:
        return self._objects.get(key)

    def keys(self) -> list[str]:
        return list(self._objects)

    def items(self, *, namespace: str | None = None, labels: Mapping[str, str] | None = None) -> JSONList:
        """Objects, optionally of one namespace and carrying all the given label values."""
        found: JSONList = []
        for obj in self._objects.values():
            meta = obj.get("metadata") or {}
            if namespace is not None and meta.get("namespace", "") != namespace:
                continue
            own = meta.get("labels") or {}
            if labels and any(own.get(k) != v for k, v in labels.items()):
                continue
            found.append(obj)
        return found

    def by_index(self, index: str, value: str) -> JSONList:
        keys = self._indexes[index].get(value, set())
        return [self._objects[key] for key in sorted(keys)]

    # indexes

    def add_index(self, name: str, func: IndexFunc) -> None:
        """Index the objects by `func` (the objects already cached, and every later write)."""
        if name in self._index_funcs:
            raise ValueError(f"the store already has an index named {name!r}")
        self._index_funcs[name] = func
        self._indexes[name] = {}
        for key, obj in self._objects.items():
            self._index(key, obj)

    def _index(self, key: str, obj: JSON) -> None:
        for name, func in self._index_funcs.items():
            for value in func(obj):
                self._indexes[name].setdefault(value, set()).add(key)

    def _unindex(self, key: str, obj: JSON) -> None:
        for name, func in self._index_funcs.items():
            index = self._indexes[name]
            for value in func(obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]

    # writes (the informer's)

    def upsert(self, obj: JSON) -> JSON | None:
        """Store an added or modified object; returns the version it replaces, if any."""
        key = object_key(obj)
        old = self._objects.get(key)
        if old is not None:
            self._unindex(key, old)
        self._objects[key] = obj
        self._index(key, obj)
        return old

    def remove(self, obj: JSON) -> JSON | None:
        """Forget an object; returns the version that was cached, if any."""
        key = object_key(obj)
        old = self._objects.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return old

    def replace(self, objects: Iterable[JSON]) -> list[Change]:
        """Make the cache hold exactly `objects` (a fresh list); returns the changes that makes.

        Objects whose resourceVersion did not change give no change; objects that are
        gone come out as DELETED with their last cached version.
        """
        changes: list[Change] = []
        seen: set[str] = set()
        for obj in objects:
            key = object_key(obj)
            seen.add(key)
            old = self._objects.get(key)
            if old is not None and _rv(old) == _rv(obj):
                continue
            self.upsert(obj)
            changes.append(("ADDED", obj, None) if old is None else ("MODIFIED", obj, old))
        for key in [key for key in self._objects if key not in seen]:
            gone = self._objects[key]
            self.remove(gone)
            changes.append(("DELETED", gone, gone))
        return changes


def _rv(obj: JSON) -> str:
    return str(nested(obj, "metadata", "resourceVersion", default=""))
