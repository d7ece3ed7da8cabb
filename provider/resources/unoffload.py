"""The one call that unoffloads for `liqo_offload`: a namespace's NamespaceOffloading or a selector's set."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from runtime.api import constants as c
from runtime.operations.offload import ORPHAN_SECONDS, Unoffloaded

from ..framework.resource import ApplyContext, State, call

if TYPE_CHECKING:
    from runtime.core import Client

    from ..kube import Kube

#: `runtime.operations.offload.unoffload` or `runtime.operations.offloadset.unoffload_set`
Unoffload = Callable[..., Awaitable[Unoffloaded]]


def unoffloaded(
    ctx: ApplyContext,
    kube: Kube,
    operation: Unoffload,
    name: str,
    current: State,
    *,
    seconds: float,
    what: str,
) -> Unoffloaded | None:
    """Run `operation` on `name` with the state's `force`; its outcome, or None with the diagnostics said."""

    async def run(client: Client) -> Unoffloaded:
        return await operation(
            client,
            name,
            seconds=seconds,
            field_manager=c.FIELD_MANAGER_TERRAFORM,
            force=current.get("force") is True,
            stop=ctx.stop,
        )

    return call(ctx.diagnostics, kube, run, what=what, seconds=seconds + ORPHAN_SECONDS + 10)
