"""Cell formats apimachinery and the printers share: durations, ages, labels, selectors, lists.

Each function reproduces one Go helper (`duration.HumanDuration`, `labels.FormatLabels`,
`metav1.FormatLabelSelector`, ...) so that cells read exactly as kube-apiserver writes them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from .columns import Obj
from .fields import get_list, get_map, get_str

_RFC3339 = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$")


def human_duration(delta: timedelta) -> str:
    """`k8s.io/apimachinery/pkg/util/duration.HumanDuration`: ~2-3 significant figures."""
    seconds = int(delta.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return _two_units(minutes, "m", seconds % 60, "s")
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return _two_units(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        return _two_units(days, "d", hours % 24, "h")
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        return _two_units(days // 365, "y", days % 365, "d")
    return f"{days // 365}y"


def _two_units(major: int, major_unit: str, minor: int, minor_unit: str) -> str:
    return f"{major}{major_unit}{minor}{minor_unit}" if minor else f"{major}{major_unit}"


def parse_timestamp(value: Any) -> datetime | None:
    """An RFC 3339 timestamp (`metav1.Time` or `MicroTime`) as an aware datetime; None if absent or bad."""
    match = _RFC3339.match(value) if isinstance(value, str) else None
    if match is None:
        return None
    base, fraction, zone = match.groups()
    try:
        return datetime.fromisoformat(f"{base}.{fraction[:6]}{zone}" if fraction else f"{base}{zone}")
    except ValueError:
        return None


def aware(moment: datetime) -> datetime:
    """`moment` with UTC assumed when it carries no zone."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def age(timestamp: Any, *, now: datetime) -> str:
    """How long ago `timestamp` was, as the printers' AGE cells show it (`<unknown>` if unset)."""
    when = parse_timestamp(timestamp)
    if when is None:
        return "<unknown>"
    return human_duration(aware(now) - when)


def created(obj: Obj, now: datetime) -> str:
    """The AGE cell: how long ago the object was created."""
    return age(get_map(obj, "metadata").get("creationTimestamp"), now=now)


def go_bool(value: Any) -> str:
    """`printBoolPtr`: `True`/`False`, `<unset>` when the field is absent."""
    if isinstance(value, bool):
        return "True" if value else "False"
    return "<unset>"


def format_labels(labels: Mapping[str, Any]) -> str:
    """`labels.FormatLabels`: sorted `k=v` pairs, `<none>` when empty."""
    return ",".join(sorted(f"{key}={value}" for key, value in labels.items())) or "<none>"


def label_selector_string(selector: Any) -> str | None:
    """`metav1.LabelSelectorAsSelector(s).String()`; None when the selector is invalid."""
    if not isinstance(selector, dict):
        return ""
    requirements = [(key, f"{key}={value}") for key, value in get_map(selector, "matchLabels").items()]
    for expression in get_list(selector, "matchExpressions"):
        requirement = _requirement(expression)
        if requirement is None:
            return None
        requirements.append((str(expression.get("key", "")), requirement))
    return ",".join(text for _, text in sorted(requirements, key=lambda pair: pair[0]))


def _requirement(expression: Any) -> str | None:
    if not isinstance(expression, dict):
        return None
    key, operator = str(expression.get("key", "")), expression.get("operator")
    values = sorted(str(value) for value in get_list(expression, "values"))
    if operator == "Exists":
        return key
    if operator == "DoesNotExist":
        return f"!{key}"
    if operator in ("In", "NotIn") and values:
        return f"{key} {operator.lower()} ({','.join(values)})"
    return None


def format_label_selector(selector: Any) -> str:
    """`metav1.FormatLabelSelector`: `<none>` for an empty selector, `<error>` for a bad one."""
    text = label_selector_string(selector)
    if text is None:
        return "<error>"
    return text or "<none>"


def layout_containers(pod_spec: Obj) -> tuple[str, str]:
    """`layoutContainerCells`: the containers' names and images, each comma-joined."""
    containers = [c for c in get_list(pod_spec, "containers") if isinstance(c, dict)]
    return ",".join(get_str(c, "name") for c in containers), ",".join(get_str(c, "image") for c in containers)


def with_more(items: list[str], total: int, *, limit: int = 3, empty: str = "<unset>") -> str:
    """`listWithMoreString`: the first `limit` items, then `+ N more...` for the rest of `total`."""
    text = ",".join(items[:limit])
    if total > limit:
        return f"{text} + {total - limit} more..."
    return text or empty
