"""The versioned object store: what etcd is to kube-apiserver.

One resourceVersion counter for the whole server; collections by storage key
(`pods`, `deployments.apps`, `foreignclusters.core.liqo.io`), then namespace, then
name. Stored dicts are never mutated after they are stored: every write stores a new
dict, so lists, watch events and snapshots can share them without copying.

The compact JSON of a stored object is kept once it has been encoded (by a get, list,
watch or snapshot) for as long as that version is stored, so a version is encoded
once, however many readers and watchers it goes to.

Every write appends an event to a bounded log. Watches replay the log from the
resourceVersion a client asks for and then follow new events; a resourceVersion older
than the log reaches gives 410 Gone, as a compacted etcd does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

Obj = dict[str, Any]


@dataclass(frozen=True)
class Event:
    rv: int
    key: str
    type: str  # ADDED, MODIFIED, DELETED
    obj: Obj
    old: Obj | None


@dataclass(eq=False)
class Subscription:
    """A watcher's mailbox: events of one storage key, optionally one namespace."""

    key: str
    namespace: str | None
    queue: asyncio.Queue[Event | None] = field(default_factory=asyncio.Queue)
    #: set when the watcher fell so far behind that events had to be dropped
    overflowed: bool = False


class Storage:
    def __init__(self, *, history: int = 50_000, max_backlog: int = 100_000) -> None:
        self._collections: dict[str, dict[str, dict[str, Obj]]] = {}
        self._rv = 0
        self._log: deque[Event] = deque(maxlen=history)
        self._compacted_rv = 0
        self._subscriptions: dict[str, set[Subscription]] = {}
        self._watches_closed = False
        self._max_backlog = max_backlog
        #: JSON of stored objects by id(); an entry goes when its object leaves the store
        self._encoded: dict[int, bytes] = {}
        self.dirty = asyncio.Event()

    # reads

    @property
    def resource_version(self) -> int:
        return self._rv

    @property
    def compacted_rv(self) -> int:
        """Events at or below this resourceVersion are no longer in the log."""
        return self._compacted_rv

    def get(self, key: str, namespace: str, name: str) -> Obj | None:
        return self._collections.get(key, {}).get(namespace, {}).get(name)

    def objects(self, key: str, namespace: str | None = None) -> list[Obj]:
        """Objects sorted by namespace then name, the order etcd keys give."""
        collection = self._collections.get(key, {})
        if namespace is not None:
            items = collection.get(namespace, {})
            return [items[n] for n in sorted(items)]
        return [collection[ns][n] for ns in sorted(collection) for n in sorted(collection[ns])]

    def encoded(self, key: str, obj: Obj) -> bytes:
        """`obj` as compact JSON; reused while `obj` is the stored version of its object."""
        meta = obj.get("metadata")
        if (
            not isinstance(meta, dict)
            or self.get(key, meta.get("namespace", ""), meta.get("name", "")) is not obj
        ):
            return encode(obj)
        return self._encoded_stored(obj)

    def _encoded_stored(self, obj: Obj) -> bytes:
        """`encoded` for an object known to be stored."""
        data = self._encoded.get(id(obj))
        if data is None:
            data = self._encoded[id(obj)] = encode(obj)
        return data

    def count(self, key: str) -> int:
        return sum(len(v) for v in self._collections.get(key, {}).values())

    def keys(self) -> list[str]:
        return list(self._collections)

    def events_since(self, rv: int, key: str) -> Iterator[Event]:
        for event in self._log:
            if event.rv > rv and event.key == key:
                yield event

    # writes: each takes a fresh dict whose metadata the caller filled, sets its resourceVersion

    def next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def put(self, key: str, obj: Obj, *, old: Obj | None) -> Obj:
        """Store a created (old is None) or updated object; returns it with its new resourceVersion."""
        rv = self.next_rv()
        meta = obj["metadata"]
        meta["resourceVersion"] = str(rv)
        ns = meta.get("namespace", "")
        bucket = self._collections.setdefault(key, {}).setdefault(ns, {})
        replaced = bucket.get(meta["name"])
        if replaced is not None:
            self._encoded.pop(id(replaced), None)
        bucket[meta["name"]] = obj
        self._emit(Event(rv, key, "MODIFIED" if old is not None else "ADDED", obj, old))
        return obj

    def remove(self, key: str, obj: Obj) -> Obj:
        """Delete an object; the DELETED event carries it with a fresh resourceVersion."""
        meta = obj["metadata"]
        ns = meta.get("namespace", "")
        bucket = self._collections.get(key, {}).get(ns, {})
        old = bucket.pop(meta["name"], None)
        if old is not None:
            self._encoded.pop(id(old), None)
        if not bucket:
            self._collections.get(key, {}).pop(ns, None)
        rv = self.next_rv()
        gone = {**obj, "metadata": {**meta, "resourceVersion": str(rv)}}
        self._emit(Event(rv, key, "DELETED", gone, old))
        return gone

    def _emit(self, event: Event) -> None:
        if len(self._log) == self._log.maxlen:
            self._compacted_rv = self._log[0].rv
        self._log.append(event)
        self.dirty.set()
        namespace = event.obj["metadata"].get("namespace", "")
        for sub in self._subscriptions.get(event.key, ()):
            if sub.overflowed or (sub.namespace is not None and sub.namespace != namespace):
                continue
            if sub.queue.qsize() >= self._max_backlog:
                sub.overflowed = True
                sub.queue.put_nowait(None)
                continue
            sub.queue.put_nowait(event)

    # watch subscriptions

    def subscribe(self, key: str, namespace: str | None) -> Subscription:
        sub = Subscription(key, namespace)
        if self._watches_closed:
            sub.queue.put_nowait(None)
            return sub
        self._subscriptions.setdefault(key, set()).add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        self._subscriptions.get(sub.key, set()).discard(sub)

    def close_watches(self, key: str | None = None) -> None:
        """End watches (of one key, or all): each gets an end-of-stream marker.

        Closing all is for good (the server is stopping): a watch that clients open again
        while the listener drains ends at once too, so shutdown never waits on one.
        """
        if key is None:
            self._watches_closed = True
        keys: Iterable[str] = [key] if key is not None else list(self._subscriptions)
        for k in keys:
            for sub in self._subscriptions.pop(k, set()):
                sub.queue.put_nowait(None)

    # persistence

    def snapshot(self) -> bytes:
        """The state file's contents, `{"resourceVersion": n, "collections": {key: [objects]}}` as JSON.

        Built from the objects' kept encodings: a snapshot encodes only what changed since the last.
        """
        collections = b",".join(
            encode(key) + b":[" + b",".join(map(self._encoded_stored, self.objects(key))) + b"]"
            for key in self._collections
        )
        return b'{"resourceVersion":' + str(self._rv).encode() + b',"collections":{' + collections + b"}}"

    def restore(self, snapshot: Obj) -> None:
        self._encoded.clear()
        self._rv = int(snapshot["resourceVersion"])
        self._compacted_rv = self._rv
        for key, objects in snapshot["collections"].items():
            for obj in objects:
                meta = obj["metadata"]
                self._collections.setdefault(key, {}).setdefault(meta.get("namespace", ""), {})[
                    meta["name"]
                ] = obj


def encode(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def write_snapshot(path: Path, snapshot: bytes) -> None:
    """Write atomically (temp file + rename) so a crash never leaves half a state file."""
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        f.write(snapshot)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def read_snapshot(path: Path) -> Obj | None:
    if not path.exists():
        return None
    with open(path, encoding="utf-8") as f:
        data: Obj = json.load(f)
    return data
