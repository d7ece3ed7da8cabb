"""Adopt and release children the way kube's `ControllerRefManager` does.

A controller owns the objects whose controller reference names it. Of the candidates it
lists, it adopts orphans its selector matches (unless it or the orphan is being
deleted) and releases the ones it owns that its selector no longer matches (unless it
is being deleted itself); objects another controller owns are left alone.

Both writes are merge patches of `metadata.ownerReferences` carrying the cached
resourceVersion, so a decision made on a stale cache fails with a conflict instead of
clobbering a newer owner list.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from runtime.api.objects import JSON
from runtime.api.resource import Resource
from runtime.api.selectors import Selector
from runtime.core import APIError, Client, NotFoundError

from .names import FIELD_MANAGER
from .ownership import controller_of, controller_ref, is_deleting, labels, name, namespace, reference, uid

logger = logging.getLogger(__name__)


async def claim(
    client: Client,
    resource: Resource,
    *,
    owner: JSON,
    candidates: Iterable[JSON],
    selector: Selector,
    accept: Callable[[JSON], bool] | None = None,
) -> list[JSON]:
    """The candidates `owner` controls once orphans are adopted and strays released.

    A candidate belongs when `selector` matches it and `accept` (if given) agrees, as
    kube's claim filters (a StatefulSet only takes pods named after it). Every candidate
    is tried; the first API error (other than NotFound) is raised at the end.
    """
    claimed: list[JSON] = []
    errors: list[APIError] = []
    owner_uid = uid(owner)
    for child in candidates:
        ref = controller_of(child)
        matches = selector.matches(labels(child)) and (accept is None or accept(child))
        try:
            if ref is not None:
                if ref.get("uid") != owner_uid:
                    continue
                if matches:
                    claimed.append(child)
                elif not is_deleting(owner):
                    await _release(client, resource, child, owner=owner)
                continue
            if (
                is_deleting(owner)
                or not matches
                or is_deleting(child)
                or namespace(child) != namespace(owner)
            ):
                continue
            claimed.append(await _adopt(client, resource, child, owner=owner))
        except NotFoundError:
            continue
        except APIError as exc:
            errors.append(exc)
    if errors:
        raise errors[0]
    return claimed


async def _adopt(client: Client, resource: Resource, child: JSON, *, owner: JSON) -> JSON:
    refs = [*((child.get("metadata") or {}).get("ownerReferences") or []), controller_ref(owner)]
    adopted = await _set_owners(client, resource, child, refs)
    logger.info("%s: adopted by %s %s", reference(child), owner.get("kind"), name(owner))
    return adopted


async def _release(client: Client, resource: Resource, child: JSON, *, owner: JSON) -> None:
    refs = [
        ref
        for ref in (child.get("metadata") or {}).get("ownerReferences") or []
        if ref.get("uid") != uid(owner)
    ]
    await _set_owners(client, resource, child, refs)
    logger.info(
        "%s: released by %s %s (its labels no longer match the selector)",
        reference(child),
        owner.get("kind"),
        name(owner),
    )


async def _set_owners(client: Client, resource: Resource, child: JSON, refs: list[JSON]) -> JSON:
    meta = child.get("metadata") or {}
    patch = {"metadata": {"ownerReferences": refs or None, "resourceVersion": meta.get("resourceVersion")}}
    return await client.patch(
        resource, name(child), patch, namespace=namespace(child), field_manager=FIELD_MANAGER
    )
