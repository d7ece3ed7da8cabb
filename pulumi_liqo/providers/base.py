"""What every dynamic provider of the components shares: the properties that are not the resource's own,
the bound of each operation, diffs that tell replacements from in-place updates, and errors worded for
the person running `pulumi up`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import pulumi.dynamic

from runtime.core import APIError

from .. import _cluster

#: properties every resource carries that are not the object's own: changing them never replaces anything
CONNECTION: Final = ("kubeconfig", "context", "timeouts")


class LiqoError(Exception):
    """An operation failed; the message says on which cluster, why and what to do next."""


def seconds(props: Mapping[str, Any], operation: str, *, default: float) -> float:
    """The bound of `operation` for a resource (its `timeouts` property, else `default`)."""
    value = (props.get("timeouts") or {}).get(operation)
    return float(value) if isinstance(value, int | float) and value > 0 else default


def diff(
    olds: Mapping[str, Any], news: Mapping[str, Any], *, replace: Iterable[str], update: Iterable[str]
) -> pulumi.dynamic.DiffResult:
    """Which properties changed: those in `replace` force a new resource, those in `update` (and the
    connection) change in place."""
    replaces = [key for key in replace if olds.get(key) != news.get(key)]
    changed = [key for key in (*replace, *update, *CONNECTION) if olds.get(key) != news.get(key)]
    return pulumi.dynamic.DiffResult(
        changes=bool(changed), replaces=replaces, delete_before_replace=bool(replaces)
    )


def api_error(exc: APIError, *, what: str, props: Mapping[str, Any]) -> LiqoError:
    """An API failure while doing `what`, worded with the cluster it happened on."""
    return LiqoError(f"Failed to {what} on the cluster at {_cluster.host(props) or '(unknown)'}: {exc}")


def connection(props: Mapping[str, Any]) -> dict[str, Any]:
    """The connection properties of a resource, to carry into its outputs (delete and read need them)."""
    return {key: props.get(key) for key in CONNECTION}
