"""The Downward API: what a pod may learn about itself, for env vars and downwardAPI volumes.

Both `fieldRef` and `resourceFieldRef` resolve the way kubelet resolves them
(`pkg/fieldpath`, `pkg/api/v1/resource`): metadata fields, labels and annotations by
key, node and ServiceAccount names, pod and host IPs; container limits and requests
divided by `divisor` and rounded up, with the node's allocatable standing in for an
unset limit. Values kubelet knows but the pod object may not yet carry (the pod IP
before the first status write, the node's allocatable) come in a `PodContext`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from runtime.api.objects import JSON

_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([eE][+-]?[0-9]+|[a-zA-Z]*)$")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_KEYED = re.compile(r"^metadata\.(labels|annotations)\['(.*)'\]$")
_POD_FIELDS = {
    "metadata.name": ("metadata", "name"),
    "metadata.namespace": ("metadata", "namespace"),
    "metadata.uid": ("metadata", "uid"),
    "spec.nodeName": ("spec", "nodeName"),
    "spec.serviceAccountName": ("spec", "serviceAccountName"),
}


class DownwardAPIError(ValueError):
    """A field or resource reference kubelet cannot resolve; the message is kubelet's."""


@dataclass(frozen=True)
class PodContext:
    """What kubelet knows about a pod beyond its object: its IPs and the node's allocatable resources."""

    pod_ip: str
    host_ip: str
    allocatable: Mapping[str, str] = field(default_factory=dict)


def parse_quantity(text: str) -> Fraction:
    """A resource quantity (`100m`, `1.5Gi`, `2e3`) as an exact number."""
    match = _QUANTITY.match(str(text).strip())
    if match is None:
        raise DownwardAPIError(f"quantities must match the regular expression '{_QUANTITY.pattern}'")
    number, suffix = Fraction(match.group(1)), match.group(2)
    if suffix in _BINARY:
        return number * Fraction(1024) ** _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * Fraction(10) ** _DECIMAL[suffix]
    if suffix[:1] in ("e", "E"):
        return number * Fraction(10) ** int(suffix[1:])
    raise DownwardAPIError(f"unable to parse quantity's suffix: {text!r}")


def field_value(pod: JSON, field_path: str, context: PodContext) -> str:
    """The value of a `fieldRef.fieldPath` for this pod."""
    if field_path in _POD_FIELDS:
        section, key = _POD_FIELDS[field_path]
        return str((pod.get(section) or {}).get(key) or "")
    if field_path in ("status.podIP", "status.podIPs"):
        return context.pod_ip
    if field_path in ("status.hostIP", "status.hostIPs"):
        return context.host_ip
    meta = pod.get("metadata") or {}
    if field_path in ("metadata.labels", "metadata.annotations"):
        return format_map(meta.get(field_path.split(".", 1)[1]) or {})
    keyed = _KEYED.match(field_path)
    if keyed is not None:
        return str((meta.get(keyed.group(1)) or {}).get(keyed.group(2), ""))
    raise DownwardAPIError(f"unsupported fieldPath: {field_path}")


def format_map(values: Mapping[str, str]) -> str:
    """Labels or annotations as a downwardAPI file shows them: `key="value"` lines in key order."""
    return "\n".join(f"{key}={json.dumps(values[key])}" for key in sorted(values))


def resource_value(container: JSON, resource: str, divisor: str | None, context: PodContext) -> str:
    """A `resourceFieldRef` of `container`: its limit or request in units of `divisor`, rounded up."""
    kind, _, name = resource.partition(".")
    if kind not in ("limits", "requests") or name not in ("cpu", "memory", "ephemeral-storage"):
        raise DownwardAPIError(f"unsupported container resource : {resource}")
    resources = container.get("resources") or {}
    amount = (resources.get(kind) or {}).get(name)
    if amount is None and kind == "limits":
        amount = context.allocatable.get(name)
    value = parse_quantity(str(amount)) if amount is not None else Fraction(0)
    unit = parse_quantity(divisor) if divisor else Fraction(1)
    if unit <= 0:
        raise DownwardAPIError(f"invalid divisor {divisor!r} for {resource}")
    if name == "cpu":
        # kubelet compares milli-values, each rounded up to a whole milli-unit
        return str(math.ceil(Fraction(math.ceil(value * 1000)) / math.ceil(unit * 1000)))
    return str(math.ceil(Fraction(math.ceil(value)) / math.ceil(unit)))


def find_container(pod: JSON, name: str) -> JSON | None:
    spec = pod.get("spec") or {}
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        if container.get("name") == name:
            return dict(container)
    return None
