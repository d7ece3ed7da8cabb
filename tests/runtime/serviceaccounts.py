"""Credentials of a cluster's ServiceAccounts for tests: a kubeconfig or client carrying a TokenRequest token."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from runtime.api.kinds import SERVICEACCOUNTS
from runtime.core import Client


async def service_account_kubeconfig(
    admin: Client, kubeconfig: Path, name: str, *, namespace: str, ttl: int = 3600
) -> dict[str, Any]:
    """`kubeconfig` (the admin's) with its user replaced by a token of ServiceAccount `namespace/name`."""
    review = await admin.create(
        SERVICEACCOUNTS,
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": ttl},
        },
        namespace=namespace,
        name=name,
        subresource="token",
    )
    config: dict[str, Any] = yaml.safe_load(await asyncio.to_thread(kubeconfig.read_text))
    config["users"][0]["user"] = {"token": review["status"]["token"]}
    return config


async def service_account_client(
    admin: Client, kubeconfig: Path, name: str, *, namespace: str, ttl: int = 3600
) -> Client:
    """A client authenticated as ServiceAccount `namespace/name`."""
    config = await service_account_kubeconfig(admin, kubeconfig, name, namespace=namespace, ttl=ttl)
    return await Client.from_kubeconfig_dict(config)
