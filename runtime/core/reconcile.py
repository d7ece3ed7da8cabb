"""Controllers: the level-triggered reconcile loop (controller-runtime's contract, in asyncio).

A `Request` is only a key (namespace/name). Events on the primary kind enqueue the
object's own key; events on related kinds enqueue the keys a map function returns (its
owners, by default). Workers take keys from a `WorkQueue`, so one key is never
reconciled twice at once and a burst of events costs one reconcile. The reconciler
reads the current state from the informers' stores and makes the world match it, so
create, update, delete and resync all take one path and a missed event does no harm.

Outcomes:
- returning `None` or `Result()`: done; the key's backoff is reset;
- `Result(requeue_after=d)`: done for now, look again in `d` seconds (polling);
- raising `TemporaryError(delay=d)`: not done; again in `d` seconds (backoff if None);
- raising `PermanentError`: logged and dropped until the object changes;
- raising anything else (a conflict, say): requeued with the rate limiter's backoff.

A controller without a primary informer is fed only by its watches and `enqueue` (the
virtual kubelet's reflectors, whose informers come and go with the namespaces they
reflect). Each `run()` gets a fresh queue, so a controller stopped on lost leadership can run
again; on cancellation it stops taking keys, lets reconciles in flight finish (up to
`drain_timeout`), then cancels them. `abandon()` stops it at once, reconciles in flight
included: what the manager does when leadership is lost, since another replica may
already be writing. Metrics go to the registry the caller gives.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from runtime.api.objects import JSON

from .client import Resource
from .errors import APIStatusError, PermanentError, TemporaryError
from .informer import EventHandler, Informer
from .queue import QueueShutDown, WorkQueue, default_rate_limiter
from .settings import Settings

logger = logging.getLogger(__name__)


@dataclass(frozen=True, order=True)
class Request:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def of(cls, obj: JSON) -> Request:
        meta = obj.get("metadata") or {}
        return cls(str(meta.get("namespace") or ""), str(meta["name"]))


@dataclass(frozen=True)
class Result:
    #: reconcile again after this many seconds even if nothing changes (None: only on changes)
    requeue_after: float | None = None


class Reconciler(Protocol):
    async def reconcile(self, request: Request) -> Result | None: ...


#: related object -> the primary keys it affects
MapFunc = Callable[[JSON], Iterable[Request]]
#: (event kind, object, its previous version) -> whether the event matters to a controller at all (controller-
#: runtime's predicates): a related kind whose objects change often for reasons the controller ignores
EventFilter = Callable[[str, JSON, JSON | None], bool]


def owner_mapper(owner: Resource, *, controller_only: bool = True) -> MapFunc:
    """Map an object to its owners of `owner`'s kind (same group, any version), from ownerReferences.

    Owners of a namespaced object live in its namespace; cluster-scoped owners have none.
    `controller_only` keeps only the reference marked `controller: true`.
    """

    def owners(obj: JSON) -> Iterable[Request]:
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "") if owner.namespaced else ""
        for ref in meta.get("ownerReferences") or []:
            group = str(ref.get("apiVersion", "")).rpartition("/")[0]
            if ref.get("kind") != owner.kind or group != owner.group:
                continue
            if controller_only and not ref.get("controller"):
                continue
            yield Request(namespace, str(ref["name"]))

    return owners


class ControllerMetrics:
    """controller-runtime's metric names, labelled by controller, in the registry given."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.reconciles = Counter(
            "controller_runtime_reconcile",
            "Reconciles per controller and result",
            ["controller", "result"],
            registry=registry,
        )
        self.errors = Counter(
            "controller_runtime_reconcile_errors",
            "Reconciles that failed (unexpected errors and permanent errors)",
            ["controller"],
            registry=registry,
        )
        self.duration = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Time a reconcile takes",
            ["controller"],
            registry=registry,
        )
        self.depth = Gauge("workqueue_depth", "Keys waiting in the work queue", ["name"], registry=registry)
        self.queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "Time a key waits in the work queue, from its first add until a worker takes it",
            ["name"],
            registry=registry,
        )


class Controller:
    def __init__(
        self,
        name: str,
        reconciler: Reconciler,
        *,
        primary: Informer | None,
        settings: Settings,
        metrics: ControllerMetrics | None = None,
        latency: Callable[[float], None] | None = None,
    ) -> None:
        self.name = name
        self.reconciler = reconciler
        #: the informer whose objects are this controller's keys (None: keys come from watches and `enqueue`)
        self.primary = primary
        self.settings = settings
        self.metrics = metrics or ControllerMetrics(CollectorRegistry())
        #: told, after each reconcile, the seconds since its key was first added (the change's whole latency)
        self._latency = latency
        self._related: list[tuple[Informer, MapFunc, EventFilter | None]] = []
        self._queue: WorkQueue[Request] | None = None
        #: set while `run()` takes keys: from then on `enqueue` is heard
        self.running = asyncio.Event()
        #: the workers of the current `run()`, and whether it was told to stop without draining them
        self._workers: list[asyncio.Task[None]] = []
        self._abandoned = False

    def watches(self, informer: Informer, mapper: MapFunc, *, when: EventFilter | None = None) -> None:
        """Reconcile the keys `mapper` gives for every change of an object in `informer` (only the changes
        `when` accepts, if given)."""
        self._related.append((informer, mapper, when))

    def owns(self, informer: Informer, *, controller_only: bool = True) -> None:
        """Reconcile the primary owner of every changed object in `informer`."""
        if self.primary is None:
            raise ValueError(f"{self.name}: owner references need a primary informer (the owners' kind)")
        owner = self.primary.selection.resource
        if not owner.kind:
            raise ValueError(
                f"{self.name}: owner references name a kind: give the {owner.plural} Resource its kind"
            )
        self.watches(informer, owner_mapper(owner, controller_only=controller_only))

    def enqueue(self, request: Request, *, after: float = 0.0) -> None:
        """Reconcile `request` (after `after` seconds) because of something outside the informers; a no-op when stopped."""
        if self._queue is not None:
            self._queue.add_after(request, after)

    async def run(self) -> None:
        """Reconcile until cancelled; the informers must be running (and should have synced)."""
        queue: WorkQueue[Request] = WorkQueue(rate_limiter=default_rate_limiter(self.settings.queueing))
        self._queue = queue
        self.metrics.depth.labels(self.name).set_function(lambda: len(queue))
        removers = (
            [self.primary.add_handler(self._primary_handler(queue))] if self.primary is not None else []
        )
        removers += [
            informer.add_handler(_mapped_handler(queue, mapper, when))
            for informer, mapper, when in self._related
        ]
        workers = [
            asyncio.create_task(self._work(queue), name=f"{self.name} worker {i}")
            for i in range(self.settings.queueing.workers)
        ]
        self._workers, self._abandoned = workers, False
        others: list[asyncio.Task[None]] = []
        if self.settings.resync.period is not None and self.primary is not None:
            others.append(
                asyncio.create_task(
                    self._resync(queue, self.settings.resync.period), name=f"{self.name} resync"
                )
            )
        logger.info("%s: started with %d workers", self.name, len(workers))
        self.running.set()
        try:
            done, _ = await asyncio.wait(workers + others, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                task.result()
        finally:
            self.running.clear()
            for remove in removers:
                remove()
            queue.shutdown()
            self._queue = None
            await self._stop(workers, others)
            logger.info("%s: stopped", self.name)

    def abandon(self) -> None:
        """Stop now: cancel the reconciles in flight (even while draining); `run()` returns without waiting."""
        self._abandoned = True
        for task in self._workers:
            task.cancel()

    async def _stop(self, workers: list[asyncio.Task[None]], others: list[asyncio.Task[None]]) -> None:
        for task in others:
            task.cancel()
        try:
            if workers and not self._abandoned:
                await asyncio.wait(workers, timeout=self.settings.queueing.drain_timeout)
        finally:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, *others, return_exceptions=True)

    def _primary_handler(self, queue: WorkQueue[Request]) -> EventHandler:
        def enqueue(kind: str, obj: JSON, old: JSON | None) -> None:
            queue.add(Request.of(obj))

        return enqueue

    async def _resync(self, queue: WorkQueue[Request], period: float) -> None:
        assert self.primary is not None
        while True:
            await asyncio.sleep(period)
            for obj in self.primary.store:
                queue.add(Request.of(obj))

    async def _work(self, queue: WorkQueue[Request]) -> None:
        while True:
            try:
                request = await queue.get()
            except QueueShutDown:
                return
            try:
                await self._reconcile(queue, request)
            finally:
                queue.done(request)

    async def _reconcile(self, queue: WorkQueue[Request], request: Request) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        added = queue.added_at(request)
        self.metrics.queue_duration.labels(self.name).observe(started - added)
        try:
            result = await self.reconciler.reconcile(request)
        except TemporaryError as exc:
            outcome = "temporary"
            if exc.delay is None:
                queue.add_rate_limited(request)
            else:
                queue.add_after(request, exc.delay)
            logger.info("%s: %s: not done yet (%s); retrying", request, self.name, exc)
        except PermanentError as exc:
            outcome = "permanent"
            queue.forget(request)
            self.metrics.errors.labels(self.name).inc()
            logger.error("%s: %s: giving up: %s", request, self.name, exc)
        except APIStatusError as exc:
            outcome = "error"
            queue.add_rate_limited(request)
            self.metrics.errors.labels(self.name).inc()
            logger.warning("%s: %s: %s; retry %d", request, self.name, exc, queue.failures(request))
        except Exception:
            outcome = "error"
            queue.add_rate_limited(request)
            self.metrics.errors.labels(self.name).inc()
            logger.exception(
                "%s: %s: reconcile failed; retry %d", request, self.name, queue.failures(request)
            )
        else:
            queue.forget(request)
            if result is not None and result.requeue_after is not None:
                outcome = "requeue_after"
                queue.add_after(request, result.requeue_after)
            else:
                outcome = "success"
        finished = loop.time()
        self.metrics.reconciles.labels(self.name, outcome).inc()
        self.metrics.duration.labels(self.name).observe(finished - started)
        if self._latency is not None:
            self._latency(finished - added)


def _mapped_handler(queue: WorkQueue[Request], mapper: MapFunc, when: EventFilter | None) -> EventHandler:
    def enqueue(kind: str, obj: JSON, old: JSON | None) -> None:
        if when is not None and not when(kind, obj, old):
            return
        for version in (obj, old):
            if version is not None:
                for request in mapper(version):
                    queue.add(request)

    return enqueue
