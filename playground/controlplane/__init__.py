"""A playground cluster's control plane: the scheduler and the core controllers, each an
ordinary API client on `runtime.core`, run by one `Manager` (`python -m playground.controlplane`).

Every component is a module with `setup(manager, options)`: it creates its informers and
controllers on the manager and returns; the manager runs them.
"""

from __future__ import annotations

from typing import Protocol

from runtime.core import Manager

from .options import ControlPlaneOptions


class Setup(Protocol):
    def __call__(self, manager: Manager, options: ControlPlaneOptions) -> None: ...


__all__ = ["ControlPlaneOptions", "Setup"]
