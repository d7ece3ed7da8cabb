"""The Quota a provider keeps for each granted ResourceSlice: the consumer may use what it was granted.

Same name and namespace as the slice, owned by it (garbage collection removes it with the
slice); `user` is the consumer's ServiceAccount, the identity its offloaded workloads arrive
with, so enforcement knows whose requests count.

What counts against a consumer's Quotas (the sum of their limits) is its ShadowPods: every
one in its twin namespaces that is not being deleted and has not finished, with what its
pod takes from a node as the scheduler counts it (`shadow_pod_requests`: containers,
init containers and sidecars, overhead, and one `pods`). The admission webhook refuses a
ShadowPod that would take the consumer past them (`exceeded`), and the controller manager
writes the use into each Quota's `status.used` (`distributed`). As in Liqo,
`limitsEnforcement` says how much a pod must declare (`enforcement_problems`):

- None: what a pod requests counts (a container without requests counts only as a pod);
- Soft: every container must also request cpu and memory, so nothing runs uncounted;
- Hard: and its limits must equal its requests, so nothing uses more than it counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Final, Literal, get_args

from runtime.api import constants as c
from runtime.api.crds import QUOTAS
from runtime.api.objects import JSON, nested
from runtime.api.quantity import Quantity

from .meta import metadata
from .pods import provider_pod_spec
from .resourceslice import Amounts, amounts, formatted, pod_requests, total

Enforcement = Literal["None", "Soft", "Hard"]
ENFORCEMENTS: Final[tuple[Enforcement, ...]] = get_args(Enforcement)
#: what every container must request under Soft and Hard enforcement
DECLARED: Final = ("cpu", "memory")
_FINISHED: Final = frozenset({"Succeeded", "Failed"})


def service_account_user(namespace: str, name: str) -> str:
    """The user name the API server gives a ServiceAccount's tokens."""
    return f"system:serviceaccount:{namespace}:{name}"


def quota(
    resource_slice: JSON,
    *,
    user: str,
    limits: Mapping[str, str],
    enforcement: Enforcement,
    cordoned: bool,
) -> JSON:
    """The Quota for a granted slice: limits = what was granted; `cordoned` admits no new workloads."""
    meta = resource_slice["metadata"]
    body: JSON = {
        "apiVersion": QUOTAS.api_version,
        "kind": QUOTAS.kind,
        "metadata": metadata(meta["name"], namespace=meta["namespace"], component="controller-manager"),
        "spec": {
            "user": user,
            "limits": dict(limits),
            "limitsEnforcement": enforcement,
            "cordoned": cordoned,
        },
    }
    body["metadata"]["ownerReferences"] = [
        {
            "apiVersion": resource_slice["apiVersion"],
            "kind": resource_slice["kind"],
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
        }
    ]
    return body


# -- what a consumer uses ----------------------------------------------------------------------------


def shadow_pod_requests(shadow: JSON) -> Amounts:
    """What a ShadowPod's pod takes from a node, as the scheduler counts it (ValueError for a bad quantity)."""
    return pod_requests({"spec": provider_pod_spec(shadow)})


def counts(shadow: JSON) -> bool:
    """Whether a ShadowPod counts against its consumer's Quotas: not being deleted, its pod not finished."""
    meta = shadow.get("metadata") or {}
    return not meta.get("deletionTimestamp") and nested(shadow, "status", "phase") not in _FINISHED


def takes(shadow: JSON) -> Amounts:
    """What a ShadowPod that counts takes (one with a quantity that does not parse counts as a pod)."""
    try:
        return shadow_pod_requests(shadow)
    except ValueError:
        return {"pods": Quantity(Fraction(1))}


def used(shadows: Iterable[JSON]) -> Amounts:
    """What the ShadowPods that count take."""
    return total(takes(shadow) for shadow in shadows if counts(shadow))


def minus(amounts_: Amounts, taken: Amounts) -> Amounts:
    """`amounts_` less `taken`, resource by resource (what falls to nothing is left out)."""
    result = dict(amounts_)
    for name, quantity in taken.items():
        have = result.get(name)
        left = (have.value if have else Fraction(0)) - quantity.value
        if left:
            result[name] = Quantity(left, have.format if have else quantity.format)
        else:
            result.pop(name, None)
    return result


class Usage:
    """What cached ShadowPods take, by namespace, kept up to date from an informer's events (`observe`), so a
    review or a reconcile sums a consumer's few twin namespaces instead of parsing its every pod."""

    def __init__(self) -> None:
        #: `namespace/name` -> (its namespace, what it takes), for the ShadowPods that count
        self._pods: dict[str, tuple[str, Amounts]] = {}
        self._namespaces: dict[str, Amounts] = {}

    def observe(self, kind: str, shadow: JSON, old: JSON | None) -> None:
        """An informer event of a ShadowPod (ADDED, MODIFIED or DELETED)."""
        meta = shadow.get("metadata") or {}
        namespace = str(meta.get("namespace") or "")
        key = f"{namespace}/{meta.get('name')}"
        previous = self._pods.pop(key, None)
        if previous is not None:
            self._namespaces[previous[0]] = minus(self._namespaces.get(previous[0], {}), previous[1])
        if kind != "DELETED" and counts(shadow):
            taken = takes(shadow)
            self._pods[key] = (namespace, taken)
            self._namespaces[namespace] = total([self._namespaces.get(namespace, {}), taken])

    def of(self, key: str) -> Amounts:
        """What the cached ShadowPod `namespace/name` takes (nothing when it does not count or is not cached)."""
        found = self._pods.get(key)
        return found[1] if found is not None else {}

    def taken(self, namespaces: Iterable[str]) -> Amounts:
        """What the ShadowPods of these namespaces take."""
        return total(self._namespaces.get(namespace, {}) for namespace in namespaces)


def enforcement(quotas: Iterable[JSON]) -> Enforcement:
    """The strictest `limitsEnforcement` of a consumer's Quotas (Hard when one says nothing valid)."""
    found = [str(nested(q, "spec", "limitsEnforcement") or "Hard") for q in quotas]
    return max(
        (value if value in ENFORCEMENTS else "Hard" for value in found),
        key=ENFORCEMENTS.index,
        default="None",
    )


def limits(quotas: Iterable[JSON]) -> Amounts:
    """The sum of a consumer's Quotas' limits (what it was granted, over all its ResourceSlices)."""
    return total(amounts(nested(q, "spec", "limits")) for q in quotas)


def enforcement_problems(shadow: JSON, *, enforced: Enforcement) -> list[str]:
    """What a pod fails to declare under `enforced` (see the module's docstring)."""
    if enforced == "None":
        return []
    spec = provider_pod_spec(shadow)
    problems = []
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            resources = container.get("resources") or {}
            requests = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
            missing = [name for name in DECLARED if name not in requests]
            name = container.get("name")
            if missing:
                problems.append(
                    f"container {name!r} requests no {' or '.join(missing)} (limitsEnforcement {enforced}: every "
                    "container requests cpu and memory)"
                )
            if enforced == "Hard":
                given = resources.get("limits") or {}
                unequal = sorted(
                    resource for resource, value in requests.items() if str(given.get(resource)) != str(value)
                )
                if unequal:
                    problems.append(
                        f"container {name!r} limits {', '.join(unequal)} to other than it requests "
                        "(limitsEnforcement Hard: limits equal requests)"
                    )
    return problems


def exceeded(requested: Amounts, *, in_use: Amounts, granted: Amounts) -> list[str]:
    """The resources a pod requesting `requested` would take past what was `granted` (`name=requested` each)."""
    over = []
    for name, quantity in sorted(requested.items()):
        if quantity.value <= 0:
            continue
        have = in_use[name].value if name in in_use else Fraction(0)
        if name not in granted or have + quantity.value > granted[name].value:
            over.append(name)
    return over


def quota_refusal(
    over: list[str], *, quotas: Iterable[JSON], requested: Amounts, in_use: Amounts, granted: Amounts
) -> str:
    """Why a pod is refused, worded as Kubernetes' ResourceQuota admission words it, naming the Quotas."""
    names = ", ".join(sorted(f"{q['metadata']['namespace']}/{q['metadata']['name']}" for q in quotas))
    pairs = formatted({name: requested[name] for name in over})
    uses = formatted({name: in_use.get(name, Quantity(Fraction(0))) for name in over})
    grants = {name: str(granted[name]) if name in granted else "0 (not granted)" for name in over}

    def listed(values: Mapping[str, str]) -> str:
        return ",".join(f"{name}={value}" for name, value in sorted(values.items()))

    return f"exceeded quota: {names}, requested: {listed(pairs)}, used: {listed(uses)}, limited: {listed(grants)}"


def distributed(in_use: Amounts, quotas: Iterable[JSON]) -> dict[str, dict[str, str]]:
    """Quota name -> the `status.used` to write: the consumer's use, filled into its Quotas in name order up to
    each one's limits (the last takes what is left), so the Quotas' uses sum to what the consumer uses."""
    ordered = sorted(quotas, key=lambda q: str(q["metadata"]["name"]))
    left = dict(in_use)
    result: dict[str, dict[str, str]] = {}
    for index, item in enumerate(ordered):
        cap = amounts(nested(item, "spec", "limits"))
        share: Amounts = {}
        last = index == len(ordered) - 1
        for name, quantity in left.items():
            if last:
                take = quantity.value
            elif name in cap:
                take = min(quantity.value, cap[name].value)
            else:
                take = Fraction(0)
            share[name] = Quantity(take, quantity.format)
            left[name] = Quantity(quantity.value - take, quantity.format)
        result[str(item["metadata"]["name"])] = formatted(
            {name: quantity for name, quantity in share.items() if quantity.value > 0 or name in cap}
        )
    return result


def tenant_of(namespace: JSON | None) -> str:
    """The tenant namespace of the consumer a twin namespace belongs to ("" for any other namespace)."""
    annotations = nested(namespace, "metadata", "annotations") or {}
    return str(annotations.get(c.ANNOTATION_NAMESPACE_MAP) or "").partition("/")[0]
