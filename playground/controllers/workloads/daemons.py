"""What the DaemonSet controller decides per node, as pure functions (`pkg/controller/daemon` and its util).

- `daemon_pod_template`: the template plus kube's default daemon tolerations (not-ready
  and unreachable NoExecute for ever; disk, memory and pid pressure and unschedulable
  NoSchedule; network-unavailable for host-network pods) and the revision hash label;
- `pin_to_node`: a required node affinity `metadata.name In [node]`, so the scheduler
  binds the pod to its node;
- `should_run`: (should run, should keep running) for a node, from nodeName,
  nodeSelector/affinity and taints (NoExecute taints evict, NoSchedule only keep new
  pods away);
- `target_node`: the node a daemon pod is for, bound or not.
"""

from __future__ import annotations

import copy

from playground.scheduler.taints import NO_EXECUTE, NO_SCHEDULE, untolerated_taint
from runtime.api.objects import JSON
from runtime.api.selectors import required_node_affinity_matches

from . import names
from .scheduling import add_toleration, node_taints

#: the annotation kube-apiserver keeps a DaemonSet's template generation in, and the pods' label for it
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
TEMPLATE_GENERATION_LABEL = "pod-template-generation"


def add_daemon_tolerations(spec: JSON) -> None:
    """`AddOrUpdateDaemonPodTolerations`."""
    for key in (names.TAINT_NOT_READY, names.TAINT_UNREACHABLE):
        add_toleration(spec, {"key": key, "operator": "Exists", "effect": NO_EXECUTE})
    for key in (
        names.TAINT_DISK_PRESSURE,
        names.TAINT_MEMORY_PRESSURE,
        names.TAINT_PID_PRESSURE,
        names.TAINT_UNSCHEDULABLE,
    ):
        add_toleration(spec, {"key": key, "operator": "Exists", "effect": NO_SCHEDULE})
    if spec.get("hostNetwork"):
        add_toleration(
            spec, {"key": names.TAINT_NETWORK_UNAVAILABLE, "operator": "Exists", "effect": NO_SCHEDULE}
        )


def template_generation(ds: JSON) -> str | None:
    return ((ds.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)


def daemon_pod_template(ds: JSON, revision_hash: str) -> JSON:
    """`CreatePodTemplate`: the DaemonSet's template with daemon tolerations and revision labels."""
    template = copy.deepcopy((ds.get("spec") or {}).get("template") or {})
    add_daemon_tolerations(template.setdefault("spec", {}))
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    generation = template_generation(ds)
    if generation is not None:
        labels[TEMPLATE_GENERATION_LABEL] = generation
    if revision_hash:
        labels[names.CONTROLLER_REVISION_HASH] = revision_hash
    return template


def pin_to_node(spec: JSON, node_name: str) -> None:
    """`ReplaceDaemonSetPodNodeNameNodeAffinity`: the required node terms become `metadata.name In [node]`."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
    affinity = spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    required["nodeSelectorTerms"] = [term]


def should_run(ds: JSON, node: JSON) -> tuple[bool, bool]:
    """(should a daemon pod run on `node`, should one already there keep running) (`NodeShouldRunDaemonPod`)."""
    template_spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    node_name = str((node.get("metadata") or {}).get("name"))
    if template_spec.get("nodeName") not in (None, "", node_name):
        return False, False
    pod_spec = copy.deepcopy(template_spec)
    pod_spec["nodeName"] = node_name
    add_daemon_tolerations(pod_spec)
    if not required_node_affinity_matches(pod_spec, node):
        return False, False
    taints = node_taints(node)
    tolerations = pod_spec.get("tolerations") or []
    if untolerated_taint(taints, tolerations, effects=(NO_SCHEDULE, NO_EXECUTE)) is None:
        return True, True
    return False, untolerated_taint(taints, tolerations, effects=(NO_EXECUTE,)) is None


def target_node(pod: JSON) -> str | None:
    """`GetTargetNodeName`: the pod's node, or the one its `metadata.name In [node]` affinity names."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            values = field.get("values") or []
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and len(values) == 1:
                return str(values[0])
    return None


def is_updated(pod: JSON, revision_hash: str, generation: str | None) -> bool:
    """`IsPodUpdated`: the pod carries the current revision hash (or template generation)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    hash_matches = bool(revision_hash) and labels.get(names.CONTROLLER_REVISION_HASH) == revision_hash
    generation_matches = generation is not None and labels.get(TEMPLATE_GENERATION_LABEL) == generation
    return hash_matches or generation_matches


def updated_and_old(
    pods: list[JSON], revision_hash: str, generation: str | None
) -> tuple[JSON | None, JSON | None, bool]:
    """(updated pod, old pod, at most one of each) of a node's daemon pods (`findUpdatedPodsOnNode`)."""
    new: JSON | None = None
    old: JSON | None = None
    for pod in pods:
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        if is_updated(pod, revision_hash, generation):
            if new is not None:
                return None, None, False
            new = pod
        else:
            if old is not None:
                return None, None, False
            old = pod
    return new, old, True
