"""Fixtures: one emulator with the runtime installed for the auth tests (`fixtures.py`), an admin client, the
service's and the controller manager's clients.

Tests share the emulator (each uses consumers with their own names and ids, and tokens
of its own), so the installation is applied once per session.
"""

from __future__ import annotations

from .fixtures import admin, auth_client, installed_kubeconfig, manager_client

__all__ = ["admin", "auth_client", "installed_kubeconfig", "manager_client"]
