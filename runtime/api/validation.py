"""What is wrong with a value a user gives a front end: cluster names, namespaces, HTTPS URLs, quantities,
labels, cluster ids and durations, worded for that user.

Each function answers "" for a valid value, else a sentence that says what is wrong and
what a valid value looks like; the Terraform provider puts it in a diagnostic on the
attribute, the Pulumi components in the error that names the argument. The rules are
the API server's (label syntax, `resource.Quantity`), so a value accepted here is
accepted by the cluster.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Final
from urllib.parse import urlsplit

from .quantity import parse_quantity

_DNS_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE: Final = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DURATION_UNITS: Final = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
#: the virtual node standing for a cluster is `liqo-<cluster name>`, a node name of at most 63 characters
MAX_CLUSTER_NAME: Final = 58


def cluster_name(value: str) -> str:
    """A cluster name: a DNS label short enough for the virtual node `liqo-<name>`."""
    if _DNS_LABEL.match(value) and len(value) <= MAX_CLUSTER_NAME:
        return ""
    return (
        f"{value!r} is not a valid cluster name: use at most {MAX_CLUSTER_NAME} lower case letters, "
        "digits and '-', starting and ending with a letter or digit (a DNS label; the virtual node "
        "standing for the cluster is called liqo-<cluster name>)."
    )


def namespace(value: str) -> str:
    if _DNS_LABEL.match(value) and len(value) <= 63:
        return ""
    return (
        f"{value!r} is not a valid namespace name: use at most 63 lower case letters, digits and '-', "
        "starting and ending with a letter or digit."
    )


def https_url(value: str, *, what: str) -> str:
    """An absolute `https://host[:port][/path]` URL."""
    problem = url_problem(value)
    if not problem:
        return ""
    return (
        f"{value!r} is not a usable {what}: {problem}. Write it as https://host:port, "
        "for example https://203.0.113.10:8443."
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


def quantity(value: str, *, what: str) -> str:
    """A Kubernetes resource quantity (`2`, `500m`, `4Gi`), not negative."""
    problem = quantity_problem(value)
    if not problem:
        return ""
    return (
        f"{value!r} is not a valid amount of {what}: {problem}. Write a Kubernetes quantity, such as "
        '"2", "500m", "4Gi" or "110".'
    )


def quantity_problem(value: str) -> str:
    try:
        parsed = parse_quantity(value)
    except ValueError as exc:
        return str(exc)
    if parsed.value < 0:
        return "it is negative"
    return ""


def label_key(key: str) -> str:
    problem = label_key_problem(key)
    return f"{key!r} is not a valid label key: {problem}." if problem else ""


def label_value(key: str, value: str) -> str:
    if len(value) <= 63 and _LABEL_VALUE.match(value):
        return ""
    return (
        f"{value!r} (label {key!r}) is not a valid label value: use at most 63 letters, digits, "
        "'-', '_' and '.', starting and ending with a letter or digit."
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


def is_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False


def cluster_id(value: str, *, source: str) -> str:
    """A cluster id (a UUID); `source` says where to take one from."""
    if is_uuid(value):
        return ""
    return f"{value!r} is not a cluster ID: cluster IDs are UUIDs; take it from {source}."


class DurationError(ValueError):
    pass


def parse_duration(text: str) -> float:
    """Seconds in a Go duration ("30s", "1.5h", "2h45m"), as Terraform's timeouts and Pulumi's customTimeouts
    write them; positive values only (DurationError otherwise)."""
    rest = text.strip()
    if not rest:
        raise DurationError("an empty duration")
    total = 0.0
    while rest:
        match = _DURATION_PART.match(rest)
        if match is None:
            raise DurationError(
                f'"{text}" is not a duration: use a number and a unit, e.g. "90s", "10m", "1h30m"'
            )
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        rest = rest[match.end() :]
    if total <= 0:
        raise DurationError(f'"{text}" is not a positive duration')
    return total


#: the operators of a node selector requirement (a NamespaceOffloading's cluster selector)
NODE_SELECTOR_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_CLUSTER_OWN_NAMESPACES: Final = ("default", "kube-system", "kube-public", "kube-node-lease")


def node_selector_requirement(key: str, operator: str, values: Sequence[str], *, field: bool = False) -> str:
    """One requirement of a cluster selector term (`field`: of its matchFields)."""
    if operator not in NODE_SELECTOR_OPERATORS:
        return f"{operator!r} is not an operator: use one of {', '.join(NODE_SELECTOR_OPERATORS)}."
    if field and (key != "metadata.name" or operator not in ("In", "NotIn") or len(values) != 1):
        return "node fields can only be selected as metadata.name In or NotIn one value."
    if not field and (problem := label_key_problem(key)):
        return f"{key!r} is not a label key: {problem}."
    if operator in ("In", "NotIn") and not values:
        return f"operator {operator} needs at least one value."
    if operator in ("Exists", "DoesNotExist") and values:
        return f"operator {operator} takes no values."
    if operator in ("Gt", "Lt") and (len(values) != 1 or not str(values[0]).lstrip("-").isdigit()):
        return f"operator {operator} takes exactly one integer value."
    return ""


def twin_namespace_name(value: str) -> str:
    """A name chosen for twin namespaces (SelectedName): a namespace name no cluster keeps for itself."""
    if problem := namespace(value):
        return problem
    if value in _CLUSTER_OWN_NAMESPACES or value.startswith(("kube-", "liqo-tenant-")):
        return f"{value!r} names a cluster's own namespace or a tenant namespace, which providers never hand out."
    return ""
