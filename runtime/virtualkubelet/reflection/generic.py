"""The generic reflector: one kind, one keyed work queue, local and remote informers, one `handle` per key.

Every reflector is the same machine (Liqo's `reflection/generic`, on `runtime.core`):

- local objects come from one informer of this cluster (the reflector's primary), keyed
  `namespace/name` as usual;
- for every local namespace offloaded to the provider, a `NamespacePair` holds the remote
  informers of its twin namespace (the `ReflectionManager` makes them, one set shared by
  every reflector). A remote object's event maps to the key of the local object it stands
  for (`RemoteKind.local_name` undoes a name remap), so local and remote changes of one
  object are one key;
- a controller from the core engine (`reflector.workers` workers, never two on one key,
  rate-limited retries) calls `handle(request, pair)` with the pair of the key's namespace,
  once that pair's remote caches have synced, or `handle_unreflected(request)` for a key
  in a namespace that is not offloaded to this provider.

Starting a namespace replays its local objects (they are reflected from now on); stopping
it replays them again (they are not any more). Handles read both sides from the caches and
are idempotent, so a restart rebuilds everything from the API: nothing is kept that the
caches do not hold.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

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

JSON = dict[str, Any]

#: how soon a key whose twin namespace's caches have not synced yet is tried again
NOT_SYNCED_RETRY = 0.1


def same_name(obj: JSON) -> str | None:
    return str(obj["metadata"]["name"])


@dataclass(frozen=True)
class RemoteKind:
    """Objects of one kind a reflector watches in each twin namespace."""

    resource: Resource
    label_selector: str | None = None
    #: a remote object -> the name of the local object it stands for (None: it stands for none)
    local_name: Callable[[JSON], str | None] = same_name


@dataclass
class NamespacePair:
    """A local namespace and its twin namespace on the provider, with the twin's informers."""

    local: str
    remote: str
    #: (resource, label selector) -> informer of the twin namespace
    informers: dict[tuple[Resource, str | None], Informer] = field(default_factory=dict)

    def store(self, resource: Resource, label_selector: str | None = None) -> Store:
        return self.informers[(resource, label_selector)].store

    def synced(self) -> bool:
        return all(informer.synced.is_set() for informer in self.informers.values())


class Reflector(ABC):
    """One kind's reflection; subclasses give `remote_kinds` and the two handles."""

    #: the kind's name in logs, metrics and the controller's name
    kind: ClassVar[str]

    def __init__(self, manager: Manager, *, local: Informer, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"the {self.kind} reflector needs at least one worker, not {workers}")
        self._local = local
        self.pairs: dict[str, NamespacePair] = {}
        settings = Settings(queueing=QueueingSettings(workers=workers), server=None)
        self.controller: Controller = manager.controller(
            f"{self.kind}-reflection", self, primary=local, settings=settings
        )
        self._removers: dict[str, list[Callable[[], None]]] = {}

    @abstractmethod
    def remote_kinds(self) -> Sequence[RemoteKind]:
        """What this reflector watches in every twin namespace."""

    @abstractmethod
    async def handle(self, request: Request, pair: NamespacePair) -> Result | None:
        """Bring the key's remote object(s) in line with the local one, and the status back."""

    @abstractmethod
    async def handle_unreflected(self, request: Request) -> Result | None:
        """A key whose namespace is not offloaded to this provider."""

    @property
    def local(self) -> Store:
        return self._local.store

    async def reconcile(self, request: Request) -> Result | None:
        pair = self.pairs.get(request.namespace)
        if pair is None:
            return await self.handle_unreflected(request)
        if not pair.synced():
            raise TemporaryError(
                f"the caches of twin namespace {pair.remote} have not synced yet", delay=NOT_SYNCED_RETRY
            )
        return await self.handle(request, pair)

    async def start_namespace(self, pair: NamespacePair) -> None:
        """Reflect the local namespace of `pair` into its twin from now on."""
        await self.controller.running.wait()
        removers = []
        for kind in self.remote_kinds():
            informer = pair.informers[(kind.resource, kind.label_selector)]
            removers.append(informer.add_handler(self._remote_handler(pair, kind)))
        self.pairs[pair.local] = pair
        self._removers[pair.local] = removers
        self._replay(pair.local)

    def stop_namespace(self, local: str) -> None:
        """Stop reflecting `local`; its local objects are handled as unreflected from now on."""
        self.pairs.pop(local, None)
        for remove in self._removers.pop(local, []):
            remove()
        self._replay(local)

    def _replay(self, namespace: str) -> None:
        for obj in self.local.items(namespace=namespace):
            self.controller.enqueue(Request.of(obj))

    def _remote_handler(
        self, pair: NamespacePair, kind: RemoteKind
    ) -> Callable[[str, JSON, JSON | None], None]:
        def enqueue(event: str, obj: JSON, old: JSON | None) -> None:
            with contextlib.suppress(KeyError):
                name = kind.local_name(obj)
                if name:
                    self.controller.enqueue(Request(pair.local, name))

        return enqueue
