"""`liqo:index:Offload`: on the consumer cluster, a namespace offloaded to the peered clusters its selector picks
(the `Offloading` dynamic resource, `runtime.operations.offload`), with the arguments, defaults and waits of
`liqo_offload`."""

import operator
from typing import Any, NotRequired, TypedDict

import pulumi

from runtime.api import constants as c
from runtime.api import validation
from runtime.api.selectors import SelectorError
from runtime.forge.namespaceoffloading import node_selector_terms
from runtime.operations.offload import CONTRACT
from runtime.operations.offloadset import set_name

from . import _args
from .providers.offload import Offloading

TYPE = "liqo:index:Offload"


class NodeSelectorRequirementArgs(TypedDict):
    """A requirement on the labels of a virtual node."""

    key: pulumi.Input[str]
    """The label key of the virtual nodes the requirement applies to."""
    operator: pulumi.Input[str]
    """`In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt` or `Lt`."""
    values: NotRequired[pulumi.Input[list[pulumi.Input[str]]]]
    """The values: at least one with `In` and `NotIn`, none with `Exists` and `DoesNotExist`, one integer with
    `Gt` and `Lt`."""


class ClusterSelectorTermArgs(TypedDict):
    """A term of a cluster selector: it picks the clusters whose virtual node meets all its requirements."""

    match_expressions: NotRequired[pulumi.Input[list[pulumi.Input[NodeSelectorRequirementArgs]]]]
    """Requirements on the labels of a virtual node, all of which must hold."""


class ClusterStatus(TypedDict):
    """How the offloading stands on one peered cluster."""

    selected: bool
    """Whether the cluster selector picks the cluster."""
    ready: bool
    """Whether the twin namespace exists there."""
    reason: str
    """Why, in one CamelCase word."""
    message: str
    """Why, in a sentence."""


class OffloadArgs(TypedDict):
    """The arguments of an Offload (those of `liqo_offload`)."""

    kubeconfig: pulumi.Input[str]
    """A kubeconfig for the consumer cluster (its content, YAML or JSON). Kept secret."""
    namespace: NotRequired[pulumi.Input[str]]
    """The namespace to offload; it must exist. A change offloads another namespace (replaces the offloading).
    Exactly one of `namespace` and `namespace_selector` is given."""
    namespace_selector: NotRequired[pulumi.Input[str]]
    """Offload every namespace whose labels match this selector, in kubectl's `-l` form (`team=blue`; Liqo's
    `--ns-selector`), those created or labelled later too: the runtime's NamespaceOffloadingSet
    `selector-<hash>` gives each a NamespaceOffloading and unoffloads those that stop matching. Namespaces
    offloaded already refuse the create; one offloaded by hand later is left alone (`conflicts`). A change
    replaces the offloading."""
    context: NotRequired[pulumi.Input[str]]
    """The kubeconfig context to use (default: its current context)."""
    pod_offloading_strategy: NotRequired[pulumi.Input[str]]
    """Where the namespace's pods may run: `LocalAndRemote` (default: local or virtual nodes, as the scheduler
    picks), `Remote` (virtual nodes only) or `Local` (local nodes only; the twin namespaces still exist).
    Changes apply in place to pods created afterwards."""
    namespace_mapping_strategy: NotRequired[pulumi.Input[str]]
    """How the twin namespaces are named: `DefaultName` (default: `<namespace>-<this cluster's name>`),
    `EnforceSameName` (the namespace's own name; fails where the provider has that namespace already) or
    `SelectedName` (`remote_namespace_name`). A change replaces the offloading."""
    remote_namespace_name: NotRequired[pulumi.Input[str]]
    """The twin namespaces' name, with `SelectedName` only (required there). A change replaces the
    offloading."""
    cluster_selector_terms: NotRequired[pulumi.Input[list[pulumi.Input[ClusterSelectorTermArgs]]]]
    """Which peered clusters get the namespace, by the labels of their virtual nodes: a cluster is picked when
    one term matches (terms are ORed, a term's expressions ANDed). Omitted: every peered cluster. Changes
    apply in place."""
    force: NotRequired[pulumi.Input[bool]]
    """Let destroy drop the component when its cluster cannot be reached, leaving the NamespaceOffloading and its twin namespaces there; without
    it, such a destroy fails and the component stays. Run `pulumi up` with it before the destroy."""


class Offload(pulumi.ComponentResource):
    """Offloads a namespace of the consumer cluster to the peered clusters its selector picks: each gets a twin
    namespace, where the namespace's pods scheduled onto its virtual node run."""

    namespace: pulumi.Output[str]
    """The offloaded namespace."""
    remote_namespace_name: pulumi.Output[str]
    """The twin namespaces' name on the providers."""
    offloading_phase: pulumi.Output[str]
    """`Ready`, `NoClusterSelected`, `InProgress`, `SomeFailed`, `AllFailed` or `Terminating`, as the runtime
    reports it."""
    cluster_status: pulumi.Output[dict[str, ClusterStatus]]
    """Per peered cluster (by name): whether the selector picks it, whether its twin namespace exists, and why
    not."""
    namespaces: pulumi.Output[list[str]]
    """With `namespace_selector`: the namespaces it offloads now."""
    conflicts: pulumi.Output[dict[str, str]]
    """With `namespace_selector`: namespaces the selector picks that have a NamespaceOffloading of their own,
    left alone, and why."""

    def __init__(self, name: str, args: OffloadArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        # checked before anything is registered: a bad argument leaves no half-made component
        values = _args.defaulted(CONTRACT, _check(args))
        bounds = _args.timeouts("Offload", opts, CONTRACT.timeouts)
        super().__init__(TYPE, name, {}, opts)
        terms = values.get("cluster_selector_terms")
        props: dict[str, Any] = {
            "kubeconfig": pulumi.Output.secret(values["kubeconfig"]),
            "context": values.get("context"),
            "timeouts": bounds,
            "force": bool(values.get("force")),
            "namespace": values.get("namespace") or "",
            "namespace_selector": values.get("namespace_selector"),
            "pod_offloading_strategy": values["pod_offloading_strategy"],
            "namespace_mapping_strategy": values["namespace_mapping_strategy"],
            "remote_namespace_name": values.get("remote_namespace_name") or "",
            "cluster_selector_terms": pulumi.Output.from_input(terms).apply(node_selector_terms)
            if _args.holds_output(terms)
            else node_selector_terms(terms),
        }
        offloading = Offloading(f"{name}-offloading", props, _args.child_options(self, opts))
        self.namespace = pulumi.Output.from_input(values.get("namespace") or "")
        self.remote_namespace_name = offloading.twin_namespace_name
        self.offloading_phase = offloading.offloading_phase
        self.cluster_status = offloading.cluster_status  # type: ignore[assignment]
        self.namespaces = offloading.namespaces
        self.conflicts = offloading.conflicts
        self.register_outputs(
            {
                "namespace": self.namespace,
                "remote_namespace_name": self.remote_namespace_name,
                "offloading_phase": self.offloading_phase,
                "cluster_status": self.cluster_status,
                "namespaces": self.namespaces,
                "conflicts": self.conflicts,
            }
        )


def _check(args: OffloadArgs) -> dict[str, Any]:
    values = _args.checked(
        "Offload",
        args,
        required=("kubeconfig", *CONTRACT.required),
        rules={
            "namespace": validation.namespace,
            "pod_offloading_strategy": _pod_strategy_problem,
            "namespace_mapping_strategy": _mapping_strategy_problem,
            "cluster_selector_terms": _terms_problem,
            "namespace_selector": _selector_problem,
        },
    )
    if (values.get("namespace") is None) == (values.get("namespace_selector") is None):
        raise _args.ArgumentError(
            "Offload",
            "namespace",
            "give namespace (one namespace) or namespace_selector (every namespace whose labels match), exactly one "
            "of them.",
        )
    if (
        values.get("namespace_selector") is not None
        and values.get("namespace_mapping_strategy") == c.MAPPING_SELECTED_NAME
    ):
        raise _args.ArgumentError(
            "Offload",
            "namespace_mapping_strategy",
            "SelectedName gives one name to the twin namespaces of one namespace; with namespace_selector use "
            "DefaultName or EnforceSameName.",
        )
    # the twin namespaces' name goes with the SelectedName strategy, and only with it
    remote = values.get("remote_namespace_name")
    pair = {
        "strategy": values.get("namespace_mapping_strategy")
        or CONTRACT.defaults["namespace_mapping_strategy"],
        "remote": remote,
    }
    checked = _args.check("Offload", "remote_namespace_name", pair, _remote_name_problem)
    if isinstance(checked, pulumi.Output):
        values["remote_namespace_name"] = checked.apply(operator.itemgetter("remote"))
    return values


def _selector_problem(value: Any) -> str:
    try:
        set_name(str(value))
    except SelectorError as exc:
        return f"{value!r} is not a label selector: {exc}. Write it as for kubectl -l: team=blue,env!=prod."
    return ""


def _pod_strategy_problem(value: Any) -> str:
    if value in c.POD_OFFLOADING_STRATEGIES:
        return ""
    return f"{value!r} is not a pod offloading strategy: use one of {', '.join(c.POD_OFFLOADING_STRATEGIES)}."


def _mapping_strategy_problem(value: Any) -> str:
    if value in c.MAPPING_STRATEGIES:
        return ""
    return f"{value!r} is not a namespace mapping strategy: use one of {', '.join(c.MAPPING_STRATEGIES)}."


def _remote_name_problem(pair: dict[str, Any]) -> str:
    strategy, remote = pair["strategy"], pair["remote"]
    if strategy == c.MAPPING_SELECTED_NAME:
        if not remote:
            return "the SelectedName strategy names the twin namespaces after remote_namespace_name: set it."
        return validation.twin_namespace_name(str(remote))
    if remote:
        return (
            f"it goes with namespace_mapping_strategy SelectedName only; with {strategy} the runtime names the "
            "twin namespaces (the remote_namespace_name output tells the name): remove it, or use SelectedName."
        )
    return ""


def _terms_problem(terms: Any) -> str:
    for term in terms or []:
        for requirement in (term or {}).get("match_expressions") or []:
            problem = validation.node_selector_requirement(
                str(requirement.get("key") or ""),
                str(requirement.get("operator") or ""),
                [str(value) for value in requirement.get("values") or []],
            )
            if problem:
                return problem
    return ""
