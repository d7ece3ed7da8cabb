"""Bases of our resource and data source types: tf's entry points, plus the provider's cluster,
bounded operations, and every failure turned into a diagnostic.

tf calls `create`/`read`/`update`/`delete`/`plan` synchronously with dicts; our
servicer passes richer contexts (`ApplyContext`: the raw config, where write-only
values live, and the stop signal; `PlanContext`: the config). A resource does its
cluster work as a coroutine through `call`, which runs it on the provider's loop within
the operation's timeout and reports API errors, timeouts and interruptions as
diagnostics, so a resource module holds only its schema and its logic.
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from tf import iface
from tf.schema import Schema
from tf.utils import AttributePath, Diagnostics

from runtime.operations.waits import StopRequested, WaitTimeoutError

from . import timeouts
from .diagnostics import GONE_FOR_GOOD, api_error, interrupted, kept, unexpected

if TYPE_CHECKING:
    from runtime.core import Client

    from ..kube import Kube

T = TypeVar("T")
State = dict[str, Any]


class ProviderContext(Protocol):
    """What resources need from the provider: its cluster."""

    @property
    def kube(self) -> Kube: ...


@dataclass
class ApplyContext(iface.CreateContext, iface.UpdateContext, iface.DeleteContext):
    """Context of create/update/delete: `config` holds write-only values (null in the planned state)."""

    config: State = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)


@dataclass
class PlanContext(iface.PlanContext):
    """Context of `plan`: the set of changed top-level attributes and the raw config."""

    config: State = field(default_factory=dict)


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


class DataSource(iface.DataSource):
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


class Resource(iface.Resource):
    """A managed resource type of this provider.

    Subclasses set `name`, `schema` (with `timeouts.block(cls.timeouts)` among its
    blocks) and the operations' default bounds, and implement create/read/update/delete;
    `check` adds plan-time validation beyond the schema's.
    """

    name: ClassVar[str]
    schema: ClassVar[Schema]
    #: operation -> default bound in seconds
    timeouts: ClassVar[Mapping[str, float]] = {"create": 300.0, "update": 300.0, "delete": 300.0}

    def __init__(self, provider: ProviderContext) -> None:
        self.provider = provider

    @classmethod
    def get_name(cls) -> str:
        return cls.name

    @classmethod
    def get_schema(cls) -> Schema:
        return cls.schema

    def validate(self, diags: Diagnostics, type_name: str, config: State) -> None:
        super().validate(diags, type_name, config)
        timeouts.validate(diags, config)
        self.check(diags, config)

    def check(self, diags: Diagnostics, config: State) -> None:
        """Resource-specific validation of the config (unknown values must be skipped)."""

    # tf passes its own contexts; our servicer passes an ApplyContext, which is each of them.
    @abstractmethod
    def create(self, ctx: ApplyContext, planned: State) -> State | None:  # type: ignore[override]
        """Create the object; the state it has now (with every computed value known)."""

    @abstractmethod
    def update(self, ctx: ApplyContext, current: State, planned: State) -> State | None:  # type: ignore[override]
        """Bring the object to `planned`; the state it has now."""

    @abstractmethod
    def delete(self, ctx: ApplyContext, current: State) -> None:  # type: ignore[override]
        """Delete the object (bounded: never hang on an unreachable peer)."""

    def plan_destroy(self, ctx: PlanContext, prior: State) -> None:
        """Plan-time checks of a destroy (errors in `ctx.diagnostics` stop it before anything is deleted)."""

    def seconds(self, state: Mapping[str, Any], operation: str) -> float:
        """The bound of `operation` for this instance (its `timeouts` block, else the type's default)."""
        return timeouts.seconds(state, operation, default=self.timeouts[operation])
