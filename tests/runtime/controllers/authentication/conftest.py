"""Fixtures: one emulator with the runtime installed for the provider controllers' tests, admin and manager
clients (`tests.runtime.auth.fixtures`; this folder gets an emulator of its own).

Tests share the emulator (each works on Tenants and namespaces of its own names); the
controllers run as the `liqo-controller-manager` ServiceAccount, so the installation's
RBAC is what they are held to.
"""

from __future__ import annotations

from tests.runtime.auth.fixtures import admin, installed_kubeconfig, manager_client

__all__ = ["admin", "installed_kubeconfig", "manager_client"]
