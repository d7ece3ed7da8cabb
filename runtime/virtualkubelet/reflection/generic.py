"""The generic reflector: one kind, one keyed work queue, local and remote informers, one `handle` per key.

Every reflector is the same machine (Liqo's `reflection/generic`, on `runtime.core`):

- local objects come either from one informer of this cluster (the pod reflector: the
  pods bound to the virtual node, cluster-wide), or from informers of each reflected
  namespace alone (`local_kinds`: ConfigMaps, Services, ... of that namespace, started and
  stopped with it, so nothing of a namespace that is not offloaded is cached or watched);
- for every local namespace offloaded to the provider, a `NamespacePair` holds those local
  informers and the remote informers of its twin namespace (`remote_kinds`); the
  `ReflectionManager` makes them, one set shared by every reflector. Every event, local or
  remote, maps to the keys (`namespace/name` of the local object) it affects (`Watched.keys`
  undoes a name remap), so both sides of one object are one key;
- a controller from the core engine (`workers` workers, never two on one key,
  rate-limited retries) calls `handle(request, pair)` with the pair of the key's
  namespace once the reflector's informers of that pair have synced, or
  `handle_unreflected(request)` for a key in a namespace that is not offloaded here.

Starting a namespace replays its local objects (they are reflected from now on); stopping
it replays the cluster-wide ones again (they are not any more). Handles read both sides
from the caches and are idempotent, so a restart rebuilds everything from the API: nothing
is kept that the caches do not hold.

Metrics (`ReflectionMetrics`, Liqo's names): objects currently reflected and transient
errors per namespace and kind, the latency from a change to the end of its handle, and
the queue depth (the core's `workqueue_depth{name="<kind>-reflection"}`).
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from runtime.api.objects import JSON
from runtime.core import (
    Controller,
    Informer,
    Manager,
    QueueingSettings,
    Request,
    Resource,
    Result,
    Settings,
    Store,
    TemporaryError,
)

from .metrics import ReflectionMetrics

#: which informer of a pair: its resource and label selector
InformerKey = tuple[Resource, str | None]

#: how soon a key whose namespace's caches have not synced yet is tried again
NOT_SYNCED_RETRY = 0.1


def own_name(obj: JSON, pair: NamespacePair) -> Iterable[str]:
    return [str(obj["metadata"]["name"])]


@dataclass(frozen=True)
class Watched:
    """Objects of one kind a reflector watches in each namespace pair (on the local or the remote side)."""

    resource: Resource
    label_selector: str | None = None
    #: an object -> the names of the local objects (the keys) it affects
    keys: Callable[[JSON, NamespacePair], Iterable[str]] = own_name

    @property
    def key(self) -> InformerKey:
        return (self.resource, self.label_selector)


@dataclass
class NamespacePair:
    """A local namespace and its twin namespace on the provider, with the informers of both."""

    local: str
    remote: str
    #: informers of the local namespace, and of the twin namespace on the provider
    local_informers: dict[InformerKey, Informer] = field(default_factory=dict)
    remote_informers: dict[InformerKey, Informer] = field(default_factory=dict)

    def local_store(self, resource: Resource, label_selector: str | None = None) -> Store | None:
        """The cache of a local kind (None when no reflector watches it: that kind is not reflected)."""
        informer = self.local_informers.get((resource, label_selector))
        return informer.store if informer is not None else None

    def remote_store(self, resource: Resource, label_selector: str | None = None) -> Store:
        return self.remote_informers[(resource, label_selector)].store

    def synced(self, local: Iterable[InformerKey], remote: Iterable[InformerKey]) -> bool:
        return all(self.local_informers[key].synced.is_set() for key in local) and all(
            self.remote_informers[key].synced.is_set() for key in remote
        )


class Reflector(ABC):
    """One kind's reflection; subclasses give the kinds they watch and the two handles."""

    #: the kind's name in logs, metrics (`reflector_resource`) and the controller's name (`<kind>-reflection`)
    kind: ClassVar[str]

    def __init__(
        self, manager: Manager, *, local: Informer | None = None, workers: int, metrics: ReflectionMetrics
    ) -> None:
        if workers < 1:
            raise ValueError(f"the {self.kind} reflector needs at least one worker, not {workers}")
        self._local = local
        self.metrics = metrics
        self.pairs: dict[str, NamespacePair] = {}
        settings = Settings(queueing=QueueingSettings(workers=workers), server=None)
        self.controller: Controller = manager.controller(
            f"{self.kind}-reflection",
            self,
            primary=local,
            settings=settings,
            latency=metrics.latency.labels(self.kind).observe,
        )
        self._removers: dict[str, list[Callable[[], None]]] = {}
        #: local namespace -> the names of its objects reflected now (the item gauge)
        self._reflected: dict[str, set[str]] = {}

    def local_kinds(self) -> Sequence[Watched]:
        """What this reflector watches in every reflected local namespace (none: its local informer is cluster-wide)."""
        return ()

    @abstractmethod
    def remote_kinds(self) -> Sequence[Watched]:
        """What this reflector watches in every twin namespace."""

    @abstractmethod
    async def handle(self, request: Request, pair: NamespacePair) -> Result | None:
        """Bring the key's remote object(s) in line with the local one (or, for Events, the other way round)."""

    async def handle_unreflected(self, request: Request) -> Result | None:
        """A key whose namespace is not offloaded to this provider (nothing to do, unless a subclass says so)."""
        return None

    @property
    def local(self) -> Store:
        """The cluster-wide local cache (the pod reflector's)."""
        assert self._local is not None, f"the {self.kind} reflector has no cluster-wide informer"
        return self._local.store

    # the reflected-items gauge

    def reflected(self, request: Request, present: bool) -> None:
        """Record whether the key's object is reflected now (after a handle wrote or removed its copy)."""
        names = self._reflected.setdefault(request.namespace, set())
        before = len(names)
        if present:
            names.add(request.name)
        else:
            names.discard(request.name)
        if len(names) != before:
            self.metrics.items.labels(*self.metrics.labels(request.namespace, self.kind)).set(len(names))

    # the machine

    async def reconcile(self, request: Request) -> Result | None:
        try:
            pair = self.pairs.get(request.namespace)
            if pair is None:
                return await self.handle_unreflected(request)
            local = [kind.key for kind in self.local_kinds()]
            remote = [kind.key for kind in self.remote_kinds()]
            if not pair.synced(local, remote):
                raise TemporaryError(
                    f"the caches of namespace {pair.local} and its twin {pair.remote} have not synced yet",
                    delay=NOT_SYNCED_RETRY,
                )
            return await self.handle(request, pair)
        except Exception:
            self.metrics.errors.labels(*self.metrics.labels(request.namespace, self.kind)).inc()
            raise

    async def start_namespace(self, pair: NamespacePair) -> None:
        """Reflect the local namespace of `pair` into its twin from now on."""
        await self.controller.running.wait()
        self.pairs[pair.local] = pair
        removers = [
            pair.local_informers[kind.key].add_handler(self._handler(pair, kind))
            for kind in self.local_kinds()
        ]
        removers += [
            pair.remote_informers[kind.key].add_handler(self._handler(pair, kind))
            for kind in self.remote_kinds()
        ]
        self._removers[pair.local] = removers
        self._replay(pair.local)

    def stop_namespace(self, local: str) -> None:
        """Stop reflecting `local`; its cluster-wide local objects are handled as unreflected from now on."""
        self.pairs.pop(local, None)
        for remove in self._removers.pop(local, []):
            remove()
        if self._reflected.pop(local, None) is not None:
            with contextlib.suppress(KeyError):
                self.metrics.items.remove(*self.metrics.labels(local, self.kind))
        self._replay(local)

    def _replay(self, namespace: str) -> None:
        if self._local is not None:
            for obj in self._local.store.items(namespace=namespace):
                self.controller.enqueue(Request.of(obj))

    def _handler(self, pair: NamespacePair, kind: Watched) -> Callable[[str, JSON, JSON | None], None]:
        def enqueue(event: str, obj: JSON, old: JSON | None) -> None:
            with contextlib.suppress(KeyError):
                for name in kind.keys(obj, pair):
                    if name:
                        self.controller.enqueue(Request(pair.local, name))

        return enqueue
