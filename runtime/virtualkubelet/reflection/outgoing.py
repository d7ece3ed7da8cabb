"""The one `handle` of every kind reflected from the consumer to the provider (ConfigMaps, Secrets, Services,
EndpointSlices, Ingresses): the local object is the source of truth, its copy in the twin namespace follows it.

A subclass says which local kind becomes which remote kind, under which name, and how the
copy is forged and compared (pure functions of `runtime.forge`); `OutgoingReflector.handle`
checks, in Liqo's fixed order (`reflection/configuration/configmap.go`):

1. the remote object exists but is not ours (not reflected by this consumer, or another
   reflector's): warn, an Event on the local object, and leave it alone;
2. the local object is not reflected under its kind's policy (`ReflectionOptions.reflects`: the
   kind's DenyList or AllowList, the object's `liqo.io/skip-reflection` or
   `liqo.io/allow-reflection`): treat it as absent;
3. the local object is absent: delete the copy (conditional on its uid, so a newer one is
   never deleted by a stale cache);
4. otherwise forge the copy, without the label and annotation keys never reflected, and write it: created when missing, replaced when it differs
   (edits made on the provider are reverted), deleted first when it cannot be changed
   (immutable), nothing at all when it is in line. A write the provider refuses (quota,
   validation, admission) is a `FailedReflection` Warning Event on the local object with
   the provider's reason, and retried with backoff; the copy's creation, and the first
   write that succeeds after a refusal, are a `SuccessfulReflection` Event.

Everything is read from the caches; the only requests are the writes, so a change costs
one request to the provider, and an unchanged object none. (Liqo records an Event for
every write; that doubles the requests per change, one of them to the consumer's API
server, which is busy with the change itself, for an Event that repeats "reflected"
with a count. `kubectl describe` still shows when an object was first reflected and
whether its reflection is failing or recovered.)
"""

from __future__ import annotations

import contextlib
import logging
from abc import abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.core import (
    AlreadyExistsError,
    APIStatusError,
    Client,
    ConflictError,
    EventRecorder,
    Manager,
    NotFoundError,
    Request,
    Resource,
    Result,
)
from runtime.core.events import EventType
from runtime.forge.meta import is_reflected
from runtime.forge.reflection import ReflectionOptions

from ..remote import CredentialRemote
from ..translation import AddressTranslator
from .generic import NamespacePair, Reflector, Watched
from .metrics import ReflectionMetrics

logger = logging.getLogger(__name__)

#: what a handle wrote to the provider: its copy created, updated, or nothing
Written = Literal["created", "updated", ""]


@dataclass(frozen=True)
class ReflectionContext:
    """What every reflector of one virtual kubelet shares: both clusters, the Event recorder, who is who."""

    local_client: Client
    remote: CredentialRemote
    recorder: EventRecorder
    metrics: ReflectionMetrics
    translator: AddressTranslator
    #: this cluster's id (what marks its copies on the provider) and the provider's name (for messages)
    origin_cluster_id: str
    provider: str
    #: what is reflected: the policy of each kind, the keys never copied
    options: ReflectionOptions

    @property
    def remote_client(self) -> Client:
        """The provider's client (there is one: namespaces are reflected only once a credential was used)."""
        client = self.remote.client
        assert client is not None, "reflecting before the provider's credential was used"
        return client


class OutgoingReflector(Reflector):
    """A local kind reflected as one copy per object in the twin namespace; subclasses forge and compare."""

    local_resource: ClassVar[Resource]
    remote_resource: ClassVar[Resource]

    def __init__(self, manager: Manager, *, context: ReflectionContext, workers: int) -> None:
        super().__init__(manager, workers=workers, metrics=context.metrics)
        self.context = context
        #: keys whose last write the provider refused (their next success is worth an Event)
        self._failing: set[Request] = set()

    # what a kind says (names, forging, comparing); the defaults suit most kinds

    def remote_name(self, name: str) -> str:
        return name

    def local_names(self, remote: JSON, pair: NamespacePair) -> Iterable[str]:
        """The local object a remote one stands for (none: it stands for none)."""
        return [str(remote["metadata"]["name"])]

    def is_ours(self, remote: JSON) -> bool:
        """Whether a remote object of the copy's name is this reflector's copy."""
        return is_reflected(remote, origin_cluster_id=self.context.origin_cluster_id)

    def skipped(self, local: JSON, pair: NamespacePair) -> bool:
        """Whether `local` is not reflected (its kind's policy and its annotations say so)."""
        return not self.context.options.reflects(self.kind, local)

    @abstractmethod
    def desired(self, local: JSON, pair: NamespacePair) -> JSON:
        """The copy of `local` in the pair's twin namespace."""

    @abstractmethod
    def differs(self, current: JSON, desired: JSON) -> bool:
        """Whether the copy on the provider says something else than `desired`."""

    def update(self, current: JSON, desired: JSON) -> JSON:
        """The body that replaces `current` with `desired` (its resourceVersion: no lost update)."""
        return {
            **desired,
            "metadata": {**desired["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]},
        }

    def must_recreate(self, current: JSON, desired: JSON) -> bool:
        """Whether the copy can be brought in line only by deleting it first (immutable content)."""
        return False

    # the kinds watched: the local one in each reflected namespace, the copies in each twin

    def local_kinds(self) -> Sequence[Watched]:
        return (Watched(self.local_resource),)

    def remote_kinds(self) -> Sequence[Watched]:
        return (Watched(self.remote_resource, keys=self.local_names),)

    # the handle

    async def handle(self, request: Request, pair: NamespacePair) -> Result | None:
        store = pair.local_store(self.local_resource)
        local = store.get(request.name, namespace=pair.local) if store is not None else None
        remote_name = self.remote_name(request.name)
        remote = pair.remote_store(self.remote_resource).get(remote_name, namespace=pair.remote)
        where = f"{pair.remote}/{remote_name} on {self.context.provider}"
        if remote is not None and not self.is_ours(remote):
            if local is not None:
                logger.warning(
                    "%s: %s %s exists and is not a copy of it; leaving it alone", request, self.kind, where
                )
                await self._event(
                    local,
                    "Warning",
                    c.REASON_FAILED_REFLECTION,
                    f"not reflected to cluster {self.context.provider!r}: {self.remote_resource.kind} {where} "
                    "exists and was not reflected from here (rename one of them)",
                )
            self.reflected(request, False)
            return None
        if local is not None and self.skipped(local, pair):
            if remote is not None:
                await self._event(
                    local,
                    "Normal",
                    c.REASON_REFLECTION_DISABLED,
                    f"reflection to cluster {self.context.provider!r} disabled for this object "
                    f"({c.ANNOTATION_SKIP_REFLECTION}, or {self.kind} reflection type "
                    f"{self.context.options.type_of(self.kind)} without {c.ANNOTATION_ALLOW_REFLECTION}): "
                    "its copy is removed",
                )
            local = None
        if local is None:
            if remote is not None and not remote["metadata"].get("deletionTimestamp"):
                await self._delete(remote, pair)
                logger.info("%s: %s copy %s deleted", request, self.kind, where)
            self._failing.discard(request)
            self.reflected(request, False)
            return None
        desired = self.desired(self.context.options.stripped(local), pair)
        try:
            written = await self._write(remote, desired, pair)
        except (ConflictError, AlreadyExistsError):
            raise  # the cache is behind: its next event (or the retry) brings the key back
        except APIStatusError as exc:
            self._failing.add(request)
            await self._event(
                local,
                "Warning",
                c.REASON_FAILED_REFLECTION,
                f"error reflecting to cluster {self.context.provider!r}: {exc.reason or 'Failure'}: {exc.message or exc}",
            )
            raise
        if written:
            (logger.info if written == "created" else logger.debug)(
                "%s: %s %s %s", request, self.kind, written, where
            )
        if written == "created" or (written and request in self._failing):
            await self._event(
                local,
                "Normal",
                c.REASON_SUCCESSFUL_REFLECTION,
                f"successfully reflected to cluster {self.context.provider!r}",
            )
        if written:
            self._failing.discard(request)
        self.reflected(request, True)
        return None

    async def _write(self, remote: JSON | None, desired: JSON, pair: NamespacePair) -> Written:
        """Create, replace or recreate the copy as needed; what was written ("": nothing)."""
        client = self.context.remote_client
        if remote is None or remote["metadata"].get("deletionTimestamp"):
            if remote is not None:
                return ""  # still going: its deletion event brings the key back
            await client.create(self.remote_resource, desired, field_manager=c.FIELD_MANAGER_VIRTUAL_KUBELET)
            return "created"
        if not self.differs(remote, desired):
            return ""
        if self.must_recreate(remote, desired):
            await self._delete(remote, pair)
            return ""  # created again once the deletion is seen
        await client.replace(
            self.remote_resource, self.update(remote, desired), field_manager=c.FIELD_MANAGER_VIRTUAL_KUBELET
        )
        return "updated"

    async def _delete(self, remote: JSON, pair: NamespacePair) -> None:
        meta = remote["metadata"]
        with contextlib.suppress(NotFoundError, ConflictError):
            await self.context.remote_client.delete(
                self.remote_resource, meta["name"], namespace=pair.remote, preconditions={"uid": meta["uid"]}
            )

    async def _event(self, local: JSON, type: EventType, reason: str, message: str) -> None:
        await self.context.recorder.record(local, type=type, reason=reason, message=message)
