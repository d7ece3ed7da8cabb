"""`liqo_offload` with `namespace_selector`: every namespace a label selector picks, those that appear later too.

`OffloadResource` hands its lifecycle here when the selector is set: a
NamespaceOffloadingSet named after the selector (`runtime.operations.offloadset`) whose
controller offloads each picked namespace. Create refuses a selector whose namespaces are
offloaded already (a namespace has one NamespaceOffloading) and one whose set exists
(import it, by the set's name); then it waits for every picked namespace's twin
namespaces. `namespaces` and `conflicts` are read back from the set's status: a namespace
offloaded by hand after the create is a conflict, reported and left alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tf.utils import Diagnostics

from runtime.api import constants as c
from runtime.api.selectors import selector_string
from runtime.forge.namespaceoffloading import node_selector_terms
from runtime.operations.offload import CONTRACT

from ..framework.contract import refuse
from ..framework.resource import ApplyContext, State, call
from .unoffload import unoffloaded

if TYPE_CHECKING:
    from runtime.core import Client
    from runtime.operations.offload import Unoffloaded
    from runtime.operations.offloadset import OffloadingSet

    from ..kube import Kube

TYPE_NAME = "liqo_offload"


def create(ctx: ApplyContext, kube: Kube, planned: State, *, seconds: float) -> State | None:
    from runtime.operations.offloadset import check_new_set

    selector = str(planned["namespace_selector"])

    async def precheck(client: Client) -> Exception | None:
        try:
            await check_new_set(
                client, selector, runtime_namespace=c.DEFAULT_NAMESPACE, seconds=seconds / 2, stop=ctx.stop
            )
        except CONTRACT.refused as exc:
            return exc
        return None

    blocked = call(
        ctx.diagnostics,
        kube,
        precheck,
        what=f"prepare the offloading of namespaces {selector}",
        seconds=seconds,
    )
    if ctx.diagnostics.has_errors():
        return None
    if blocked is not None:
        refuse(
            ctx.diagnostics,
            CONTRACT,
            blocked,
            TYPE_NAME,
            selector=selector,
            name=str(planned["id"]),
            namespaces=str(getattr(blocked, "listing", "")),
            host=kube.host,
        )
        return None
    return write(ctx, kube, planned, prior=None, seconds=seconds)


def write(
    ctx: ApplyContext, kube: Kube, planned: State, *, prior: State | None, seconds: float
) -> State | None:
    """Apply the set, then wait for every namespace it offloads."""
    from runtime.operations.offloadset import apply_set, wait_set_offloaded

    selector = str(planned["namespace_selector"])
    name = str(planned["id"])

    async def apply(client: Client) -> OffloadingSet:
        return await apply_set(
            client,
            selector,
            pod_offloading_strategy=str(planned["pod_offloading_strategy"]),
            namespace_mapping_strategy=str(planned["namespace_mapping_strategy"]),
            cluster_selector_terms=node_selector_terms(planned.get("cluster_selector_terms")),
            field_manager=c.FIELD_MANAGER_TERRAFORM,
        )

    call(ctx.diagnostics, kube, apply, what=f"write NamespaceOffloadingSet {name}", seconds=seconds)
    if ctx.diagnostics.has_errors():
        return prior
    found = call(
        ctx.diagnostics,
        kube,
        lambda client: wait_set_offloaded(client, name, seconds=seconds, stop=ctx.stop),
        what=f"the offloading of the namespaces {selector} picks",
        seconds=seconds + 10,
    )
    if found is None:
        return state(planned, None)
    _warn_conflicts(ctx.diagnostics, found, selector)
    return state(planned, found)


def _warn_conflicts(diags: Diagnostics, found: OffloadingSet, selector: str) -> None:
    if found.conflicts:
        diags.add_warning(
            f'Namespaces picked by "{selector}" left alone',
            "They have a NamespaceOffloading the selector's set did not make, so it does not offload them:\n  "
            + "\n  ".join(found.conflicts.values()),
        )


def delete(ctx: ApplyContext, kube: Kube, current: State, *, seconds: float) -> Unoffloaded | None:
    from runtime.operations.offloadset import unoffload_set

    name = str(current["id"])
    return unoffloaded(
        ctx,
        kube,
        unoffload_set,
        name,
        current,
        seconds=seconds,
        what=f"unoffload the namespaces of NamespaceOffloadingSet {name}",
    )


def state(planned: State, found: OffloadingSet | None) -> State:
    """The state after a write or a read: the inputs and what the set reports."""
    return {
        **planned,
        "namespace": None,
        "remote_namespace_name": None,
        "offloading_phase": "" if found is None else ("Ready" if not found.unsettled() else "InProgress"),
        "cluster_status": {},
        "namespaces": [] if found is None else found.namespaces,
        "conflicts": {} if found is None else found.conflicts,
    }


def observed_state(current: State, found: OffloadingSet) -> State:
    from .offload import terms_state

    spec = found.spec
    template = spec.get("template") or {}
    terms = list(((template.get("clusterSelector") or {}).get("nodeSelectorTerms")) or [])
    known = current.get("namespace_selector")
    selector = selector_string(spec.get("namespaceSelector") or {})
    return state(
        {
            **current,
            "id": found.name,
            "namespace_selector": known if _same_selector(known, selector) else selector,
            "pod_offloading_strategy": str(
                template.get("podOffloadingStrategy") or c.POD_OFFLOADING_LOCAL_AND_REMOTE
            ),
            "namespace_mapping_strategy": str(
                template.get("namespaceMappingStrategy") or c.MAPPING_DEFAULT_NAME
            ),
            "cluster_selector_terms": terms_state(terms, current.get("cluster_selector_terms")),
        },
        found,
    )


def _same_selector(known: Any, selector: str) -> bool:
    from runtime.operations.offloadset import set_name

    return isinstance(known, str) and set_name(known) == set_name(selector)
