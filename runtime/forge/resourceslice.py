"""ResourceSlices: the share of a provider a consumer asks for, and what the provider grants.

The consumer builds its request with `resource_slice()` and creates it, with its provider
credential, in its tenant namespace on the provider. The provider answers with `grant()`, a
pure function of the request and of what it can give, so its controller only gathers inputs
from its caches and writes the answer.

What a provider can give (`available()`): `sharingPercentage` percent of its free resources
(`free_resources()`: the allocatable of its Ready, schedulable, non-virtual nodes minus the
requests of the pods bound to them) minus what it already granted to other slices. Pods
offloaded by consumers (labelled with their origin cluster id) are left out of those
requests: the grant of their consumer already holds them, and counting them twice would
shrink a consumer's share as it uses it.

- An empty request asks for the default share: everything that can be given (cpu, memory,
  pods and every other resource the nodes offer), so it follows the provider's free resources.
  It is Denied when nothing is left of cpu, memory or pods.
- An explicit request is granted as asked when it fits (Accepted), cut to what is left when
  it does not (Resized, the message lists the cuts), and Denied when nothing at all is left of
  one of the requested resources.
- `keep` is a floor the answer never goes below: what the consumer uses, and for an unchanged
  explicit request what was granted before (a grant is a promise: it holds when the provider
  fills up later; it grows back towards the request when resources free up).

Amounts are exact (`runtime.api.quantity`) and written canonically: cpu rounded down to
millicores, byte amounts to whole Mi (or M, for decimal amounts), everything else to units.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from runtime.api import constants as c
from runtime.api.crds import RESOURCESLICES
from runtime.api.objects import JSON, nested
from runtime.api.quantity import Format, Quantity, parse_quantity
from runtime.api.views import ResourceSliceStatus

from .conditions import condition, find, is_true

#: resource name -> amount
Amounts = dict[str, Quantity]

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
#: the default share is Denied when nothing is left of one of these
CORE_RESOURCES = (CPU, MEMORY, PODS)
_BYTE_RESOURCES = frozenset({MEMORY, "ephemeral-storage", "storage"})
_TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def resource_slice(
    name: str,
    *,
    namespace: str,
    consumer_cluster_id: str,
    provider_cluster_id: str,
    resources: Mapping[str, str] | None = None,
) -> JSON:
    """The ResourceSlice a consumer creates in its tenant namespace on the provider (no resources: the default share)."""
    return {
        "apiVersion": RESOURCESLICES.api_version,
        "kind": RESOURCESLICES.kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                c.LABEL_ORIGIN_CLUSTER_ID: consumer_cluster_id,
                c.LABEL_REMOTE_CLUSTER_ID: provider_cluster_id,
                c.LABEL_MANAGED_BY: c.MANAGED_BY,
            },
        },
        "spec": {
            "class": c.RESOURCE_SLICE_CLASS_DEFAULT,
            "consumerClusterID": consumer_cluster_id,
            "providerClusterID": provider_cluster_id,
            "resources": dict(resources or {}),
        },
    }


# -- amounts ------------------------------------------------------------------------------------------


def amounts(resources: Mapping[str, Any] | None) -> Amounts:
    """Parse a resource map (`{"cpu": "2", ...}`); ValueError naming the resource if one is not a quantity."""
    parsed: Amounts = {}
    for name, value in (resources or {}).items():
        try:
            parsed[name] = parse_quantity(value)
        except ValueError as error:
            raise ValueError(f"{name}: {error}") from None
    return parsed


def formatted(values: Amounts) -> dict[str, str]:
    """The canonical strings of `values`, by resource name."""
    return {name: str(quantity) for name, quantity in sorted(values.items())}


def _add(total: Amounts, name: str, value: Fraction, form: Format) -> None:
    current = total.get(name)
    total[name] = Quantity(value + (current.value if current else 0), current.format if current else form)


def total(resource_maps: Iterable[Amounts]) -> Amounts:
    """The sum of several amount maps (the format of the first occurrence of each resource is kept)."""
    summed: Amounts = {}
    for values in resource_maps:
        for name, quantity in values.items():
            _add(summed, name, quantity.value, quantity.format)
    return summed


def _round_down(name: str, quantity: Quantity) -> Quantity:
    """What can be granted of `quantity`: cpu in millicores, bytes in whole Mi/M, anything else in units."""
    value, form = quantity.value, quantity.format
    if value <= 0:
        return Quantity(Fraction(0), form)
    if name == CPU:
        step = Fraction(1, 1000)
    elif name in _BYTE_RESOURCES or name.startswith("hugepages-"):
        step = Fraction(2**20 if form is Format.BINARY_SI else 10**6)
        step = step if value >= step else Fraction(1)
    else:
        step = Fraction(1)
    return Quantity(value // step * step, form)


# -- what the provider has --------------------------------------------------------------------------


def is_shareable_node(node: JSON) -> bool:
    """A Ready, schedulable node that is not itself a virtual node (nor being deleted)."""
    meta = node.get("metadata") or {}
    if nested(meta, "labels", c.LABEL_TYPE) == c.TYPE_VIRTUAL_NODE or meta.get("deletionTimestamp"):
        return False
    if nested(node, "spec", "unschedulable"):
        return False
    conditions = nested(node, "status", "conditions") or []
    return any(entry.get("type") == "Ready" and entry.get("status") == "True" for entry in conditions)


def _container_requests(container: JSON) -> Amounts:
    resources = container.get("resources") or {}
    # as the API server defaults them: a limit without a request is the request
    return amounts({**(resources.get("limits") or {}), **(resources.get("requests") or {})})


def _maximum(left: Amounts, right: Amounts) -> Amounts:
    result = dict(left)
    for name, quantity in right.items():
        if name not in result or quantity.value > result[name].value:
            result[name] = quantity
    return result


def pod_requests(pod: JSON) -> Amounts:
    """What a pod takes from its node, as the scheduler counts it, plus one `pods`.

    The containers' requests summed; init containers run one at a time (the largest counts,
    with the sidecars started before it), sidecars (restartPolicy Always) run alongside; then
    the pod overhead.
    """
    spec = pod.get("spec") or {}
    containers = total(_container_requests(container) for container in spec.get("containers") or [])
    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for init in spec.get("initContainers") or []:
        requests = _container_requests(init)
        if init.get("restartPolicy") == "Always":
            sidecars = total([sidecars, requests])
            init_peak = _maximum(init_peak, sidecars)
        else:
            init_peak = _maximum(init_peak, total([sidecars, requests]))
    requests = _maximum(total([containers, sidecars]), init_peak)
    return total([requests, amounts(spec.get("overhead")), {PODS: Quantity(Fraction(1))}])


def node_usage(pod: JSON | None) -> tuple[str, dict[str, str]] | None:
    """The node a pod takes resources from and what it takes (`pod_requests`, canonical); None for a pod that
    takes nothing from a node: unbound, terminated, or offloaded by a consumer (its grant holds it)."""
    if pod is None:
        return None
    meta = pod.get("metadata") or {}
    node = nested(pod, "spec", "nodeName")
    phase = nested(pod, "status", "phase")
    if c.LABEL_ORIGIN_CLUSTER_ID in (meta.get("labels") or {}) or not node or phase in _TERMINAL_PHASES:
        return None
    try:
        return str(node), formatted(pod_requests(pod))
    except ValueError:
        return None


def _counts_against_node(pod: JSON, nodes: set[str]) -> bool:
    usage = node_usage(pod)
    return usage is not None and usage[0] in nodes


def free_resources(nodes: Iterable[JSON], pods: Iterable[JSON]) -> Amounts:
    """The allocatable of the shareable nodes minus the requests of the (non-terminal) pods bound to them.

    Pods offloaded by consumers (labelled with `liqo.io/origin-cluster-id`) are not subtracted:
    their consumers' grants hold them already.
    """
    shareable = [node for node in nodes if is_shareable_node(node)]
    names = {str(node["metadata"]["name"]) for node in shareable}
    allocatable = total(
        amounts(nested(node, "status", "allocatable") or nested(node, "status", "capacity"))
        for node in shareable
    )
    used = total(pod_requests(pod) for pod in pods if _counts_against_node(pod, names))
    return {
        name: Quantity(quantity.value - (used[name].value if name in used else 0), quantity.format)
        for name, quantity in allocatable.items()
    }


def available(free: Amounts, *, sharing_percentage: int, held_by_others: Amounts) -> Amounts:
    """What can still be granted: the sharing percentage of `free`, minus what other slices hold (never negative)."""
    result: Amounts = {}
    for name, quantity in free.items():
        held = held_by_others[name].value if name in held_by_others else 0
        value = quantity.value * sharing_percentage / 100 - held
        result[name] = Quantity(max(value, Fraction(0)), quantity.format)
    return result


def granted(resource_slice: JSON) -> Amounts:
    """What a slice holds: its granted resources while its Resources condition is True (nothing otherwise)."""
    status: ResourceSliceStatus = resource_slice.get("status") or {}
    if not is_true(status.get("conditions"), c.CONDITION_RESOURCES):
        return {}
    return amounts(status.get("resources"))


def is_request_unchanged(resource_slice: JSON) -> bool:
    """Whether the grant in the status answers the current spec (the status observed this generation)."""
    meta = resource_slice.get("metadata") or {}
    observed = nested(resource_slice, "status", "observedGeneration")
    return observed is not None and observed == meta.get("generation")


def follows_free_resources(resource_slice: JSON) -> bool:
    """Whether a slice's grant moves with the provider's free resources: the default share, and a request not
    (yet) granted as asked, which grows back; a request granted as asked holds whatever happens meanwhile."""
    requested = nested(resource_slice, "spec", "resources") or {}
    if not requested or not is_request_unchanged(resource_slice):
        return True
    found = find(nested(resource_slice, "status", "conditions"), c.CONDITION_RESOURCES) or {}
    return found.get("reason") != c.REASON_ACCEPTED


def floor(resource_slice: JSON, *, in_use: Amounts) -> Amounts:
    """The amounts a new grant must not go below: what is in use, and for an unchanged explicit request, its grant."""
    requested = nested(resource_slice, "spec", "resources") or {}
    if requested and is_request_unchanged(resource_slice):
        return _maximum(in_use, granted(resource_slice))
    return dict(in_use)


# -- the answer ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Grant:
    """The provider's answer: the granted amounts (canonical strings), Accepted/Resized/Denied and why."""

    reason: str
    message: str
    resources: dict[str, str] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        return self.reason != c.REASON_DENIED


def _policy(sharing_percentage: int) -> str:
    return (
        f"this provider shares {sharing_percentage}% of its free resources, minus what other consumers hold"
    )


def grant(
    requested: Mapping[str, Any],
    *,
    available: Amounts,
    sharing_percentage: int,
    keep: Amounts | None = None,
) -> Grant:
    """The answer to a request (empty: the default share), given what is `available` and the floor `keep`."""
    keep = keep or {}
    try:
        asked = amounts(requested)
    except ValueError as error:
        return Grant(c.REASON_DENIED, f"the request is invalid: {error}")
    negative = sorted(name for name, quantity in asked.items() if quantity.value < 0)
    if negative:
        return Grant(c.REASON_DENIED, f"the request is invalid: {', '.join(negative)} must not be negative")
    if not asked:
        return _default_share(available, keep=keep, sharing_percentage=sharing_percentage)
    given: Amounts = {}
    cut: list[str] = []
    nothing_left: list[str] = []
    for name, want in sorted(asked.items()):
        floor_value = keep[name].value if name in keep else Fraction(0)
        have = available[name].value if name in available else Fraction(0)
        if want.value <= max(have, floor_value):
            given[name] = want
            continue
        rounded = _round_down(name, Quantity(have, want.format))
        amount = Quantity(max(rounded.value, floor_value), want.format)
        if amount.value <= 0:
            nothing_left.append(
                f"{name} (requested {want}; nothing is left)"
                if name in available
                else f"{name} (requested {want}; this provider has none)"
            )
        else:
            cut.append(f"{name} {amount} of {want} requested")
        given[name] = amount
    if nothing_left and not any(quantity.value > 0 for quantity in keep.values()):
        return Grant(
            c.REASON_DENIED,
            f"nothing can be granted of {', '.join(nothing_left)}: {_policy(sharing_percentage)}",
        )
    resources = {name: quantity for name, quantity in given.items() if quantity.value > 0}
    if cut or nothing_left:
        detail = ", ".join(cut + [f"no {entry}" for entry in nothing_left])
        return Grant(
            c.REASON_RESIZED,
            f"granted less than requested: {detail} ({_policy(sharing_percentage)})",
            formatted(resources),
        )
    return Grant(c.REASON_ACCEPTED, "granted as requested", formatted(resources))


def _default_share(available: Amounts, *, keep: Amounts, sharing_percentage: int) -> Grant:
    given: Amounts = {}
    for name, quantity in sorted(available.items()):
        amount = _round_down(name, quantity)
        if name in keep and keep[name].value > amount.value:
            amount = Quantity(keep[name].value, amount.format)
        if amount.value > 0:
            given[name] = amount
    missing = [name for name in CORE_RESOURCES if name not in given]
    if missing:
        return Grant(
            c.REASON_DENIED,
            f"nothing is left to share of {', '.join(missing)}: {_policy(sharing_percentage)}",
        )
    return Grant(
        c.REASON_ACCEPTED,
        f"granted the default share ({_policy(sharing_percentage)})",
        formatted(given),
    )


def status(
    *, generation: int | None, authenticated: bool, authentication_message: str, answer: Grant
) -> JSON:
    """The slice's status (conditions without transition times: see `conditions.merged`)."""
    return {
        "resources": answer.resources,
        "observedGeneration": generation,
        "conditions": [
            condition(
                c.CONDITION_AUTHENTICATION,
                authenticated,
                reason=c.REASON_ACCEPTED if authenticated else c.REASON_DENIED,
                message=authentication_message,
                observed_generation=generation,
            ),
            condition(
                c.CONDITION_RESOURCES,
                answer.accepted,
                reason=answer.reason,
                message=answer.message,
                observed_generation=generation,
            ),
        ],
    }
