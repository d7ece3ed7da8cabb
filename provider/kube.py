"""The provider's Kubernetes connection: one `runtime.core.Client`, made on first use, on an event
loop the provider owns.

tf calls every handler synchronously on a gRPC worker thread (up to ten at once, one per
resource Terraform works on in parallel), while `Client` is async. So the provider
runs one event loop in a daemon thread and each handler submits its coroutine there and
blocks for the answer, bounded by the operation's timeout. The client (and
`runtime.core`, whose import costs a third of a second) is created only when a handler
first needs the cluster: `terraform validate`, and plans that touch no data source,
never pay for it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from runtime.core import Client, ClusterConfig

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: the bound of one HTTP request (an operation's own timeout bounds the whole operation)
REQUEST_TIMEOUT = 30.0
#: how long closing the client may take when the provider exits
CLOSE_TIMEOUT = 5.0


class KubeUnavailableError(Exception):
    """The provider has no usable cluster configuration (not known yet during plan, or invalid)."""


class Kube:
    """The cluster the provider is configured for; `run` executes a coroutine against its client."""

    def __init__(self, config: ClusterConfig | None, *, unavailable: str = "") -> None:
        self._config = config
        self._unavailable = unavailable
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: Client | None = None
        self._client_lock: asyncio.Lock | None = None

    @classmethod
    def unavailable(cls, reason: str) -> Kube:
        """A placeholder whose every `run` fails with `reason` (e.g. the configuration is not known yet)."""
        return cls(None, unavailable=reason)

    @property
    def host(self) -> str:
        return self._config.server if self._config is not None else "(not configured)"

    @property
    def label(self) -> str:
        """How messages name the cluster: its context and server URL (`ClusterConfig.cluster_label`)."""
        return self._config.cluster_label if self._config is not None else "the cluster (not configured)"

    @property
    def config(self) -> ClusterConfig | None:
        return self._config

    def run(self, operation: Callable[[Client], Awaitable[T]], *, seconds: float) -> T:
        """`operation(client)` on the provider's loop, cancelled after `seconds` (TimeoutError)."""
        if self._config is None:
            raise KubeUnavailableError(self._unavailable)
        future = asyncio.run_coroutine_threadsafe(self._call(operation, seconds), self._ensure_loop())
        return future.result()

    def close(self) -> None:
        """Close the client and stop the loop (the provider is exiting)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        if self._client is not None:
            try:
                asyncio.run_coroutine_threadsafe(self._client.close(), loop).result(CLOSE_TIMEOUT)
            except Exception as exc:  # the process is exiting: a failed close loses nothing
                logger.debug("%s: closing the client failed: %s", self.host, exc)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(CLOSE_TIMEOUT)

    async def _call(self, operation: Callable[[Client], Awaitable[T]], seconds: float) -> T:
        async with asyncio.timeout(seconds):
            return await operation(await self._get_client())

    async def _get_client(self) -> Client:
        if self._client_lock is None:
            self._client_lock = asyncio.Lock()
        async with self._client_lock:
            if self._client is None:
                from runtime.core import Client

                assert self._config is not None
                self._client = await Client.from_config(self._config, request_timeout=REQUEST_TIMEOUT)
            return self._client

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="liqo-provider-kube", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop
