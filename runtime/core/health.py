"""The manager's HTTP endpoint: `/healthz` (alive), `/readyz` (ready) and `/metrics` (Prometheus).

Kubernetes probes and Prometheus scrape these. Readiness is a callable the owner
supplies (caches synced, and leader or not electing, for the manager), so this module
knows nothing of controllers; metrics come from the registry passed in, never from
prometheus_client's global one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from .settings import ServerSettings

logger = logging.getLogger(__name__)


class HealthServer:
    def __init__(
        self, *, settings: ServerSettings, registry: CollectorRegistry, ready: Callable[[], bool]
    ) -> None:
        self._settings = settings
        self._registry = registry
        self._ready = ready
        #: the bound port, once `started` is set (differs from the settings' when that is 0)
        self.port: int | None = None
        self.started = asyncio.Event()

    async def run(self) -> None:
        """Serve until cancelled."""
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self._settings.host, self._settings.port)
            await site.start()
            self.port = int(runner.addresses[0][1])
            self.started.set()
            logger.info("serving /healthz, /readyz and /metrics on %s:%d", self._settings.host, self.port)
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, request: web.Request) -> web.Response:
        if self._ready():
            return web.Response(text="ok")
        return web.Response(status=503, text="not ready")

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(self._registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )
