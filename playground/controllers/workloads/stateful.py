"""What the StatefulSet controller derives per ordinal, as pure functions (`stateful_set_utils.go`).

Pods are `<set>-<ordinal>` with a stable identity (hostname, subdomain = serviceName,
labels `statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/pod-index`) and
storage: one PVC per volumeClaimTemplate named `<template>-<set>-<ordinal>`, mounted in
place of the template's volume of that name. Which revision an ordinal gets depends on
the rolling update's partition; which owners its PVCs get depends on the
persistentVolumeClaimRetentionPolicy.
"""

from __future__ import annotations

import copy
import re
from datetime import datetime

from runtime.api.objects import JSON

from . import history, names, pods
from .ownership import name, namespace, uid

_ORDINAL = re.compile(r"^(.*)-([0-9]+)$")
RETAIN = "Retain"
DELETE = "Delete"


def parent_and_ordinal(pod: JSON) -> tuple[str, int]:
    """(`<set>`, ordinal) from a pod's name; ordinal -1 when it has none (`getParentNameAndOrdinal`)."""
    match = _ORDINAL.match(name(pod))
    if match is None:
        return "", -1
    return match.group(1), int(match.group(2))


def ordinal_of(pod: JSON) -> int:
    return parent_and_ordinal(pod)[1]


def is_member(sts: JSON, pod: JSON) -> bool:
    """The pod's name says it is one of this StatefulSet's (`isMemberOf`)."""
    return parent_and_ordinal(pod)[0] == name(sts)


def replicas(sts: JSON) -> int:
    value = (sts.get("spec") or {}).get("replicas")
    return int(value) if value is not None else 1


def start_ordinal(sts: JSON) -> int:
    return int(((sts.get("spec") or {}).get("ordinals") or {}).get("start") or 0)


def in_range(sts: JSON, pod: JSON) -> bool:
    ordinal = ordinal_of(pod)
    return start_ordinal(sts) <= ordinal < start_ordinal(sts) + replicas(sts)


def pod_name(sts: JSON, ordinal: int) -> str:
    return f"{name(sts)}-{ordinal}"


def claim_name(template_name: str, sts: JSON, ordinal: int) -> str:
    return f"{template_name}-{name(sts)}-{ordinal}"


def revision_of(pod: JSON) -> str:
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(names.CONTROLLER_REVISION_HASH, ""))


def is_created(pod: JSON) -> bool:
    """The pod came from the API (an in-memory pod about to be created has no phase)."""
    return bool(pods.phase(pod))


def is_healthy(pod: JSON) -> bool:
    return pods.is_running_and_ready(pod) and not pods.is_terminating(pod)


def is_running_and_available(pod: JSON, min_ready_seconds: int, now: datetime) -> bool:
    return pods.phase(pod) == "Running" and pods.is_available(pod, min_ready_seconds, now)


def claims_for(sts: JSON, ordinal: int) -> dict[str, JSON]:
    """The PVCs of one ordinal by template name (`getPersistentVolumeClaims`), labelled with the selector's labels."""
    spec = sts.get("spec") or {}
    match_labels = (spec.get("selector") or {}).get("matchLabels") or {}
    claims: dict[str, JSON] = {}
    for template in spec.get("volumeClaimTemplates") or []:
        template_name = str((template.get("metadata") or {}).get("name"))
        claim = copy.deepcopy(template)
        meta = claim.setdefault("metadata", {})
        meta["name"] = claim_name(template_name, sts, ordinal)
        meta["namespace"] = namespace(sts)
        meta["labels"] = {**(meta.get("labels") or {}), **match_labels}
        claim.setdefault("apiVersion", "v1")
        claim.setdefault("kind", "PersistentVolumeClaim")
        claim.pop("status", None)
        claims[template_name] = claim
    return claims


def set_storage(sts: JSON, pod: JSON) -> None:
    """Mount each ordinal PVC under its template's name, replacing a template volume of that name (`updateStorage`)."""
    spec = pod.setdefault("spec", {})
    claims = claims_for(sts, ordinal_of(pod))
    volumes = [
        {"name": template_name, "persistentVolumeClaim": {"claimName": name(claim)}}
        for template_name, claim in claims.items()
    ]
    volumes += [volume for volume in spec.get("volumes") or [] if volume.get("name") not in claims]
    spec["volumes"] = volumes


def identity_labels(sts: JSON, ordinal: int) -> dict[str, str]:
    return {names.STATEFULSET_POD_NAME: pod_name(sts, ordinal), names.POD_INDEX: str(ordinal)}


def new_pod(sts: JSON, template_owner: JSON, ordinal: int, revision_name: str) -> JSON:
    """The pod for `ordinal` from `template_owner`'s template (the set at some revision), owned by `sts`."""
    template = (template_owner.get("spec") or {}).get("template") or {}
    pod = pods.pod_from_template(template, owner=sts, name=pod_name(sts, ordinal))
    meta = pod["metadata"]
    meta["labels"] = {
        **(meta.get("labels") or {}),
        **identity_labels(sts, ordinal),
        names.CONTROLLER_REVISION_HASH: revision_name,
    }
    pod["spec"]["hostname"] = pod_name(sts, ordinal)
    service = (sts.get("spec") or {}).get("serviceName")
    if service:
        pod["spec"]["subdomain"] = service
    set_storage(template_owner, pod)
    return pod


def versioned_pod(
    sts: JSON, *, current: JSON, update: JSON, current_revision: str, update_revision: str, ordinal: int
) -> JSON:
    """`newVersionedStatefulSetPod`: ordinals below the partition stay at the current revision."""
    strategy = (sts.get("spec") or {}).get("updateStrategy") or {}
    rolling = strategy.get("rollingUpdate")
    if strategy.get("type", "RollingUpdate") == "RollingUpdate" and (
        (rolling is None and ordinal < int((sts.get("status") or {}).get("currentReplicas") or 0))
        or (rolling is not None and ordinal < int(rolling.get("partition") or 0))
    ):
        return new_pod(sts, current, ordinal, current_revision)
    return new_pod(sts, update, ordinal, update_revision)


def at_revision(sts: JSON, revision: JSON) -> JSON:
    """The StatefulSet with the template a revision stores (`ApplyRevision`)."""
    clone = copy.deepcopy(sts)
    clone.setdefault("spec", {})["template"] = history.template_of(revision)
    return clone


def identity_matches(sts: JSON, pod: JSON) -> bool:
    parent, ordinal = parent_and_ordinal(pod)
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return (
        ordinal >= 0
        and parent == name(sts)
        and namespace(pod) == namespace(sts)
        and labels.get(names.STATEFULSET_POD_NAME) == name(pod)
    )


def storage_matches(sts: JSON, pod: JSON) -> bool:
    ordinal = ordinal_of(pod)
    if ordinal < 0:
        return False
    volumes = {volume.get("name"): volume for volume in (pod.get("spec") or {}).get("volumes") or []}
    for template_name, claim in claims_for(sts, ordinal).items():
        source = (volumes.get(template_name) or {}).get("persistentVolumeClaim") or {}
        if source.get("claimName") != name(claim):
            return False
    return True


def retention_policy(sts: JSON) -> tuple[str, str]:
    """(whenDeleted, whenScaled), Retain unless set."""
    policy = (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
    return str(policy.get("whenDeleted") or RETAIN), str(policy.get("whenScaled") or RETAIN)


def _reference(obj: JSON, api_version: str, kind: str) -> JSON:
    return {"apiVersion": api_version, "kind": kind, "name": name(obj), "uid": uid(obj)}


def claim_owners(sts: JSON, pod: JSON, claim: JSON) -> list[JSON]:
    """The owner references a PVC should carry under the retention policy (`updateClaimOwnerRefForSetAndPod`):
    the set when deleting the set deletes it, the pod of a scaled-down ordinal when scaling deletes it."""
    when_deleted, when_scaled = retention_policy(sts)
    scaled_down = not in_range(sts, pod)
    others = [
        ref
        for ref in (claim.get("metadata") or {}).get("ownerReferences") or []
        if ref.get("uid") not in (uid(sts), uid(pod))
    ]
    wanted: list[JSON] = []
    if when_deleted == DELETE and not (when_scaled == DELETE and scaled_down):
        wanted.append(_reference(sts, "apps/v1", "StatefulSet"))
    if when_scaled == DELETE and scaled_down and uid(pod):
        wanted.append(_reference(pod, "v1", "Pod"))
    return others + wanted


def claim_owners_match(sts: JSON, pod: JSON, claim: JSON) -> bool:
    def uids(refs: list[JSON]) -> set[str]:
        return {str(ref.get("uid")) for ref in refs}

    current = (claim.get("metadata") or {}).get("ownerReferences") or []
    return uids(current) == uids(claim_owners(sts, pod, claim))
