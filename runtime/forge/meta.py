"""Metadata the runtime's objects carry: the standard `app.kubernetes.io` labels, and the markers of
objects the virtual kubelet reflects to a provider (`reflection_labels`, `is_reflected`)."""

from __future__ import annotations

from runtime.api import constants as c
from runtime.api.objects import JSON, nested


def labels(component: str, **extra: str) -> dict[str, str]:
    """Labels of an object belonging to one component of the runtime."""
    return {
        c.LABEL_NAME: f"liqo-{component}",
        c.LABEL_COMPONENT: component,
        c.LABEL_PART_OF: c.PART_OF,
        c.LABEL_MANAGED_BY: c.MANAGED_BY,
        **extra,
    }


def liqo_labels(module: str) -> dict[str, str]:
    """The labels Liqo's Helm chart gives a module's objects (`app.kubernetes.io/name` and `component` both the
    module's name), so that Liqo's tools find them: liqoctl finds the controller manager's Deployment by
    `controller-manager` in both, the cluster-ID ConfigMap by `app.kubernetes.io/name=clusterid-configmap`."""
    return {**labels(module), c.LABEL_NAME: module}


def metadata(name: str, *, namespace: str | None = None, component: str, **extra: str) -> JSON:
    meta: JSON = {"name": name, "labels": labels(component, **extra)}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def reflection_labels(*, origin_cluster_id: str) -> dict[str, str]:
    """The labels of an object the virtual kubelet reflects to a provider: made by reflection, and from where."""
    return {
        c.LABEL_REFLECTION_MANAGED_BY: c.MANAGED_BY_REFLECTION,
        c.LABEL_ORIGIN_CLUSTER_ID: origin_cluster_id,
    }


def is_reflected(obj: JSON | None, *, origin_cluster_id: str) -> bool:
    """Whether a provider's object was reflected by the consumer `origin_cluster_id` (anything else is not ours)."""
    labels = nested(obj, "metadata", "labels") or {}
    return (
        labels.get(c.LABEL_REFLECTION_MANAGED_BY) == c.MANAGED_BY_REFLECTION
        and labels.get(c.LABEL_ORIGIN_CLUSTER_ID) == origin_cluster_id
    )


def is_skipped(obj: JSON | None) -> bool:
    """Whether an object asks not to be reflected (`liqo.io/skip-reflection`, any value but `false`)."""
    return _annotated(obj, c.ANNOTATION_SKIP_REFLECTION)


def is_allowed(obj: JSON | None) -> bool:
    """Whether an object asks to be reflected under an AllowList (`liqo.io/allow-reflection`, any value but
    `false`)."""
    return _annotated(obj, c.ANNOTATION_ALLOW_REFLECTION)


def _annotated(obj: JSON | None, key: str) -> bool:
    annotations = nested(obj, "metadata", "annotations") or {}
    value = annotations.get(key)
    return value is not None and str(value).lower() != "false"


def reflected_metadata(
    local: JSON, *, name: str, namespace: str, origin_cluster_id: str, labels: dict[str, str] | None = None
) -> JSON:
    """The metadata of a local object's copy: its labels and annotations, marked as reflected from the origin."""
    meta = local.get("metadata") or {}
    return {
        "name": name,
        "namespace": namespace,
        "labels": {
            **(meta.get("labels") or {}),
            **(labels or {}),
            **reflection_labels(origin_cluster_id=origin_cluster_id),
        },
        "annotations": dict(meta.get("annotations") or {}),
    }


def metadata_differs(current: JSON, desired: JSON) -> bool:
    """Whether a copy's labels or annotations are not (any more) the ones it should carry."""
    have, want = current.get("metadata") or {}, desired.get("metadata") or {}
    return (have.get("labels") or {}) != (want.get("labels") or {}) or (have.get("annotations") or {}) != (
        want.get("annotations") or {}
    )
