"""Validation of ForeignClusters: what the CRD's schema cannot say, or what API servers without CEL skip.

- `spec.clusterID` is a UUID (every cluster id is one: `liqo-clusterid-configmap`), and
  never changes once set (it is the peer's identity; a new id is a new peer);
- `spec.clusterName`, when set, is a DNS label of at most 58 characters, because the
  virtual node standing for the peer is called `liqo-<clusterName>`;
- `spec.authURL`, when set, is an https:// URL (tokens travel to it);
- `spec.tokenSecretRef` names a Secret in the runtime's namespace, the only namespace
  whose Secrets the controller manager reads for tokens.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from runtime.api.objects import JSON

from .review import forbidden, invalid

#: the virtual node is `liqo-<clusterName>`, and a node name must fit in 63 characters
MAX_CLUSTER_NAME = 58
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def is_uuid(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        return str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False


def is_dns_label(value: Any, *, max_length: int = 63) -> bool:
    return isinstance(value, str) and len(value) <= max_length and bool(_DNS_LABEL.match(value))


def _spec(obj: JSON | None) -> JSON:
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def validate(request: JSON, *, namespace: str) -> Sequence[str]:
    """Problems of a ForeignCluster CREATE or UPDATE; `namespace` is the runtime's namespace."""
    spec = _spec(request.get("object"))
    problems: list[str] = []
    cluster_id = spec.get("clusterID")
    if not is_uuid(cluster_id):
        problems.append(invalid("spec.clusterID", cluster_id, "must be a UUID (the remote cluster's id)"))
    if request.get("operation") == "UPDATE":
        old_id = _spec(request.get("oldObject")).get("clusterID")
        if old_id is not None and cluster_id != old_id:
            problems.append(
                invalid(
                    "spec.clusterID",
                    cluster_id,
                    f"clusterID is immutable (it was {old_id}); delete the ForeignCluster and create it again "
                    "to peer with another cluster",
                )
            )
    name = spec.get("clusterName")
    if name is not None and not is_dns_label(name, max_length=MAX_CLUSTER_NAME):
        problems.append(
            invalid(
                "spec.clusterName",
                name,
                f"must be a DNS label of at most {MAX_CLUSTER_NAME} characters (lower case letters, digits, '-'), "
                "because the virtual node is called liqo-<clusterName>",
            )
        )
    auth_url = spec.get("authURL")
    if auth_url is not None:
        parts = urlsplit(auth_url) if isinstance(auth_url, str) else None
        if parts is None or parts.scheme != "https" or not parts.hostname:
            problems.append(
                invalid("spec.authURL", auth_url, "must be an https:// URL (the peering token is sent to it)")
            )
    ref = spec.get("tokenSecretRef")
    if isinstance(ref, dict):
        ref_namespace = ref.get("namespace")
        if ref_namespace not in (None, "", namespace):
            problems.append(
                forbidden(
                    "spec.tokenSecretRef.namespace",
                    f"the token Secret must be in the runtime's namespace {namespace!r}, not {ref_namespace!r}",
                )
            )
    return problems
