"""What every dynamic provider of the components shares: the properties that are not the resource's own,
the bound of each operation, diffs that tell replacements from in-place updates, and errors worded for
the person running `pulumi up`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final

import pulumi.dynamic
from pulumi.output import Unknown

from runtime.core import APIError, Client

from .. import _cluster

#: properties every resource carries that are not the object's own: changing them never replaces anything
CONNECTION: Final = ("kubeconfig", "context", "timeouts")


class LiqoError(Exception):
    """An operation failed; the message says on which cluster, why and what to do next."""


def seconds(props: Mapping[str, Any], operation: str, *, default: float) -> float:
    """The bound of `operation` for a resource (its `timeouts` property, else `default`)."""
    value = (props.get("timeouts") or {}).get(operation)
    return float(value) if isinstance(value, int | float) and value > 0 else default


def is_known(value: Any) -> bool:
    """Whether a property holds no value a preview does not know yet (at any depth)."""
    if isinstance(value, Unknown):
        return False
    if isinstance(value, Mapping):
        return all(is_known(item) for item in value.values())
    if isinstance(value, list | tuple):
        return all(is_known(item) for item in value)
    return True


def changed(olds: Mapping[str, Any], news: Mapping[str, Any], key: str) -> bool:
    """Whether property `key` changes: it differs from the state, or a preview does not know it yet.

    `olds` is the resource's state (the outputs of its last create, update or read), so every
    resource keeps its inputs in its outputs as they were given.
    """
    return not is_known(news.get(key)) or olds.get(key) != news.get(key)


def diff(
    olds: Mapping[str, Any], news: Mapping[str, Any], *, replace: Iterable[str], update: Iterable[str]
) -> pulumi.dynamic.DiffResult:
    """Which properties changed: those in `replace` force a new resource, those in `update` (and the
    connection) change in place."""
    replaces = [key for key in replace if changed(olds, news, key)]
    changes = [key for key in (*replace, *update, *CONNECTION) if changed(olds, news, key)]
    return pulumi.dynamic.DiffResult(
        changes=bool(changes), replaces=replaces, delete_before_replace=bool(replaces)
    )


def api_error(exc: APIError, *, what: str, props: Mapping[str, Any]) -> LiqoError:
    """An API failure while doing `what`, worded with the cluster it happened on."""
    return LiqoError(f"Failed to {what} on the cluster at {_cluster.host(props) or '(unknown)'}: {exc}")


def connection(props: Mapping[str, Any]) -> dict[str, Any]:
    """The connection properties of a resource, to carry into its outputs (delete and read need them)."""
    return {key: props.get(key) for key in CONNECTION}


def roll_back(
    props: Mapping[str, Any],
    undo: Callable[[Client], Awaitable[Any]],
    *,
    seconds: float,
    what: str,
    by_hand: str,
) -> str:
    """Undo what a create that failed wrote, with `undo` (an unpeer or unoffload, whose outcome tells
    `orphaned` and `unreachable`); a sentence saying how that went, for the create's error.

    Pulumi keeps no state for a dynamic resource whose create failed, so whatever it left on the
    cluster would make the next `pulumi up` refuse to create it again.
    """
    try:
        outcome = _cluster.run(props, undo, seconds=seconds)
    except APIError as exc:
        return f"{what} could not be removed ({exc}): {by_hand} before the next `pulumi up`."
    except TimeoutError:
        return f"{what} could not be removed in {seconds:g}s: {by_hand} before the next `pulumi up`."
    if outcome.unreachable:
        return f"The cluster could not be reached to remove {what}: {by_hand} before the next `pulumi up`."
    if outcome.orphaned:
        return (
            f"{what} was removed without the runtime's clean-up (last seen: {outcome.orphaned}), so the next "
            "`pulumi up` starts over; objects it made may be left behind."
        )
    return f"{what} was removed, so the next `pulumi up` starts over."
