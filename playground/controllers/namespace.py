"""Namespace lifecycle: empty a deleted namespace, then release its `kubernetes` finalizer.

kube-apiserver only marks a deleted namespace Terminating (deletionTimestamp, phase) and
keeps it while `spec.finalizers` holds `kubernetes`. This controller does what
kube-controller-manager's namespace controller does with that: it deletes every object
of every namespaced kind the server serves (found through discovery on each pass, so
custom resources go too), reports progress in the five namespace deletion conditions
with kube's reasons and messages, rechecks until nothing is left (objects held by
finalizers keep it waiting), and then PUTs `/finalize` without the `kubernetes`
finalizer, upon which the API server removes the namespace.

Rechecks follow kube's estimate (half the longest pod grace period or finalizer wait,
plus one second) but start sooner while the deletion is young, since most content
goes at once.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from playground.controlplane import ControlPlaneOptions, Credentials
from runtime.api.kinds import NAMESPACES, PODS
from runtime.api.objects import JSON
from runtime.core import (
    APIError,
    Client,
    ConflictError,
    Manager,
    NotFoundError,
    Request,
    Result,
    Store,
    TemporaryError,
)

from .discovery import Discovery, ServedResource, preferred_resources

logger = logging.getLogger(__name__)

#: the ServiceAccount kube-controller-manager runs this controller as (system:controller:namespace-controller)
ACCOUNT = "namespace-controller"


#: the spec finalizer kube-apiserver puts on every namespace; this controller is its owner
FINALIZER = "kubernetes"
#: kube's guess of how long finalizers on remaining content take to be served
FINALIZER_ESTIMATE_SECONDS = 15
#: the soonest a namespace with content left is looked at again
MIN_RECHECK = 0.2
TERMINAL_PHASES = ("Succeeded", "Failed")

DISCOVERY_FAILURE = "NamespaceDeletionDiscoveryFailure"
GROUP_VERSION_PARSING_FAILURE = "NamespaceDeletionGroupVersionParsingFailure"
CONTENT_FAILURE = "NamespaceDeletionContentFailure"
CONTENT_REMAINING = "NamespaceContentRemaining"
FINALIZERS_REMAINING = "NamespaceFinalizersRemaining"
#: condition type -> (reason, message) when all is well, as kube's namespace deleter words them
OK_CONDITIONS: dict[str, tuple[str, str]] = {
    DISCOVERY_FAILURE: ("ResourcesDiscovered", "All resources successfully discovered"),
    GROUP_VERSION_PARSING_FAILURE: ("ParsedGroupVersions", "All legacy kube types successfully parsed"),
    CONTENT_FAILURE: ("ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
    CONTENT_REMAINING: ("ContentRemoved", "All content successfully removed"),
    FINALIZERS_REMAINING: ("ContentRemoved", "All content successfully removed"),
}


@dataclass
class Pass:
    """What one deletion pass over a namespace's content found."""

    #: seconds kube would expect the remaining content to take (pod grace periods, finalizers)
    estimate: int = 0
    #: resource label ("plural.group") -> objects still there
    remaining: Counter[str] = field(default_factory=Counter)
    #: finalizer -> objects still holding it
    finalizers: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    #: the NamespaceDeletionDiscoveryFailure message ("" when discovery was complete)
    discovery_error: str = ""

    def conditions(self) -> dict[str, tuple[str, str]]:
        """Condition type -> (reason, message) for the ones that are failing; the rest are OK."""
        failing: dict[str, tuple[str, str]] = {}
        if self.discovery_error:
            failing[DISCOVERY_FAILURE] = ("DiscoveryFailed", self.discovery_error)
        if self.errors:
            failing[CONTENT_FAILURE] = (
                "ContentDeletionFailed",
                f"Failed to delete all resource types, {len(self.errors)} remaining: "
                + ", ".join(sorted(self.errors)),
            )
        if self.remaining:
            counts = sorted(f"{name} has {n} resource instances" for name, n in self.remaining.items() if n)
            failing[CONTENT_REMAINING] = (
                "SomeResourcesRemain",
                "Some resources are remaining: " + ", ".join(counts),
            )
        if self.finalizers:
            counts = sorted(f"{name} in {n} resource instances" for name, n in self.finalizers.items() if n)
            failing[FINALIZERS_REMAINING] = (
                "SomeFinalizerRemain",
                "Some finalizers are remaining: " + ", ".join(counts),
            )
        return failing


def updated_conditions(
    current: list[JSON], failing: dict[str, tuple[str, str]], *, now: str
) -> list[JSON] | None:
    """The namespace's conditions with the five deletion conditions set; None if nothing changes.

    As kube's `updateConditions`: a condition keeps its lastTransitionTime unless its status flips.
    """
    conditions = copy.deepcopy(current)
    changed = False
    for kind, (ok_reason, ok_message) in OK_CONDITIONS.items():
        status, (reason, message) = (
            ("True", failing[kind]) if kind in failing else ("False", (ok_reason, ok_message))
        )
        old = next((c for c in conditions if c.get("type") == kind), None)
        if old is None:
            conditions.append(
                {
                    "type": kind,
                    "status": status,
                    "lastTransitionTime": now,
                    "reason": reason,
                    "message": message,
                }
            )
            changed = True
        elif (old.get("status"), old.get("reason"), old.get("message")) != (status, reason, message):
            if old.get("status") != status:
                old["lastTransitionTime"] = now
            old.update(status=status, reason=reason, message=message)
            changed = True
    return conditions if changed else None


def recheck_delay(estimate: int, *, waited: float) -> float:
    """kube waits `estimate / 2 + 1` s; sooner while the deletion is young (a doubling backoff from MIN_RECHECK)."""
    return min(estimate / 2 + 1, max(MIN_RECHECK, waited / 2))


def _label(resource: ServedResource) -> str:
    r = resource.resource
    return f"{r.plural}.{r.group}"


class NamespaceReconciler:
    def __init__(self, client: Client, namespaces: Store) -> None:
        self._client = client
        self._namespaces = namespaces

    async def reconcile(self, request: Request) -> Result | None:
        cached = self._namespaces.get(request.name)
        if cached is None or not cached["metadata"].get("deletionTimestamp"):
            return None
        name = request.name
        # the cache may still hold a deleted namespace after a new one took its name: every write below
        # reads the live namespace and leaves it alone unless it is this terminating one (kube's uid check)
        uid = str(cached["metadata"].get("uid") or "")
        namespace = await self._write(name, uid, _set_terminating, self._status)
        if namespace is None:
            return None
        if FINALIZER not in ((namespace.get("spec") or {}).get("finalizers") or []):
            return None
        found = await self._delete_content(name)
        await self._write(name, uid, lambda ns: _set_conditions(ns, found), self._status)
        if found.errors or found.discovery_error:
            raise TemporaryError(
                f"{name}: content deletion failed: "
                + "; ".join([found.discovery_error, *found.errors]).strip("; ")
            )
        if found.remaining:
            waited = _age(str(namespace["metadata"]["deletionTimestamp"]))
            delay = recheck_delay(found.estimate, waited=waited)
            logger.info("%s: waiting for %s; looking again in %.2g s", name, dict(found.remaining), delay)
            return Result(requeue_after=delay)
        finalized = await self._write(name, uid, _without_finalizer, self._finalize)
        if finalized is None:
            return None
        logger.info("%s: content removed, namespace finalized", name)
        return None

    async def _delete_content(self, namespace: str) -> Pass:
        found = Pass()
        try:
            discovery = await preferred_resources(self._client)
        except APIError as exc:
            discovery = Discovery([], {})
            found.discovery_error = str(exc)
        else:
            if discovery.failed:
                found.discovery_error = (
                    f"Discovery failed for some groups, {len(discovery.failed)} failing: {discovery.error}"
                )
        deletable = [r for r in discovery.resources if r.resource.namespaced and r.supports("delete", "list")]
        await asyncio.gather(*(self._delete_all(r, namespace, found) for r in deletable))
        return found

    async def _delete_all(self, served: ServedResource, namespace: str, found: Pass) -> None:
        """Delete every object of one resource in the namespace (background propagation) and count what stays."""
        resource = served.resource
        label = _label(served)
        estimate = 0
        try:
            items = (await self._client.list(resource, namespace=namespace)).items
            if not items:
                return
            if (resource.group, resource.plural) == (PODS.group, PODS.plural):
                estimate = _pod_estimate(items)
            for item in items:
                meta = item["metadata"]
                if meta.get("deletionTimestamp"):
                    continue
                try:
                    await self._client.delete(
                        resource,
                        meta["name"],
                        namespace=namespace,
                        propagation_policy="Background",
                        preconditions={"uid": meta["uid"]},
                    )
                except (NotFoundError, ConflictError):
                    continue
            left = (await self._client.list(resource, namespace=namespace)).items
        except APIError as exc:
            found.errors.append(f"{label}: {exc}")
            return
        if not left:
            return
        found.remaining[label] += len(left)
        holders = Counter(f for item in left for f in item["metadata"].get("finalizers") or [])
        found.finalizers.update(holders)
        if holders and not estimate:
            estimate = FINALIZER_ESTIMATE_SECONDS
        if not estimate:
            # nothing explains why they are still here: they should have gone
            found.errors.append(f"unexpected items still remain in namespace: {namespace} for gvr: {label}")
        found.estimate = max(found.estimate, estimate)

    async def _status(self, namespace: JSON) -> JSON:
        return await self._client.update_status(NAMESPACES, namespace)

    async def _finalize(self, namespace: JSON) -> JSON:
        return await self._client.replace(NAMESPACES, namespace, subresource="finalize")

    async def _write(
        self,
        name: str,
        uid: str,
        change: Callable[[JSON], JSON | None],
        send: Callable[[JSON], Awaitable[JSON]],
    ) -> JSON | None:
        """Read the namespace, apply `change` (None: nothing to do) and send it; again on a conflict.

        Returns the namespace as written (or as read when unchanged); None once it is gone, or when the
        namespace by that name is another one (`uid`) or is not being deleted.
        """
        for _ in range(5):
            try:
                current = await self._client.get(NAMESPACES, name)
                meta = current["metadata"]
                if meta.get("uid") != uid or not meta.get("deletionTimestamp"):
                    return None
                wanted = change(copy.deepcopy(current))
                return current if wanted is None else await send(wanted)
            except NotFoundError:
                return None
            except ConflictError:
                continue
        raise TemporaryError(f"{name}: the namespace kept changing under a write; trying again")


def _set_terminating(namespace: JSON) -> JSON | None:
    status = namespace.setdefault("status", {})
    if status.get("phase") == "Terminating":
        return None
    status["phase"] = "Terminating"
    return namespace


def _set_conditions(namespace: JSON, found: Pass) -> JSON | None:
    status = namespace.setdefault("status", {})
    conditions = updated_conditions(list(status.get("conditions") or []), found.conditions(), now=_now())
    if conditions is None:
        return None
    status["conditions"] = conditions
    return namespace


def _without_finalizer(namespace: JSON) -> JSON | None:
    spec = namespace.setdefault("spec", {})
    finalizers = list(spec.get("finalizers") or [])
    if FINALIZER not in finalizers:
        return None
    spec["finalizers"] = [f for f in finalizers if f != FINALIZER]
    return namespace


def _pod_estimate(pods: list[JSON]) -> int:
    """The longest grace period of the pods that have not finished (kube's estimateGracefulTerminationForPods)."""
    estimate = 0
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
            continue
        grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
        if isinstance(grace, int):
            estimate = max(estimate, grace)
    return estimate


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _age(timestamp: str) -> float:
    then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return (datetime.now(UTC) - then).total_seconds()


def setup(manager: Manager, options: ControlPlaneOptions, credentials: Credentials) -> None:
    namespaces = manager.informer(NAMESPACES)
    manager.controller(
        "namespace", NamespaceReconciler(credentials.client(ACCOUNT), namespaces.store), primary=namespaces
    )
