"""Map changes of children (pods, ReplicaSets) to the workloads that should look at them.

A child with a controller reference concerns that controller; an orphan concerns every
workload of the kind in its namespace whose selector matches it, so one of them can
adopt it (kube's `getPodReplicaSets`, `getDeploymentsForReplicaSet`, ...).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from runtime.api.objects import JSON
from runtime.api.resource import Resource
from runtime.api.selectors import SelectorError, label_selector_matches
from runtime.core import MapFunc, Request, Store, owner_mapper

from .ownership import controller_of, labels, namespace, reference

logger = logging.getLogger(__name__)


def matching_workloads(store: Store, child: JSON) -> list[JSON]:
    """Workloads in `child`'s namespace whose `spec.selector` selects it (bad selectors select nothing)."""
    found: list[JSON] = []
    for workload in store.items(namespace=namespace(child)):
        try:
            if label_selector_matches((workload.get("spec") or {}).get("selector"), labels(child)):
                found.append(workload)
        except SelectorError as exc:
            logger.debug("%s: cannot evaluate its selector: %s", reference(workload), exc)
    return found


def owner_or_selector(owner: Resource, store: Store) -> MapFunc:
    """The child's controller of kind `owner`, or for an orphan every matching workload in `store`."""
    owners = owner_mapper(owner)

    def workloads(child: JSON) -> Iterable[Request]:
        if controller_of(child) is not None:
            return list(owners(child))
        return [Request.of(workload) for workload in matching_workloads(store, child)]

    return workloads
