"""The consumer's request for an out-of-band peering: the ForeignCluster and the Secret with its token.

Both front ends (the Terraform provider's `liqo_peer`, the Pulumi components) write
these two objects on the consumer; the runtime's ForeignCluster controller does the
rest. The ForeignCluster is named after the provider's cluster name (the controller
requires it) and names the token Secret `liqo-token-<provider name>` in the runtime's
namespace, key `token`. `split_resources` and `token_of` read the same objects back.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, Final

from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS
from runtime.api.objects import JSON, nested

from . import podsecurity
from .meta import metadata
from .podsecurity import Level
from .resourceslice import CPU, MEMORY, PODS

#: the ForeignCluster resource keys front ends have dedicated attributes for (the rest are extended resources)
EPHEMERAL_STORAGE = "ephemeral-storage"
STANDARD_RESOURCES: Final = (CPU, MEMORY, PODS, EPHEMERAL_STORAGE)


def token_secret_name(cluster_name: str) -> str:
    """`liqo-token-<provider name>`."""
    return f"{c.TOKEN_SECRET_PREFIX}{cluster_name}"


def token_secret(cluster_name: str, token: str, *, namespace: str) -> JSON:
    """The Secret holding the provider's peering token for the consumer's controller (key `token`)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata(
            token_secret_name(cluster_name), namespace=namespace, component=c.COMPONENT_PEERING
        ),
        "type": "Opaque",
        "data": {c.TOKEN_SECRET_KEY: base64.b64encode(token.encode()).decode("ascii")},
    }


def foreign_cluster(
    cluster_name: str,
    *,
    cluster_id: str,
    auth_url: str,
    namespace: str,
    resources: Mapping[str, str],
    node_labels: Mapping[str, str],
    networking: bool = True,
    pod_security: Level = podsecurity.DEFAULT_LEVEL,
    auth_key_fingerprint: str = "",
) -> JSON:
    """The ForeignCluster asking for an out-of-band peering with the provider `cluster_name` (`networking`:
    extend the pod network to it, Liqo's default; off is liqoctl's `--networking-disabled`; `pod_security`:
    the Pod Security Standards level the provider holds the offloaded pods to; `auth_key_fingerprint`: the
    provider's auth service key to trust from the first contact on, as `liqo_generate` gave it, "" to trust
    the key met on the first contact)."""
    metadata: JSON = {
        "name": cluster_name,
        "labels": {c.LABEL_REMOTE_CLUSTER_ID: cluster_id, c.LABEL_MANAGED_BY: c.MANAGED_BY},
    }
    if auth_key_fingerprint:
        metadata["annotations"] = {c.ANNOTATION_TRUST_AUTH_SERVICE_KEY: auth_key_fingerprint}
    return {
        "apiVersion": FOREIGNCLUSTERS.api_version,
        "kind": FOREIGNCLUSTERS.kind,
        "metadata": metadata,
        "spec": {
            "clusterID": cluster_id,
            "clusterName": cluster_name,
            "peeringType": c.PEERING_TYPE_OUT_OF_BAND,
            "authURL": auth_url,
            "tokenSecretRef": {"name": token_secret_name(cluster_name), "namespace": namespace},
            "outgoingPeeringEnabled": True,
            "networkingEnabled": networking,
            "podSecurity": pod_security,
            "resources": dict(resources),
            "nodeLabels": dict(node_labels),
        },
    }


def token_of(secret: Mapping[str, Any] | None) -> str:
    """The token a token Secret holds, stripped ("" when it holds none or it does not decode)."""
    encoded = nested(secret, "data", c.TOKEN_SECRET_KEY)
    if not isinstance(encoded, str):
        return ""
    try:
        return base64.b64decode(encoded, validate=True).decode().strip()
    except (binascii.Error, UnicodeDecodeError):
        return ""


def split_resources(resources: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """A ForeignCluster's requested resources: (cpu/memory/pods/ephemeral-storage, the extended ones)."""
    standard = {key: str(value) for key, value in resources.items() if key in STANDARD_RESOURCES}
    extended = {key: str(value) for key, value in resources.items() if key not in STANDARD_RESOURCES}
    return standard, extended


def trusted_key_of(foreign_cluster: Mapping[str, Any]) -> str:
    """The auth service key fingerprint a ForeignCluster says to trust ("" none: the first contact's)."""
    annotations = nested(foreign_cluster, "metadata", "annotations") or {}
    return str(annotations.get(c.ANNOTATION_TRUST_AUTH_SERVICE_KEY) or "").strip()
