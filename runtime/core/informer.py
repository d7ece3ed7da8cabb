"""Informers: keep a `Store` in step with the API server and tell handlers what changed.

The watching is three small layers, as in kopf (`kopf/_cogs/clients/watching.py`),
each testable on its own:

1. `watch_stream`: one streaming watch request; ERROR events become typed errors
   (so a 410 is a `GoneError`).
2. `list_then_watch`: list (yielding one `Listed` snapshot), then watch from the list's
   resourceVersion, re-opening the stream from the last resourceVersion seen (events
   and BOOKMARKs) whenever the server ends it; on 410 Gone it lists again. A stream
   that ends at once without an event counts as a failure, as in client-go.
3. `endless_watch`: runs layer 2 forever; after an error it waits (exponential
   backoff) and resumes from the last resourceVersion it saw, so a dropped connection
   costs one watch request, not a relist, unless the server has forgotten that point.

`Informer` applies those items to its store: a `Listed` snapshot is diffed against the
cache (objects gone while we were away come out as DELETED), then `synced` is set.
Objects are cached without `metadata.managedFields` (`WatchingSettings.strip_managed_fields`,
client-go's usual transform): nothing reads them from a cache, and they weigh.
Handlers are plain callables `(type, object, old)` run inline, in event order; they
must be quick (enqueue a key) and must not mutate the objects. `InformerFactory` shares
one informer per (resource, namespace, selectors) between every controller asking.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter

from runtime.api.objects import JSON, nested

from .client import Client, JSONList, Resource, WatchEvent
from .errors import APIConnectionError, APIError, GoneError, status_error
from .settings import WatchingSettings
from .store import Change, Store

logger = logging.getLogger(__name__)

#: a watch that ends sooner than this without a single event counts as a failure (backoff)
SHORT_WATCH = 1.0
#: (type, object, old): ADDED (old None), MODIFIED (old: the cached version), DELETED (old: the cached version)
EventHandler = Callable[[str, JSON, JSON | None], None]


@dataclass(frozen=True)
class Selection:
    """Which objects of a resource an informer holds."""

    resource: Resource
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None

    def __str__(self) -> str:
        name = (
            f"{self.resource.plural}.{self.resource.group}" if self.resource.group else self.resource.plural
        )
        scope = f" in {self.namespace}" if self.namespace else ""
        selectors = ",".join(s for s in (self.label_selector, self.field_selector) if s)
        return f"{name}{scope}" + (f" [{selectors}]" if selectors else "")


@dataclass(frozen=True)
class Listed:
    """The full state at `resource_version`, from a (re)list."""

    objects: JSONList
    resource_version: str


Item = Listed | WatchEvent


class InformerMetrics:
    """Counters of lists, watch requests and events per resource, in the registry given."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.lists = Counter(
            "informer_lists", "Lists (initial and relists) per resource", ["resource"], registry=registry
        )
        self.watches = Counter(
            "informer_watch_requests", "Watch requests opened per resource", ["resource"], registry=registry
        )
        self.events = Counter(
            "informer_events",
            "Watch events received per resource and type",
            ["resource", "type"],
            registry=registry,
        )


def _label(selection: Selection) -> str:
    resource = selection.resource
    return f"{resource.plural}.{resource.group}" if resource.group else resource.plural


async def watch_stream(
    client: Client,
    selection: Selection,
    *,
    resource_version: str,
    settings: WatchingSettings,
    metrics: InformerMetrics | None = None,
) -> AsyncGenerator[WatchEvent, None]:
    """Layer 1: the events of one watch request, until the server ends it; ERROR events raise."""
    if metrics is not None:
        metrics.watches.labels(_label(selection)).inc()
    events = client.watch(
        selection.resource,
        namespace=selection.namespace,
        label_selector=selection.label_selector,
        field_selector=selection.field_selector,
        resource_version=resource_version,
        timeout_seconds=settings.server_timeout,
        allow_bookmarks=settings.allow_bookmarks,
        client_timeout=settings.client_timeout,
        connect_timeout=settings.connect_timeout,
    )
    async with contextlib.aclosing(events):
        async for event in events:
            if event["type"] == "ERROR":
                raise status_error(event["object"])
            if metrics is not None:
                metrics.events.labels(_label(selection), event["type"]).inc()
            yield event


async def list_then_watch(
    client: Client,
    selection: Selection,
    *,
    settings: WatchingSettings,
    resume_from: str | None = None,
    metrics: InformerMetrics | None = None,
) -> AsyncGenerator[Item, None]:
    """Layer 2: a `Listed` snapshot, then events from there on; relists on 410 Gone.

    With `resume_from` it starts watching from that resourceVersion instead of listing.
    It only returns by raising: API and connection errors are left to layer 3.
    """
    resource_version = resume_from
    while True:
        if resource_version is None:
            if metrics is not None:
                metrics.lists.labels(_label(selection)).inc()
            listed = await client.list(
                selection.resource,
                namespace=selection.namespace,
                label_selector=selection.label_selector,
                field_selector=selection.field_selector,
                page_size=settings.list_page_size,
            )
            resource_version = listed.resource_version
            yield Listed(listed.items, listed.resource_version)
        stream = watch_stream(
            client, selection, resource_version=resource_version, settings=settings, metrics=metrics
        )
        started, count = asyncio.get_running_loop().time(), 0
        try:
            async with contextlib.aclosing(stream):
                async for event in stream:
                    count += 1
                    resource_version = _resource_version(event) or resource_version
                    yield event
        except GoneError as exc:
            logger.info(
                "%s: resourceVersion %s is gone (%s): listing again", selection, resource_version, exc
            )
            resource_version = None
            continue
        if count == 0 and asyncio.get_running_loop().time() - started < SHORT_WATCH:
            # as client-go's reflector: a server (or proxy) that ends every stream at once must not be hammered
            raise APIConnectionError(f"very short watch: the stream from {resource_version} ended at once")


async def endless_watch(
    client: Client,
    selection: Selection,
    *,
    settings: WatchingSettings,
    metrics: InformerMetrics | None = None,
) -> AsyncGenerator[Item, None]:
    """Layer 3: layer 2 forever; after an error, back off and resume from the last resourceVersion seen."""
    resource_version: str | None = None
    delay = settings.reconnect_backoff
    while True:
        items = list_then_watch(
            client, selection, settings=settings, resume_from=resource_version, metrics=metrics
        )
        try:
            async with contextlib.aclosing(items):
                async for item in items:
                    resource_version = _position(item) or resource_version
                    delay = settings.reconnect_backoff
                    yield item
        except APIError as exc:
            logger.warning("%s: watching failed (%s); retrying in %.3g s", selection, exc, delay)
        except Exception:
            logger.exception("%s: watching failed unexpectedly; retrying in %.3g s", selection, delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, settings.reconnect_backoff_max)


def _position(item: Item) -> str | None:
    """The resourceVersion a watch can resume from after this item."""
    return item.resource_version if isinstance(item, Listed) else _resource_version(item)


def _resource_version(event: WatchEvent) -> str | None:
    value = nested(event["object"], "metadata", "resourceVersion")
    return str(value) if value else None


class Informer:
    """A cache of one selection of objects, kept current by `run()`, with change handlers."""

    def __init__(
        self,
        client: Client,
        selection: Selection,
        *,
        settings: WatchingSettings,
        metrics: InformerMetrics | None = None,
    ) -> None:
        self.client = client
        self.selection = selection
        self.settings = settings
        self.metrics = metrics
        self.store = Store()
        #: set once the first list has been applied to the store
        self.synced = asyncio.Event()
        self._handlers: list[EventHandler] = []

    def __repr__(self) -> str:
        return f"<Informer {self.selection}>"

    def add_handler(self, handler: EventHandler, *, replay: bool = True) -> Callable[[], None]:
        """Call `handler` on every change from now on; returns a function that removes it.

        With `replay` the handler first gets an ADDED for every object already cached,
        so a handler added late misses nothing (as client-go's AddEventHandler does).
        """
        self._handlers.append(handler)
        if replay:
            for obj in self.store:
                self._call(handler, "ADDED", obj, None)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._handlers.remove(handler)

        return remove

    async def run(self) -> None:
        """Keep the store current until cancelled."""
        items = endless_watch(self.client, self.selection, settings=self.settings, metrics=self.metrics)
        async with contextlib.aclosing(items):
            async for item in items:
                if self.settings.strip_managed_fields:
                    for obj in item.objects if isinstance(item, Listed) else [item["object"]]:
                        (obj.get("metadata") or {}).pop("managedFields", None)
                if isinstance(item, Listed):
                    self._dispatch(self.store.replace(item.objects))
                    if not self.synced.is_set():
                        logger.info("%s: synced (%d objects)", self.selection, len(self.store))
                    self.synced.set()
                else:
                    self._apply(item)

    def _apply(self, event: WatchEvent) -> None:
        obj = event["object"]
        if event["type"] == "DELETED":
            self._dispatch([("DELETED", obj, self.store.remove(obj))])
        elif event["type"] in ("ADDED", "MODIFIED"):
            old = self.store.upsert(obj)
            self._dispatch([("ADDED", obj, None) if old is None else ("MODIFIED", obj, old)])

    def _dispatch(self, changes: list[Change]) -> None:
        for kind, obj, old in changes:
            for handler in list(self._handlers):
                self._call(handler, kind, obj, old)

    def _call(self, handler: EventHandler, kind: str, obj: JSON, old: JSON | None) -> None:
        try:
            handler(kind, obj, old)
        except Exception:
            logger.exception("%s: handler %r failed on %s", self.selection, handler, kind)


class InformerFactory:
    """One shared informer per selection; `run()` runs them all, including those asked for later."""

    def __init__(
        self, client: Client, *, settings: WatchingSettings, metrics: InformerMetrics | None = None
    ) -> None:
        self._client = client
        self._settings = settings
        self._metrics = metrics
        self._informers: dict[Selection, Informer] = {}
        self._tasks: dict[Selection, asyncio.Task[None]] = {}
        self._group: asyncio.TaskGroup | None = None

    def informer(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Informer:
        selection = Selection(resource, namespace, label_selector, field_selector)
        informer = self._informers.get(selection)
        if informer is None:
            informer = Informer(self._client, selection, settings=self._settings, metrics=self._metrics)
            self._informers[selection] = informer
            if self._group is not None:
                self._start(self._group, informer)
        return informer

    def remove(self, informer: Informer) -> None:
        """Stop `informer` and forget it (its handlers get nothing more); asking for its selection again makes a new one."""
        if self._informers.get(informer.selection) is not informer:
            return
        del self._informers[informer.selection]
        task = self._tasks.pop(informer.selection, None)
        if task is not None:
            task.cancel()

    @property
    def informers(self) -> list[Informer]:
        return list(self._informers.values())

    def has_synced(self) -> bool:
        return all(informer.synced.is_set() for informer in self._informers.values())

    async def wait_synced(self) -> None:
        """Until every informer asked for so far has listed once."""
        await asyncio.gather(*(informer.synced.wait() for informer in self.informers))

    async def run(self) -> None:
        """Run every informer until cancelled."""
        async with asyncio.TaskGroup() as group:
            self._group = group
            try:
                for informer in self.informers:
                    self._start(group, informer)
                await asyncio.Event().wait()
            finally:
                self._group = None
                self._tasks.clear()

    def _start(self, group: asyncio.TaskGroup, informer: Informer) -> None:
        # a child cancelled by `remove` ends alone: a TaskGroup ignores its cancelled children
        self._tasks[informer.selection] = group.create_task(
            informer.run(), name=f"informer {informer.selection}"
        )
