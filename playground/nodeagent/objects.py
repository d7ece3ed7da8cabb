"""Where the process runner reads what a pod's containers consume: Secrets, ConfigMaps, tokens.

Kubelet reads Secrets and ConfigMaps for env vars and volumes, and asks the TokenRequest
API for ServiceAccount tokens bound to the pod. `ObjectSource` is that narrow need, so
volumes and env can be tested with a dict; `APIObjectSource` serves it through the
agent's `runtime.core.Client` (one GET per use, as kubelet's `Get` change-detection
strategy does; refreshes are periodic, never a watch over every Secret in the cluster).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from runtime.api.kinds import CONFIGMAPS, SECRETS, SERVICEACCOUNTS
from runtime.api.objects import JSON
from runtime.core import Client, NotFoundError


@dataclass(frozen=True)
class IssuedToken:
    token: str
    issued: datetime
    expires: datetime


class ObjectSource(Protocol):
    async def get(self, kind: str, namespace: str, name: str) -> JSON | None:
        """The Secret or ConfigMap (`kind` is "Secret" or "ConfigMap"), or None if it does not exist."""

    async def token(self, pod: JSON, *, audience: str, expiration_seconds: int) -> IssuedToken:
        """A token of the pod's ServiceAccount bound to the pod (empty `audience`: the API server's)."""


class APIObjectSource:
    def __init__(self, client: Client) -> None:
        self._client = client

    async def get(self, kind: str, namespace: str, name: str) -> JSON | None:
        resource = SECRETS if kind == "Secret" else CONFIGMAPS
        try:
            return await self._client.get(resource, name, namespace=namespace)
        except NotFoundError:
            return None

    async def token(self, pod: JSON, *, audience: str, expiration_seconds: int) -> IssuedToken:
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "audiences": [audience] if audience else [],
                "expirationSeconds": expiration_seconds,
                "boundObjectRef": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
            },
        }
        issued = datetime.now(UTC)
        answer = await self._client.create(
            SERVICEACCOUNTS,
            request,
            namespace=meta["namespace"],
            name=spec.get("serviceAccountName") or "default",
            subresource="token",
        )
        status = answer.get("status") or {}
        expires = datetime.fromisoformat(str(status["expirationTimestamp"]).replace("Z", "+00:00"))
        return IssuedToken(token=str(status["token"]), issued=issued, expires=expires)
