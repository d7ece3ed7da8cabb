"""Pods through the virtual node: each pod bound to it becomes a ShadowPod in its twin namespace.

The first reflector (Liqo's `reflection/workload`). Local objects: the pods bound to this
virtual node. Remote objects, per twin namespace: ShadowPods, the Pods the provider keeps
for them, and the pods' ServiceAccount token Secrets, all keyed by the pod's name.

`handle` checks, in this order:

1. a ShadowPod of that name that this cluster did not reflect: warn and leave it alone;
2. the local pod is gone: delete the ShadowPod and the token Secret;
3. the ShadowPod stands for an earlier pod of the same name (another uid): delete it first;
4. the local pod is being deleted: delete the ShadowPod with the pod's grace period (the
   provider deletes its Pod with it); once the provider's Pod is gone, delete the local
   pod for good, as a kubelet does once its containers stopped;
5. a DaemonSet pod, or one the provider must not run (host namespaces, hostPath,
   privileged): Pending with the reason `OffloadingBackOff` and a message saying why;
6. otherwise: the token Secret (tokens of the pod's ServiceAccount bound to the pod,
   requested again at 80% of their lifetime; none when the pod's API server support is
   `Remote` or `Disabled`, `runtime.forge.pods.api_server_support`) and the ShadowPod (`runtime.forge.pods`),
   written at once once the tokens are issued (the provider's kubelet mounts the Secret
   before it starts a container, so the Pod never runs without its tokens, and the
   ShadowPod does not wait a round trip for them), and the status of the provider's Pod
   back onto the local pod.

A pod bound to this node in a namespace that is not offloaded to this provider
(`handle_unreflected`) stays Pending with `OffloadingBackOff`, as Liqo documents; one that
is being deleted there is deleted for good. Everything is read from the caches, so a
restarted virtual kubelet picks up where it was, and ShadowPods are named after their
pods, so nothing is ever offloaded twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from runtime.api import constants as c
from runtime.api.crds import SHADOWPODS
from runtime.api.kinds import PODS, SECRETS, SERVICEACCOUNTS
from runtime.api.objects import JSON, nested
from runtime.api.timestamps import parse_rfc3339, rfc3339
from runtime.core import (
    AlreadyExistsError,
    APIStatusError,
    Client,
    ConflictError,
    EventRecorder,
    Informer,
    Manager,
    NotFoundError,
    Request,
    Result,
)
from runtime.forge import pods as forge
from runtime.forge import podsecurity
from runtime.forge import serviceaccounts as tokens
from runtime.forge.meta import is_reflected
from runtime.forge.podsecurity import Level
from runtime.forge.reflection import ReflectionOptions

from ..remote import CredentialRemote
from ..translation import AddressTranslator
from .generic import NamespacePair, Reflector, Watched
from .metrics import ReflectionMetrics

logger = logging.getLogger(__name__)


_REMOTE_PODS = f"{c.LABEL_REFLECTION_MANAGED_BY}={c.MANAGED_BY_SHADOWPOD}"


@dataclass(frozen=True)
class PodReflectionOptions:
    pods: forge.PodOptions
    #: the virtual node's name (for messages) and address (the offloaded pods' host IP)
    node_name: str
    host_ip: str
    #: the provider's cluster name (for messages)
    provider: str
    #: this cluster's CA bundle (PEM), which offloaded pods trust their home API server with
    home_ca: bytes
    #: the Pod Security Standards level the provider holds this peering's pods to (its VirtualNode's)
    pod_security: Level = podsecurity.DEFAULT_LEVEL
    #: the label and annotation keys never copied to the ShadowPod (`ReflectionOptions.stripped`)
    policy: ReflectionOptions = field(default_factory=ReflectionOptions)


class PodReflector(Reflector):
    kind = "pod"

    def __init__(
        self,
        manager: Manager,
        *,
        local: Informer,
        local_client: Client,
        remote: CredentialRemote,
        options: PodReflectionOptions,
        translator: AddressTranslator,
        recorder: EventRecorder,
        workers: int,
        metrics: ReflectionMetrics,
    ) -> None:
        super().__init__(manager, local=local, workers=workers, metrics=metrics)
        self._client = local_client
        self._provider = remote
        self._options = options
        self._translator = translator
        self._recorder = recorder

    @property
    def _remote(self) -> Client:
        """The provider's client (there is one: namespaces are reflected only once a credential was used)."""
        client = self._provider.client
        assert client is not None, "reflecting before the provider's credential was used"
        return client

    def remote_kinds(self) -> Sequence[Watched]:
        # every Secret of the twin namespace: the informer the Secret reflector shares (token Secrets map to pods)
        return (
            Watched(SHADOWPODS),
            Watched(PODS, label_selector=_REMOTE_PODS),
            Watched(SECRETS, keys=lambda secret, pair: [tokens.pod_of(secret)]),
        )

    async def handle(self, request: Request, pair: NamespacePair) -> Result | None:
        pod = self.local.get(request.name, namespace=request.namespace)
        shadow = pair.remote_store(SHADOWPODS).get(request.name, namespace=pair.remote)
        remote_pod = pair.remote_store(PODS, _REMOTE_PODS).get(request.name, namespace=pair.remote)
        secret_name = tokens.token_secret_name(request.name)
        secret = pair.remote_store(SECRETS).get(secret_name, namespace=pair.remote)
        origin = self._options.pods.origin_cluster_id
        if shadow is not None and not is_reflected(shadow, origin_cluster_id=origin):
            logger.warning(
                "%s: ShadowPod %s/%s on %s was not made by this cluster; leaving it alone",
                request,
                pair.remote,
                request.name,
                self._options.provider,
            )
            return None
        if pod is None:
            await self._delete_remote(pair, shadow, secret)
            self.reflected(request, False)
            return None
        uid = str(pod["metadata"]["uid"])
        if shadow is not None and forge.origin_uid(shadow) not in ("", uid):
            await self._delete_remote(pair, shadow, secret)
            self.reflected(request, False)
            return None
        if pod["metadata"].get("deletionTimestamp"):
            return await self._terminate(pod, pair, shadow, remote_pod, secret)
        refusal = self._refusal(pod)
        if refusal:
            await self._back_off(pod, refusal)
            return None
        try:
            token_secret, refresh = await self._token_secret(pod, pair, secret)
            writes = [self._shadow_pod(request, pod, pair, shadow)]
            if token_secret is not None:
                writes.append(self._write_token_secret(token_secret, exists=secret is not None))
            await _concurrently(*writes)
        except (ConflictError, AlreadyExistsError):
            raise  # the cache is behind: the next event (or the retry) brings the key back
        except APIStatusError as exc:
            await self._recorder.record(
                pod,
                type="Warning",
                reason=c.REASON_FAILED_REFLECTION,
                message=f"error offloading to cluster {self._options.provider!r}: {exc.reason or 'Failure'}: "
                f"{exc.message or exc}",
            )
            raise
        self.reflected(request, True)
        if remote_pod is not None:
            recreations = int(nested(shadow, "status", "recreations") or 0)
            status = forge.local_pod_status(
                remote_pod,
                recreations=recreations,
                host_ip=self._options.host_ip,
                translate=self._translator.to_local,
            )
            await self._write_status(pod, status)
        return Result(requeue_after=refresh) if refresh is not None else None

    async def handle_unreflected(self, request: Request) -> Result | None:
        pod = self.local.get(request.name, namespace=request.namespace)
        if pod is None:
            return None
        if pod["metadata"].get("deletionTimestamp"):
            await self._delete_local(pod)
            return None
        if nested(pod, "status", "phase") in (None, "", "Pending"):
            await self._back_off(
                pod,
                f"namespace {request.namespace} is not offloaded to {self._options.provider}: no NamespaceOffloading"
                f" selects it, so {self._options.node_name} cannot run its pods (offload the namespace, or keep "
                "the pod off virtual nodes)",
            )
        return None

    # the pieces

    async def _shadow_pod(
        self, request: Request, pod: JSON, pair: NamespacePair, shadow: JSON | None
    ) -> None:
        desired = forge.shadow_pod(
            self._options.policy.stripped(pod), remote_namespace=pair.remote, options=self._options.pods
        )
        if shadow is None:
            with contextlib.suppress(AlreadyExistsError):
                await self._remote.create(SHADOWPODS, desired, field_manager=c.FIELD_MANAGER_VIRTUAL_KUBELET)
                logger.info(
                    "%s: offloaded to %s/%s on %s", request, pair.remote, request.name, self._options.provider
                )
        elif forge.shadow_differs(shadow, desired):
            body = {
                **desired,
                "metadata": {**desired["metadata"], "resourceVersion": shadow["metadata"]["resourceVersion"]},
            }
            body["metadata"]["annotations"] = {
                **(shadow["metadata"].get("annotations") or {}),
                **desired["metadata"]["annotations"],
            }
            await self._remote.replace(SHADOWPODS, body, field_manager=c.FIELD_MANAGER_VIRTUAL_KUBELET)

    def _refusal(self, pod: JSON) -> str:
        if forge.is_daemon_set_pod(pod):
            return "DaemonSet pods are never offloaded: add a node affinity keeping the DaemonSet off virtual nodes"
        level = self._options.pod_security
        problems = forge.offloading_problems(pod, level=level)
        if problems:
            return f"the pod cannot be offloaded to {self._options.provider}: " + podsecurity.refusal(
                problems, enforced=level
            )
        return ""

    async def _back_off(self, pod: JSON, message: str) -> None:
        status = forge.backoff_status(pod, message=message, now=_now())
        changes = forge.status_changes(pod.get("status"), status)
        if not changes:
            return
        await self._patch_status(pod, changes)
        await self._recorder.record(pod, type="Warning", reason=c.REASON_OFFLOADING_BACKOFF, message=message)

    async def _terminate(
        self,
        pod: JSON,
        pair: NamespacePair,
        shadow: JSON | None,
        remote_pod: JSON | None,
        secret: JSON | None,
    ) -> Result | None:
        if shadow is not None:
            if not shadow["metadata"].get("deletionTimestamp"):
                grace = pod["metadata"].get("deletionGracePeriodSeconds")
                annotations = shadow["metadata"].get("annotations") or {}
                if grace is not None and annotations.get(c.ANNOTATION_DELETION_GRACE) != str(grace):
                    with contextlib.suppress(NotFoundError):
                        await self._remote.patch(
                            SHADOWPODS,
                            shadow["metadata"]["name"],
                            {"metadata": {"annotations": {c.ANNOTATION_DELETION_GRACE: str(grace)}}},
                            namespace=pair.remote,
                            field_manager=c.FIELD_MANAGER_VIRTUAL_KUBELET,
                        )
                with contextlib.suppress(NotFoundError):
                    await self._remote.delete(SHADOWPODS, shadow["metadata"]["name"], namespace=pair.remote)
            return None
        if remote_pod is not None:
            return None
        await self._delete_remote(pair, None, secret)
        await self._delete_local(pod)
        return None

    async def _delete_remote(self, pair: NamespacePair, shadow: JSON | None, secret: JSON | None) -> None:
        for resource, obj in ((SHADOWPODS, shadow), (SECRETS, secret)):
            if obj is not None and not obj["metadata"].get("deletionTimestamp"):
                with contextlib.suppress(NotFoundError):
                    await self._remote.delete(resource, obj["metadata"]["name"], namespace=pair.remote)

    async def _delete_local(self, pod: JSON) -> None:
        meta = pod["metadata"]
        with contextlib.suppress(NotFoundError, ConflictError):
            await self._client.delete(
                PODS,
                meta["name"],
                namespace=meta["namespace"],
                grace_period_seconds=0,
                preconditions={"uid": meta["uid"]},
            )
        logger.info("%s/%s: stopped on the provider; deleted", meta["namespace"], meta["name"])

    async def _token_secret(
        self, pod: JSON, pair: NamespacePair, secret: JSON | None
    ) -> tuple[JSON | None, float | None]:
        """The pod's token Secret to write on the provider (None: the one there is fresh), with its tokens
        issued; and seconds until its tokens are due again (None: the pod has no tokens)."""
        support = forge.api_server_support(pod, default=self._options.pods.api_server_support)
        projections = tokens.token_projections(pod) if support == "TokenAPI" else []
        if not projections:
            if secret is not None:
                await self._delete_remote(pair, None, secret)
            return None, None
        now = datetime.now(UTC)
        due = tokens.refresh_due(secret)
        uid = str(pod["metadata"]["uid"])
        current = (
            secret is not None
            and nested(secret["metadata"], "annotations", c.ANNOTATION_ORIGIN_POD_UID) == uid
        )
        if current and due:
            left = (parse_rfc3339(due) - now).total_seconds()
            if left > 0:
                return None, left
        issued = {}
        for projection in projections:
            answer = await self._client.create(
                SERVICEACCOUNTS,
                tokens.token_request(projection, pod),
                namespace=pod["metadata"]["namespace"],
                name=tokens.service_account_name(pod),
                subresource="token",
            )
            issued[projection.key] = str(nested(answer, "status", "token") or "")
        refresh = tokens.refresh_at(now, projections)
        body = tokens.token_secret(
            pod,
            namespace=pair.remote,
            tokens=issued,
            ca=self._options.home_ca,
            refresh=rfc3339(refresh),
            origin_cluster_id=self._options.pods.origin_cluster_id,
        )
        return body, (refresh - now).total_seconds()

    async def _write_token_secret(self, body: JSON, *, exists: bool) -> None:
        if not exists:
            try:
                await self._remote.create(SECRETS, body, field_manager=c.FIELD_MANAGER_VIRTUAL_KUBELET)
                return
            except AlreadyExistsError:
                pass
        await self._remote.replace(SECRETS, body, field_manager=c.FIELD_MANAGER_VIRTUAL_KUBELET)

    async def _write_status(self, pod: JSON, status: JSON) -> None:
        changes = forge.status_changes(pod.get("status"), status)
        if changes:
            await self._patch_status(pod, changes)

    async def _patch_status(self, pod: JSON, changes: JSON) -> None:
        meta = pod["metadata"]
        with contextlib.suppress(NotFoundError):
            await self._client.patch_status(
                PODS,
                meta["name"],
                {"status": changes},
                namespace=meta["namespace"],
                field_manager=c.FIELD_MANAGER_VIRTUAL_KUBELET,
            )


def _now() -> str:
    return rfc3339(datetime.now(UTC))


async def _concurrently(*writes: Awaitable[None]) -> None:
    """Await `writes` at once, each to its end; then raise the first error, if one failed."""
    for outcome in await asyncio.gather(*writes, return_exceptions=True):
        if isinstance(outcome, BaseException):
            raise outcome
