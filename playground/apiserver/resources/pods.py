"""Pods: defaulting, validation, status on create, graceful deletion.

Pod templates of workload kinds (Deployments, ReplicaSets, ...) share the spec
defaulting and validation below, as they do in kube-apiserver.
"""

from __future__ import annotations

import copy
from typing import Any

from ..errors import Cause
from ..validation import dns_label_errors, invalid_value
from .base import Obj, Strategy

TERMINAL_PHASES = ("Succeeded", "Failed")
DEFAULT_GRACE_SECONDS = 30
#: a kubelet's copy of one of its static pods carries it
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"

#: the only spec fields an update may change (besides image, handled separately)
_MUTABLE_SPEC_FIELDS = (
    "activeDeadlineSeconds",
    "terminationGracePeriodSeconds",
    "tolerations",
    "schedulingGates",
)


def _image_pull_policy(image: str) -> str:
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    tag = last.split(":", 1)[1] if ":" in last else "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def _default_container(container: Obj) -> None:
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    if isinstance(container.get("image"), str):
        container.setdefault("imagePullPolicy", _image_pull_policy(container["image"]))
    container.setdefault("resources", {})
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for env in container.get("env") or []:
        ref = env.get("valueFrom", {}).get("fieldRef") if isinstance(env, dict) else None
        if isinstance(ref, dict):
            ref.setdefault("apiVersion", "v1")


def default_pod_spec(spec: Obj) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for container in spec.get(key) or []:
            if isinstance(container, dict):
                _default_container(container)
    for volume in spec.get("volumes") or []:
        if isinstance(volume, dict) and not any(k != "name" for k in volume):
            volume["emptyDir"] = {}
        secret = volume.get("secret") if isinstance(volume, dict) else None
        if isinstance(secret, dict):
            secret.setdefault("defaultMode", 0o644)
        config_map = volume.get("configMap") if isinstance(volume, dict) else None
        if isinstance(config_map, dict):
            config_map.setdefault("defaultMode", 0o644)
        projected = volume.get("projected") if isinstance(volume, dict) else None
        if isinstance(projected, dict):
            projected.setdefault("defaultMode", 0o644)


def default_requests_from_limits(spec: Obj) -> None:
    """A container's missing requests take its limits, resource by resource.

    kube-apiserver does this for Pods only (`SetDefaults_Pod`), not for pod templates.
    """
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            resources = container.get("resources") if isinstance(container, dict) else None
            limits = resources.get("limits") if isinstance(resources, dict) else None
            if not isinstance(resources, dict) or not isinstance(limits, dict) or not limits:
                continue
            requests = resources.get("requests")
            if not isinstance(requests, dict):
                requests = resources["requests"] = {}
            for name, quantity in limits.items():
                requests.setdefault(name, quantity)


def validate_pod_spec(spec: Any, path: str) -> list[Cause]:
    if not isinstance(spec, dict):
        return [Cause(path, "Required value", "FieldValueRequired")]
    causes: list[Cause] = []
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        causes.append(Cause(f"{path}.containers", "Required value", "FieldValueRequired"))
        containers = []
    names: set[str] = set()
    for key in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(key) or []):
            field = f"{path}.{key}[{i}]"
            if not isinstance(container, dict):
                causes.append(Cause(field, "Invalid value: must be an object", "FieldValueTypeInvalid"))
                continue
            name = container.get("name")
            if not name:
                causes.append(Cause(f"{field}.name", "Required value", "FieldValueRequired"))
            elif name in names:
                causes.append(Cause(f"{field}.name", f'Duplicate value: "{name}"', "FieldValueDuplicate"))
            else:
                names.add(name)
                causes += [
                    Cause(f"{field}.name", f"{invalid_value(name)}: {e}") for e in dns_label_errors(name)
                ]
            if not container.get("image"):
                causes.append(Cause(f"{field}.image", "Required value", "FieldValueRequired"))
            for j, port in enumerate(container.get("ports") or []):
                cp = port.get("containerPort") if isinstance(port, dict) else None
                if not isinstance(cp, int) or not 0 < cp < 65536:
                    causes.append(
                        Cause(
                            f"{field}.ports[{j}].containerPort",
                            f"{invalid_value(cp)}: must be between 1 and 65535, inclusive",
                        )
                    )
    policy = spec.get("restartPolicy")
    if policy not in ("Always", "OnFailure", "Never"):
        causes.append(
            Cause(
                f"{path}.restartPolicy",
                f'Unsupported value: "{policy}": supported values: "Always", "OnFailure", "Never"',
                "FieldValueNotSupported",
            )
        )
    return causes


def _qos_class(spec: Obj) -> str:
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    requests = [c.get("resources", {}).get("requests") or {} for c in containers]
    limits = [c.get("resources", {}).get("limits") or {} for c in containers]
    if not any(requests) and not any(limits):
        return "BestEffort"
    guaranteed = all(
        lim.get("cpu")
        and lim.get("memory")
        and req.get("cpu", lim["cpu"]) == lim["cpu"]
        and req.get("memory", lim["memory"]) == lim["memory"]
        for req, lim in zip(requests, limits, strict=True)
    )
    return "Guaranteed" if guaranteed else "Burstable"


def _without_images(spec: Obj) -> Obj:
    spec = copy.deepcopy(spec)
    for field in _MUTABLE_SPEC_FIELDS:
        spec.pop(field, None)
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            if isinstance(container, dict):
                container.pop("image", None)
    return spec


class PodStrategy(Strategy):
    return_deleted_object = True

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            default_pod_spec(spec)
            default_requests_from_limits(spec)

    def prepare_for_create(self, obj: Obj, *, status_subresource: bool) -> None:
        spec = obj.get("spec")
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(spec if isinstance(spec, dict) else {})}

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        """podStatusStrategy: `pods/status` takes the spec and owner references from the stored pod, but keeps the
        labels, annotations and finalizers it was sent (which is why NodeRestriction checks a kubelet's labels)."""
        new["spec"] = copy.deepcopy(old.get("spec") or {})
        meta, old_meta = new.setdefault("metadata", {}), old.get("metadata") or {}
        meta.pop("ownerReferences", None)
        if "ownerReferences" in old_meta:
            meta["ownerReferences"] = copy.deepcopy(old_meta["ownerReferences"])

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validate_pod_spec(obj.get("spec"), "spec")
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if MIRROR_POD_ANNOTATION in annotations and not (obj.get("spec") or {}).get("nodeName"):
            causes.append(
                Cause(
                    f"metadata.annotations[{MIRROR_POD_ANNOTATION}]",
                    f'Invalid value: "{annotations[MIRROR_POD_ANNOTATION]}": must set spec.nodeName if mirror pod '
                    "annotation is set",
                )
            )
        return causes

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(new)
        if _without_images(new.get("spec") or {}) != _without_images(old.get("spec") or {}):
            causes.append(
                Cause(
                    "spec",
                    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
                    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
                    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                    "(allow it to be set to 1 if it was previously negative)",
                    "FieldValueForbidden",
                )
            )
        return causes

    def field_labels(self, obj: Obj) -> dict[str, str]:
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        return {
            "spec.nodeName": spec.get("nodeName", ""),
            "spec.restartPolicy": spec.get("restartPolicy", ""),
            "spec.schedulerName": spec.get("schedulerName", ""),
            "spec.serviceAccountName": spec.get("serviceAccountName", ""),
            "spec.hostNetwork": str(bool(spec.get("hostNetwork", False))).lower(),
            "status.phase": status.get("phase", ""),
            "status.podIP": status.get("podIP", ""),
            "status.nominatedNodeName": status.get("nominatedNodeName", ""),
        }

    def graceful_delete_seconds(self, obj: Obj, requested: int | None) -> int | None:
        """A pod on a node waits for its kubelet; an unscheduled or finished pod goes at once."""
        spec = obj.get("spec") or {}
        if not spec.get("nodeName") or (obj.get("status") or {}).get("phase") in TERMINAL_PHASES:
            return 0
        if requested is not None:
            return requested
        grace = spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
        return int(grace) if isinstance(grace, int) else DEFAULT_GRACE_SECONDS


class PodTemplateStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        spec = (obj.get("template") or {}).get("spec")
        if isinstance(spec, dict):
            default_pod_spec(spec)
