"""Events brought back from a provider, as pure functions: what `kubectl describe` shows on the consumer.

The provider's Events about a reflected object (the kubelet's about an offloaded pod's
Pod, the ShadowPod controller's, the provider's own controllers' about a Service or a
ConfigMap copy) become Events of the same name in the consumer's namespace, about the
consumer's object: its kind, name, namespace and uid (a ShadowPod's and its Pod's Events
speak of the offloaded pod; the root CA copy's of `kube-root-ca.crt`). The source names
the provider (`kubelet (milan)`), and the Event carries the reflection labels and the
provider's cluster id, so it is known as a copy of that provider's: updated when the provider counts a repeat, deleted when the provider's
expires. Liqo does the same (`reflection/event`), for the same kinds.
"""

from __future__ import annotations

from typing import Final

from runtime.api import constants as c
from runtime.api.objects import JSON, nested

from .meta import reflection_labels

#: (apiVersion, kind) of the provider objects whose Events are brought back -> the consumer's kind
REFLECTED_KINDS: Final[dict[tuple[str, str], tuple[str, str]]] = {
    ("v1", "Pod"): ("v1", "Pod"),
    ("offloading.liqo.io/v1beta1", "ShadowPod"): ("v1", "Pod"),
    ("v1", "ConfigMap"): ("v1", "ConfigMap"),
    ("v1", "Secret"): ("v1", "Secret"),
    ("v1", "Service"): ("v1", "Service"),
    ("networking.k8s.io/v1", "Ingress"): ("networking.k8s.io/v1", "Ingress"),
    ("discovery.k8s.io/v1", "EndpointSlice"): ("discovery.k8s.io/v1", "EndpointSlice"),
    ("offloading.liqo.io/v1beta1", "ShadowEndpointSlice"): ("discovery.k8s.io/v1", "EndpointSlice"),
}
#: what a reflected Event keeps of the provider's as it is
CARRIED: Final = (
    "reason",
    "message",
    "type",
    "count",
    "firstTimestamp",
    "lastTimestamp",
    "eventTime",
    "series",
    "action",
    "reportingComponent",
    "reportingInstance",
)
#: what changes as the provider counts repeats (what an update of the copy writes)
CHANGING: Final = ("message", "count", "lastTimestamp", "series")


def local_kind(remote: JSON) -> tuple[str, str] | None:
    """(apiVersion, kind) of the consumer's object an Event of the provider speaks of (None: not brought back)."""
    involved = remote.get("involvedObject") or {}
    return REFLECTED_KINDS.get((str(involved.get("apiVersion") or ""), str(involved.get("kind") or "")))


def copy_labels(*, origin_cluster_id: str, provider_cluster_id: str) -> dict[str, str]:
    """The labels of the consumer's copies of one provider's Events."""
    return {
        **reflection_labels(origin_cluster_id=origin_cluster_id),
        c.LABEL_REMOTE_CLUSTER_ID: provider_cluster_id,
    }


def local_event(
    remote: JSON,
    *,
    namespace: str,
    involved: JSON,
    provider: str,
    provider_cluster_id: str,
    origin_cluster_id: str,
) -> JSON:
    """The consumer's copy of the provider's Event `remote`, about the consumer's object `involved`."""
    meta = involved.get("metadata") or {}
    source = remote.get("source") or {}
    component = str(source.get("component") or remote.get("reportingComponent") or "")
    event: JSON = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": remote["metadata"]["name"],
            "namespace": namespace,
            "labels": copy_labels(
                origin_cluster_id=origin_cluster_id, provider_cluster_id=provider_cluster_id
            ),
        },
        "involvedObject": {
            "apiVersion": involved.get("apiVersion", ""),
            "kind": involved.get("kind", ""),
            "name": meta.get("name", ""),
            "namespace": namespace,
            "uid": meta.get("uid", ""),
            **(
                {"fieldPath": remote["involvedObject"]["fieldPath"]}
                if nested(remote, "involvedObject", "fieldPath")
                else {}
            ),
        },
        "source": {
            "component": f"{component} ({provider})" if component else provider,
            **({"host": source["host"]} if source.get("host") else {}),
        },
    }
    for key in CARRIED:
        if remote.get(key) is not None:
            event[key] = remote[key]
    return event


def event_changes(current: JSON, desired: JSON) -> JSON:
    """What of the copy the provider's Event changed since (a merge patch; empty: nothing)."""
    return {key: desired.get(key) for key in CHANGING if current.get(key) != desired.get(key)}
