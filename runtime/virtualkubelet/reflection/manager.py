"""The reflection manager: which namespace pairs are reflected, with one set of informers per pair.

The NamespaceMap handler (`namespacemap.py`) tells it which local namespaces have a twin
namespace on the provider; for each pair it starts one informer per kind any reflector
watches there (shared between reflectors): of the local namespace, on this cluster's
informer factory, and of the twin namespace, on the provider's. It hands the pair to every
reflector, and on stop takes the pair from every reflector before it stops the informers.

The remote informers run on their own `InformerFactory` over the provider's client,
started once the virtual kubelet has a credential for the provider (`connect`); pairs
asked for before wait for it. A renewed credential reconfigures that client in place, so
the informers carry on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from runtime.core import Client, InformerFactory, WatchingSettings

from .generic import NamespacePair, Reflector

logger = logging.getLogger(__name__)


class ReflectionManager:
    def __init__(
        self, reflectors: Sequence[Reflector], *, local: InformerFactory, watching: WatchingSettings
    ) -> None:
        self._reflectors = list(reflectors)
        self._local = local
        self._watching = watching
        self._factory: InformerFactory | None = None
        self._connected = asyncio.Event()
        self._lock = asyncio.Lock()
        self.pairs: dict[str, NamespacePair] = {}

    def connect(self, remote: Client) -> None:
        """Watch the provider through `remote` (once: later credentials reconfigure that client)."""
        if self._factory is None:
            self._factory = InformerFactory(remote, settings=self._watching)
            self._connected.set()

    async def run(self) -> None:
        """Run the remote informers until cancelled."""
        await self._connected.wait()
        assert self._factory is not None
        await self._factory.run()

    def pair(self, local: str) -> NamespacePair | None:
        return self.pairs.get(local)

    async def start_namespace(self, local: str, remote: str) -> None:
        """Reflect `local` into `remote` (a pair reflected into another twin namespace is moved)."""
        async with self._lock:
            current = self.pairs.get(local)
            if current is not None and current.remote == remote:
                return
            if current is not None:
                self._stop(local)
            await self._connected.wait()
            assert self._factory is not None
            pair = NamespacePair(local, remote)
            for reflector in self._reflectors:
                for kind in reflector.local_kinds():
                    if kind.key not in pair.local_informers:
                        pair.local_informers[kind.key] = self._local.informer(
                            kind.resource, namespace=local, label_selector=kind.label_selector
                        )
                for kind in reflector.remote_kinds():
                    if kind.key not in pair.remote_informers:
                        pair.remote_informers[kind.key] = self._factory.informer(
                            kind.resource, namespace=remote, label_selector=kind.label_selector
                        )
            self.pairs[local] = pair
            for reflector in self._reflectors:
                await reflector.start_namespace(pair)
            logger.info("%s: reflected into %s on the provider", local, remote)

    async def stop_namespace(self, local: str) -> None:
        async with self._lock:
            if local in self.pairs:
                self._stop(local)

    def _stop(self, local: str) -> None:
        pair = self.pairs.pop(local)
        for reflector in self._reflectors:
            reflector.stop_namespace(local)
        for informer in pair.local_informers.values():
            self._local.remove(informer)
        if self._factory is not None:
            for informer in pair.remote_informers.values():
                self._factory.remove(informer)
        logger.info("%s: no longer reflected into %s", local, pair.remote)
