"""Create and delete a workload's pods, with the Events kube's `RealPodControl` records.

`kubectl describe` on a ReplicaSet, DaemonSet or StatefulSet shows `SuccessfulCreate
Created pod: web-abcde`, `SuccessfulDelete Deleted pod: ...`, or a `FailedCreate`
Warning with the API's refusal (quota, admission, a missing ServiceAccount), so the
user sees why replicas are missing.
"""

from __future__ import annotations

import logging
from typing import Any

from runtime.api.kinds import PODS
from runtime.core import APIStatusError, Client, ConflictError, EventRecorder, NotFoundError

from .names import FIELD_MANAGER
from .ownership import name, namespace, reference, uid

logger = logging.getLogger(__name__)

JSON = dict[str, Any]

#: the Status cause kube-apiserver gives when a namespace being deleted refuses new objects
NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"


def is_namespace_terminating(exc: APIStatusError) -> bool:
    causes = (exc.status.get("details") or {}).get("causes") or []
    return any(cause.get("reason") == NAMESPACE_TERMINATING_CAUSE for cause in causes)


class PodControl:
    def __init__(self, client: Client, recorder: EventRecorder) -> None:
        self._client = client
        self._recorder = recorder

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
