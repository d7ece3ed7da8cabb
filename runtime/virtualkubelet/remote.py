"""The remote side of a virtual node: the provider cluster, as the node controller needs it.

As virtual-kubelet's `NodeProvider`, the interface is tiny and the node controller owns
everything else (the Node, its Lease, its status): `ping()` says whether the provider's
API server answers this consumer, `version()` what it runs. A fake stands in for tests.

`CredentialRemote` is the real one: one `runtime.core.Client` built from the credential
kubeconfig the consumer holds for the provider. The credential is renewed long before
it expires, so `use()` reconfigures that client for each new kubeconfig while the virtual
kubelet runs: requests in flight finish with the old credential, and everything built on
the client (the reflection's informers) carries on with the new one.

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

from runtime.api.objects import JSON
from runtime.core import APIError, Client
from runtime.core.client import RequestObserver
from runtime.core.failures import explain
from runtime.core.kubeconfig import load_kubeconfig_dict

logger = logging.getLogger(__name__)

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

    def __init__(
        self, *, provider: str, request_timeout: float = 10.0, on_request: RequestObserver | None = None
    ) -> None:
        self._provider = provider
        self._request_timeout = request_timeout
        self._on_request = on_request
        self._client: Client | None = None
        #: the kubeconfig the client uses (a Secret resync with the same one changes nothing)
        self._kubeconfig: Mapping[str, Any] | None = None

    @property
    def server(self) -> str | None:
        return self._client.host if self._client is not None else None

    @property
    def client(self) -> Client | None:
        """The provider's client, once a credential was used (the same object across renewals)."""
        return self._client

    async def use(self, kubeconfig: Mapping[str, Any]) -> bool:
        """Talk to the provider with this kubeconfig from now on; False when it is the one in use already.

        KubeconfigError (client unchanged) when it cannot be loaded.
        """
        if kubeconfig == self._kubeconfig:
            return False
        config = await asyncio.to_thread(load_kubeconfig_dict, kubeconfig)
        renewed = self._client is not None
        if self._client is None:
            self._client = await Client.from_config(config, request_timeout=self._request_timeout)
            self._client.on_request = self._on_request
        else:
            await self._client.reconfigure(config)
        self._kubeconfig = kubeconfig
        logger.info(
            "%s: using %s credential for %s", self._provider, "a new" if renewed else "the", config.server
        )
        return True

    async def ping(self) -> None:
        await self._server_version()

    async def version(self) -> str:
        info = await self._server_version()
        return str(info.get("gitVersion") or "")

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def _server_version(self) -> JSON:
        if self._client is None:
            raise RemoteError(f"no credential for provider {self._provider} yet")
        return await _server_version(self._client, provider=self._provider)


async def _server_version(client: Client, *, provider: str) -> JSON:
    try:
        return await client.get_path(VERSION_PATH)
    except APIError as exc:
        where = f"the API server of provider {provider} ({client.host})"
        raise RemoteError(explain(exc, cluster=where, advice=False)) from None
