"""Per-request credentials of a `ClusterConfig`: the Authorization header and the TLS context.

A static token, basic auth and client certificates never change; a token file is
re-read at least every `token_file_period` seconds (client-go re-reads every minute:
bound ServiceAccount tokens rotate, kubelet rewrites the file well before expiry); an
exec plugin's credential is cached until it expires. When the server answers 401, the
client calls `unauthorized` with what it sent: cached credentials are dropped and it
learns whether fresh ones differ, so it retries once only when that can help.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import CredentialError, KubeconfigField
from .config import ClusterConfig
from .execplugin import ExecCredential, ExecPlugin
from .tls import ssl_context

logger = logging.getLogger(__name__)


@dataclass(frozen=True, repr=False)
class RequestAuth:
    """What one request carries: extra headers (Authorization) and the TLS context to connect with."""

    headers: Mapping[str, str]
    #: True (aiohttp's default) for a plain http:// server, which has no TLS to configure
    ssl: ssl.SSLContext | bool
    exec_credential: ExecCredential | None = None

    def __repr__(self) -> str:
        return f"RequestAuth(headers={sorted(self.headers)}, exec_credential={self.exec_credential!r})"


class Authenticator:
    """Credentials for every request to one cluster; `__init__` does no I/O."""

    def __init__(
        self, config: ClusterConfig, *, token_file_period: float = 60.0, exec_timeout: float = 120.0
    ) -> None:
        self._config = config
        self._token_file_period = token_file_period
        self._exec = ExecPlugin(config, config.exec, timeout=exec_timeout) if config.exec else None
        self._lock = asyncio.Lock()
        #: the TLS context, and the client certificate and key it presents
        self._tls = config.server.startswith("https://")
        self._ssl: ssl.SSLContext | None = None
        self._ssl_pair: tuple[bytes | None, bytes | None] = (None, None)
        #: the token file's content, and when (loop time) it was read
        self._file_token: str | None = None
        self._file_read_at = 0.0

    async def prepare(self) -> None:
        """Build the TLS context now, so a bad certificate or key fails at construction, not at first use."""
        async with self._lock:
            await self._ssl_for(self._config.client_certificate, self._config.client_key)

    async def request_auth(self) -> RequestAuth:
        config = self._config
        credential = await self._exec.credential() if self._exec is not None else None
        headers: dict[str, str] = {}
        cert, key = config.client_certificate, config.client_key
        async with self._lock:
            if credential is not None:
                if credential.token:
                    headers["Authorization"] = f"Bearer {credential.token}"
                if credential.client_certificate is not None:
                    cert, key = credential.client_certificate, credential.client_key
            elif config.token_file is not None:
                headers["Authorization"] = f"Bearer {await self._token_from_file(config.token_file)}"
            elif config.token:
                headers["Authorization"] = f"Bearer {config.token}"
            elif config.username:
                basic = base64.b64encode(f"{config.username}:{config.password or ''}".encode()).decode()
                headers["Authorization"] = f"Basic {basic}"
            context = await self._ssl_for(cert, key)
        return RequestAuth(headers=headers, ssl=context, exec_credential=credential)

    async def unauthorized(self, used: RequestAuth) -> bool:
        """The server answered 401 to `used`: drop cached credentials; True if fresh ones differ (retry once)."""
        if self._exec is not None and used.exec_credential is not None:
            self._exec.invalidate(used.exec_credential)
        elif self._config.token_file is not None:
            self._file_read_at = float("-inf")
        else:
            return False
        fresh = await self.request_auth()
        return fresh.headers != used.headers or fresh.ssl is not used.ssl

    async def _token_from_file(self, path: Path) -> str:
        """The file's token, re-read when the last read is `token_file_period` old (or after a 401)."""
        now = asyncio.get_running_loop().time()
        if self._file_token is not None and now - self._file_read_at < self._token_file_period:
            return self._file_token
        try:
            token = (await asyncio.to_thread(path.read_text)).strip()
            problem = "" if token else "it is empty"
        except OSError as exc:
            token, problem = "", exc.strerror or str(exc)
        self._file_read_at = now
        if problem:
            if self._file_token is None:
                raise CredentialError(
                    f"token file {path} of {self._config.user_label}: {problem}", field=KubeconfigField.TOKEN
                )
            logger.warning(
                "%s: cannot re-read the token file %s (%s); using the last token",
                self._config.user_label,
                path,
                problem,
            )
            return self._file_token
        if self._file_token is not None and token != self._file_token:
            logger.info("%s: the token file %s changed; using the new token", self._config.user_label, path)
        self._file_token = token
        return token

    async def _ssl_for(self, cert: bytes | None, key: bytes | None) -> ssl.SSLContext | bool:
        """The TLS context presenting `cert`/`key`, rebuilt (in a thread) only when they change."""
        if not self._tls:
            return True
        if self._ssl is None or self._ssl_pair != (cert, key):
            self._ssl = await asyncio.to_thread(
                ssl_context, self._config, client_certificate=cert, client_key=key
            )
            self._ssl_pair = (cert, key)
        return self._ssl
