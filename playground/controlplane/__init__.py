"""A playground cluster's control plane: the scheduler and the core controllers, each an
ordinary API client on `runtime.core`, run by one `Manager` (`python -m playground.controlplane`).

Every component is a module with `setup(manager, options, credentials)`: it creates its
informers and controllers on the manager and returns; the manager runs them. Reads go
through the manager's shared informers, with kube-controller-manager's identity
(`system:kube-controller-manager` may list and watch everything, as its shared
informers do); writes go with the identity of the real component: a controller's
`credentials.client(<account>)`, the ServiceAccount kube-controller-manager gives it with
`--use-service-account-credentials` (`credentials.py`), and the scheduler's
`credentials.scheduler` (`system:kube-scheduler`). The scheduler shares the
controllers' cache instead of listing with its own identity, which reads nothing its
role does not allow.
"""

from __future__ import annotations

from typing import Protocol

from runtime.core import Client, Manager

from .options import ControlPlaneOptions


class Credentials(Protocol):
    def client(self, account: str) -> Client:
        """The client of kube-controller-manager's ServiceAccount `account` in kube-system."""

    @property
    def scheduler(self) -> Client:
        """kube-scheduler's client (`system:kube-scheduler`)."""


class Setup(Protocol):
    def __call__(self, manager: Manager, options: ControlPlaneOptions, credentials: Credentials) -> None: ...


__all__ = ["ControlPlaneOptions", "Credentials", "Setup"]
