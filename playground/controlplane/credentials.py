"""Each controller's own credentials, as kube-controller-manager's `--use-service-account-credentials` gives them.

kube-controller-manager reads through shared informers with its own identity
(`system:kube-controller-manager`: list/watch of everything), but every controller
writes as a ServiceAccount of its own in kube-system (`deployment-controller`,
`namespace-controller`, ...), bound by kube-apiserver's bootstrap policy to
`system:controller:<name>`, which holds just what that controller needs. It makes the
account when it is missing and asks the TokenRequest API for a token (an hour long,
renewed well before it expires). Our controllers do the same: a write that the real
controller's role does not allow fails here as it would there.

`client(account)` hands out a client at once (no I/O; setups are synchronous);
`prepare()` makes the accounts and their first tokens before anything runs, retrying
until the API server answers; `run()` renews the tokens until cancelled. A token lives
in a file of `directory` (mode 0600) that the client re-reads, as a pod's client re-reads
its projected token.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from datetime import UTC, datetime
from pathlib import Path

from playground.apiserver.pki import write_file_atomically
from runtime.api.kinds import SERVICEACCOUNTS
from runtime.core import AlreadyExistsError, APIError, Client

logger = logging.getLogger(__name__)

NAMESPACE = "kube-system"
#: kube-controller-manager's token lifetime for its controllers
TOKEN_SECONDS = 3600
#: a token is renewed once this share of its lifetime has passed
RENEW_AT = 0.8
#: first retry delay while the API server does not answer (doubles up to RETRY_MAX)
RETRY = 0.5
RETRY_MAX = 10.0


class ServiceAccountCredentials:
    """Clients that act as kube-controller-manager's per-controller ServiceAccounts, and kube-scheduler's client."""

    def __init__(self, client: Client, *, scheduler: Client, directory: Path) -> None:
        #: kube-controller-manager's own client: it makes the accounts and asks for their tokens
        self._client = client
        self.scheduler = scheduler
        self._directory = directory
        self._clients: dict[str, Client] = {}
        #: when each account's token must be renewed (UTC)
        self._renew: dict[str, datetime] = {}

    def client(self, account: str) -> Client:
        """The client of ServiceAccount kube-system/`account` (made and given a token by `prepare()`)."""
        if account not in self._clients:
            config = dataclasses.replace(
                self._client.config,
                client_certificate=None,
                client_key=None,
                token=None,
                token_file=self._token_file(account),
                exec=None,
                user_name=f"system:serviceaccount:{NAMESPACE}:{account}",
            )
            self._clients[account] = Client(config)
        return self._clients[account]

    async def prepare(self) -> None:
        """Make every account handed out so far and write its first token."""
        await asyncio.to_thread(self._directory.mkdir, mode=0o700, parents=True, exist_ok=True)
        for account in self._clients:
            await self._retrying(account)

    async def run(self) -> None:
        """Renew each token before it expires, until cancelled."""
        if not self._renew:
            await asyncio.Event().wait()
        while True:
            now = datetime.now(UTC)
            for account, due in list(self._renew.items()):
                if due <= now:
                    await self._retrying(account)
            soonest = min(self._renew.values())
            await asyncio.sleep(max(1.0, (soonest - datetime.now(UTC)).total_seconds()))

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()

    def _token_file(self, account: str) -> Path:
        return self._directory / f"{account}.token"

    async def _retrying(self, account: str) -> None:
        delay = RETRY
        while True:
            try:
                await self._issue(account)
                return
            except (APIError, OSError) as exc:
                logger.warning("%s/%s: no token yet (%s); retrying in %.3g s", NAMESPACE, account, exc, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX)

    async def _issue(self, account: str) -> None:
        body = {"metadata": {"name": account, "namespace": NAMESPACE}}
        with contextlib.suppress(AlreadyExistsError):
            await self._client.create(SERVICEACCOUNTS, body, namespace=NAMESPACE)
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": TOKEN_SECONDS},
        }
        issued = datetime.now(UTC)
        answer = await self._client.create(
            SERVICEACCOUNTS, request, namespace=NAMESPACE, name=account, subresource="token"
        )
        status = answer.get("status") or {}
        expires = datetime.fromisoformat(str(status["expirationTimestamp"]).replace("Z", "+00:00"))
        await asyncio.to_thread(
            write_file_atomically, self._token_file(account), str(status["token"]).encode()
        )
        self._renew[account] = issued + (expires - issued) * RENEW_AT
        logger.info("%s/%s: token issued, valid until %s", NAMESPACE, account, expires.isoformat())
