"""Bases of our resource and data source types: the provider's own contexts and operations, the provider's
cluster, bounded operations, and every failure turned into a diagnostic.

A resource here knows nothing of tf's interfaces: our servicer calls `plan`/`create`/
`update`/`delete` with our contexts (`ApplyContext`: the raw config, where write-only
values live, and the stop signal; `PlanContext`: the changed fields and the config), and
`framework.tfadapter` serves each type to tf's dispatch for the other RPCs (read, import,
validate, upgrade). A resource does its cluster work as a coroutine through `call`, which
runs it on the provider's loop within the operation's timeout and reports API errors,
timeouts and interruptions as diagnostics; `refreshed` and `imported` are the read and
import every resource does (observe the object, gone or missing, the state it shows), so
a resource module holds only its schema and its logic.
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from tf.schema import Schema
from tf.utils import AttributePath, Diagnostics

from runtime.operations.waits import StopRequested, WaitTimeoutError

from . import timeouts
from .diagnostics import GONE_FOR_GOOD, api_error, interrupted, kept, unexpected

if TYPE_CHECKING:
    from runtime.core import Client

    from ..kube import Kube

logger = logging.getLogger(__name__)

T = TypeVar("T")
State = dict[str, Any]


class ProviderContext(Protocol):
    """What resources need from the provider: its cluster."""

    @property
    def kube(self) -> Kube: ...


@dataclass
class Context:
    """What every operation gets: where its diagnostics go, and the resource type's full name."""

    diagnostics: Diagnostics
    type_name: str


@dataclass
class ApplyContext(Context):
    """Context of create/update/delete: `config` holds write-only values (null in the planned state)."""

    config: State = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)


@dataclass
class PlanContext(Context):
    """Context of `plan` and `plan_destroy`: the set of changed top-level attributes and the raw config."""

    changed_fields: set[str] = field(default_factory=set)
    config: State = field(default_factory=dict)


@dataclass
class ReadContext(Context):
    """Context of `read` (a refresh)."""


@dataclass
class ImportContext(Context):
    """Context of `import_`."""


def call(
    diagnostics: Diagnostics,
    kube: Kube,
    operation: Callable[[Client], Awaitable[T]],
    *,
    what: str,
    seconds: float,
    path: AttributePath | None = None,
    refresh: bool = False,
) -> T | None:
    """`operation(client)` within `seconds`; on failure, None and an error diagnostic about `what`.

    `refresh`: this is a resource's read, whose failure to reach the cluster also says how to
    destroy or forget resources of a cluster that is gone for good.
    """
    from ..kube import KubeUnavailableError

    try:
        return kube.run(operation, seconds=seconds)
    except KubeUnavailableError as exc:
        diagnostics.add_error(f"Cannot {what}", f"There is no cluster to talk to: {exc}.", path=path)
    except (StopRequested, WaitTimeoutError) as exc:
        interrupted(diagnostics, exc, what=what)
    except TimeoutError:
        diagnostics.add_error(
            f"Timed out: {what}",
            f"This did not finish within {seconds:g}s against {kube.label}. Check that the "
            "cluster is reachable and healthy, or raise the bound in the resource's `timeouts` block."
            + (f"\n\n{GONE_FOR_GOOD}" if refresh else ""),
            path=path,
        )
    except Exception as exc:
        from runtime.core import APIError
        from runtime.operations.unreachable import UnreachableError

        if isinstance(exc, APIError):
            api_error(diagnostics, exc, what=what, cluster=kube.label, path=path, refresh=refresh)
        elif isinstance(exc, UnreachableError):
            kept(diagnostics, exc, what=what)
        else:
            unexpected(diagnostics, exc, where=what)
    return None


class DataSource(ABC):
    """A data source type of this provider; subclasses set `name`/`schema` and implement `read`."""

    name: ClassVar[str]
    schema: ClassVar[Schema]

    def __init__(self, provider: ProviderContext) -> None:
        self.provider = provider

    @classmethod
    def get_name(cls) -> str:
        return cls.name

    @classmethod
    def get_schema(cls) -> Schema:
        return cls.schema

    def check(self, diags: Diagnostics, config: State) -> None:
        """Data-source-specific validation of the config, beyond the schema's (unknown values must be skipped)."""
        return None

    @abstractmethod
    def read(self, ctx: ReadContext, config: State) -> State | None:
        """The data source's state for `config`."""


class Resource(ABC):
    """A managed resource type of this provider.

    Subclasses set `name`, `schema` (with `timeouts.block(cls.timeouts)` among its
    blocks), the operations' default bounds and the bound of a read, and implement
    create/read/update/delete; `check` adds plan-time validation beyond the schema's,
    `plan` modifies the planned state, `plan_destroy` may refuse a destroy at plan time.
    """

    name: ClassVar[str]
    schema: ClassVar[Schema]
    #: operation -> default bound in seconds
    timeouts: ClassVar[Mapping[str, float]] = {"create": 300.0, "update": 300.0, "delete": 300.0}
    #: bound of a read (a refresh or an import)
    read_seconds: ClassVar[float] = 60.0

    def __init__(self, provider: ProviderContext) -> None:
        self.provider = provider

    @classmethod
    def get_name(cls) -> str:
        return cls.name

    @classmethod
    def get_schema(cls) -> Schema:
        return cls.schema

    def validate(self, diags: Diagnostics, config: State) -> None:
        """The config's checks beyond the schema's fields (which tf checks): the timeouts block, the resource's own."""
        timeouts.validate(diags, config)
        self.check(diags, config)

    def check(self, diags: Diagnostics, config: State) -> None:
        """Resource-specific validation of the config (unknown values must be skipped)."""
        return None

    def plan(self, ctx: PlanContext, current: State | None, planned: State) -> State:
        """The planned state, modified where the resource knows better than the config."""
        return planned

    def plan_destroy(self, ctx: PlanContext, prior: State) -> None:
        """Plan-time checks of a destroy (errors in `ctx.diagnostics` stop it before anything is deleted)."""
        return None

    @abstractmethod
    def create(self, ctx: ApplyContext, planned: State) -> State | None:
        """Create the object; the state it has now (with every computed value known)."""

    @abstractmethod
    def read(self, ctx: ReadContext, current: State) -> State | None:
        """The state the object has now; None when it is gone (Terraform plans to create it again)."""

    @abstractmethod
    def update(self, ctx: ApplyContext, current: State, planned: State) -> State | None:
        """Bring the object to `planned`; the state it has now."""

    @abstractmethod
    def delete(self, ctx: ApplyContext, current: State) -> None:
        """Delete the object (bounded: never hang on an unreachable peer)."""

    def import_(self, ctx: ImportContext, id: str) -> State | None:
        """The state of the existing object `id`; an error when this type cannot be imported."""
        ctx.diagnostics.add_error(
            f"{ctx.type_name} cannot be imported", f"This provider does not import {ctx.type_name}."
        )
        return None

    def upgrade(self, version: int, old: State) -> State:
        """A stored state of schema `version` in the current schema: version 0 is the only one so far."""
        return old

    def seconds(self, state: Mapping[str, Any], operation: str) -> float:
        """The bound of `operation` for this instance (its `timeouts` block, else the type's default)."""
        return timeouts.seconds(state, operation, default=self.timeouts[operation])

    def empty_state(self) -> State:
        """A state with every attribute and block null: where an import starts."""
        empty: State = {attribute.name: None for attribute in self.schema.attributes}
        empty.update({block.type_name: None for block in self.schema.block_types})
        return empty

    def refreshed(
        self,
        ctx: ReadContext,
        current: State,
        observe: Callable[[Client], Awaitable[T | None]],
        *,
        what: str,
        gone: str,
        state: Callable[[T], State],
    ) -> State | None:
        """A read: `state(observed)`; None (and `gone` logged) when the object is gone; `current` on errors."""
        found = call(
            ctx.diagnostics, self.provider.kube, observe, what=what, seconds=self.read_seconds, refresh=True
        )
        if ctx.diagnostics.has_errors():
            return current
        if found is None:
            logger.info("%s: %s; removing it from the state", ctx.type_name, gone)
            return None
        return state(found)

    def imported(
        self,
        ctx: ImportContext,
        observe: Callable[[Client], Awaitable[T | None]],
        *,
        what: str,
        missing: str,
        state: Callable[[T], State],
    ) -> State | None:
        """An import: `state(observed)`; an error saying `missing` (what to import instead) when there is none."""
        found = call(ctx.diagnostics, self.provider.kube, observe, what=what, seconds=self.read_seconds)
        if ctx.diagnostics.has_errors():
            return None
        if found is None:
            ctx.diagnostics.add_error(f"Cannot import {ctx.type_name}", missing)
            return None
        return state(found)
