"""The runtime's controllers, grouped by module (`authentication`, later `core`, `offloading`, ...).

One Reconciler per file. Every controller module has `setup(manager, options)`: it
creates its informers and controllers on the manager and returns; the controller
manager's command runs the manager. Options are one frozen dataclass
(`ControllerOptions`) passed explicitly to each `setup`.
"""

from __future__ import annotations

from typing import Protocol

from runtime.core import Manager

from .options import ControllerOptions


class Setup(Protocol):
    def __call__(self, manager: Manager, options: ControllerOptions) -> None: ...


__all__ = ["ControllerOptions", "Setup"]
