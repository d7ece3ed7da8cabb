"""Namespaces offloaded by label, seen from the consumer: `liqo_offload` and `Offload` with `namespace_selector`.

They write a NamespaceOffloadingSet (built by `runtime.forge.namespaceoffloadingset`),
named after the selector (`set_name`), whose controller gives every namespace the
selector picks a NamespaceOffloading, those that appear later included. The inputs
and refusals are `offload.CONTRACT`'s; this module is the set's side of it:

- `check_new_set` refuses a selector that is no label selector (`>` and `<`), a set of
  that name that exists already (import it), and namespaces the selector picks that
  are offloaded already (a namespace has one NamespaceOffloading: the set would leave
  them alone, so the create says so instead of succeeding with less than asked);
- `wait_set_offloaded` waits until the controller reported on the current spec and
  every namespace the set offloads is settled (Ready or NoClusterSelected);
- `unoffload_set` deletes the set and waits for it to go (its controller unoffloads each
  namespace first); past its bound it removes the finalizers, so a destroy never hangs.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from runtime.api import constants as c
from runtime.api.crds import NAMESPACEOFFLOADINGS, NAMESPACEOFFLOADINGSETS
from runtime.api.kinds import NAMESPACES
from runtime.api.objects import JSON
from runtime.api.selectors import as_label_selector, label_selector, parse_selector
from runtime.core import APIConnectionError, Client, NotFoundError
from runtime.forge.namespaceoffloadingset import namespace_offloading_set, owner, pickable

from .observed import ObservedObject
from .offload import (
    ORPHAN_SECONDS,
    SETTLED,
    NamespacesOffloadedError,
    Offloading,
    OffloadingSetExistsError,
    RuntimeMissingError,
    Unoffloaded,
)
from .unreachable import unreachable
from .waits import NEVER, POLL_INTERVAL, POLL_MAX_INTERVAL, Blocking, Seen, Stop, WaitTimeoutError, wait_until

#: a set `liqo_offload` names is `selector-<hash of the selector>`
SET_NAME_PREFIX: Final = "selector-"


def label_selector_of(selector: str) -> JSON:
    """The LabelSelector object of a selector in kubectl's `-l` form; SelectorError when it has none."""
    return as_label_selector(parse_selector(selector))


def set_name(selector: str) -> str:
    """The set's name: one per selector, however it is spelled (`a=b,c` and `c, a==b` name the same set)."""
    canonical = str(label_selector(label_selector_of(selector)))
    return SET_NAME_PREFIX + hashlib.sha256(canonical.encode()).hexdigest()[:10]


@dataclass(frozen=True)
class OffloadingSet(ObservedObject):
    """A NamespaceOffloadingSet as its controller reports it, with the NamespaceOffloadings it made."""

    obj: JSON
    offloadings: tuple[Offloading, ...] = ()

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def namespaces(self) -> list[str]:
        return [str(name) for name in self.status.get("namespaces") or []]

    @property
    def conflicts(self) -> dict[str, str]:
        return {
            str(entry["namespace"]): str(entry["message"]) for entry in self.status.get("conflicts") or []
        }

    @property
    def terminating(self) -> bool:
        return bool(self.obj["metadata"].get("deletionTimestamp"))

    @property
    def current(self) -> bool:
        observed = self.status.get("observedGeneration")
        return observed is not None and int(observed) >= int(self.obj["metadata"].get("generation") or 0)

    def unsettled(self) -> list[Offloading]:
        """The namespaces it offloads whose NamespaceOffloading is not settled on its current spec."""
        return [o for o in self.offloadings if not (o.current and o.phase in SETTLED)]

    def blocking(self) -> Blocking:
        waiting = "; ".join(f"namespace {o.namespace}: {o.summary()}" for o in self.unsettled())
        return Blocking(_subject(self.name), "InProgress" if waiting else "Ready", waiting)


def _subject(name: str) -> str:
    return f"NamespaceOffloadingSet {name}"


async def get_set(client: Client, name: str) -> OffloadingSet | None:
    try:
        found = await client.get(NAMESPACEOFFLOADINGSETS, name)
    except NotFoundError:
        return None
    listed = await client.list(
        NAMESPACEOFFLOADINGS, label_selector=f"{c.LABEL_NAMESPACE_OFFLOADING_SET}={name}"
    )
    return OffloadingSet(found, tuple(Offloading.of(item) for item in listed.items))


async def observe_set(client: Client, name: str) -> OffloadingSet | None:
    """The set as it is now; None when there is none or it is being deleted."""
    found = await get_set(client, name)
    return None if found is None or found.terminating else found


# creating


async def check_new_set(
    client: Client, selector: str, *, runtime_namespace: str, seconds: float, stop: Stop = NEVER
) -> None:
    """Whether the namespaces `selector` picks can be offloaded by a new set; waits out a deletion of the set.

    Raises RuntimeMissingError, OffloadingSetExistsError or NamespacesOffloadedError.
    """
    name = set_name(selector)
    try:
        await client.resource_for(NAMESPACEOFFLOADINGSETS.api_version, NAMESPACEOFFLOADINGSETS.kind)
    except NotFoundError:
        raise RuntimeMissingError() from None
    existing = await get_set(client, name)
    if existing is not None and existing.terminating:
        await wait_set_gone(client, name, seconds=seconds, stop=stop)
    elif existing is not None:
        raise OffloadingSetExistsError(name, selector)
    picked = {
        str(ns["metadata"]["name"])
        for ns in (await client.list(NAMESPACES, label_selector=str(parse_selector(selector)))).items
        if pickable(ns, runtime_namespace=runtime_namespace)
    }
    offloaded = {
        str(o["metadata"]["namespace"]): owner(o)
        for o in (await client.list(NAMESPACEOFFLOADINGS)).items
        if o["metadata"]["name"] == c.NAMESPACE_OFFLOADING_NAME and o["metadata"]["namespace"] in picked
    }
    if offloaded:
        raise NamespacesOffloadedError(offloaded)


async def apply_set(
    client: Client,
    selector: str,
    *,
    pod_offloading_strategy: str,
    namespace_mapping_strategy: str,
    cluster_selector_terms: Sequence[Mapping[str, Any]],
    field_manager: str,
) -> OffloadingSet:
    """Server-side apply the selector's NamespaceOffloadingSet as `field_manager`."""
    body = namespace_offloading_set(
        set_name(selector),
        namespace_selector=label_selector_of(selector),
        pod_offloading_strategy=pod_offloading_strategy,
        namespace_mapping_strategy=namespace_mapping_strategy,
        cluster_selector_terms=cluster_selector_terms,
    )
    return OffloadingSet(
        await client.apply(NAMESPACEOFFLOADINGSETS, body, field_manager=field_manager, force=True)
    )


# waiting


async def wait_set_offloaded(
    client: Client, name: str, *, seconds: float, stop: Stop = NEVER
) -> OffloadingSet:
    """Until the controller reported on the current spec and every namespace it offloads is settled."""

    async def check() -> tuple[OffloadingSet | None, Seen]:
        found = await get_set(client, name)
        if found is None:
            return None, Blocking(_subject(name), "NotFound", "it does not exist")
        if not found.current:
            return None, Blocking(
                _subject(name),
                "NotObserved",
                "the runtime has not reported on this spec yet (is liqo-controller-manager running on this cluster?)",
            )
        made = {o.namespace for o in found.offloadings}
        if set(found.namespaces) - made or found.unsettled():
            return None, found.blocking()
        return found, "Ready"

    return await wait_until(
        check,
        what=f"the offloading of the namespaces of NamespaceOffloadingSet {name}",
        seconds=seconds,
        stop=stop,
        interval=POLL_INTERVAL,
        max_interval=POLL_MAX_INTERVAL,
    )


async def wait_set_gone(client: Client, name: str, *, seconds: float, stop: Stop = NEVER) -> None:
    async def check() -> tuple[bool | None, Seen]:
        found = await get_set(client, name)
        if found is None:
            return True, "gone"
        left = ", ".join(o.namespace for o in found.offloadings)
        return None, Blocking(_subject(name), "Terminating", f"still offloading {left}" if left else "")

    await wait_until(
        check,
        what=f"NamespaceOffloadingSet {name} to be deleted",
        seconds=seconds,
        stop=stop,
        interval=POLL_INTERVAL,
        max_interval=POLL_MAX_INTERVAL,
    )


# unoffloading


async def unoffload_set(
    client: Client, name: str, *, seconds: float, field_manager: str, force: bool, stop: Stop = NEVER
) -> Unoffloaded:
    """Delete the set and wait for it to go (its namespaces unoffloaded first), bounded by `seconds` (plus
    `ORPHAN_SECONDS` when the finalizers have to be removed)."""
    orphaned = ""
    try:
        try:
            await client.delete(NAMESPACEOFFLOADINGSETS, name)
            await wait_set_gone(client, name, seconds=seconds, stop=stop)
        except NotFoundError:
            pass
        except WaitTimeoutError as exc:
            orphaned = exc.last
            await _drop_finalizers(client, name, field_manager=field_manager)
            await wait_set_gone(client, name, seconds=ORPHAN_SECONDS, stop=stop)
    except APIConnectionError as exc:
        return Unoffloaded(orphaned=orphaned, unreachable=unreachable(exc, force=force))
    return Unoffloaded(orphaned=orphaned)


async def _drop_finalizers(client: Client, name: str, *, field_manager: str) -> None:
    """Let the set and the NamespaceOffloadings it made go without their clean-up."""
    listed = await client.list(
        NAMESPACEOFFLOADINGS, label_selector=f"{c.LABEL_NAMESPACE_OFFLOADING_SET}={name}"
    )
    unfinalized = {"metadata": {"finalizers": None}}
    for item in listed.items:
        namespace = str(item["metadata"]["namespace"])
        with contextlib.suppress(NotFoundError):
            await client.delete(NAMESPACEOFFLOADINGS, c.NAMESPACE_OFFLOADING_NAME, namespace=namespace)
            await client.patch(
                NAMESPACEOFFLOADINGS,
                c.NAMESPACE_OFFLOADING_NAME,
                unfinalized,
                namespace=namespace,
                field_manager=field_manager,
            )
    with contextlib.suppress(NotFoundError):
        await client.patch(NAMESPACEOFFLOADINGSETS, name, unfinalized, field_manager=field_manager)
