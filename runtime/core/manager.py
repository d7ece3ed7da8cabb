"""The manager: runs a component's controllers over shared informers, like controller-runtime's.

Order of a run: the HTTP endpoint and every informer start; once every cache has
synced, the controllers start (with leader election: once this replica also holds the
Lease). Standby replicas keep their caches warm, so a takeover starts reconciling at
once. Losing the Lease stops the controllers at once, reconciles in flight included (as
controller-runtime does, which exits): the leader steps down at most `renew_deadline`
after its last renewal was sent, while a standby waits `lease_duration` after it saw
that renewal, so nothing this replica does lands after another took over. The replica
then campaigns again; it never keeps working without the Lease.

`run()` blocks until cancelled; shutdown stops the controllers (reconciles in flight
finish, up to `drain_timeout`, while the Lease is still renewed; if it is lost meanwhile
they stop at once), then releases the Lease (so a standby takes over without waiting
out the lease), then the informers and the endpoint. `/readyz` is ready when the caches have synced and this replica leads
or nobody elects.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from prometheus_client import CollectorRegistry

from .client import Client, Resource
from .health import HealthServer
from .informer import Informer, InformerFactory, InformerMetrics
from .leader import LeaderElector
from .reconcile import Controller, ControllerMetrics, Reconciler
from .requests import RequestMetrics
from .settings import Settings

logger = logging.getLogger(__name__)


class Manager:
    def __init__(
        self, client: Client, *, settings: Settings, registry: CollectorRegistry | None = None
    ) -> None:
        self.client = client
        self.settings = settings
        #: where every metric of this manager goes (a fresh registry unless given one)
        self.registry = registry if registry is not None else CollectorRegistry()
        self.informers = InformerFactory(
            client, settings=settings.watching, metrics=InformerMetrics(self.registry)
        )
        self.controller_metrics = ControllerMetrics(self.registry)
        #: the requests of this manager's client (`client="local"`), and of any other client a component adds
        self.request_metrics = RequestMetrics(self.registry)
        if client.on_request is None:
            client.on_request = self.request_metrics.observer("local")
        self.elector = (
            LeaderElector(client, settings=settings.leader_election)
            if settings.leader_election is not None
            else None
        )
        self.server = (
            HealthServer(settings=settings.server, registry=self.registry, ready=self.is_ready)
            if settings.server is not None
            else None
        )
        self._controllers: list[Controller] = []

    def informer(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Informer:
        """The shared informer for this selection (created on first use)."""
        return self.informers.informer(
            resource, namespace=namespace, label_selector=label_selector, field_selector=field_selector
        )

    def controller(
        self,
        name: str,
        reconciler: Reconciler,
        *,
        primary: Informer | None,
        settings: Settings | None = None,
        latency: Callable[[float], None] | None = None,
    ) -> Controller:
        """A controller run by this manager, with its metrics and its settings (else the manager's).

        Add its watches before `run()`; `latency` is told each reconciled change's seconds since its first add.
        """
        controller = Controller(
            name,
            reconciler,
            primary=primary,
            settings=settings or self.settings,
            metrics=self.controller_metrics,
            latency=latency,
        )
        self._controllers.append(controller)
        return controller

    @property
    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader

    def is_ready(self) -> bool:
        return self.informers.has_synced() and self.is_leader

    async def run(self) -> None:
        """Run until cancelled."""
        async with asyncio.TaskGroup() as group:
            if self.server is not None:
                group.create_task(self.server.run(), name="health server")
            group.create_task(self.informers.run(), name="informers")
            await self.informers.wait_synced()
            logger.info("caches synced (%d informers)", len(self.informers.informers))
            if self.elector is None:
                await self._run_controllers()
            else:
                await self._lead(self.elector)

    async def _run_controllers(self) -> None:
        async with asyncio.TaskGroup() as group:
            for controller in self._controllers:
                group.create_task(controller.run(), name=f"controller {controller.name}")

    async def _lead(self, elector: LeaderElector) -> None:
        try:
            while True:
                await elector.acquire()
                await self._while_leading(elector)
                logger.warning("controllers stopped after losing the leadership; campaigning again")
        finally:
            settings = self.settings.leader_election
            if settings is not None and settings.release_on_cancel:
                await elector.release()

    async def _while_leading(self, elector: LeaderElector) -> None:
        """Run the controllers until leadership is lost (they stop at once) or this is cancelled (they drain)."""
        controllers = asyncio.create_task(self._run_controllers(), name="controllers")
        holding = asyncio.create_task(elector.hold(), name="leader election")
        try:
            await asyncio.wait({controllers, holding}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not holding.done():
                # shutting down (or a controller failed): reconciles in flight finish while the Lease is renewed
                controllers.cancel()
                await asyncio.wait({controllers, holding}, return_when=asyncio.FIRST_COMPLETED)
            if not controllers.done():
                # leadership lost: another replica may take over soon, so nothing in flight may go on
                for controller in self._controllers:
                    controller.abandon()
                controllers.cancel()
            holding.cancel()
            await asyncio.gather(controllers, holding, return_exceptions=True)
        error = None if controllers.cancelled() else controllers.exception()
        if error is not None:
            raise error
