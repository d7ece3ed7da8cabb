"""`resource "liqo_offload"`: on the consumer, a namespace offloaded to the peered clusters its selector picks.

It writes the namespace's NamespaceOffloading and waits (`runtime.operations.offload`,
shared with the Pulumi components); the runtime creates the twin namespaces on the
providers and sends the namespace's pods there. The lifecycle:

- create: refuses a cluster without the runtime, a namespace that does not exist, and
  one offloaded already (import it instead); then waits, bounded by `timeouts.create`,
  until every selected cluster has its twin namespace (phase Ready; NoClusterSelected
  ends the wait with a warning). When every selected cluster reports a failure waiting
  will not fix (a name taken on the provider), it ends early; either way the diagnostic
  lists each cluster's conditions, and the offloading is recorded (tainted);
- update: `pod_offloading_strategy` and `cluster_selector_terms` in place (the runtime
  moves the twin namespaces; pods already running are not moved, as in Liqo); the
  namespace and the mapping strategy (and a selected name) replace it: the runtime
  refuses to rename twin namespaces;
- read: the NamespaceOffloading gone (or being deleted) removes it from the state;
  spec and status are read back;
- delete: unoffloads and waits for the twin namespaces to go (the runtime's own wait is
  bounded); past `timeouts.delete` the finalizer is removed, so a destroy never hangs;
- import: by the namespace's name.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final

from tf.schema import Schema
from tf.types import Bool, List, Map, String, Unknown
from tf.utils import Diagnostics

from runtime.api import constants as c
from runtime.api import validation
from runtime.api.selectors import SelectorError
from runtime.forge.namespaceoffloading import node_selector_terms
from runtime.operations.offload import CONTRACT
from runtime.operations.offloadset import SET_NAME_PREFIX
from runtime.operations.offloadset import set_name as _set_name

from ..framework.contract import flags, refuse
from ..framework.diagnostics import dropped
from ..framework.plan import is_known
from ..framework.resource import ApplyContext, ImportContext, PlanContext, ReadContext, Resource, State, call
from ..framework.schema import Attribute, ListNestedAttribute, Object
from ..framework.timeouts import block as timeouts_block
from . import checks, force, offloadset
from .unoffload import unoffloaded

if TYPE_CHECKING:
    from runtime.core import Client
    from runtime.operations.offload import Offloading

logger = logging.getLogger(__name__)

TYPE_NAME: Final = "liqo_offload"

_CLUSTER_STATUS = Object(
    [
        Attribute(
            "selected", Bool(), computed=True, description="Whether the cluster selector picks the cluster."
        ),
        Attribute("ready", Bool(), computed=True, description="Whether the twin namespace exists there."),
        Attribute("reason", String(), computed=True, description="Why, in one CamelCase word."),
        Attribute("message", String(), computed=True, description="Why, in a sentence."),
    ]
)


class OffloadResource(Resource):
    name: ClassVar[str] = "offload"
    timeouts: ClassVar[Mapping[str, float]] = CONTRACT.timeouts
    read_seconds: ClassVar[float] = CONTRACT.read_seconds
    schema: ClassVar[Schema] = Schema(
        description=(
            "On the consumer cluster: offloads a namespace to the peered clusters its selector picks. Each gets a "
            "twin namespace, where the namespace's pods scheduled onto its virtual node run."
        ),
        attributes=[
            Attribute(
                "id",
                String(),
                computed=True,
                use_state_for_unknown=True,
                description=(
                    "The offloaded namespace's name, or with `namespace_selector` the NamespaceOffloadingSet's "
                    "(the import ID)."
                ),
            ),
            Attribute(
                "namespace",
                String(),
                **flags(CONTRACT, "namespace"),
                description=(
                    "The namespace to offload; it must exist. A change offloads another namespace. Exactly one of "
                    "`namespace` and `namespace_selector` is set."
                ),
            ),
            Attribute(
                "namespace_selector",
                String(),
                **flags(CONTRACT, "namespace_selector"),
                description=(
                    "Offload every namespace whose labels match this selector, in kubectl's `-l` form (`team=blue`, "
                    "`env in (dev,test),!legacy`; Liqo's `--ns-selector`), those created or labelled later too: "
                    "the runtime's NamespaceOffloadingSet `selector-<hash>` (the ID) gives each a "
                    "NamespaceOffloading and unoffloads those that stop matching. Namespaces offloaded already "
                    "refuse the create; one offloaded by hand later is left alone (`conflicts`). A change "
                    "replaces the offloading."
                ),
            ),
            Attribute(
                "pod_offloading_strategy",
                String(),
                **flags(CONTRACT, "pod_offloading_strategy"),
                description=(
                    "Where the namespace's pods may run: `LocalAndRemote` (default: local or virtual nodes, as the "
                    "scheduler picks), `Remote` (virtual nodes only) or `Local` (local nodes only; the twin "
                    "namespaces still exist). Changes apply in place to pods created afterwards."
                ),
            ),
            Attribute(
                "namespace_mapping_strategy",
                String(),
                **flags(CONTRACT, "namespace_mapping_strategy"),
                description=(
                    "How the twin namespaces are named: `DefaultName` (default: `<namespace>-<this cluster's "
                    "name>`), `EnforceSameName` (the namespace's own name; fails where the provider has that "
                    "namespace already) or `SelectedName` (`remote_namespace_name`). A change replaces the "
                    "offloading."
                ),
            ),
            Attribute(
                "remote_namespace_name",
                String(),
                **flags(CONTRACT, "remote_namespace_name"),
                computed=True,
                use_state_for_unknown=True,
                description=(
                    "The twin namespaces' name: set it with `SelectedName`; otherwise it is read back (the name "
                    "the strategy gives)."
                ),
            ),
            ListNestedAttribute(
                "cluster_selector_terms",
                [
                    ListNestedAttribute(
                        "match_expressions",
                        [
                            Attribute(
                                "key",
                                String(),
                                required=True,
                                description="The label key of the virtual nodes the requirement applies to.",
                            ),
                            Attribute(
                                "operator",
                                String(),
                                required=True,
                                description="`In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt` or `Lt`.",
                            ),
                            Attribute(
                                "values",
                                List(String()),
                                optional=True,
                                description=(
                                    "The values: at least one with `In` and `NotIn`, none with `Exists` and "
                                    "`DoesNotExist`, one integer with `Gt` and `Lt`."
                                ),
                            ),
                        ],
                        optional=True,
                        description="Requirements on the labels of a virtual node, all of which must hold.",
                    )
                ],
                **flags(CONTRACT, "cluster_selector_terms"),
                description=(
                    "Which peered clusters get the namespace, by the labels of their virtual nodes: a cluster is "
                    "picked when one term matches (terms are ORed, a term's expressions ANDed). Omitted: every "
                    "peered cluster. Changes apply in place."
                ),
            ),
            Attribute(
                "offloading_phase",
                String(),
                computed=True,
                description=(
                    "`Ready`, `NoClusterSelected`, `InProgress`, `SomeFailed`, `AllFailed` or `Terminating`, as "
                    "the runtime reports it."
                ),
            ),
            Attribute(
                "cluster_status",
                Map(_CLUSTER_STATUS),
                computed=True,
                description=(
                    "Per peered cluster (by name): whether the selector picks it, whether its twin namespace "
                    "exists, and why not."
                ),
            ),
            Attribute(
                "namespaces",
                List(String()),
                computed=True,
                description="With `namespace_selector`: the namespaces it offloads now.",
            ),
            Attribute(
                "conflicts",
                Map(String()),
                computed=True,
                description=(
                    "With `namespace_selector`: namespaces the selector picks that have a NamespaceOffloading of "
                    "their own (made by hand, or by another `liqo_offload`), left alone, and why."
                ),
            ),
            force.attribute(CONTRACT, "the NamespaceOffloading and its twin namespaces"),
        ],
        block_types=[timeouts_block(CONTRACT.timeouts)],
    )

    # validate and plan

    def check(self, diags: Diagnostics, config: State) -> None:
        checks.namespace(diags, config.get("namespace"), path=["namespace"])
        _check_target(diags, config)
        pod_strategy = config.get("pod_offloading_strategy")
        if checks.known(pod_strategy) and pod_strategy not in c.POD_OFFLOADING_STRATEGIES:
            diags.add_error(
                "Invalid pod_offloading_strategy",
                f"{pod_strategy!r} is not a pod offloading strategy: use one of "
                f"{', '.join(c.POD_OFFLOADING_STRATEGIES)}.",
                path=["pod_offloading_strategy"],
            )
        strategy = config.get("namespace_mapping_strategy")
        if checks.known(strategy) and strategy not in c.MAPPING_STRATEGIES:
            diags.add_error(
                "Invalid namespace_mapping_strategy",
                f"{strategy!r} is not a namespace mapping strategy: use one of {', '.join(c.MAPPING_STRATEGIES)}.",
                path=["namespace_mapping_strategy"],
            )
        remote = config.get("remote_namespace_name")
        if strategy == c.MAPPING_SELECTED_NAME:
            if remote is None:
                diags.add_error(
                    "Missing remote_namespace_name",
                    "The SelectedName strategy names the twin namespaces after remote_namespace_name: set it.",
                    path=["remote_namespace_name"],
                )
            elif checks.known(remote) and (problem := validation.twin_namespace_name(str(remote))):
                diags.add_error("Invalid remote_namespace_name", problem, path=["remote_namespace_name"])
        elif checks.known(remote) and checks.known(strategy):
            diags.add_error(
                "remote_namespace_name needs SelectedName",
                f'remote_namespace_name is only an input with namespace_mapping_strategy = "SelectedName"; with '
                f"{strategy or c.MAPPING_DEFAULT_NAME} the runtime names the twin namespaces: remove it (it is read "
                "back) or set the strategy to SelectedName.",
                path=["remote_namespace_name"],
            )
        terms = config.get("cluster_selector_terms")
        if isinstance(terms, list):
            for i, term in enumerate(terms):
                for j, requirement in enumerate((term or {}).get("match_expressions") or []):
                    _check_requirement(
                        diags, requirement, path=["cluster_selector_terms", i, "match_expressions", j]
                    )

    def plan(self, ctx: PlanContext, current: State | None, planned: State) -> State:
        planned = dict(planned)
        for name, default in CONTRACT.defaults.items():
            if ctx.config.get(name) is None:
                planned[name] = default
        planned["force"] = force.planned(ctx.config, current)
        namespace = planned.get("namespace")
        selector = planned.get("namespace_selector")
        if is_known(namespace) and namespace is not None:
            planned["id"] = namespace
        elif checks.known(selector):
            planned["id"] = _set_name(str(selector))
        if selector is not None:
            planned["remote_namespace_name"] = None
            if current is None or _spec_inputs(current) != _spec_inputs(planned):
                planned["offloading_phase"] = Unknown
                planned["namespaces"] = Unknown
                planned["conflicts"] = Unknown
            planned["cluster_status"] = {}
            return planned
        planned["namespaces"] = None
        planned["conflicts"] = None
        replacing = current is not None and any(current.get(k) != planned.get(k) for k in CONTRACT.replacing)
        if ctx.config.get("remote_namespace_name") is None:
            if planned["namespace_mapping_strategy"] == c.MAPPING_ENFORCE_SAME_NAME and is_known(namespace):
                planned["remote_namespace_name"] = namespace
            elif current is None or replacing:
                planned["remote_namespace_name"] = Unknown
        if current is not None and _spec_inputs(current) != _spec_inputs(planned):
            # a default filled in above may be the change (a strategy removed from the config): the status the
            # runtime reports for the new spec is not known before the apply
            planned["offloading_phase"] = Unknown
            planned["cluster_status"] = Unknown
        return planned

    # apply

    def create(self, ctx: ApplyContext, planned: State) -> State | None:
        from runtime.operations.offload import check_new

        seconds = self.seconds(ctx.config, "create")
        if planned.get("namespace_selector") is not None:
            return offloadset.create(ctx, self.provider.kube, planned, seconds=seconds)
        namespace = str(planned["namespace"])

        async def precheck(client: Client) -> Exception | None:
            try:
                await check_new(client, namespace, seconds=seconds / 2, stop=ctx.stop)
            except CONTRACT.refused as exc:
                return exc
            return None

        blocked = call(
            ctx.diagnostics,
            self.provider.kube,
            precheck,
            what=f"prepare the offloading of namespace {namespace}",
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
                namespace=namespace,
                host=self.provider.kube.host,
            )
            return None
        return self._write(ctx, planned, prior=None)

    def update(self, ctx: ApplyContext, current: State, planned: State) -> State | None:
        if _spec_inputs(current) == _spec_inputs(planned):
            return {**current, "timeouts": planned.get("timeouts"), "force": planned.get("force")}
        if planned.get("namespace_selector") is not None:
            seconds = self.seconds(ctx.config, "update")
            return offloadset.write(ctx, self.provider.kube, planned, prior=current, seconds=seconds)
        return self._write(ctx, planned, prior=current)

    def _write(self, ctx: ApplyContext, planned: State, *, prior: State | None) -> State | None:
        """Apply the NamespaceOffloading, then wait for the twin namespaces."""
        from runtime.operations.offload import OffloadingFailedError, apply_offloading, wait_offloaded

        namespace = str(planned["namespace"])
        operation = "create" if prior is None else "update"
        seconds = self.seconds(ctx.config, operation)
        kube = self.provider.kube

        async def write(client: Client) -> Offloading:
            return await apply_offloading(
                client,
                namespace,
                pod_offloading_strategy=str(planned["pod_offloading_strategy"]),
                namespace_mapping_strategy=str(planned["namespace_mapping_strategy"]),
                remote_namespace_name=_selected_name(planned),
                cluster_selector_terms=node_selector_terms(planned.get("cluster_selector_terms")),
                field_manager=c.FIELD_MANAGER_TERRAFORM,
            )

        call(
            ctx.diagnostics,
            kube,
            write,
            what=f"write the NamespaceOffloading of {namespace}",
            seconds=seconds,
        )
        if ctx.diagnostics.has_errors():
            return prior

        async def wait(client: Client) -> Offloading | OffloadingFailedError:
            try:
                return await wait_offloaded(client, namespace, seconds=seconds, stop=ctx.stop)
            except OffloadingFailedError as exc:
                return exc

        outcome = call(
            ctx.diagnostics,
            kube,
            wait,
            what=f"the {operation} of the offloading of namespace {namespace}",
            seconds=seconds + 10,
        )
        if isinstance(outcome, OffloadingFailedError):
            _failed(ctx.diagnostics, outcome.offloading)
            return _state(planned, outcome.offloading)
        if outcome is None:
            return _state(planned, _explain_timeout(ctx.diagnostics, kube, namespace))
        if outcome.phase == c.PHASE_NO_CLUSTER_SELECTED:
            ctx.diagnostics.add_warning(
                f"No peered cluster is selected for namespace {namespace}",
                "No virtual node matches cluster_selector_terms yet, so no twin namespace exists and no pod is "
                "offloaded. Clusters that match get the namespace when they peer.",
            )
        return _state(planned, outcome)

    # read, delete, import

    def read(self, ctx: ReadContext, current: State) -> State | None:
        from runtime.operations.offload import observe
        from runtime.operations.offloadset import observe_set

        if current.get("namespace_selector") is not None:
            name = str(current["id"])
            return self.refreshed(
                ctx,
                current,
                lambda client: observe_set(client, name),
                what=f"read NamespaceOffloadingSet {name}",
                gone=f"NamespaceOffloadingSet {name} is gone",
                state=lambda found: offloadset.observed_state(current, found),
            )
        namespace = str(current.get("id") or current.get("namespace"))
        return self.refreshed(
            ctx,
            current,
            lambda client: observe(client, namespace),
            what=f"read the offloading of namespace {namespace}",
            gone=f"the NamespaceOffloading of namespace {namespace} is gone",
            state=lambda found: _observed_state(current, found),
        )

    def delete(self, ctx: ApplyContext, current: State) -> None:
        namespace = str(current.get("id") or current.get("namespace"))
        seconds = self.seconds(current, "delete")
        if current.get("namespace_selector") is not None:
            namespace = f"the namespaces of {current.get('namespace_selector')}"
            outcome = offloadset.delete(ctx, self.provider.kube, current, seconds=seconds)
        else:
            from runtime.operations.offload import unoffload

            outcome = unoffloaded(
                ctx,
                self.provider.kube,
                unoffload,
                namespace,
                current,
                seconds=seconds,
                what=f"unoffload namespace {namespace}",
            )
        if outcome is None:
            return
        if outcome.orphaned:
            ctx.diagnostics.add_warning(
                f"Namespace {namespace} was unoffloaded without its clean-up",
                f"The runtime did not report the twin namespaces gone within {seconds:g}s (last seen: "
                f"{outcome.orphaned}), so the NamespaceOffloading's finalizer was removed. Twin namespaces may be "
                "left on the providers; check that the runtime's controller manager runs here and there.",
            )
        if outcome.unreachable:
            dropped(
                ctx.diagnostics,
                summary="Cluster unreachable: offloading dropped from the state",
                error=outcome.unreachable,
                kept=f"the NamespaceOffloading of namespace {namespace}",
                comes_back="delete it there",
            )

    def import_(self, ctx: ImportContext, id: str) -> State | None:
        from runtime.operations.offload import observe
        from runtime.operations.offloadset import observe_set

        if id.startswith(SET_NAME_PREFIX):
            return self.imported(
                ctx,
                lambda client: observe_set(client, id),
                what=f"read NamespaceOffloadingSet {id}",
                missing=(
                    f"There is no NamespaceOffloadingSet {id} on the cluster at {self.provider.kube.host} "
                    "(`kubectl get namespaceoffloadingsets`)."
                ),
                state=lambda found: offloadset.observed_state({**self.empty_state(), "force": False}, found),
            )
        checks.namespace(ctx.diagnostics, id, path=["namespace"])
        if ctx.diagnostics.has_errors():
            return None
        return self.imported(
            ctx,
            lambda client: observe(client, id),
            what=f"read the offloading of namespace {id}",
            missing=(
                f"Namespace {id} is not offloaded on the cluster at {self.provider.kube.host} (it has no "
                "NamespaceOffloading). The import ID is the namespace's name (`kubectl get namespaceoffloadings "
                "-A`)."
            ),
            state=lambda found: _observed_state({**self.empty_state(), "force": False}, found),
        )


# state


def _check_requirement(diags: Diagnostics, requirement: Any, *, path: list[Any]) -> None:
    if not isinstance(requirement, Mapping):
        return
    key, operator, values = requirement.get("key"), requirement.get("operator"), requirement.get("values")
    if not (checks.known(key) and checks.known(operator)) or values is Unknown:
        return
    if isinstance(values, list) and not all(checks.known(v) for v in values):
        return
    problem = validation.node_selector_requirement(str(key), str(operator), [str(v) for v in values or []])
    if problem:
        diags.add_error("Invalid cluster selector requirement", problem, path=path)


def terms_state(api_terms: Sequence[Mapping[str, Any]], known: Any) -> list[dict[str, Any]] | None:
    """The API's node selector terms as `cluster_selector_terms`, written as the state has them when equivalent."""
    if node_selector_terms(known) == [dict(term) for term in api_terms]:
        return list(known) if known is not None else None
    if not api_terms:
        return None
    return [
        {
            "match_expressions": [
                {
                    "key": str(expression.get("key") or ""),
                    "operator": str(expression.get("operator") or ""),
                    "values": [str(v) for v in expression["values"]] if expression.get("values") else None,
                }
                for expression in term.get("matchExpressions") or []
            ]
        }
        for term in api_terms
    ]


def _check_target(diags: Diagnostics, config: State) -> None:
    """Exactly one of `namespace` and `namespace_selector`, a selector kubectl would read, and no SelectedName
    with a selector (one name cannot serve many namespaces)."""
    namespace, selector = config.get("namespace"), config.get("namespace_selector")
    if namespace is None and selector is None:
        diags.add_error(
            "Missing namespace",
            "Set namespace (one namespace) or namespace_selector (every namespace whose labels match).",
            path=["namespace"],
        )
    elif namespace is not None and selector is not None:
        diags.add_error(
            "namespace and namespace_selector both set",
            "An offloading is of one namespace (namespace) or of the namespaces a selector picks "
            "(namespace_selector): remove one of them.",
            path=["namespace_selector"],
        )
    if checks.known(selector):
        try:
            _set_name(str(selector))
        except SelectorError as exc:
            diags.add_error(
                "Invalid namespace_selector",
                f"{selector!r} is not a label selector: {exc}. Write it as for kubectl -l: team=blue,env!=prod.",
                path=["namespace_selector"],
            )
        if config.get("namespace_mapping_strategy") == c.MAPPING_SELECTED_NAME:
            diags.add_error(
                "SelectedName with namespace_selector",
                "SelectedName gives one name to the twin namespaces of one namespace; with namespace_selector use "
                "DefaultName or EnforceSameName.",
                path=["namespace_mapping_strategy"],
            )


def _selected_name(state: State) -> str:
    if state.get("namespace_mapping_strategy") != c.MAPPING_SELECTED_NAME:
        return ""
    return str(state.get("remote_namespace_name") or "")


def _spec_inputs(state: State) -> tuple[Any, ...]:
    return (
        state.get("namespace"),
        state.get("namespace_selector"),
        state.get("pod_offloading_strategy"),
        state.get("namespace_mapping_strategy"),
        _selected_name(state),
        node_selector_terms(state.get("cluster_selector_terms")),
    )


def _state(planned: State, offloading: Offloading | None) -> State:
    """The state after a write: the planned inputs and the status as last seen."""
    state = {
        **planned,
        "id": planned["namespace"],
        "namespace_selector": None,
        "namespaces": None,
        "conflicts": None,
    }
    if offloading is None:
        state.update(
            {
                "remote_namespace_name": planned.get("remote_namespace_name")
                if is_known(planned.get("remote_namespace_name"))
                else None,
                "offloading_phase": "",
                "cluster_status": {},
            }
        )
        return state
    state["remote_namespace_name"] = offloading.remote_namespace_name or _selected_name(planned) or None
    state["offloading_phase"] = offloading.phase
    state["cluster_status"] = {
        cluster.cluster: {
            "selected": cluster.selected,
            "ready": cluster.ready,
            "reason": cluster.reason,
            "message": cluster.message,
        }
        for cluster in offloading.clusters
    }
    return state


def _observed_state(current: State, offloading: Offloading) -> State:
    spec = offloading.spec
    terms = list(((spec.get("clusterSelector") or {}).get("nodeSelectorTerms")) or [])
    state = {
        **current,
        "id": offloading.namespace,
        "namespace": offloading.namespace,
        "pod_offloading_strategy": str(
            spec.get("podOffloadingStrategy") or c.POD_OFFLOADING_LOCAL_AND_REMOTE
        ),
        "namespace_mapping_strategy": str(spec.get("namespaceMappingStrategy") or c.MAPPING_DEFAULT_NAME),
        "remote_namespace_name": str(spec.get("remoteNamespaceName") or "") or None,
        "cluster_selector_terms": terms_state(terms, current.get("cluster_selector_terms")),
    }
    return _state(state, offloading)


# diagnostics


def _failed(diags: Diagnostics, offloading: Offloading) -> None:
    diags.add_error(
        f"Offloading of namespace {offloading.namespace} failed",
        "No selected cluster could create its twin namespace, and waiting will not fix it:\n  "
        + "\n  ".join(offloading.problems())
        + "\nFix the cause (a namespace of that name exists on the provider: use the DefaultName or SelectedName "
        "strategy; a cordoned or drained tenant: ask the provider) and apply again.",
    )


def _explain_timeout(diags: Diagnostics, kube: Any, namespace: str) -> Offloading | None:
    """Add each cluster's conditions to a wait that failed, so the error says why the offloading is stuck."""
    from runtime.operations.offload import get

    found = call(
        Diagnostics(),
        kube,
        lambda client: get(client, namespace),
        what=f"read {namespace}",
        seconds=CONTRACT.read_seconds,
    )
    if found is not None and found.problems():
        diags.add_error(
            f"The offloading of namespace {namespace} is not Ready",
            f"The NamespaceOffloading reports {found.summary()}",
        )
    return found
