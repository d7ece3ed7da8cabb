"""Reflected Secrets, as pure functions: a consumer's Secret to its copy in the twin namespace.

The copy is the Secret verbatim (data, type, immutable, labels, annotations), marked as
reflected, with one exception (Liqo's): a `kubernetes.io/service-account-token` Secret
cannot exist without its ServiceAccount, which the provider does not have, so its copy is
`Opaque`, labelled with the ServiceAccount's name. Its token stays a token of the consumer:
whoever reads the copy on the provider can act as that ServiceAccount at home (docs/reflection.md).

The token Secrets the pod reflector writes for offloaded pods (`serviceaccounts.py`) are
not this module's: a consumer Secret whose copy would take one's name is refused.
"""

from __future__ import annotations

from typing import Final

from runtime.api import constants as c
from runtime.api.objects import JSON, nested

from .configmaps import must_recreate, payload_differs
from .meta import reflected_metadata

SERVICE_ACCOUNT_TOKEN: Final = "kubernetes.io/service-account-token"
SERVICE_ACCOUNT_NAME: Final = "kubernetes.io/service-account.name"
#: the fields of a Secret its copy carries
PAYLOAD: Final = ("data", "type", "immutable")


def remote_secret(local: JSON, *, namespace: str, origin_cluster_id: str) -> JSON:
    """The copy of the consumer's Secret `local` in twin namespace `namespace`."""
    meta = local["metadata"]
    secret_type = str(local.get("type") or "Opaque")
    labels: dict[str, str] = {}
    if secret_type == SERVICE_ACCOUNT_TOKEN:
        secret_type = "Opaque"
        labels[SERVICE_ACCOUNT_NAME] = str(nested(meta, "annotations", SERVICE_ACCOUNT_NAME) or "")
    copy: JSON = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": reflected_metadata(
            local,
            name=str(meta["name"]),
            namespace=namespace,
            origin_cluster_id=origin_cluster_id,
            labels=labels,
        ),
        "type": secret_type,
    }
    for key in ("data", "immutable"):
        if local.get(key) is not None:
            copy[key] = local[key]
    return copy


def is_pod_token_secret(secret: JSON) -> bool:
    """Whether a provider's Secret is an offloaded pod's token Secret (the pod reflector's, never a copy)."""
    return c.LABEL_REFLECTED_POD in (nested(secret, "metadata", "labels") or {})


def secret_differs(current: JSON, desired: JSON) -> bool:
    return payload_differs(current, desired, payload=PAYLOAD)


def secret_must_recreate(current: JSON, desired: JSON) -> bool:
    """Whether the copy can only be replaced by deleting it: immutable and changed, or of another type."""
    if (current.get("type") or "Opaque") != desired.get("type"):
        return True
    return must_recreate(current, desired, payload=PAYLOAD)
