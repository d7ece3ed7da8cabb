"""Plan-time checks of attribute values shared by the resources and data sources: DNS labels,
HTTPS URLs, resource quantities, label maps and durations.

Each check reports a problem as an error diagnostic on the attribute's path, with what
is wrong and what a valid value looks like, and skips values not known yet (null or
unknown): Terraform validates again once they are. The rules are the API server's
(label syntax, `resource.Quantity`), so a value accepted here is accepted by the cluster.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit

from tf.types import Unknown
from tf.utils import AttributePath, Diagnostics

_DNS_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE: Final = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
#: the virtual node standing for a cluster is `liqo-<cluster name>`, a node name of at most 63 characters
MAX_CLUSTER_NAME: Final = 58


def known(value: Any) -> bool:
    return value is not None and value is not Unknown


def cluster_name(diagnostics: Diagnostics, value: Any, *, path: AttributePath) -> None:
    """A cluster name: a DNS label short enough for the virtual node `liqo-<name>`."""
    if not known(value):
        return
    if not _DNS_LABEL.match(value) or len(value) > MAX_CLUSTER_NAME:
        diagnostics.add_error(
            "Invalid cluster name",
            f"{value!r} is not a valid cluster name: use at most {MAX_CLUSTER_NAME} lower case letters, "
            "digits and '-', starting and ending with a letter or digit (a DNS label; the virtual node "
            "standing for the cluster is called liqo-<cluster name>).",
            path=path,
        )


def namespace(diagnostics: Diagnostics, value: Any, *, path: AttributePath) -> None:
    if not known(value):
        return
    if not _DNS_LABEL.match(value) or len(value) > 63:
        diagnostics.add_error(
            "Invalid namespace",
            f"{value!r} is not a valid namespace name: use at most 63 lower case letters, digits and '-', "
            "starting and ending with a letter or digit.",
            path=path,
        )


def https_url(diagnostics: Diagnostics, value: Any, *, path: AttributePath, what: str) -> None:
    """An absolute `https://host[:port][/path]` URL."""
    if not known(value):
        return
    problem = url_problem(value)
    if problem:
        diagnostics.add_error(
            f"Invalid {what}",
            f"{value!r} is not a usable {what}: {problem}. Write it as https://host:port, "
            "for example https://203.0.113.10:8443.",
            path=path,
        )


def url_problem(value: str) -> str:
    """What is wrong with `value` as an https URL ("" when nothing is)."""
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        return str(exc)
    if parts.scheme != "https":
        return "the scheme must be https"
    if not parts.hostname:
        return "it names no host"
    if port is not None and not 0 < port < 65536:
        return f"port {port} is out of range"
    if parts.query or parts.fragment:
        return "it must have no query or fragment"
    return ""


def quantity(diagnostics: Diagnostics, value: Any, *, path: AttributePath, what: str) -> None:
    """A Kubernetes resource quantity (`2`, `500m`, `4Gi`), not negative."""
    if not known(value):
        return
    problem = quantity_problem(value)
    if problem:
        diagnostics.add_error(
            f"Invalid {what}",
            f"{value!r} is not a valid amount of {what}: {problem}. Write a Kubernetes quantity, such as "
            '"2", "500m", "4Gi" or "110".',
            path=path,
        )


def quantity_problem(value: str) -> str:
    from runtime.api.quantity import parse_quantity

    try:
        parsed = parse_quantity(value)
    except ValueError as exc:
        return str(exc)
    if parsed.value < 0:
        return "it is negative"
    return ""


def labels(diagnostics: Diagnostics, value: Any, *, path: AttributePath) -> None:
    """A map of Kubernetes labels: qualified-name keys and label values."""
    if not isinstance(value, Mapping):
        return
    for key, item in value.items():
        problem = label_key_problem(key)
        if problem:
            diagnostics.add_error(
                "Invalid label key", f"{key!r} is not a valid label key: {problem}.", path=[*path, key]
            )
        if known(item) and (len(item) > 63 or not _LABEL_VALUE.match(item)):
            diagnostics.add_error(
                "Invalid label value",
                f"{item!r} (label {key!r}) is not a valid label value: use at most 63 letters, digits, "
                "'-', '_' and '.', starting and ending with a letter or digit.",
                path=[*path, key],
            )


def label_key_problem(key: str) -> str:
    """What is wrong with a label key, or an extended resource name, `[prefix/]name` ("" when nothing is)."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return f"the prefix {prefix!r} must be a DNS subdomain (like example.com)"
    if not name or len(name) > 63 or not _LABEL_NAME.match(name):
        return (
            f"the name {name!r} must be at most 63 letters, digits, '-', '_' and '.', "
            "starting and ending with a letter or digit"
        )
    return ""
