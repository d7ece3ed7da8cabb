"""Plan-time checks of attribute values shared by the resources and data sources: DNS labels,
HTTPS URLs, resource quantities and label maps.

Each check reports a problem as an error diagnostic on the attribute's path, with what
is wrong and what a valid value looks like (the wording is `runtime.api.validation`'s,
shared with the Pulumi components), and skips values not known yet (null or unknown):
Terraform validates again once they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tf.types import Unknown
from tf.utils import AttributePath, Diagnostics

from runtime.api import validation


def known(value: Any) -> bool:
    return value is not None and value is not Unknown


def cluster_name(diagnostics: Diagnostics, value: Any, *, path: AttributePath) -> None:
    """A cluster name: a DNS label short enough for the virtual node `liqo-<name>`."""
    if known(value) and (problem := validation.cluster_name(value)):
        diagnostics.add_error("Invalid cluster name", problem, path=path)


def namespace(diagnostics: Diagnostics, value: Any, *, path: AttributePath) -> None:
    if known(value) and (problem := validation.namespace(value)):
        diagnostics.add_error("Invalid namespace", problem, path=path)


def https_url(diagnostics: Diagnostics, value: Any, *, path: AttributePath, what: str) -> None:
    """An absolute `https://host[:port][/path]` URL."""
    if known(value) and (problem := validation.https_url(value, what=what)):
        diagnostics.add_error(f"Invalid {what}", problem, path=path)


def quantity(diagnostics: Diagnostics, value: Any, *, path: AttributePath, what: str) -> None:
    """A Kubernetes resource quantity (`2`, `500m`, `4Gi`), not negative."""
    if known(value) and (problem := validation.quantity(value, what=what)):
        diagnostics.add_error(f"Invalid {what}", problem, path=path)


def labels(diagnostics: Diagnostics, value: Any, *, path: AttributePath) -> None:
    """A map of Kubernetes labels: qualified-name keys and label values."""
    if not isinstance(value, Mapping):
        return
    for key, item in value.items():
        if problem := validation.label_key(key):
            diagnostics.add_error("Invalid label key", problem, path=[*path, key])
        if known(item) and (problem := validation.label_value(key, item)):
            diagnostics.add_error("Invalid label value", problem, path=[*path, key])
