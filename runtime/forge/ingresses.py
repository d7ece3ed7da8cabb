"""Reflected Ingresses, as pure functions: a consumer's Ingress to its copy in the twin namespace.

Ingresses are reflected verbatim (Liqo's rule) except their class: the consumer's ingress
class names a controller of the consumer, which the provider may not have. The copy keeps
no class, so the provider's default class serves it, unless the install maps the class to
one of the provider's (`ReflectionOptions.ingress_classes`); the legacy
`kubernetes.io/ingress.class` annotation follows the same rule. The status (the load
balancer's addresses) is the provider's.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Final

from runtime.api.objects import JSON

from .meta import metadata_differs, reflected_metadata

CLASS_ANNOTATION: Final = "kubernetes.io/ingress.class"


def remote_ingress(
    local: JSON, *, namespace: str, origin_cluster_id: str, classes: Mapping[str, str] | None = None
) -> JSON:
    """The copy of the consumer's Ingress `local` in twin namespace `namespace`, its class mapped or cleared."""
    classes = classes or {}
    meta = reflected_metadata(
        local, name=str(local["metadata"]["name"]), namespace=namespace, origin_cluster_id=origin_cluster_id
    )
    spec = copy.deepcopy(local.get("spec") or {})
    local_class = spec.pop("ingressClassName", None)
    if local_class in classes:
        spec["ingressClassName"] = classes[local_class]
    annotated = meta["annotations"].pop(CLASS_ANNOTATION, None)
    if annotated in classes:
        meta["annotations"][CLASS_ANNOTATION] = classes[annotated]
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta, "spec": spec}


def ingress_differs(current: JSON, desired: JSON) -> bool:
    return metadata_differs(current, desired) or (current.get("spec") or {}) != desired["spec"]
