"""Admission of ShadowPods on a provider: a consumer's pods within its quota and its Pod Security level.

A consumer's credential may write ShadowPods in its twin namespaces, so what it may make
the provider run is decided here, before anything is stored, as Liqo's ShadowPod webhook
does:

- a ShadowPod lives in a twin namespace (one a consumer's NamespaceMap asked for); its
  consumer is the tenant the namespace's `offloading.liqo.io/namespace-map` names, written
  by this cluster, never by the consumer;
- its pod meets the Pod Security level the twin namespace enforces (baseline, or
  restricted: `runtime.forge.podsecurity`);
- its consumer holds Quotas (it was granted a ResourceSlice), none of them cordoned, and
  the pod declares what their strictest `limitsEnforcement` asks (None, Soft, Hard);
- what it requests, with what the consumer's other ShadowPods take, fits in the sum of
  the Quotas' limits: the refusal names the Quotas, as Kubernetes' ResourceQuota does.

Usage is counted from the webhook's ShadowPod cache, summed per namespace as its events
arrive (`runtime.forge.quota.Usage`: a review adds up the consumer's twin namespaces, not
its every pod), plus what it admitted that the cache does not show yet (`Assumed`,
forgotten once the cache shows it, or after `ASSUMED_FOR` seconds); the checks of one
review run without a pause (the event loop), so two pods admitted back to back never both
take the last of a quota. Replicas of the webhook do not share that
memory: during a rolling update two of them may each admit one pod past a quota's edge.

An update that does not change the pod (labels, finalizers, the deletion itself) is
always admitted; one that does is checked again (quota only if it asks for more). A
dry run is checked but remembers nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from runtime.api.objects import JSON, nested
from runtime.core import Store
from runtime.forge import pods as forge_pods
from runtime.forge import podsecurity
from runtime.forge import quota as forge
from runtime.forge.quota import Usage
from runtime.forge.resourceslice import Amounts, total

from .review import forbidden

#: how long an admitted ShadowPod is counted from memory while the cache does not show it
ASSUMED_FOR = 30.0


def _requests(shadow: JSON) -> Amounts:
    try:
        return forge.shadow_pod_requests(shadow)
    except ValueError:
        return {}


@dataclass
class Assumed:
    """ShadowPods admitted and not yet seen in the cache: key -> (what they take, when admitted)."""

    clock: Callable[[], float] = time.monotonic
    entries: dict[str, tuple[Amounts, float]] = field(default_factory=dict)

    def add(self, key: str, requests: Amounts) -> None:
        self.entries[key] = (requests, self.clock())

    def seen(self, kind: str, shadow: JSON, old: JSON | None) -> None:
        """An informer event: the cache now shows what was assumed of this ShadowPod (or that it is gone)."""
        key = _key(shadow)
        entry = self.entries.get(key)
        if entry is not None and (kind == "DELETED" or _requests(shadow) == entry[0]):
            del self.entries[key]

    def current(self) -> dict[str, Amounts]:
        now = self.clock()
        for key in [key for key, (_, at) in self.entries.items() if now - at > ASSUMED_FOR]:
            del self.entries[key]
        return {key: requests for key, (requests, _) in self.entries.items()}


def _key(shadow: JSON) -> str:
    meta = shadow.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


class ShadowPodAdmission:
    """The validator of `/validate/shadowpods`, over the webhook's caches of twin namespaces and Quotas, and
    the events of its ShadowPod cache (`observe`)."""

    def __init__(self, *, namespaces: Store, quotas: Store, assumed: Assumed | None = None) -> None:
        self._namespaces = namespaces
        self._quotas = quotas
        self._usage = Usage()
        self._assumed = assumed if assumed is not None else Assumed()

    def observe(self, kind: str, shadow: JSON, old: JSON | None) -> None:
        """An event of the ShadowPod cache (its handler)."""
        self._usage.observe(kind, shadow, old)
        self._assumed.seen(kind, shadow, old)

    def __call__(self, request: JSON) -> Sequence[str]:
        shadow = request.get("object")
        if not isinstance(shadow, dict):
            return [forbidden("object", "an admission request for a ShadowPod carries it")]
        meta = _object(shadow.get("metadata"))
        pod = _object(shadow.get("spec")).get("pod")
        old = request.get("oldObject")
        old = old if isinstance(old, dict) else None
        unchanged = old is not None and _object(old.get("spec")).get("pod") == pod
        if request.get("operation") == "UPDATE" and (unchanged or meta.get("deletionTimestamp")):
            return []
        malformed = _malformed(pod)
        if malformed:
            return [forbidden("spec.pod", malformed)]
        namespace = str(request.get("namespace") or meta.get("namespace") or "")
        twin = self._namespaces.get(namespace)
        tenant = forge.tenant_of(twin)
        if not tenant:
            return [
                forbidden(
                    "metadata.namespace",
                    f"namespace {namespace} is not a twin namespace of any consumer: ShadowPods are admitted "
                    "only in the twin namespaces a consumer's NamespaceMap asked for",
                )
            ]
        level = podsecurity.enforced_level(twin)
        found = forge_pods.shadow_pod_problems(shadow, level=level)
        if found:
            return [forbidden("spec.pod", podsecurity.refusal(found, enforced=level))]
        problems = self._quota_problems(request, shadow, old, tenant=tenant, namespace=namespace)
        if not problems and not request.get("dryRun"):
            self._assumed.add(f"{namespace}/{meta.get('name') or request.get('name')}", _requests(shadow))
        return problems

    def _quota_problems(
        self, request: JSON, shadow: JSON, old: JSON | None, *, tenant: str, namespace: str
    ) -> list[str]:
        quotas = self._quotas.items(namespace=tenant)
        if not quotas:
            return [
                forbidden(
                    "metadata.namespace",
                    f"the consumer of namespace {namespace} holds no Quota in {tenant} (no ResourceSlice of it is "
                    "granted): ShadowPods are admitted within what its ResourceSlices were granted",
                )
            ]
        creating = request.get("operation") == "CREATE"
        cordoned = sorted(
            f"{tenant}/{q['metadata']['name']}" for q in quotas if nested(q, "spec", "cordoned")
        )
        if creating and cordoned:
            return [
                forbidden(
                    "metadata.namespace",
                    f"the consumer's Quota {', '.join(cordoned)} is cordoned (its Tenant is not Active): "
                    "no new pods are admitted",
                )
            ]
        declared = forge.enforcement_problems(shadow, enforced=forge.enforcement(quotas))
        if declared:
            return [forbidden("spec.pod", "; ".join(declared))]
        try:
            requested = forge.shadow_pod_requests(shadow)
        except ValueError as exc:
            return [forbidden("spec.pod", f"a resource quantity does not parse: {exc}")]
        key = f"{namespace}/{nested(shadow, 'metadata', 'name') or request.get('name')}"
        if not creating and old is not None and not _asks_for_more(requested, _requests(old)):
            return []
        in_use = self._in_use(tenant, leaving_out=key)
        granted = forge.limits(quotas)
        over = forge.exceeded(requested, in_use=in_use, granted=granted)
        if not over:
            return []
        return [
            forbidden(
                "spec.pod",
                forge.quota_refusal(over, quotas=quotas, requested=requested, in_use=in_use, granted=granted),
            )
        ]

    def _in_use(self, tenant: str, *, leaving_out: str) -> Amounts:
        """What the tenant's ShadowPods take (but `leaving_out`), with the admitted ones the cache lags behind
        (what they were admitted with counts, instead of what the cache shows of them)."""
        twins = [
            str(namespace["metadata"]["name"])
            for namespace in self._namespaces
            if forge.tenant_of(namespace) == tenant
        ]
        found = forge.minus(self._usage.taken(twins), self._usage.of(leaving_out))
        prefixes = tuple(f"{name}/" for name in twins)
        for key, requests in self._assumed.current().items():
            if key.startswith(prefixes) and key != leaving_out:
                found = total([forge.minus(found, self._usage.of(key)), requests])
        return found


def _object(value: object) -> JSON:
    return value if isinstance(value, dict) else {}


def _malformed(pod: object) -> str:
    """What makes `pod` no pod spec the checks can read ("" when it is one); the API's schema refuses these
    before a webhook sees them, but a review is answered whatever it holds."""
    if not isinstance(pod, dict):
        return "must be a pod spec (an object)"
    if not isinstance(pod.get("overhead") or {}, dict):
        return "overhead must map resource names to quantities"
    for key in ("initContainers", "containers", "ephemeralContainers"):
        listed = pod.get(key) or []
        if not isinstance(listed, list) or not all(isinstance(item, dict) for item in listed):
            return f"{key} must be a list of containers"
        for container in listed:
            resources = container.get("resources") or {}
            if not isinstance(resources, dict) or not all(
                isinstance(resources.get(part) or {}, dict) for part in ("requests", "limits")
            ):
                return (
                    f"{key}[{container.get('name')!r}].resources must map requests and limits to quantities"
                )
    return ""


def _asks_for_more(requested: Amounts, before: Amounts) -> bool:
    return any(
        quantity.value > (before[name].value if name in before else 0) for name, quantity in requested.items()
    )
