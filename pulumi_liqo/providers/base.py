"""What every dynamic provider of the components shares: the properties that are not the resource's own,
the bound of each operation, diffs that tell replacements from in-place updates, and errors worded for
the person running `pulumi up`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, ClassVar, Final

import pulumi.dynamic
from pulumi.output import Unknown

from runtime.core import APIError, Client
from runtime.core.failures import explain
from runtime.operations.contract import Contract, Words
from runtime.operations.unreachable import UnreachableError
from runtime.operations.waits import StopRequested, WaitTimeoutError, duration

from .. import _cluster

#: properties every resource carries that are not the object's own (how to reach the cluster, the bounds, and
#: `force`: whether a delete may drop the resource when the cluster cannot be reached): changing them never
#: replaces anything and writes nothing to the cluster
CONNECTION: Final = ("kubeconfig", "context", "timeouts", "force")


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
    """An API failure while doing `what`: `failures.explain`'s sentence (which cluster, what failed, what to
    do), as Terraform's diagnostics say it."""
    cluster = None if exc.cluster else f"the cluster at {_cluster.host(props) or '(unknown)'}"
    return LiqoError(f"Failed to {what}. {explain(exc, cluster=cluster)}")


def interrupted(exc: WaitTimeoutError | StopRequested, *, what: str) -> LiqoError:
    """A wait that ran out (or was stopped) during `what`: what held it up, for how long, and what to do."""
    if isinstance(exc, StopRequested):
        return LiqoError(f"Stopped while waiting for {exc.what} ({what}). Run `pulumi up` again to finish.")
    return LiqoError(
        f"Timed out waiting for {exc.what}: still not done after {duration(exc.seconds)} ({what}): "
        f"{exc.last.rstrip('.')}. "
        "Fix what holds it up and run `pulumi up` again, or raise the component's customTimeouts if the cluster "
        "is only slow."
    )


def unreachable_on_delete(component: str, error: str, *, kept: str, comes_back: str) -> str:
    """The warning of a forced delete that found its cluster unreachable (`error`, `explain`'s sentence):
    `kept` stays there, the resource leaves the state, and `comes_back` says what to do if the cluster
    returns."""
    return (
        f"{component}: {error} So {kept} was not deleted; it is removed from the state, as force is set. "
        f"If the cluster comes back, {comes_back}."
    )


def kept_unreachable(component: str, exc: UnreachableError) -> LiqoError:
    """The error of a delete that could not reach its cluster without `force`: the component stays."""
    return LiqoError(
        f"{component}: cannot delete it, the cluster cannot be reached: {exc.error} Nothing was deleted, so it "
        "stays in the stack: run the destroy again once the cluster answers. If the cluster is gone for good, "
        "set force=True on the component and run `pulumi up --refresh=false`, then `pulumi destroy`: it is "
        "dropped from the stack and what it made stays there (or `pulumi state delete <urn>`)."
    )


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


def words(this: str) -> Words:
    """How the components' errors name things, for the component `this` ("the Offload")."""
    return Words(
        this=this,
        install="an Install",
        create="create",
        generate="a Generate",
        namespace="a kubernetes.core.v1.Namespace",
        adopt="This stack does not manage it: remove it there first ({by_hand}), or keep managing it where it was "
        "made.",
    )


class ContractProvider(pulumi.dynamic.ResourceProvider):
    """A provider of a resource with a `Contract`: its diff (what replaces the object, what is written in
    place), its bounds and its refusals come from it. `this` names the component in errors ("the Offload")."""

    contract: ClassVar[Contract]
    this: ClassVar[str]

    def bound(self, props: Mapping[str, Any], operation: str) -> float:
        """The bound of `operation`: the resource's `timeouts`, else the contract's."""
        return seconds(props, operation, default=self.contract.timeouts[operation])

    def refused(self, error: Exception, props: Mapping[str, Any], **values: str) -> LiqoError:
        """The error of a create the contract refuses (`error` is one of `contract.refused`)."""
        refusal = self.contract.refusal(error)
        return LiqoError(refusal.render(words(self.this), host=_cluster.host(props), **values))

    def inputs(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """The resource's own inputs, as given (the next diff compares with them)."""
        return {key: props.get(key) for key in self.contract.names}

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        return diff(olds, news, replace=self.contract.replacing, update=self.contract.in_place)


class SpecProvider(ContractProvider):
    """A `ContractProvider` whose object changes in place: a change of an input that does not replace it is
    written by `_write`, and a change of connection properties alone writes nothing."""

    def _write(self, props: dict[str, Any], operation: str) -> dict[str, Any]:
        raise NotImplementedError

    def _created_or_rolled_back(
        self,
        id_: str,
        props: dict[str, Any],
        undo: Callable[[Client], Awaitable[Any]],
        *,
        seconds: float,
        what: str,
        by_hand: str,
    ) -> pulumi.dynamic.CreateResult:
        """`_write` the new object; if that fails, `undo` what it wrote (see `roll_back`) and say how that went."""
        try:
            return pulumi.dynamic.CreateResult(id_, self._write(props, "create"))
        except LiqoError as exc:
            undone = roll_back(props, undo, seconds=seconds, what=what, by_hand=by_hand)
            raise LiqoError(f"{exc} {undone}") from None

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        if all(olds.get(key) == news.get(key) for key in self.contract.in_place):
            return pulumi.dynamic.UpdateResult({**olds, **connection(news)})
        return pulumi.dynamic.UpdateResult(self._write(news, "update"))
