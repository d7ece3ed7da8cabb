"""Validation of GatewayServers: one per peering, named after its consumer, in its tenant namespace.

A consumer's credential may create GatewayServers in its tenant namespace, and each one
makes the provider run a gateway (a Deployment with NET_ADMIN) behind a NodePort or
LoadBalancer Service. A consumer needs one, named after itself (the name its runtime
gives it, `runtime.controllers.core.network`), so in a tenant namespace a GatewayServer
must bear the name of the consumer the namespace is for: one per peering, whatever the
consumer tries. GatewayServers elsewhere are the provider administrator's business.
"""

from __future__ import annotations

from collections.abc import Sequence

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.forge.tenant import tenant_namespace_name

from .review import forbidden


def validate(request: JSON) -> Sequence[str]:
    """Problems of a GatewayServer CREATE."""
    obj = request.get("object")
    meta = (obj.get("metadata") if isinstance(obj, dict) else None) or {}
    meta = meta if isinstance(meta, dict) else {}
    name = str(meta.get("name") or request.get("name") or "")
    namespace = str(request.get("namespace") or meta.get("namespace") or "")
    if not namespace.startswith(c.TENANT_NAMESPACE_PREFIX) or tenant_namespace_name(name) == namespace:
        return []
    return [
        forbidden(
            "metadata.name",
            f"tenant namespace {namespace} holds one GatewayServer, named after the consumer it is for: "
            f"{name!r} is not that name (a peering has one gateway on each side)",
        )
    ]
