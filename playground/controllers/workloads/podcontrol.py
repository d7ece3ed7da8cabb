"""Create and delete a workload's pods, with the Events kube's `RealPodControl` records.

`kubectl describe` on a ReplicaSet, DaemonSet or StatefulSet shows `SuccessfulCreate
Created pod: web-abcde`, `SuccessfulDelete Deleted pod: ...`, or a `FailedCreate`
Warning with the API's refusal (quota, admission, a missing ServiceAccount), so the
user sees why replicas are missing.

`create_pods` and `delete_pods` are what the ReplicaSet and DaemonSet controllers do with
many pods at once (kube's `slowStartBatch` of creations, parallel deletions), recording
each pod that went through as an expectation of the controller's key.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from runtime.api.kinds import PODS
from runtime.api.objects import JSON
from runtime.core import APIStatusError, Client, ConflictError, EventRecorder, NotFoundError

from .batches import slow_start
from .expectations import Expectations
from .names import FIELD_MANAGER
from .ownership import name, namespace, reference, uid

logger = logging.getLogger(__name__)


#: the Status cause kube-apiserver gives when a namespace being deleted refuses new objects
NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"


def is_namespace_terminating(exc: APIStatusError) -> bool:
    causes = (exc.status.get("details") or {}).get("causes") or []
    return any(cause.get("reason") == NAMESPACE_TERMINATING_CAUSE for cause in causes)


class PodControl:
    def __init__(self, client: Client, recorder: EventRecorder, expectations: Expectations) -> None:
        self._client = client
        self._recorder = recorder
        self._expectations = expectations

    async def create(self, pod: JSON, *, owner: JSON) -> JSON:
        """Create `pod` for `owner`; a refusal is recorded as a FailedCreate Warning and raised."""
        try:
            created = await self._client.create(PODS, pod, field_manager=FIELD_MANAGER)
        except APIStatusError as exc:
            if not is_namespace_terminating(exc):
                await self._recorder.record(
                    owner, reason="FailedCreate", message=f"Error creating: {exc.message}", type="Warning"
                )
            raise
        logger.info("%s: created pod %s", reference(owner), name(created))
        await self._recorder.record(owner, reason="SuccessfulCreate", message=f"Created pod: {name(created)}")
        return created

    async def delete(self, pod: JSON, *, owner: JSON) -> None:
        """Delete this very pod (by uid) for `owner`; one already gone is not an error."""
        try:
            await self._client.delete(
                PODS, name(pod), namespace=namespace(pod), preconditions={"uid": uid(pod)}
            )
        except (NotFoundError, ConflictError):
            logger.debug("%s: pod %s was already gone", reference(owner), name(pod))
            return
        except APIStatusError as exc:
            await self._recorder.record(
                owner, reason="FailedDelete", message=f"Error deleting: {exc.message}", type="Warning"
            )
            raise
        logger.info("%s: deleted pod %s", reference(owner), name(pod))
        await self._recorder.record(owner, reason="SuccessfulDelete", message=f"Deleted pod: {name(pod)}")

    async def create_pods(self, key: str, owner: JSON, bodies: Sequence[JSON]) -> Exception | None:
        """Create `bodies` for `owner` in slow-start batches, each created pod expected under `key`.

        A namespace being deleted refuses pods without an error; returns the refusal that stopped the batches.
        """
        remaining = iter(bodies)

        async def create_one() -> JSON | None:
            try:
                return await self.create(next(remaining), owner=owner)
            except APIStatusError as exc:
                if is_namespace_terminating(exc):
                    return None
                raise

        created, error = await slow_start(len(bodies), create_one)
        self._expectations.expect_created(key, [pod for pod in created if pod is not None])
        return error

    async def delete_pods(self, key: str, owner: JSON, victims: Sequence[JSON]) -> BaseException | None:
        """Delete `victims` for `owner` at once, each deleted pod expected under `key`; returns the first failure."""
        results = await asyncio.gather(
            *(self.delete(pod, owner=owner) for pod in victims), return_exceptions=True
        )
        self._expectations.expect_deleted(
            key, [pod for pod, result in zip(victims, results, strict=True) if result is None]
        )
        return next((result for result in results if isinstance(result, BaseException)), None)
