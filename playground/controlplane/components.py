"""The control plane's components by name, and which of them a run picks.

Names follow kube-scheduler and kube-controller-manager's `--controllers` names, so a
user who knows those knows these. Each entry is an import path `module:function`
resolved only when the component is chosen: `--only scheduler` never imports a
controller, and the real-binary mode can leave out whatever kube-controller-manager
or kube-scheduler already runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from . import Setup

SCHEDULER = "scheduler"

#: component name -> "module:setup", in the order the manager registers them
COMPONENTS: dict[str, str] = {
    SCHEDULER: "playground.scheduler:setup",
    "namespace": "playground.controllers.namespace:setup",
    "garbagecollector": "playground.controllers.gc:setup",
    # the default ServiceAccount and the kube-root-ca.crt ConfigMap of every namespace
    "serviceaccount": "playground.controllers.serviceaccount:setup",
    "nodelifecycle": "playground.controllers.nodelifecycle:setup",
    "podgc": "playground.controllers.podgc:setup",
    "deployment": "playground.controllers.deployment:setup",
    "replicaset": "playground.controllers.replicaset:setup",
    "daemonset": "playground.controllers.daemonset:setup",
    "statefulset": "playground.controllers.statefulset:setup",
    "endpointslice": "playground.controllers.endpointslice:setup",
}

#: what kube-controller-manager runs of ours (everything but the scheduler)
CONTROLLERS: tuple[str, ...] = tuple(name for name in COMPONENTS if name != SCHEDULER)


class UnknownComponentError(ValueError):
    """A component name that is not in `COMPONENTS`."""


def select(*, only: Iterable[str] = (), disable: Iterable[str] = ()) -> list[str]:
    """The components to run: `only` (all when empty) minus `disable`, in registry order."""
    only, disable = list(only), list(disable)
    unknown = sorted({name for name in [*only, *disable] if name not in COMPONENTS})
    if unknown:
        raise UnknownComponentError(
            f"unknown component(s) {', '.join(unknown)}: choose from {', '.join(COMPONENTS)}"
        )
    chosen = set(only) if only else set(COMPONENTS)
    return [name for name in COMPONENTS if name in chosen and name not in disable]


def load(name: str) -> Setup:
    """Import component `name` and return its `setup` function."""
    module_name, _, attribute = COMPONENTS[name].partition(":")
    setup: Setup = getattr(importlib.import_module(module_name), attribute)
    return setup
