"""The remote side of a virtual node: the provider cluster, as the node controller needs it.

As virtual-kubelet's `NodeProvider`, the interface is tiny and the node controller owns
everything else (the Node, its Lease, its status): `ping()` says whether the provider's
API server answers this consumer, `version()` what it runs. A fake stands in for tests.

`CredentialRemote` is the real one: a `runtime.core.Client` built from the credential
kubeconfig the consumer holds for the provider. The credential is renewed long before
it expires, so `use()` swaps in a client for each new kubeconfig while the virtual
kubelet runs; a health check in flight finishes on the old client, then it is closed.

The health check asks for `/version`: an authenticated request the API server answers
as soon as it serves (kube-apiserver's default RBAC allows it to every authenticated
user), so a stopped server, a network failure and a revoked or expired credential (401)
all count as failures.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from runtime.core import APIError, Client
from runtime.core.failures import explain
from runtime.core.kubeconfig import load_kubeconfig_dict

logger = logging.getLogger(__name__)

JSON = dict[str, Any]
VERSION_PATH = "/version"


class RemoteError(Exception):
    """The provider's API server did not answer as a healthy one does; the message says what happened."""


class Remote(Protocol):
    async def ping(self) -> None:
        """Return when the provider's API server answers this consumer; RemoteError otherwise."""

    async def version(self) -> str:
        """The provider's Kubernetes version (`v1.32.0`); RemoteError when it cannot be asked."""


class CredentialRemote:
    """The provider reached with the consumer's credential; `use()` installs each new kubeconfig."""

    def __init__(self, *, provider: str, request_timeout: float = 10.0) -> None:
        self._provider = provider
        self._request_timeout = request_timeout
        self._client: Client | None = None
        #: the kubeconfig the current client was built from (a Secret resync with the same one changes nothing)
        self._kubeconfig: Mapping[str, Any] | None = None
        #: held by each request and by `use()`, so a client is never closed under a request
        self._lock = asyncio.Lock()

    @property
    def server(self) -> str | None:
        return self._client.host if self._client is not None else None

    async def use(self, kubeconfig: Mapping[str, Any]) -> bool:
        """Talk to the provider with this kubeconfig from now on; False when it is the one in use already.

        KubeconfigError (unchanged client) when it cannot be loaded.
        """
        if kubeconfig == self._kubeconfig:
            return False
        config = await asyncio.to_thread(load_kubeconfig_dict, kubeconfig)
        client = await Client.from_config(config, request_timeout=self._request_timeout)
        async with self._lock:
            old, self._client, self._kubeconfig = self._client, client, kubeconfig
            if old is not None:
                await old.close()
        logger.info("%s: using %s credential for %s", self._provider, "a new" if old else "the", client.host)
        return True

    async def ping(self) -> None:
        await self._server_version()

    async def version(self) -> str:
        info = await self._server_version()
        return str(info.get("gitVersion") or "")

    async def close(self) -> None:
        async with self._lock:
            if self._client is not None:
                await self._client.close()
                self._client = None

    async def _server_version(self) -> JSON:
        async with self._lock:
            client = self._client
            if client is None:
                raise RemoteError(f"no credential for provider {self._provider} yet")
            return await _server_version(client, provider=self._provider)


async def _server_version(client: Client, *, provider: str) -> JSON:
    try:
        return await client.get_path(VERSION_PATH)
    except APIError as exc:
        where = f"the API server of provider {provider} ({client.host})"
        raise RemoteError(explain(exc, cluster=where, advice=False)) from None
