"""An offloaded namespace seen from the consumer: writing its NamespaceOffloading (built by
`runtime.forge.namespaceoffloading`), reading it back, the bounded wait for its twin namespaces, and
unoffloading with the bounded wait and the forced path.

`Offloading` summarises the status the controller writes: the phase, the twin
namespaces' name and one `ClusterStatus` per peered cluster (selected or not, its twin
namespace there or why not). `wait_offloaded` polls it until every selected cluster has
its twin namespace, ending early when every one of them reports a failure a wait cannot
fix (a name taken on the provider, a tenant that may not have more namespaces).
`unoffload` deletes the NamespaceOffloading and waits for the controller to report the
twin namespaces gone (its own wait is bounded too); past its bound it removes the
finalizer, so a destroy never hangs, and a cluster that cannot be reached counts as gone.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from runtime.api import constants as c
from runtime.api.crds import NAMESPACEOFFLOADINGS
from runtime.api.kinds import NAMESPACES
from runtime.api.objects import JSON
from runtime.core import APIConnectionError, Client, NotFoundError
from runtime.forge.namespaceoffloading import ClusterStatus, cluster_statuses, namespace_offloading

from .contract import Change, Contract, Input, Refusal
from .observed import ObservedObject
from .unreachable import unreachable
from .waits import (
    NEVER,
    POLL_INTERVAL,
    POLL_MAX_INTERVAL,
    Blocking,
    Seen,
    Stop,
    WaitTimeoutError,
    wait_until,
)

#: how long every selected cluster must have failed before a wait gives up (the provider may still be
#: creating a twin namespace whose name was just freed)
FAIL_AFTER: Final = 15.0
#: how long a forced unoffload waits for the NamespaceOffloading to go once its finalizer is removed
ORPHAN_SECONDS: Final = 15.0
#: phases in which the offloading has nothing more to do (NoClusterSelected: no peered cluster matches yet)
SETTLED: Final = frozenset({c.PHASE_READY, c.PHASE_NO_CLUSTER_SELECTED})


@dataclass(frozen=True)
class Offloading(ObservedObject):
    """A NamespaceOffloading as the controller reports it."""

    obj: JSON
    clusters: list[ClusterStatus] = field(default_factory=list)

    @classmethod
    def of(cls, obj: JSON) -> Offloading:
        return cls(obj, cluster_statuses(obj))

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"]["namespace"])

    @property
    def phase(self) -> str:
        return str(self.status.get("offloadingPhase") or "")

    @property
    def remote_namespace_name(self) -> str:
        return str(self.status.get("remoteNamespaceName") or "")

    @property
    def terminating(self) -> bool:
        return bool(self.obj["metadata"].get("deletionTimestamp"))

    @property
    def current(self) -> bool:
        """Whether the status speaks of the spec as it is now (the controller saw this generation)."""
        observed = self.status.get("observedGeneration")
        return observed is not None and int(observed) >= int(self.obj["metadata"].get("generation") or 0)

    def problems(self) -> list[str]:
        """The selected clusters without their twin namespace, worded for a diagnostic."""
        return [str(cluster) for cluster in self.clusters if cluster.selected and not cluster.ready]

    def summary(self) -> str:
        problems = self.problems()
        return f"phase {self.phase or 'unknown'}" + (": " + "; ".join(problems) if problems else "")

    def blocking(self) -> Blocking:
        """What holds a wait on it up: its phase, and the selected clusters without their twin namespace."""
        return Blocking(_subject(self.namespace), self.phase or "NoPhase", "; ".join(self.problems()))


def _subject(namespace: str) -> str:
    return f"NamespaceOffloading {namespace}/{c.NAMESPACE_OFFLOADING_NAME}"


async def get(client: Client, namespace: str) -> Offloading | None:
    try:
        return Offloading.of(
            await client.get(NAMESPACEOFFLOADINGS, c.NAMESPACE_OFFLOADING_NAME, namespace=namespace)
        )
    except NotFoundError:
        return None


async def observe(client: Client, namespace: str) -> Offloading | None:
    """The namespace's offloading as it is now; None when there is none or it is being deleted."""
    found = await get(client, namespace)
    return None if found is None or found.terminating else found


# creating


class NamespaceMissingError(Exception):
    """The namespace to offload does not exist."""

    def __init__(self, namespace: str) -> None:
        super().__init__(f"namespace {namespace} does not exist")
        self.namespace = namespace


class OffloadingExistsError(Exception):
    """The namespace is offloaded already (its NamespaceOffloading exists and is not being deleted)."""

    def __init__(self, namespace: str) -> None:
        super().__init__(f"namespace {namespace} is offloaded already")
        self.namespace = namespace


class OffloadingSetExistsError(Exception):
    """The NamespaceOffloadingSet of a namespace selector exists already (`offloadset.set_name`)."""

    def __init__(self, name: str, selector: str) -> None:
        super().__init__(f"NamespaceOffloadingSet {name} ({selector}) exists already")
        self.name = name


class NamespacesOffloadedError(Exception):
    """Namespaces a namespace selector picks have a NamespaceOffloading already (namespace -> the set that made
    it, "" when none did)."""

    def __init__(self, owners: Mapping[str, str]) -> None:
        self.owners = dict(owners)
        super().__init__(self.listing)

    @property
    def listing(self) -> str:
        return ", ".join(
            f"{namespace} ({f'by NamespaceOffloadingSet {by}' if by else 'its own'})"
            for namespace, by in sorted(self.owners.items())
        )


class RuntimeMissingError(Exception):
    """The cluster serves no NamespaceOffloadings: the Liqo runtime is not installed."""


#: `liqo_offload` and `Offload`: one namespace (`namespace`) or every namespace a label selector picks
#: (`namespace_selector`, `runtime.operations.offloadset`). The namespace, the selector, the mapping strategy and
#: a selected name replace the offloading (the runtime never renames twin namespaces); the pod strategy and the
#: cluster selector change in place
CONTRACT: Final = Contract(
    "offload",
    (
        Input("namespace", Change.REPLACE),
        Input("namespace_selector", Change.REPLACE),
        Input("pod_offloading_strategy", Change.UPDATE, default=c.POD_OFFLOADING_LOCAL_AND_REMOTE),
        Input("namespace_mapping_strategy", Change.REPLACE, default=c.MAPPING_DEFAULT_NAME),
        Input("remote_namespace_name", Change.REPLACE),
        Input("cluster_selector_terms", Change.UPDATE),
        Input("force", Change.UPDATE, default=False),
    ),
    timeouts={"create": 300.0, "update": 300.0, "delete": 300.0},
    refusals=(
        Refusal(
            RuntimeMissingError,
            "Liqo runtime not installed",
            "The cluster at {host} does not serve NamespaceOffloadings: the Liqo runtime is not installed there. "
            "{Create} {install} on this (consumer) cluster first, and make {this} depend on it.",
        ),
        Refusal(
            NamespaceMissingError,
            "Namespace not found",
            "Namespace {namespace} does not exist on the cluster at {host}: create it first ({namespace_resource}, "
            "say) and make {this} depend on it.",
            field="namespace",
        ),
        Refusal(
            OffloadingExistsError,
            "Namespace already offloaded",
            "Namespace {namespace} on the cluster at {host} already has a NamespaceOffloading. {adopt}",
            field="namespace",
            id="{namespace}",
            by_hand="kubectl delete namespaceoffloadings -n {namespace} offloading",
        ),
        Refusal(
            OffloadingSetExistsError,
            "Namespaces already offloaded by this selector",
            "NamespaceOffloadingSet {name} on the cluster at {host} already offloads the namespaces that "
            'namespace_selector "{selector}" picks. {adopt}',
            field="namespace_selector",
            id="{name}",
            by_hand="kubectl delete namespaceoffloadingsets {name}",
        ),
        Refusal(
            NamespacesOffloadedError,
            "Namespaces already offloaded",
            'Namespaces that namespace_selector "{selector}" picks on the cluster at {host} already have a '
            "NamespaceOffloading: {namespaces}. A namespace has one NamespaceOffloading and {this} never takes one "
            "over: narrow the selector (or remove the label from those namespaces), or unoffload them first "
            "(destroy what offloads them, or kubectl delete namespaceoffloadings -n <namespace> offloading).",
            field="namespace_selector",
        ),
    ),
)


async def check_new(client: Client, namespace: str, *, seconds: float, stop: Stop = NEVER) -> None:
    """Whether `namespace` can be offloaded; waits out an unoffload of it in progress (up to `seconds`).

    Raises RuntimeMissingError, NamespaceMissingError or OffloadingExistsError.
    """
    try:
        await client.resource_for(NAMESPACEOFFLOADINGS.api_version, NAMESPACEOFFLOADINGS.kind)
    except NotFoundError:
        raise RuntimeMissingError() from None
    try:
        await client.get(NAMESPACES, namespace)
    except NotFoundError:
        raise NamespaceMissingError(namespace) from None
    existing = await get(client, namespace)
    if existing is not None and existing.terminating:
        await wait_gone(client, namespace, seconds=seconds, stop=stop)
    elif existing is not None:
        raise OffloadingExistsError(namespace)


async def apply_offloading(
    client: Client,
    namespace: str,
    *,
    pod_offloading_strategy: str,
    namespace_mapping_strategy: str,
    remote_namespace_name: str,
    cluster_selector_terms: Sequence[Mapping[str, Any]],
    field_manager: str,
) -> Offloading:
    """Server-side apply the namespace's NamespaceOffloading as `field_manager`; what the API server stored."""
    body = namespace_offloading(
        namespace,
        pod_offloading_strategy=pod_offloading_strategy,
        namespace_mapping_strategy=namespace_mapping_strategy,
        remote_namespace_name=remote_namespace_name,
        cluster_selector_terms=cluster_selector_terms,
    )
    return Offloading.of(
        await client.apply(NAMESPACEOFFLOADINGS, body, field_manager=field_manager, force=True)
    )


# waiting


class OffloadingFailedError(Exception):
    """Every selected cluster reports a failure that waiting will not fix."""

    def __init__(self, offloading: Offloading) -> None:
        super().__init__(offloading.summary())
        self.offloading = offloading


async def wait_offloaded(
    client: Client, namespace: str, *, seconds: float, stop: Stop = NEVER, fail_after: float | None = None
) -> Offloading:
    """Until the controller reports the current spec settled: Ready (every selected cluster has its twin
    namespace) or NoClusterSelected.

    Raises OffloadingFailedError once AllFailed has persisted for `fail_after` seconds (`FAIL_AFTER`).
    """
    patience = FAIL_AFTER if fail_after is None else fail_after
    loop = asyncio.get_running_loop()
    failing_since: float | None = None

    async def check() -> tuple[Offloading | None, Seen]:
        nonlocal failing_since
        found = await get(client, namespace)
        if found is None:
            return None, Blocking(_subject(namespace), "NotFound", "it does not exist")
        if not found.current:
            return None, Blocking(
                _subject(namespace),
                "NotObserved",
                "the runtime has not reported on this spec yet (is liqo-controller-manager running on this "
                "cluster?)",
            )
        if found.phase in SETTLED:
            return found, found.phase
        if found.phase == c.PHASE_ALL_FAILED:
            failing_since = failing_since if failing_since is not None else loop.time()
            if loop.time() - failing_since >= patience:
                raise OffloadingFailedError(found)
        else:
            failing_since = None
        return None, found.blocking()

    return await wait_until(
        check,
        what=f"the offloading of namespace {namespace} (its twin namespaces)",
        seconds=seconds,
        stop=stop,
        interval=POLL_INTERVAL,
        max_interval=POLL_MAX_INTERVAL,
    )


async def wait_gone(client: Client, namespace: str, *, seconds: float, stop: Stop = NEVER) -> None:
    """Until the namespace's NamespaceOffloading is gone (the controller reported its twin namespaces gone)."""

    async def check() -> tuple[bool | None, Seen]:
        found = await get(client, namespace)
        if found is None:
            return True, "gone"
        return None, found.blocking()

    await wait_until(
        check,
        what=f"the NamespaceOffloading of namespace {namespace} to be deleted",
        seconds=seconds,
        stop=stop,
        interval=POLL_INTERVAL,
        max_interval=POLL_MAX_INTERVAL,
    )


# unoffloading


@dataclass(frozen=True)
class Unoffloaded:
    """How an unoffload ended: cleanly (both empty), forced, or with the cluster unreachable."""

    #: the wait ran out (what was last seen) and the finalizer was removed: twin namespaces may be left behind
    orphaned: str = ""
    #: the cluster could not be reached (why, in words) and `force` let the offloading go: nothing was deleted
    unreachable: str = ""


async def unoffload(
    client: Client, namespace: str, *, seconds: float, field_manager: str, force: bool, stop: Stop = NEVER
) -> Unoffloaded:
    """Delete the namespace's NamespaceOffloading and wait for its twin namespaces to go, bounded by `seconds`
    (plus `ORPHAN_SECONDS` when forced). A cluster that cannot be reached is `unreachable.UnreachableError`,
    unless `force` lets the offloading go without deleting it."""
    orphaned = ""
    try:
        try:
            await client.delete(NAMESPACEOFFLOADINGS, c.NAMESPACE_OFFLOADING_NAME, namespace=namespace)
            await wait_gone(client, namespace, seconds=seconds, stop=stop)
        except NotFoundError:
            pass
        except WaitTimeoutError as exc:
            orphaned = exc.last
            with contextlib.suppress(NotFoundError):
                await client.patch(
                    NAMESPACEOFFLOADINGS,
                    c.NAMESPACE_OFFLOADING_NAME,
                    {"metadata": {"finalizers": None}},
                    namespace=namespace,
                    field_manager=field_manager,
                )
            await wait_gone(client, namespace, seconds=ORPHAN_SECONDS, stop=stop)
    except APIConnectionError as exc:
        return Unoffloaded(orphaned=orphaned, unreachable=unreachable(exc, force=force))
    return Unoffloaded(orphaned=orphaned)
