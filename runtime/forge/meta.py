"""Metadata every object the runtime creates carries: the standard `app.kubernetes.io` labels."""

from __future__ import annotations

from typing import Any

from runtime.api import constants as c

JSON = dict[str, Any]


def labels(component: str, **extra: str) -> dict[str, str]:
    """Labels of an object belonging to one component of the runtime."""
    return {
        c.LABEL_NAME: f"liqo-{component}",
        c.LABEL_COMPONENT: component,
        c.LABEL_PART_OF: c.PART_OF,
        c.LABEL_MANAGED_BY: c.MANAGED_BY,
        **extra,
    }


def metadata(name: str, *, namespace: str | None = None, component: str, **extra: str) -> JSON:
    meta: JSON = {"name": name, "labels": labels(component, **extra)}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta
