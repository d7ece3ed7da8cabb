"""The consumer's own objects for one provider, as pure functions: credential Secret and Identity.

They live in the consumer's local tenant namespace for the provider (`liqo-tenant-<provider
name>`, built by `runtime.forge.tenant.tenant_namespace`, the same shape a provider gives
its consumers' namespaces) next to the key pair Secret (`keys.py`) and the VirtualNode
(`runtime.forge.virtualnode`). Each carries the provider's cluster id as a label, so
everything of one peering can be found, and is named after the provider.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime, timedelta

import yaml

from runtime.api import constants as c
from runtime.api.crds import IDENTITIES
from runtime.api.objects import JSON, nested
from runtime.api.timestamps import parse_rfc3339
from runtime.forge import credential as contract
from runtime.forge.meta import metadata


def credential_secret_name(provider: str) -> str:
    return f"{c.CREDENTIAL_SECRET_PREFIX}{provider}"


def credential_secret(provider: str, *, namespace: str, credential: contract.Credential) -> JSON:
    """The Secret with the kubeconfig for the provider (key `kubeconfig`; JSON, which every YAML reader takes)."""
    document = json.dumps(contract.kubeconfig(credential), sort_keys=True)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata(
            credential_secret_name(provider),
            namespace=namespace,
            component=c.COMPONENT_PEERING,
            **{c.LABEL_REMOTE_CLUSTER_ID: credential.cluster_id},
        ),
        "type": "Opaque",
        "data": {c.CREDENTIAL_KUBECONFIG_KEY: base64.b64encode(document.encode()).decode("ascii")},
    }


def kubeconfig_of(secret: JSON | None) -> JSON | None:
    """The kubeconfig a credential Secret holds; None when missing or unreadable."""
    encoded = nested(secret, "data", c.CREDENTIAL_KUBECONFIG_KEY)
    if not isinstance(encoded, str):
        return None
    try:
        document = yaml.safe_load(base64.b64decode(encoded, validate=True))
    except (ValueError, yaml.YAMLError):
        return None
    return document if isinstance(document, dict) else None


def identity(
    provider: str,
    *,
    namespace: str,
    credential: contract.Credential,
    cluster_labels: dict[str, str] | None = None,
    key_fingerprint: str = "",
) -> JSON:
    """The Identity naming the credential Secret for `provider` (its spec; the status is written apart).

    The provider's cluster labels, when its service advertised them, are kept in an annotation,
    so the virtual node gets them without asking the provider again; the provider's version and
    the fingerprint of its auth service's key are kept in the spec, from where every reconcile
    reports them in the ForeignCluster's status.
    """
    meta = metadata(
        provider,
        namespace=namespace,
        component=c.COMPONENT_PEERING,
        **{c.LABEL_REMOTE_CLUSTER_ID: credential.cluster_id},
    )
    meta["annotations"] = {
        c.ANNOTATION_REMOTE_CLUSTER_LABELS: json.dumps(cluster_labels or {}, sort_keys=True)
    }
    return {
        "apiVersion": IDENTITIES.api_version,
        "kind": IDENTITIES.kind,
        "metadata": meta,
        "spec": {
            "clusterID": credential.cluster_id,
            "clusterName": credential.cluster_name,
            "secretRef": {"name": credential_secret_name(provider), "namespace": namespace},
            "apiServerURL": credential.api_server_url,
            "remoteVersion": credential.version,
            **({c.AUTH_KEY_FINGERPRINT_FIELD: key_fingerprint} if key_fingerprint else {}),
        },
    }


def cluster_labels_of(identity: JSON | None) -> dict[str, str]:
    """The provider's cluster labels an Identity keeps ({} when none or unreadable)."""
    annotations = nested(identity, "metadata", "annotations") or {}
    try:
        labels = json.loads(annotations.get(c.ANNOTATION_REMOTE_CLUSTER_LABELS) or "{}")
    except ValueError:
        return {}
    if not isinstance(labels, dict):
        return {}
    return {str(key): str(value) for key, value in labels.items()}


def renew_after(credential: contract.Credential, *, issued_at: datetime, fraction: float) -> datetime:
    """When to renew: `fraction` of the credential's lifetime after it was issued."""
    lifetime = max(credential.expires_at - issued_at, timedelta(0))
    return issued_at + lifetime * fraction


def expires_at(identity: JSON | None) -> datetime | None:
    """When an Identity's credential expires (None: unknown)."""
    return _moment(nested(identity, "status", "expiresAt"))


def renew_at(identity: JSON | None) -> datetime | None:
    """When an Identity's credential is due for renewal (None: unknown)."""
    return _moment(nested(identity, "status", "renewAfter"))


def _moment(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_rfc3339(value)
    except ValueError:
        return None
