"""One cluster's `Client` for synchronous callers: an event loop of its own in a daemon thread, each call
submitted there and waited for, within its bound.

Both front ends call the operations from synchronous code on threads they do not own:
tf calls the Terraform provider's handlers on gRPC worker threads (up to ten at once,
one per resource Terraform works on in parallel), Pulumi calls a dynamic provider's
methods on its own. A `Bridge` runs one loop in a daemon thread, makes the client on the
first call (inside that call's bound) and keeps it for every later one, and cancels a
call past its bound (`BoundExceededError`, a `TimeoutError`). `close` closes the client
and stops the loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

from runtime.core import Client, ClusterConfig

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: the bound of one HTTP request (a call's own bound bounds the whole operation)
REQUEST_TIMEOUT: Final = 30.0
#: how long closing the client may take when the caller exits
CLOSE_TIMEOUT: Final = 5.0


class BoundExceededError(TimeoutError):
    """A call did not finish within its bound; its operation was cancelled."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"did not finish within {seconds:g}s")
        self.seconds = seconds


class Bridge:
    """The cluster of `config`; `run` executes a coroutine against its client, on the bridge's loop."""

    def __init__(
        self, config: ClusterConfig, *, thread_name: str, request_timeout: float = REQUEST_TIMEOUT
    ) -> None:
        self.config = config
        self._thread_name = thread_name
        self._request_timeout = request_timeout
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: Client | None = None
        self._client_lock: asyncio.Lock | None = None

    def run(self, operation: Callable[[Client], Awaitable[T]], *, seconds: float) -> T:
        """`operation(client)` on the bridge's loop, cancelled after `seconds` (BoundExceededError)."""
        future = asyncio.run_coroutine_threadsafe(self._call(operation, seconds), self._ensure_loop())
        return future.result()

    def close(self) -> None:
        """Close the client and stop the loop (the caller is done with the cluster, or exiting)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        if self._client is not None:
            try:
                asyncio.run_coroutine_threadsafe(self._client.close(), loop).result(CLOSE_TIMEOUT)
            except Exception as exc:  # the caller is done: a failed close loses nothing
                logger.debug("%s: closing the client failed: %s", self.config.server, exc)
            self._client = None
        loop.call_soon_threadsafe(loop.stop)
        thread.join(CLOSE_TIMEOUT)
        if not thread.is_alive():
            loop.close()

    async def _call(self, operation: Callable[[Client], Awaitable[T]], seconds: float) -> T:
        try:
            async with asyncio.timeout(seconds) as bound:
                return await operation(await self._get_client())
        except TimeoutError:
            if not bound.expired():
                raise
            raise BoundExceededError(seconds) from None

    async def _get_client(self) -> Client:
        if self._client_lock is None:
            self._client_lock = asyncio.Lock()
        async with self._client_lock:
            if self._client is None:
                self._client = await Client.from_config(self.config, request_timeout=self._request_timeout)
            return self._client

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name=self._thread_name, daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop
