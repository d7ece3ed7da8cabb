"""Exec credential plugins (client.authentication.k8s.io v1 and v1beta1), run without blocking the loop.

The plugin runs as an asyncio subprocess with the process environment plus its own
`env`, `KUBERNETES_EXEC_INFO` describing the request (never interactive here: stdin is
closed; with `provideClusterInfo`, the cluster too), and prints an `ExecCredential`.
Its token or client certificate is cached until shortly before `expirationTimestamp`
(for good when it has none) and dropped after the server answers 401, as client-go
does. Failures name the command and show the end of its stderr; the token is never
logged or put in a message.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import CredentialError, KubeconfigField
from .config import ClusterConfig, ExecConfig
from .pem import PEMError, check_certificates, check_private_key

logger = logging.getLogger(__name__)

#: refresh this long before the credential expires, so no request carries an expired one
REFRESH_BEFORE = 10.0
_STDERR_SHOWN = 800


@dataclass(frozen=True, repr=False)
class ExecCredential:
    """What a plugin returned: a token and/or a client certificate, and until when (epoch seconds)."""

    token: str | None = None
    client_certificate: bytes | None = None
    client_key: bytes | None = None
    expires_at: float | None = None

    def __repr__(self) -> str:
        return (
            f"ExecCredential(token={'<redacted>' if self.token else None}, "
            f"client_certificate={self.client_certificate is not None}, expires_at={self.expires_at})"
        )


def exec_info(config: ClusterConfig, plugin: ExecConfig) -> dict[str, Any]:
    """The `KUBERNETES_EXEC_INFO` document for one run of `plugin`."""
    spec: dict[str, Any] = {"interactive": False}
    if plugin.provide_cluster_info:
        cluster: dict[str, Any] = {"server": config.server}
        if config.tls_server_name:
            cluster["tls-server-name"] = config.tls_server_name
        if config.insecure_skip_tls_verify:
            cluster["insecure-skip-tls-verify"] = True
        if config.certificate_authority is not None:
            cluster["certificate-authority-data"] = base64.b64encode(config.certificate_authority).decode()
        if config.proxy_url:
            cluster["proxy-url"] = config.proxy_url
        if plugin.cluster_extension is not None:
            cluster["config"] = dict(plugin.cluster_extension)
        spec["cluster"] = cluster
    return {"apiVersion": plugin.api_version, "kind": "ExecCredential", "spec": spec}


class ExecPlugin:
    """One user's plugin and its cached credential; `credential()` runs it at most once at a time."""

    def __init__(self, config: ClusterConfig, plugin: ExecConfig, *, timeout: float = 120.0) -> None:
        self._config = config
        self._plugin = plugin
        self._timeout = timeout
        self._cached: ExecCredential | None = None
        self._lock = asyncio.Lock()
        self._name = f"exec plugin '{plugin.command}' ({config.user_label})"

    async def credential(self) -> ExecCredential:
        async with self._lock:
            cached = self._cached
            if cached is None or (
                cached.expires_at is not None and time.time() >= cached.expires_at - REFRESH_BEFORE
            ):
                self._cached = cached = await self._run()
            return cached

    def invalidate(self, used: ExecCredential) -> None:
        """The server refused `used`: the next `credential()` runs the plugin again (unless it already did)."""
        if self._cached is used:
            self._cached = None

    async def _run(self) -> ExecCredential:
        plugin = self._plugin
        if plugin.interactive_mode == "Always":
            raise CredentialError(
                f"{self._name} needs an interactive terminal (interactiveMode: Always), which this process "
                "does not have; set interactiveMode to IfAvailable or Never",
                field=KubeconfigField.EXEC,
            )
        env = {
            **os.environ,
            **dict(plugin.env),
            "KUBERNETES_EXEC_INFO": json.dumps(exec_info(self._config, plugin)),
        }
        logger.debug("%s: running", self._name)
        try:
            process = await asyncio.create_subprocess_exec(
                plugin.command,
                *plugin.args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
            )
        except OSError as exc:
            hint = f"; {plugin.install_hint}" if plugin.install_hint else ""
            raise CredentialError(
                f"{self._name} cannot be started: {exc.strerror}{hint}", field=KubeconfigField.EXEC
            ) from None
        try:
            async with asyncio.timeout(self._timeout):
                stdout, stderr = await process.communicate()
        except BaseException:
            if process.returncode is None:
                process.kill()
            raise
        if process.returncode != 0:
            raise CredentialError(
                f"{self._name} failed with exit code {process.returncode}: {_tail(stderr)}",
                field=KubeconfigField.EXEC,
            )
        if stderr:
            logger.debug("%s: stderr: %s", self._name, _tail(stderr))
        return parse_credential(stdout, plugin=plugin, name=self._name)


def parse_credential(output: bytes, *, plugin: ExecConfig, name: str) -> ExecCredential:
    """An ExecCredential's status; CredentialError (never quoting the output, it may hold a token) if invalid."""
    try:
        document = json.loads(output)
    except ValueError as exc:
        raise CredentialError(
            f"{name}: its output is not JSON ({exc}); it must print an ExecCredential",
            field=KubeconfigField.EXEC,
        ) from None
    if not isinstance(document, dict) or document.get("kind") != "ExecCredential":
        raise CredentialError(f"{name}: its output is not an ExecCredential", field=KubeconfigField.EXEC)
    if document.get("apiVersion") != plugin.api_version:
        raise CredentialError(
            f"{name}: it returned apiVersion '{document.get('apiVersion')}', but is configured for "
            f"'{plugin.api_version}'; fix exec.apiVersion",
            field=KubeconfigField.EXEC,
        )
    status = document.get("status")
    if not isinstance(status, dict):
        raise CredentialError(f"{name}: the ExecCredential has no status", field=KubeconfigField.EXEC)
    token = status.get("token") or None
    cert_text, key_text = status.get("clientCertificateData"), status.get("clientKeyData")
    if bool(cert_text) != bool(key_text):
        raise CredentialError(
            f"{name}: the ExecCredential has clientCertificateData or clientKeyData without the other",
            field=KubeconfigField.EXEC,
        )
    if not token and not cert_text:
        raise CredentialError(
            f"{name}: the ExecCredential has neither a token nor clientCertificateData",
            field=KubeconfigField.EXEC,
        )
    if not all(isinstance(value, str | None) for value in (token, cert_text, key_text)):
        raise CredentialError(
            f"{name}: token, clientCertificateData and clientKeyData must be strings",
            field=KubeconfigField.EXEC,
        )
    cert = key = None
    if cert_text and key_text:
        cert, key = cert_text.encode(), key_text.encode()
        try:
            check_certificates(cert)
            check_private_key(key)
        except PEMError as exc:
            raise CredentialError(
                f"{name}: clientCertificateData/clientKeyData: {exc}", field=KubeconfigField.EXEC
            ) from None
    return ExecCredential(
        token=token,
        client_certificate=cert,
        client_key=key,
        expires_at=_expiry(status.get("expirationTimestamp"), name),
    )


def _expiry(value: Any, name: str) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value)).timestamp()
    except ValueError:
        raise CredentialError(
            f"{name}: expirationTimestamp '{value}' is not an RFC 3339 time", field=KubeconfigField.EXEC
        ) from None


def _tail(stderr: bytes) -> str:
    text = stderr.decode(errors="replace").strip()
    if not text:
        return "(no output on stderr)"
    return text if len(text) <= _STDERR_SHOWN else "..." + text[-_STDERR_SHOWN:]
