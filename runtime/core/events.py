"""Record core/v1 Events on objects, so `kubectl describe` shows what a controller did.

Repeats are aggregated the way client-go's EventCorrelator does: an event with the same
involved object, type, reason and message as one this recorder already wrote bumps
that Event's `count` and `lastTimestamp` (a merge patch) instead of creating another
object. If the aggregated Event is gone (Events expire), a new one starts at count 1.

Recording is best effort: API failures are logged, never raised, so a reconcile never
fails because its Event could not be written. Events of different objects (or reasons) are
written concurrently; only repeats of one aggregation key wait for each other, so the count
they bump is never lost.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Literal

from runtime.api.objects import JSON

from .client import Client, Resource
from .errors import APIError, NotFoundError

logger = logging.getLogger(__name__)

EVENTS = Resource("", "v1", "events", namespaced=True, kind="Event")

EventType = Literal["Normal", "Warning"]
#: involved object (uid or kind/namespace/name), type, reason, message
_Key = tuple[str, str, str, str]


class EventRecorder:
    def __init__(self, client: Client, *, component: str, instance: str = "", cache_size: int = 4096) -> None:
        self._client = client
        self._component = component
        self._instance = instance
        self._cache_size = cache_size
        #: aggregation key -> (namespace, name, count) of the Event last written for it
        self._seen: OrderedDict[_Key, tuple[str, str, int]] = OrderedDict()
        #: aggregation key -> its lock and how many records hold or wait for it (dropped at zero)
        self._locks: dict[_Key, tuple[asyncio.Lock, list[int]]] = {}

    async def record(
        self, obj: JSON, *, reason: str, message: str, type: EventType = "Normal", action: str = ""
    ) -> JSON | None:
        """Write (or aggregate into) an Event about `obj`; returns the Event, or None if it could not be written."""
        meta = obj.get("metadata") or {}
        involved: JSON = {
            "apiVersion": obj.get("apiVersion", ""),
            "kind": obj.get("kind", ""),
            "name": meta.get("name", ""),
        }
        for field, value in (
            ("namespace", meta.get("namespace")),
            ("uid", meta.get("uid")),
            ("resourceVersion", meta.get("resourceVersion")),
        ):
            if value:
                involved[field] = value
        subject = str(meta.get("uid") or f"{involved['kind']}/{meta.get('namespace', '')}/{involved['name']}")
        key: _Key = (subject, type, reason, message)
        namespace = str(meta.get("namespace") or "default")
        lock, users = self._locks.setdefault(key, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                event = await self._aggregate(key, namespace) if key in self._seen else None
                if event is None:
                    event = await self._create(key, namespace, involved, type, reason, message, action)
        except APIError as exc:
            logger.warning(
                "%s/%s: could not record event %s: %s",
                meta.get("namespace", ""),
                involved["name"],
                reason,
                exc,
            )
            return None
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[key]
        return event

    async def _aggregate(self, key: _Key, namespace: str) -> JSON | None:
        event_namespace, name, count = self._seen[key]
        patch = {"count": count + 1, "lastTimestamp": _now()}
        try:
            event = await self._client.patch(EVENTS, name, patch, namespace=event_namespace)
        except NotFoundError:
            del self._seen[key]
            return None
        self._remember(key, event_namespace, name, count + 1)
        return event

    async def _create(
        self, key: _Key, namespace: str, involved: JSON, type: str, reason: str, message: str, action: str
    ) -> JSON:
        now = _now()
        body: JSON = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{involved['name']}.{time.time_ns():x}", "namespace": namespace},
            "involvedObject": involved,
            "type": type,
            "reason": reason,
            "message": message,
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": self._component, **({"host": self._instance} if self._instance else {})},
            "reportingComponent": self._component,
            "reportingInstance": self._instance,
        }
        if action:
            body["action"] = action
        event = await self._client.create(EVENTS, body)
        self._remember(key, namespace, str(event["metadata"]["name"]), 1)
        return event

    def _remember(self, key: _Key, namespace: str, name: str, count: int) -> None:
        self._seen[key] = (namespace, name, count)
        self._seen.move_to_end(key)
        while len(self._seen) > self._cache_size:
            self._seen.popitem(last=False)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
