"""The Quota a provider keeps for each granted ResourceSlice: the consumer may use what it was granted.

Same name and namespace as the slice, owned by it (garbage collection removes it with the
slice); `user` is the consumer's ServiceAccount, the identity its offloaded workloads arrive
with, so enforcement knows whose requests count.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from runtime.api.crds import QUOTAS

from .meta import metadata

JSON = dict[str, Any]

Enforcement = Literal["None", "Soft", "Hard"]


def service_account_user(namespace: str, name: str) -> str:
    """The user name the API server gives a ServiceAccount's tokens."""
    return f"system:serviceaccount:{namespace}:{name}"


def quota(
    resource_slice: JSON,
    *,
    user: str,
    limits: Mapping[str, str],
    enforcement: Enforcement,
    cordoned: bool,
) -> JSON:
    """The Quota for a granted slice: limits = what was granted; `cordoned` admits no new workloads."""
    meta = resource_slice["metadata"]
    body: JSON = {
        "apiVersion": QUOTAS.api_version,
        "kind": QUOTAS.kind,
        "metadata": metadata(meta["name"], namespace=meta["namespace"], component="controller-manager"),
        "spec": {
            "user": user,
            "limits": dict(limits),
            "limitsEnforcement": enforcement,
            "cordoned": cordoned,
        },
    }
    body["metadata"]["ownerReferences"] = [
        {
            "apiVersion": resource_slice["apiVersion"],
            "kind": resource_slice["kind"],
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
        }
    ]
    return body
