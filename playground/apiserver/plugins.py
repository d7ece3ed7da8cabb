"""Built-in admission plugins kube-apiserver enables by default, the ones clients notice.

- NamespaceLifecycle: no new objects in a missing or terminating namespace; the
  system namespaces cannot be deleted.
- ServiceAccount: pods get `default` as their ServiceAccount, which must exist, and a
  projected token volume (`kube-api-access-xxxxx`) mounted in every container; a
  mirror pod (a kubelet's copy of a static pod) is left as it is, and may reference
  neither a ServiceAccount nor a Secret.
- DefaultTolerationSeconds: pods tolerate not-ready/unreachable nodes for 300 s.
- Priority: pods get the priority of their PriorityClass (or the global default, or 0).

They run before the admission webhooks, as in kube-apiserver's default plugin order.
"""

from __future__ import annotations

import copy
import secrets
from collections.abc import Callable

from . import errors
from .registry import AdmissionAttributes
from .resources.base import Obj
from .resources.pods import MIRROR_POD_ANNOTATION

IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")
TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_EXPIRATION_SECONDS = 3607
TOLERATION_SECONDS = 300
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

Lookup = Callable[[str, str], Obj | None]


def _is_core(attrs: AdmissionAttributes, kind: str) -> bool:
    return attrs.rt.group == "" and attrs.rt.kind == kind


class NamespaceLifecycle:
    def __init__(self, *, namespace: Callable[[str], Obj | None]) -> None:
        self._namespace = namespace

    def validate(self, attrs: AdmissionAttributes) -> None:
        if attrs.operation == "DELETE" and _is_core(attrs, "Namespace") and attrs.name in IMMORTAL_NAMESPACES:
            raise errors.forbidden(
                f'namespaces "{attrs.name}" is forbidden: this namespace may not be deleted',
                resource="namespaces",
                name=attrs.name,
            )
        if attrs.operation != "CREATE" or not attrs.rt.namespaced or attrs.subresource:
            return
        ns = self._namespace(attrs.namespace)
        if ns is None:
            raise errors.not_found("namespaces", attrs.namespace)
        if (ns.get("status") or {}).get("phase") == "Terminating":
            refusal = errors.forbidden(
                f'{attrs.rt.plural} "{attrs.name}" is forbidden: unable to create new content in namespace '
                f"{attrs.namespace} because it is being terminated",
                resource=attrs.rt.plural,
                name=attrs.name,
                group=attrs.rt.group,
            )
            # controllers recognise this refusal by its cause (apierrors.HasStatusCause) and stay quiet
            refusal.details["causes"] = [
                {
                    "reason": "NamespaceTerminating",
                    "message": f"namespace {attrs.namespace} is being terminated",
                    "field": "metadata.namespace",
                }
            ]
            raise refusal


class ServiceAccountAdmission:
    def __init__(self, *, service_account: Lookup) -> None:
        self._service_account = service_account

    def mutate(self, attrs: AdmissionAttributes, pod: Obj) -> Obj:
        if attrs.operation != "CREATE" or not _is_core(attrs, "Pod") or attrs.subresource:
            return pod
        if MIRROR_POD_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {}):
            _check_mirror_pod(attrs, pod)
            return pod
        pod = copy.deepcopy(pod)
        spec = pod.setdefault("spec", {})
        name = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        spec["serviceAccountName"] = name
        spec["serviceAccount"] = name
        account = self._service_account(attrs.namespace, name)
        if account is None:
            raise errors.forbidden(
                f'pods "{attrs.name}" is forbidden: error looking up service account {attrs.namespace}/{name}: '
                f'serviceaccount "{name}" not found',
                resource="pods",
                name=attrs.name,
            )
        automount = spec.get("automountServiceAccountToken")
        if automount is None:
            automount = account.get("automountServiceAccountToken", True)
        if automount and not _has_token_mount(spec):
            _mount_token(spec)
        return pod


def _check_mirror_pod(attrs: AdmissionAttributes, pod: Obj) -> None:
    spec = pod.get("spec") or {}
    refused = ""
    if spec.get("serviceAccountName") or spec.get("serviceAccount"):
        refused = "service accounts"
    elif any(volume.get("secret") for volume in spec.get("volumes") or []) or any(
        source.get("secret")
        for volume in spec.get("volumes") or []
        for source in (volume.get("projected") or {}).get("sources") or []
    ):
        refused = "secrets"
    if refused:
        raise errors.forbidden(
            f'pods "{attrs.name}" is forbidden: a mirror pod may not reference {refused}',
            resource="pods",
            name=attrs.name,
        )


def _has_token_mount(spec: Obj) -> bool:
    return any(
        m.get("mountPath") == TOKEN_MOUNT_PATH
        for c in spec.get("containers") or []
        for m in c.get("volumeMounts") or []
    )


def _mount_token(spec: Obj) -> None:
    volume_name = "kube-api-access-" + "".join(secrets.choice(_NAME_ALPHABET) for _ in range(5))
    spec.setdefault("volumes", []).append(
        {
            "name": volume_name,
            "projected": {
                "defaultMode": 0o644,
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
                    {
                        "configMap": {
                            "name": "kube-root-ca.crt",
                            "items": [{"key": "ca.crt", "path": "ca.crt"}],
                        }
                    },
                    {
                        "downwardAPI": {
                            "items": [
                                {
                                    "path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                }
                            ]
                        }
                    },
                ],
            },
        }
    )
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            container.setdefault("volumeMounts", []).append(
                {"name": volume_name, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH}
            )


def default_tolerations(attrs: AdmissionAttributes, pod: Obj) -> Obj:
    if attrs.operation != "CREATE" or not _is_core(attrs, "Pod") or attrs.subresource:
        return pod
    pod = copy.deepcopy(pod)
    tolerations = pod.setdefault("spec", {}).setdefault("tolerations", [])
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(t.get("key") == key and t.get("effect") in ("NoExecute", None, "") for t in tolerations):
            tolerations.append(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": TOLERATION_SECONDS,
                }
            )
    return pod


class PriorityAdmission:
    """Pods get the priority of their PriorityClass (or the global default, or 0)."""

    def __init__(self, *, priority_classes: Callable[[], list[Obj]]) -> None:
        self._priority_classes = priority_classes

    def mutate(self, attrs: AdmissionAttributes, pod: Obj) -> Obj:
        if attrs.operation != "CREATE" or not _is_core(attrs, "Pod") or attrs.subresource:
            return pod
        spec = pod.get("spec")
        if not isinstance(spec, dict):
            return pod
        classes = {c["metadata"]["name"]: c for c in self._priority_classes()}
        name = spec.get("priorityClassName")
        if name:
            chosen = classes.get(name)
            if chosen is None:
                raise errors.forbidden(
                    f'pods "{attrs.name}" is forbidden: no PriorityClass with name {name} was found',
                    resource="pods",
                    name=attrs.name,
                )
        else:
            chosen = next((c for c in classes.values() if c.get("globalDefault")), None)
        value = int(chosen.get("value", 0)) if chosen else 0
        if "priority" in spec and spec["priority"] != value:
            raise errors.forbidden(
                f'pods "{attrs.name}" is forbidden: the integer value of priority ({spec["priority"]}) must not be '
                f"provided in pod spec; priority admission controller computed {value} from the given "
                "PriorityClass name",
                resource="pods",
                name=attrs.name,
            )
        pod = copy.deepcopy(pod)
        pod["spec"]["priority"] = value
        if chosen and chosen["metadata"]["name"] != name:
            pod["spec"]["priorityClassName"] = chosen["metadata"]["name"]
        pod["spec"].setdefault(
            "preemptionPolicy", (chosen or {}).get("preemptionPolicy", "PreemptLowerPriority")
        )
        return pod


#: the PriorityClasses kube-apiserver creates at start-up
SYSTEM_PRIORITY_CLASSES = (
    (
        "system-node-critical",
        2000001000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2000000000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
)


def system_priority_classes() -> list[Obj]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "globalDefault": False,
            "description": description,
            "preemptionPolicy": "PreemptLowerPriority",
        }
        for name, value, description in SYSTEM_PRIORITY_CLASSES
    ]
