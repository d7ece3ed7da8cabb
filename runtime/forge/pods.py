"""Offloaded pods, as pure functions: the consumer's pod to the provider's ShadowPod and Pod, and the status back.

Spec out (`shadow_pod`), as Liqo documents it:

- scheduling constraints go (node name and selector, affinity, tolerations, scheduler,
  priority, topology spread, scheduling gates): they speak of the consumer's nodes; the
  provider's scheduler places the pod among its own;
- a pod that does not meet Pod Security baseline (or restricted, when the peering asks for
  it: `runtime.forge.podsecurity`) is refused (`offloading_problems`): host namespaces,
  hostPath, privileged containers, added capabilities, host ports, unconfined profiles and
  the rest would hand the provider's hosts to the consumer. The consumer reports it on its
  pod; the provider checks again at admission and before it runs anything
  (`shadow_pod_problems`);
- the ServiceAccount token wiring follows the pod's API server support
  (`api_server_support`, Liqo's): by default (`TokenAPI`) it is rewritten so the pod
  authenticates to its home API server: every projected `serviceAccountToken` source reads
  a key of the pod's token Secret instead (`serviceaccounts.py` fills it with tokens of the
  pod's ServiceAccount, bound to the pod), `kube-root-ca.crt` becomes the home cluster's CA
  from the same Secret, and the namespace the pod reads is its home namespace; with the
  home API server's address known, `KUBERNETES_SERVICE_HOST`/`PORT` point there. Any other
  use of `kube-root-ca.crt` (a volume, an environment variable) reads the home cluster's,
  reflected under its own name (`configmaps.py`). `Disabled` drops the token sources (no
  token at all); `Remote` leaves the wiring alone and names the provider's ServiceAccount
  the pod runs as in the twin namespace, whose tokens the provider's kubelet mounts, for
  the provider's API server. Nothing is ever automounted on the provider;
- labels and annotations go filtered (`carried`: nothing under `kubernetes.io`, `k8s.io`,
  `liqo.io` or `cni.cncf.io` but the recommended application labels), then labels mark the
  origin (`liqo.io/managed-by=reflection`, the consumer's cluster id) and the consumer
  pod's uid is kept in an annotation, so a pod recreated with the same name is told apart.

The provider's Pod (`provider_pod`) is the ShadowPod's spec without scheduling
constraints, owned by the ShadowPod, labelled `liqo.io/managed-by=shadowpod`, its labels
and annotations filtered again: the provider never trusts what a consumer wrote.

Status back (`local_pod_status`): phase, conditions, container statuses (restart counts
plus the Pod's recreations on the provider), start time, the pod IPs through the network
fabric's translation (identity until there is one), and the virtual kubelet's own address
as the host IP.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from runtime.api import constants as c
from runtime.api.crds import SHADOWPODS
from runtime.api.objects import JSON, nested

from . import podsecurity
from .configmaps import ROOT_CA_CONFIGMAP, remote_configmap_name
from .meta import reflection_labels
from .podsecurity import DEFAULT_LEVEL, Level
from .reflection import TOKEN_API
from .serviceaccounts import TokenProjection, service_account_name, token_projections, token_secret_name

#: an offloaded pod's ServiceAccount tokens: its home API server's, the provider's, or none
APIServerSupport = Literal["TokenAPI", "Remote", "Disabled"]

#: fields of a pod spec that speak of the consumer's nodes and scheduling, dropped on the way out
SCHEDULING_FIELDS: Final = (
    "nodeName",
    "nodeSelector",
    "affinity",
    "tolerations",
    "schedulerName",
    "priority",
    "priorityClassName",
    "preemptionPolicy",
    "topologySpreadConstraints",
    "schedulingGates",
    "overhead",
)
#: fields that would tie the pod to the provider's ServiceAccounts instead of its own
SERVICE_ACCOUNT_FIELDS: Final = ("serviceAccountName", "serviceAccount", "automountServiceAccountToken")
#: label and annotation domains of consumer pods never carried to the provider (see `carried`)
RESERVED_DOMAINS: Final = ("kubernetes.io", "k8s.io", "liqo.io", "cni.cncf.io")
#: unprefixed annotation keys container runtimes read (CRI-O's devices and user namespaces, containerd's, Kata's,
#: crun's), never carried either
RUNTIME_KEY_PREFIXES: Final = ("io.kubernetes.", "io.containerd.", "io.katacontainers.", "run.oci.")
#: keys under those domains that are carried: the recommended application labels, kubectl's default container
CARRIED_RESERVED_KEYS: Final = frozenset(
    {
        "app.kubernetes.io/name",
        "app.kubernetes.io/instance",
        "app.kubernetes.io/version",
        "app.kubernetes.io/component",
        "app.kubernetes.io/part-of",
        "app.kubernetes.io/managed-by",
        "kubectl.kubernetes.io/default-container",
    }
)
SECRET_CA_KEY: Final = "ca.crt"
SECRET_NAMESPACE_KEY: Final = "namespace"
#: the pod status fields the virtual kubelet writes back (reason and message cleared when the provider has none)
STATUS_FIELDS: Final = (
    "phase",
    "conditions",
    "message",
    "reason",
    "hostIP",
    "hostIPs",
    "podIP",
    "podIPs",
    "startTime",
    "containerStatuses",
    "initContainerStatuses",
)

#: a pod IP on the provider -> the address the consumer reaches it at (the network fabric's job)
Translate = Callable[[str], str]


@dataclass(frozen=True)
class PodOptions:
    #: the consumer's cluster id, marking what it reflected
    origin_cluster_id: str
    #: the consumer's API server as other clusters reach it ("": leave the pod's service environment alone)
    home_api_server: str = ""
    #: the installation's API server support (`runtime.forge.reflection.ReflectionOptions.api_server_support`)
    api_server_support: str = TOKEN_API


def api_server_support(pod: JSON, *, default: str = TOKEN_API) -> APIServerSupport:
    """What the pod's ServiceAccount tokens on the provider are for (Liqo's `getAPIServerSupport`):
    `liqo.io/api-server-support: remote` the provider's API server, `disabled` none; otherwise the
    installation's `default` (TokenAPI: the pod's home API server; Disabled: none)."""
    asked = nested(pod, "metadata", "annotations", default={}).get(c.ANNOTATION_API_SERVER_SUPPORT)
    if asked == c.API_SERVER_SUPPORT_REMOTE:
        return "Remote"
    if asked == c.API_SERVER_SUPPORT_DISABLED or default != TOKEN_API:
        return "Disabled"
    return "TokenAPI"


def remote_service_account(pod: JSON) -> str:
    """The provider's ServiceAccount a pod in `Remote` mode runs as: `liqo.io/remote-service-account-name`,
    else its own ServiceAccount's name."""
    named = nested(pod, "metadata", "annotations", default={}).get(c.ANNOTATION_REMOTE_SERVICE_ACCOUNT_NAME)
    return str(named) if named else service_account_name(pod)


def offloading_problems(pod: Mapping[str, Any], *, level: Level = DEFAULT_LEVEL) -> list[str]:
    """Why a pod cannot run on a provider holding pods to Pod Security `level` (empty: it can).

    The pod is checked as the provider would run it: its annotations filtered (`carried`),
    which drops the AppArmor annotations among the rest.
    """
    meta = pod.get("metadata") or {}
    return podsecurity.violations(
        pod.get("spec"), enforced=level, annotations=carried(meta.get("annotations"))
    )


def is_carried(key: str) -> bool:
    """Whether a label or annotation of a consumer's pod may reach the provider's Pod (see `carried`)."""
    if key in CARRIED_RESERVED_KEYS:
        return True
    prefix, slash, _ = key.rpartition("/")
    if not slash:
        return not key.startswith(RUNTIME_KEY_PREFIXES)
    return not under_domain(prefix, RESERVED_DOMAINS)


def under_domain(prefix: str, domains: Iterable[str]) -> bool:
    """Whether a label key's prefix is one of `domains` or a subdomain of one."""
    return any(prefix == domain or prefix.endswith(f".{domain}") for domain in domains)


def carried(entries: Any) -> dict[str, str]:
    """The labels (or annotations) of a consumer's pod the provider's Pod may carry.

    Keys under `kubernetes.io` and `k8s.io` mean something to the provider's kubelet,
    controllers or admission (AppArmor profiles, bandwidth, eviction, Pod Security), keys
    under `liqo.io` to its runtime (what is reflected, by whom: a consumer must not pass for
    the reflection of another), `cni.cncf.io` to its network plugin (Multus attachments),
    and the unprefixed `io.kubernetes.*`, `io.containerd.*`, `io.katacontainers.*`,
    `run.oci.*` to its container runtime (devices, user namespaces): all are dropped, except
    the recommended `app.kubernetes.io` labels and kubectl's default container
    (`CARRIED_RESERVED_KEYS`).
    """
    if not isinstance(entries, Mapping):
        return {}
    return {str(key): str(value) for key, value in entries.items() if is_carried(str(key))}


def _all_containers(spec: Mapping[str, Any]) -> Iterable[JSON]:
    for key in podsecurity.CONTAINER_LISTS:
        yield from spec.get(key) or []


def is_daemon_set_pod(pod: JSON) -> bool:
    return any(
        ref.get("kind") == "DaemonSet" and ref.get("controller")
        for ref in nested(pod, "metadata", "ownerReferences") or []
    )


def _rewritten_source(
    source: JSON, *, secret: str, projections: Mapping[tuple[tuple[str, ...], int], str]
) -> JSON:
    """One projected source of the pod, reading the token Secret where it spoke of this cluster."""
    token = source.get("serviceAccountToken")
    if token is not None:
        key = projections[TokenProjection.key_of(token)]
        return {"secret": {"name": secret, "items": [{"key": key, "path": token.get("path") or "token"}]}}
    config_map = source.get("configMap")
    if config_map is not None and config_map.get("name") == ROOT_CA_CONFIGMAP:
        items = config_map.get("items") or [{"key": SECRET_CA_KEY, "path": SECRET_CA_KEY}]
        return {"secret": {"name": secret, "items": [dict(item) for item in items]}}
    downward = source.get("downwardAPI")
    if downward is not None:
        namespace_items = [
            item
            for item in downward.get("items") or []
            if nested(item, "fieldRef", "fieldPath") == "metadata.namespace"
        ]
        if namespace_items and len(namespace_items) == len(downward.get("items") or []):
            return {
                "secret": {
                    "name": secret,
                    "items": [
                        {"key": SECRET_NAMESPACE_KEY, "path": item["path"]} for item in namespace_items
                    ],
                }
            }
    return copy.deepcopy(source)


def _service_environment(home_api_server: str) -> list[JSON]:
    parts = urlsplit(home_api_server)
    if not parts.hostname:
        return []
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return [
        {"name": "KUBERNETES_SERVICE_HOST", "value": parts.hostname},
        {"name": "KUBERNETES_SERVICE_PORT", "value": str(port)},
        {"name": "KUBERNETES_SERVICE_PORT_HTTPS", "value": str(port)},
    ]


def _remap_root_ca(spec: JSON, name: str) -> None:
    """Point every remaining reference to `kube-root-ca.crt` (volumes, environment) at its copy `name`."""
    for volume in spec.get("volumes") or []:
        sources = [
            volume.get("configMap"),
            *(s.get("configMap") for s in nested(volume, "projected", "sources") or []),
        ]
        for source in sources:
            if source is not None and source.get("name") == ROOT_CA_CONFIGMAP:
                source["name"] = name
    for container in _all_containers(spec):
        for entry in container.get("env") or []:
            ref = nested(entry, "valueFrom", "configMapKeyRef")
            if ref is not None and ref.get("name") == ROOT_CA_CONFIGMAP:
                ref["name"] = name
        for entry in container.get("envFrom") or []:
            ref = entry.get("configMapRef")
            if ref is not None and ref.get("name") == ROOT_CA_CONFIGMAP:
                ref["name"] = name


def _without_tokens(spec: JSON) -> None:
    """Drop every projected `serviceAccountToken` source (a pod whose API server support is Disabled)."""
    for volume in spec.get("volumes") or []:
        projected = volume.get("projected")
        if projected is not None:
            projected["sources"] = [
                s for s in projected.get("sources") or [] if "serviceAccountToken" not in s
            ]


def remote_pod_spec(pod: JSON, *, options: PodOptions) -> JSON:
    """The pod's spec as the provider runs it (see the module's docstring)."""
    spec = copy.deepcopy(pod.get("spec") or {})
    for field in (*SCHEDULING_FIELDS, *SERVICE_ACCOUNT_FIELDS):
        spec.pop(field, None)
    spec["automountServiceAccountToken"] = False
    support = api_server_support(pod, default=options.api_server_support)
    if support == "Remote":
        spec["serviceAccountName"] = remote_service_account(pod)
        return spec
    if support == "Disabled":
        _without_tokens(spec)
    projections = (
        {projection.identity: projection.key for projection in token_projections(pod)}
        if support == "TokenAPI"
        else {}
    )
    if projections:
        secret = token_secret_name(str(pod["metadata"]["name"]))
        for volume in spec.get("volumes") or []:
            projected = volume.get("projected")
            if projected is not None:
                projected["sources"] = [
                    _rewritten_source(source, secret=secret, projections=projections)
                    for source in projected.get("sources") or []
                ]
        environment = _service_environment(options.home_api_server)
        if environment:
            names = {entry["name"] for entry in environment}
            for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
                kept = [entry for entry in container.get("env") or [] if entry.get("name") not in names]
                container["env"] = [*kept, *environment]
    _remap_root_ca(
        spec, remote_configmap_name(ROOT_CA_CONFIGMAP, origin_cluster_id=options.origin_cluster_id)
    )
    return spec


def shadow_pod(pod: JSON, *, remote_namespace: str, options: PodOptions) -> JSON:
    """The ShadowPod standing for the consumer's `pod` in its twin namespace on the provider."""
    meta = pod["metadata"]
    return {
        "apiVersion": SHADOWPODS.api_version,
        "kind": SHADOWPODS.kind,
        "metadata": {
            "name": meta["name"],
            "namespace": remote_namespace,
            "labels": {
                **carried(meta.get("labels")),
                **reflection_labels(origin_cluster_id=options.origin_cluster_id),
            },
            "annotations": {
                **carried(meta.get("annotations")),
                c.ANNOTATION_ORIGIN_POD_UID: str(meta["uid"]),
            },
        },
        "spec": {"pod": remote_pod_spec(pod, options=options)},
    }


def origin_uid(shadow: JSON) -> str:
    return str(nested(shadow, "metadata", "annotations", c.ANNOTATION_ORIGIN_POD_UID) or "")


def shadow_differs(current: JSON, desired: JSON) -> bool:
    """Whether the ShadowPod on the provider says something else than `desired` (labels, annotations, spec)."""
    have, want = current.get("metadata") or {}, desired["metadata"]
    return (
        nested(current, "spec", "pod") != desired["spec"]["pod"]
        or (have.get("labels") or {}) != want["labels"]
        or any(nested(have, "annotations", k) != v for k, v in want["annotations"].items())
    )


# the provider's Pod


def provider_pod_spec(shadow: JSON) -> JSON:
    """The spec of the Pod a provider runs for a ShadowPod: the ShadowPod's, with no scheduling constraint
    (placement is the provider's) and no token automounted. A ServiceAccount the ShadowPod names (a pod in
    `Remote` mode) is one of its own twin namespace, where the Pod runs: the tokens its volumes project are that
    ServiceAccount's, with the rights this cluster gave it (the namespace's `default` has none of its own)."""
    spec = copy.deepcopy(nested(shadow, "spec", "pod") or {})
    named = spec.get("serviceAccountName")
    for field in (*SCHEDULING_FIELDS, *SERVICE_ACCOUNT_FIELDS):
        spec.pop(field, None)
    if named:
        spec["serviceAccountName"] = named
    spec["automountServiceAccountToken"] = False
    return spec


def provider_pod(shadow: JSON, *, origin_cluster_id: str) -> JSON:
    """The Pod a provider keeps for a ShadowPod: `provider_pod_spec`, owned by it, with the labels and
    annotations `carried`, marked with the consumer's cluster id (`origin_cluster_id`: its twin
    namespace's, never the ShadowPod's own label)."""
    meta = shadow["metadata"]
    labels = {
        **carried(meta.get("labels")),
        c.LABEL_REFLECTION_MANAGED_BY: c.MANAGED_BY_SHADOWPOD,
        c.LABEL_ORIGIN_CLUSTER_ID: origin_cluster_id,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "labels": labels,
            "annotations": carried(meta.get("annotations")),
            "ownerReferences": [
                {
                    "apiVersion": shadow.get("apiVersion", SHADOWPODS.api_version),
                    "kind": SHADOWPODS.kind,
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": False,
                }
            ],
        },
        "spec": provider_pod_spec(shadow),
    }


def shadow_pod_problems(shadow: JSON, *, level: Level = DEFAULT_LEVEL) -> list[str]:
    """Why a provider must not run a ShadowPod's pod at Pod Security `level` (empty: it may)."""
    meta = shadow.get("metadata") or {}
    return podsecurity.violations(
        provider_pod_spec(shadow), enforced=level, annotations=carried(meta.get("annotations"))
    )


def is_pod_of(pod: JSON, shadow: JSON) -> bool:
    uid = shadow["metadata"].get("uid")
    return any(
        ref.get("uid") == uid and ref.get("controller")
        for ref in pod["metadata"].get("ownerReferences") or []
    )


def image_updates(pod: JSON, shadow: JSON) -> list[JSON]:
    """The containers whose image the ShadowPod changed (images are a Pod's mutable part), as patch entries."""
    running = {
        container.get("name"): container.get("image") for container in nested(pod, "spec", "containers") or []
    }
    wanted = nested(shadow, "spec", "pod", "containers") or []
    return [
        {"name": container["name"], "image": container["image"]}
        for container in wanted
        if container.get("name") in running and running[container.get("name")] != container.get("image")
    ]


# status back


def _container_statuses(statuses: Iterable[JSON] | None, recreations: int) -> list[JSON]:
    return [
        {**entry, "restartCount": int(entry.get("restartCount") or 0) + recreations}
        for entry in statuses or []
    ]


def local_pod_status(remote: JSON, *, recreations: int, host_ip: str, translate: Translate) -> JSON:
    """The consumer pod's status from the provider's Pod (`STATUS_FIELDS`, each present: None clears it)."""
    status = remote.get("status") or {}
    pod_ips = [translate(str(entry.get("ip"))) for entry in status.get("podIPs") or [] if entry.get("ip")]
    if not pod_ips and status.get("podIP"):
        pod_ips = [translate(str(status["podIP"]))]
    return {
        "phase": status.get("phase") or "Pending",
        "conditions": copy.deepcopy(status.get("conditions") or []),
        "message": status.get("message"),
        "reason": status.get("reason"),
        "hostIP": host_ip or None,
        "hostIPs": [{"ip": host_ip}] if host_ip else None,
        "podIP": pod_ips[0] if pod_ips else None,
        "podIPs": [{"ip": ip} for ip in pod_ips] or None,
        "startTime": status.get("startTime"),
        "containerStatuses": _container_statuses(status.get("containerStatuses"), recreations) or None,
        "initContainerStatuses": _container_statuses(status.get("initContainerStatuses"), recreations)
        or None,
    }


def backoff_status(pod: JSON, *, message: str, now: str) -> JSON:
    """A pod the virtual kubelet does not offload: Pending, and not Ready, with the reason `OffloadingBackOff`."""
    current = nested(pod, "status", "conditions") or []
    previous = next((entry for entry in current if entry.get("type") == "Ready"), None)
    stays = previous is not None and previous.get("status") == "False" and previous.get("lastTransitionTime")
    ready = {
        "type": "Ready",
        "status": "False",
        "reason": c.REASON_OFFLOADING_BACKOFF,
        "message": message,
        "lastTransitionTime": previous["lastTransitionTime"] if stays and previous is not None else now,
    }
    kept = [copy.deepcopy(entry) for entry in current if entry.get("type") != "Ready"]
    return {
        "phase": "Pending",
        "reason": c.REASON_OFFLOADING_BACKOFF,
        "message": message,
        "conditions": [*kept, ready],
    }


def status_changes(current: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> JSON:
    """The fields of `desired` that differ from the pod's `current` status (a merge patch of the status).

    Null and absent are the same (the API writes `lastProbeTime: null` into conditions it was sent without).
    """
    current = current or {}
    return {
        key: value for key, value in desired.items() if _normalized(current.get(key)) != _normalized(value)
    }


def _normalized(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _normalized(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_normalized(v) for v in value]
    return value
