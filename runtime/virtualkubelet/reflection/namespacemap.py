"""Which local namespaces are reflected into which twin namespaces: the provider's NamespaceMap, read here.

The virtual kubelet watches the NamespaceMap of its provider (in its own namespace, named
after its VirtualNode). Every namespace whose twin namespace the provider reports
`Accepted` is a reflected pair; the others are not (any more). The reconciler hands the
difference to the `ReflectionManager`, so offloading and unoffloading a namespace start
and stop its reflection, and a restarted virtual kubelet finds its pairs again.
"""

from __future__ import annotations

import logging

from runtime.core import Request, Result, Store
from runtime.forge.namespaces import accepted

from .manager import ReflectionManager

logger = logging.getLogger(__name__)


class NamespaceMapReconciler:
    """One key: the NamespaceMap of this virtual kubelet's provider."""

    def __init__(self, *, namespace_maps: Store, manager: ReflectionManager) -> None:
        self._maps = namespace_maps
        self._manager = manager

    async def reconcile(self, request: Request) -> Result | None:
        wanted = accepted(self._maps.get(request.name, namespace=request.namespace))
        for local in [local for local in self._manager.pairs if local not in wanted]:
            await self._manager.stop_namespace(local)
        for local, remote in sorted(wanted.items()):
            await self._manager.start_namespace(local, remote)
        return None
