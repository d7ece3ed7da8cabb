"""Writing a workload's status: only when it changed, through `/status`, conflicts retried.

Status is computed from the informers' caches and written with the cached
resourceVersion. The cache often trails the controller's own last write, so a conflict
is retried once on a fresh copy, as kube's ReplicaSet, DaemonSet and StatefulSet
controllers do (`updateReplicaSetStatus`); a second conflict, or one in any other
write of a sync, makes the key sync again (`retry_on_conflict`).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from runtime.api.objects import JSON
from runtime.api.resource import Resource
from runtime.core import Client, ConflictError, TemporaryError

from .names import FIELD_MANAGER
from .ownership import name, namespace, uid

T = TypeVar("T")


async def update_status(client: Client, resource: Resource, obj: JSON, status: JSON) -> JSON:
    """PUT `status` onto the cached `obj`; returns the stored object (`obj` itself when nothing changed)."""
    if obj.get("status") == status:
        return obj
    try:
        return await client.update_status(resource, {**obj, "status": status}, field_manager=FIELD_MANAGER)
    except ConflictError:
        fresh = await client.get(resource, name(obj), namespace=namespace(obj) or None)
        if uid(fresh) != uid(obj):
            raise
        return await client.update_status(resource, {**fresh, "status": status}, field_manager=FIELD_MANAGER)


async def retry_on_conflict(request: object, work: Awaitable[T]) -> T:
    """Run a reconcile body; a conflict (stale cache) becomes a quiet retry instead of an error."""
    try:
        return await work
    except ConflictError as exc:
        raise TemporaryError(f"{request}: changed while syncing ({exc.message}); syncing again") from exc
