"""The provider's Kubernetes connection: one `runtime.core.Client`, made on first use, on an event
loop the provider owns (`runtime.operations.bridge`, the Pulumi components' too).

tf calls every handler synchronously on a gRPC worker thread, while `Client` is async:
each handler submits its coroutine to the bridge's loop and blocks for the answer,
bounded by the operation's timeout. The bridge (and `runtime.core`, whose import costs a
third of a second) is made only when a handler first needs the cluster: `terraform
validate`, and plans that touch no data source, never pay for it.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from runtime.core import Client, ClusterConfig
    from runtime.operations.bridge import Bridge

T = TypeVar("T")

#: the name of the thread that runs the provider's event loop
THREAD_NAME = "liqo-provider-kube"


class KubeUnavailableError(Exception):
    """The provider has no usable cluster configuration (not known yet during plan, or invalid)."""


class Kube:
    """The cluster the provider is configured for; `run` executes a coroutine against its client."""

    def __init__(self, config: ClusterConfig | None, *, unavailable: str = "") -> None:
        self._config = config
        self._unavailable = unavailable
        self._lock = threading.Lock()
        self._bridge: Bridge | None = None

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
        """`operation(client)` on the provider's loop, cancelled after `seconds` (a TimeoutError)."""
        if self._config is None:
            raise KubeUnavailableError(self._unavailable)
        with self._lock:
            if self._bridge is None:
                from runtime.operations.bridge import Bridge

                self._bridge = Bridge(self._config, thread_name=THREAD_NAME)
            bridge = self._bridge
        return bridge.run(operation, seconds=seconds)

    def close(self) -> None:
        """Close the client and stop the loop (the provider is exiting)."""
        with self._lock:
            bridge, self._bridge = self._bridge, None
        if bridge is not None:
            bridge.close()
