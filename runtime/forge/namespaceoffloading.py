"""The NamespaceOffloading (what a user or a front end writes to offload a namespace) and its status.

`namespace_offloading()` is the object `liqo_offload` and the Pulumi component apply;
`offloading_status()` is what the runtime's controller reports, computed from the
NamespaceMaps of the peered clusters as Liqo does: per cluster (keyed by the cluster's
name) an `OffloadingRequired` condition (is it selected) and, once asked for, a `Ready`
one (does its twin namespace exist); the phase sums them up. `ClusterStatus` reads one
cluster's conditions back for the front ends.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runtime.api import constants as c
from runtime.api.crds import NAMESPACEOFFLOADINGS
from runtime.api.objects import JSON, nested
from runtime.api.selectors import node_selector_matches

from .namespaces import current_mapping, desired_mapping

READY = "Ready"
_REQUIRED = (
    True,
    "ClusterSelected",
    "The remote cluster has been selected through the ClusterSelector field",
)
_NOT_REQUIRED = (
    False,
    "ClusterNotSelected",
    "The remote cluster has not been selected through the ClusterSelector field",
)


def namespace_offloading(
    namespace: str,
    *,
    pod_offloading_strategy: str = c.POD_OFFLOADING_LOCAL_AND_REMOTE,
    namespace_mapping_strategy: str = c.MAPPING_DEFAULT_NAME,
    remote_namespace_name: str = "",
    cluster_selector_terms: Sequence[Mapping[str, Any]] = (),
) -> JSON:
    """The NamespaceOffloading `offloading` of `namespace`; `cluster_selector_terms` are node selector terms."""
    spec: JSON = {
        "namespaceMappingStrategy": namespace_mapping_strategy,
        "podOffloadingStrategy": pod_offloading_strategy,
        "clusterSelector": {"nodeSelectorTerms": [dict(term) for term in cluster_selector_terms]},
    }
    if remote_namespace_name:
        spec["remoteNamespaceName"] = remote_namespace_name
    return {
        "apiVersion": NAMESPACEOFFLOADINGS.api_version,
        "kind": NAMESPACEOFFLOADINGS.kind,
        "metadata": {"name": c.NAMESPACE_OFFLOADING_NAME, "namespace": namespace},
        "spec": spec,
    }


def node_selector_terms(terms: Iterable[Mapping[str, Any]] | None) -> list[JSON]:
    """The front ends' `cluster_selector_terms` (`match_expressions` of `key`, `operator`, `values`) as the
    API's node selector terms."""
    result = []
    for term in terms or []:
        expressions = []
        for requirement in (term or {}).get("match_expressions") or []:
            expression: JSON = {"key": requirement["key"], "operator": requirement["operator"]}
            if requirement.get("values"):
                expression["values"] = list(requirement["values"])
            expressions.append(expression)
        result.append({"matchExpressions": expressions})
    return result


def selector_terms(offloading: JSON) -> list[JSON]:
    """The cluster selector's terms (none: every remote cluster)."""
    selector = nested(offloading, "spec", "clusterSelector") or {}
    return [dict(term) for term in selector.get("nodeSelectorTerms") or []]


def pod_offloading_strategy(offloading: JSON) -> str:
    return str(nested(offloading, "spec", "podOffloadingStrategy") or c.POD_OFFLOADING_LOCAL_AND_REMOTE)


def mapping_strategy(offloading: JSON) -> str:
    return str(nested(offloading, "spec", "namespaceMappingStrategy") or c.MAPPING_DEFAULT_NAME)


def _condition(type: str, value: tuple[bool, str, str]) -> JSON:
    status, reason, message = value
    return {"type": type, "status": "True" if status else "False", "reason": reason, "message": message}


def _ready(entry: Mapping[str, Any] | None) -> tuple[bool, str, str]:
    phase = (entry or {}).get("phase")
    if phase == c.MAPPING_ACCEPTED:
        return True, "NamespaceCreated", "Namespace correctly offloaded to the remote cluster"
    if phase == c.MAPPING_CREATION_LOOP_BACKOFF:
        detail = str((entry or {}).get("message") or "")
        return (
            False,
            "CreationLoopBackOff",
            (
                f"The remote namespace cannot be created: {detail}"
                if detail
                else "Some problems occurred during remote namespace creation"
            ),
        )
    if phase == c.MAPPING_TERMINATING:
        return False, "Terminating", "The remote namespace is being deleted"
    return False, "Creating", "The remote namespace is being created"


def offloading_status(
    offloading: JSON,
    namespace_maps: Iterable[JSON],
    *,
    remote_namespace_name: str,
    current: Mapping[str, Any] | None = None,
    now: str,
) -> JSON:
    """The NamespaceOffloading's status from the NamespaceMaps of every peered cluster (named after it).

    `current` is the status it has (transition times are kept for conditions whose status stays).
    """
    meta = offloading["metadata"]
    namespace = str(meta["namespace"])
    deleting = bool(meta.get("deletionTimestamp"))
    previous = (current or {}).get("remoteNamespacesConditions") or {}
    required = ready = failed = 0
    per_cluster: dict[str, list[JSON]] = {}
    for namespace_map in namespace_maps:
        cluster = str(namespace_map["metadata"]["name"])
        requested = namespace in desired_mapping(namespace_map)
        entry = current_mapping(namespace_map).get(namespace)
        phase = (entry or {}).get("phase")
        required += requested
        ready += requested and phase == c.MAPPING_ACCEPTED
        failed += requested and phase == c.MAPPING_CREATION_LOOP_BACKOFF
        if deleting and not requested and entry is None:
            continue
        wanted = [_condition(c.CONDITION_OFFLOADING_REQUIRED, _REQUIRED if requested else _NOT_REQUIRED)]
        if requested or entry is not None:
            wanted.append(_condition(READY, _ready(entry)))
        per_cluster[cluster] = [_stamped(cond, previous.get(cluster), now) for cond in wanted]
    if deleting:
        phase_name = c.PHASE_TERMINATING
    elif required == 0:
        phase_name = c.PHASE_NO_CLUSTER_SELECTED
    elif ready == required:
        phase_name = c.PHASE_READY
    elif failed == required:
        phase_name = c.PHASE_ALL_FAILED
    elif failed:
        phase_name = c.PHASE_SOME_FAILED
    else:
        phase_name = c.PHASE_IN_PROGRESS
    return {
        "observedGeneration": meta.get("generation"),
        "offloadingPhase": phase_name,
        "remoteNamespaceName": remote_namespace_name,
        "remoteNamespacesConditions": per_cluster,
    }


def _stamped(condition: JSON, previous: Iterable[JSON] | None, now: str) -> JSON:
    same = next(
        (
            entry
            for entry in previous or ()
            if entry.get("type") == condition["type"] and entry.get("status") == condition["status"]
        ),
        None,
    )
    return {**condition, "lastTransitionTime": (same or {}).get("lastTransitionTime") or now}


def status_differs(current: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> bool:
    """Whether writing `desired` would change anything but transition times."""

    def stripped(status: Mapping[str, Any] | None) -> JSON:
        status = dict(status or {})
        status["remoteNamespacesConditions"] = {
            cluster: [{k: v for k, v in cond.items() if k != "lastTransitionTime"} for cond in conds]
            for cluster, conds in (status.get("remoteNamespacesConditions") or {}).items()
        }
        return status

    return stripped(current) != stripped(desired)


@dataclass(frozen=True)
class ClusterStatus:
    """One remote cluster's part of a NamespaceOffloading's status."""

    cluster: str
    selected: bool
    ready: bool
    reason: str
    message: str

    def __str__(self) -> str:
        if not self.selected:
            return f"{self.cluster}: not selected"
        state = "ready" if self.ready else "not ready"
        return f"{self.cluster}: {state} ({self.reason}): {self.message}"


def cluster_statuses(offloading: JSON) -> list[ClusterStatus]:
    """Every remote cluster the status speaks of, by name."""
    found = nested(offloading, "status", "remoteNamespacesConditions") or {}
    result = []
    for cluster, conds in sorted(found.items()):
        required: JSON = next(
            (cond for cond in conds if cond.get("type") == c.CONDITION_OFFLOADING_REQUIRED), {}
        )
        ready = next((cond for cond in conds if cond.get("type") == READY), None)
        shown = ready if ready is not None else required
        result.append(
            ClusterStatus(
                cluster=str(cluster),
                selected=required.get("status") == "True",
                ready=(ready or {}).get("status") == "True",
                reason=str(shown.get("reason") or ""),
                message=str(shown.get("message") or ""),
            )
        )
    return result


def selects(offloading: JSON, node: Mapping[str, Any]) -> bool:
    """Whether the cluster selector picks a virtual node (no terms: every one)."""
    terms = selector_terms(offloading)
    return not terms or node_selector_matches({"nodeSelectorTerms": terms}, node)
