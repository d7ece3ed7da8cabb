"""ServiceAccount tokens of offloaded pods: what to request, and the Secret that carries them to the provider.

An offloaded pod must authenticate to its home API server as its own ServiceAccount, as
it would at home. The virtual kubelet asks the home API server for the tokens the pod's
projected volumes want (`token_projections`: one per audience and lifetime), each bound to
the pod (`token_request`, so it dies with the pod), and writes them, with the home
cluster's CA and the pod's home namespace, into one Secret in the twin namespace
(`token_secret`), which the pod's rewritten volumes read (see `pods.py`). Like the
kubelet, it requests them again once 80% of their lifetime has passed
(`offloading.liqo.io/token-refresh-at`).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from runtime.api import constants as c
from runtime.api.objects import JSON, nested

from .meta import reflection_labels

#: a projected token's lifetime when the pod names none (the API's default)
DEFAULT_EXPIRATION: Final = 3607
#: the share of a token's lifetime after which it is requested again (the kubelet's)
REFRESH_FRACTION: Final = 0.8
_MAX_NAME: Final = 253
_SUFFIX: Final = "-liqo-token"


@dataclass(frozen=True)
class TokenProjection:
    """One distinct `serviceAccountToken` projection of a pod: its Secret key, audience and lifetime."""

    key: str
    audiences: tuple[str, ...]
    expiration_seconds: int

    @property
    def identity(self) -> tuple[tuple[str, ...], int]:
        return self.audiences, self.expiration_seconds

    @staticmethod
    def key_of(source: Mapping[str, Any]) -> tuple[tuple[str, ...], int]:
        audience = source.get("audience")
        return ((str(audience),) if audience else ()), int(
            source.get("expirationSeconds") or DEFAULT_EXPIRATION
        )


def token_projections(pod: JSON) -> list[TokenProjection]:
    """The tokens the pod's projected volumes want, one per audience and lifetime."""
    found: dict[tuple[tuple[str, ...], int], TokenProjection] = {}
    for volume in nested(pod, "spec", "volumes") or []:
        for source in nested(volume, "projected", "sources") or []:
            token = source.get("serviceAccountToken")
            if token is None:
                continue
            audiences, seconds = TokenProjection.key_of(token)
            if (audiences, seconds) in found:
                continue
            suffix = (
                "" if not found else "-" + hashlib.sha256(repr((audiences, seconds)).encode()).hexdigest()[:8]
            )
            found[(audiences, seconds)] = TokenProjection(f"token{suffix}", audiences, seconds)
    return list(found.values())


def service_account_name(pod: JSON) -> str:
    spec = pod.get("spec") or {}
    return str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "default")


def token_request(projection: TokenProjection, pod: JSON) -> JSON:
    """The TokenRequest for one projection, bound to the pod (the token dies with it)."""
    meta = pod["metadata"]
    spec: JSON = {
        "expirationSeconds": projection.expiration_seconds,
        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]},
    }
    if projection.audiences:
        spec["audiences"] = list(projection.audiences)
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}


def token_secret_name(pod_name: str) -> str:
    """`<pod>-liqo-token`, shortened with a hash of the pod's name when that does not fit."""
    name = pod_name + _SUFFIX
    if len(name) <= _MAX_NAME:
        return name
    digest = hashlib.sha256(pod_name.encode()).hexdigest()[:8]
    return f"{pod_name[: _MAX_NAME - len(_SUFFIX) - 9]}-{digest}{_SUFFIX}"


def refresh_at(issued: datetime, projections: Iterable[TokenProjection]) -> datetime:
    """When the tokens issued at `issued` are due again: 80% of the shortest lifetime."""
    shortest = min((p.expiration_seconds for p in projections), default=DEFAULT_EXPIRATION)
    return issued + timedelta(seconds=shortest * REFRESH_FRACTION)


def token_secret(
    pod: JSON,
    *,
    namespace: str,
    tokens: Mapping[str, str],
    ca: bytes,
    refresh: str,
    origin_cluster_id: str,
) -> JSON:
    """The Secret in the twin namespace with the pod's tokens (by projection key), home CA and home namespace."""
    meta = pod["metadata"]
    data = {key: _b64(token.encode()) for key, token in tokens.items()}
    data["ca.crt"] = _b64(ca)
    data["namespace"] = _b64(str(meta["namespace"]).encode())
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": token_secret_name(str(meta["name"])),
            "namespace": namespace,
            "labels": {
                **reflection_labels(origin_cluster_id=origin_cluster_id),
                c.LABEL_REFLECTED_POD: _label_value(str(meta["name"])),
            },
            "annotations": {
                c.ANNOTATION_TOKEN_REFRESH_AT: refresh,
                c.ANNOTATION_ORIGIN_POD_UID: str(meta["uid"]),
                # the label holds at most 63 characters of the name: the whole name, to map the Secret back
                c.LABEL_REFLECTED_POD: str(meta["name"]),
            },
        },
        "type": "Opaque",
        "data": data,
    }


def pod_of(secret: JSON) -> str:
    """The name of the pod a token Secret belongs to."""
    return str(nested(secret, "metadata", "annotations", c.LABEL_REFLECTED_POD) or "")


def refresh_due(secret: JSON | None) -> str:
    """When a token Secret is due for new tokens (RFC 3339; "" when it says nothing)."""
    return str(nested(secret, "metadata", "annotations", default={}).get(c.ANNOTATION_TOKEN_REFRESH_AT) or "")


def _label_value(name: str) -> str:
    """A pod name as a label value (at most 63 characters; longer names end in a hash)."""
    if len(name) <= 63:
        return name
    return f"{name[:54].rstrip('-.')}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
