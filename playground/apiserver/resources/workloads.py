"""Workload kinds (apps/v1, batch/v1): generation, defaults, selector rules.

Their controllers are ordinary API clients in the playground; the API server only
defaults, validates and tracks generation, as kube-apiserver does.
"""

from __future__ import annotations

from typing import Any

from ..errors import Cause
from ..selectors import label_selector_matches
from ..validation import immutable
from .base import Obj, Strategy
from .pods import default_pod_spec, validate_pod_spec

_DEFAULTS: dict[str, dict[str, Any]] = {
    "Deployment": {
        "replicas": 1,
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
        "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 600,
    },
    "ReplicaSet": {"replicas": 1},
    "DaemonSet": {
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
        "revisionHistoryLimit": 10,
    },
    "StatefulSet": {
        "replicas": 1,
        "podManagementPolicy": "OrderedReady",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        "revisionHistoryLimit": 10,
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
    },
    "Job": {"parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False},
}


#: status fields Go serializes even when zero (no `omitempty`), as a fresh object shows them
_ZERO_STATUS: dict[str, dict[str, int]] = {
    "ReplicaSet": {"replicas": 0},
    "ReplicationController": {"replicas": 0},
    "StatefulSet": {"replicas": 0, "availableReplicas": 0},
    "DaemonSet": {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    },
}


#: (strategy field, rolling type, rolling-update defaults) per kind, as SetDefaults_<Kind> fills them
_ROLLING: dict[str, tuple[str, dict[str, Any]]] = {
    "Deployment": ("strategy", {"maxUnavailable": "25%", "maxSurge": "25%"}),
    "DaemonSet": ("updateStrategy", {"maxUnavailable": 1, "maxSurge": 0}),
    "StatefulSet": ("updateStrategy", {"partition": 0}),
}


def _set_defaults(target: Obj, defaults: dict[str, Any]) -> None:
    for key, value in defaults.items():
        if key not in target:
            target[key] = _copy(value)


def _default_rolling_update(kind: str, spec: Obj) -> None:
    """An empty or RollingUpdate strategy gets its type and rolling parameters filled in."""
    if kind not in _ROLLING:
        return
    field, rolling = _ROLLING[kind]
    strategy = spec.get(field)
    if not isinstance(strategy, dict):
        return
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        params = strategy.get("rollingUpdate")
        if params is None:
            params = strategy["rollingUpdate"] = {}
        if isinstance(params, dict):
            _set_defaults(params, rolling)


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value


def default_workload_spec(kind: str, spec: Obj) -> None:
    """SetDefaults_<Kind> for a workload spec and its pod template."""
    if kind == "Job" and "completions" not in spec and "parallelism" not in spec:
        spec["completions"] = 1
    _set_defaults(spec, _DEFAULTS.get(kind, {}))
    _default_rolling_update(kind, spec)
    template_spec = (spec.get("template") or {}).get("spec")
    if isinstance(template_spec, dict):
        default_pod_spec(template_spec)


class CronJobStrategy(Strategy):
    """CronJobs: defaults for the schedule policy and for the pod template of the Job they stamp out.

    SetDefaults_CronJob leaves `jobTemplate.spec` itself alone (no backoffLimit,
    completions, parallelism): those are defaulted when the Job is created from it.
    """

    has_generation = True

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        _set_defaults(
            spec,
            {
                "concurrencyPolicy": "Allow",
                "suspend": False,
                "successfulJobsHistoryLimit": 3,
                "failedJobsHistoryLimit": 1,
            },
        )
        job_spec = (spec.get("jobTemplate") or {}).get("spec")
        template_spec = (job_spec.get("template") or {}).get("spec") if isinstance(job_spec, dict) else None
        if isinstance(template_spec, dict):
            default_pod_spec(template_spec)


class WorkloadStrategy(Strategy):
    """Deployment, ReplicaSet, DaemonSet, StatefulSet, Job: a selector over a pod template."""

    has_generation = True

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        default_workload_spec(self.kind, spec)

    def prepare_for_create(self, obj: Obj, *, status_subresource: bool) -> None:
        obj["status"] = dict(_ZERO_STATUS.get(self.kind, {}))

    def validate(self, obj: Obj) -> list[Cause]:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [Cause("spec", "Required value", "FieldValueRequired")]
        causes: list[Cause] = []
        template = spec.get("template")
        if not isinstance(template, dict):
            return [Cause("spec.template", "Required value", "FieldValueRequired")]
        causes += validate_pod_spec(template.get("spec"), "spec.template.spec")
        selector = spec.get("selector")
        labels = (template.get("metadata") or {}).get("labels") or {}
        if self.kind != "Job" or spec.get("manualSelector"):
            if not isinstance(selector, dict) or not (
                selector.get("matchLabels") or selector.get("matchExpressions")
            ):
                causes.append(Cause("spec.selector", "Required value", "FieldValueRequired"))
            elif not label_selector_matches(selector, labels, none_matches=False):
                causes.append(
                    Cause(
                        "spec.template.metadata.labels",
                        f"Invalid value: {_go_map(labels)}: `selector` does not match template `labels`",
                    )
                )
        replicas = spec.get("replicas")
        if replicas is not None and (not isinstance(replicas, int) or replicas < 0):
            causes.append(
                Cause("spec.replicas", f"Invalid value: {replicas}: must be greater than or equal to 0")
            )
        policy = (template.get("spec") or {}).get("restartPolicy")
        if self.kind == "Job" and policy not in ("OnFailure", "Never"):
            causes.append(
                Cause(
                    "spec.template.spec.restartPolicy",
                    f'Unsupported value: "{policy}": supported values: "OnFailure", "Never"',
                    "FieldValueNotSupported",
                )
            )
        if self.kind in ("Deployment", "ReplicaSet", "DaemonSet", "StatefulSet") and policy not in (
            None,
            "Always",
        ):
            causes.append(
                Cause(
                    "spec.template.spec.restartPolicy",
                    f'Unsupported value: "{policy}": supported values: "Always"',
                    "FieldValueNotSupported",
                )
            )
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        new_sel = (new.get("spec") or {}).get("selector")
        old_sel = (old.get("spec") or {}).get("selector")
        if self.kind != "Job" and old_sel is not None:
            causes += immutable("spec.selector", new_sel, old_sel)
        return causes


def _go_map(labels: dict[str, str]) -> str:
    inner = ", ".join(f'"{k}":"{v}"' for k, v in sorted(labels.items()))
    return f"map[string]string{{{inner}}}"
