"""Unpeer: what a deleted ForeignCluster's finalizer does, in order, never blocking for longer than a bound.

1. delete the VirtualNode (its controller removes the virtual kubelet and the Node) and
   wait for it to go;
2. on the provider: delete the ResourceSlice (with the credential), then ask the auth
   service to revoke the identity (signed with the key pair), upon which the provider
   deletes the tenant namespace and everything in it;
3. here: delete the Identity, the credential and key Secrets and the local tenant
   namespace (kept when this cluster is also the provider's provider: the Tenant of the
   other direction lives there too);
4. remove the finalizer.

The bound (`unpeer_timeout`, counted from the deletion timestamp, so a restart does not
reset it) covers the waits of steps 1 and 2: once it has passed, the VirtualNode is no
longer waited for, an unreachable provider is given up on with a Warning event that says
what was left there, and the finalizer goes. Every request to the provider is limited to
the time left.

A reconcile may read the caches before they show this unpeer's own writes: the
VirtualNode not yet terminating after its delete, or the ForeignCluster still holding the
finalizer just removed. What this process already did for a ForeignCluster (by uid) is
remembered until it is gone from the cache, so such a stale read neither repeats a step
nor logs it twice.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS, IDENTITIES, VIRTUALNODES
from runtime.api.kinds import NAMESPACES, SECRETS
from runtime.api.objects import JSON, nested
from runtime.api.timestamps import parse_rfc3339
from runtime.controllers.options import ControllerOptions
from runtime.core import APIError, Client, EventRecorder, NotFoundError, Result, TemporaryError
from runtime.core.failures import explain
from runtime.forge.tenant import tenant_namespace_name

from . import authclient, keys, negotiate, objects
from .peering import Caches, LocalCluster, PeeringSpec

logger = logging.getLogger(__name__)


#: how soon the VirtualNode's deletion is checked again (its informer event usually comes first)
VIRTUAL_NODE_RECHECK = 0.5
#: how soon an unreachable provider is tried again within the bound
REMOTE_RETRY = 0.5
#: the shortest limit given to a request to the provider
MIN_REQUEST_TIMEOUT = 0.5


@dataclass
class _Progress:
    """What this process did for the deletion of one ForeignCluster that the caches may not show yet."""

    uid: str
    #: the VirtualNode whose deletion was asked for
    virtual_node_uid: str = ""
    #: the provider side is done (revoked, or given up on)
    remote_done: bool = False
    #: the resourceVersion of the ForeignCluster the finalizer was removed from
    finished_version: str | None = None


class Unpeering:
    """The deletion branch of the ForeignCluster reconciler."""

    def __init__(
        self, client: Client, caches: Caches, *, options: ControllerOptions, recorder: EventRecorder
    ) -> None:
        self._client = client
        self._caches = caches
        self._options = options
        self._recorder = recorder
        #: by ForeignCluster name, until `forget`
        self._progress: dict[str, _Progress] = {}

    def forget(self, name: str) -> None:
        """The ForeignCluster `name` is gone from the cache: nothing of its unpeer is left to remember."""
        self._progress.pop(name, None)

    async def run(self, foreign_cluster: JSON, local: LocalCluster | None) -> Result | None:
        meta = foreign_cluster["metadata"]
        name = str(meta["name"])
        if c.FINALIZER_FOREIGNCLUSTER not in (meta.get("finalizers") or []):
            return None
        uid = str(meta.get("uid") or name)
        progress = self._progress.get(name)
        if progress is None or progress.uid != uid:
            progress = self._progress[name] = _Progress(uid)
        version = str(meta.get("resourceVersion") or "")
        if progress.finished_version == version:
            return None  # the cache does not show the finalizer's removal yet
        left = self._time_left(meta)
        if not await self._virtual_node_gone(name, progress, forced=left <= 0):
            return Result(requeue_after=min(VIRTUAL_NODE_RECHECK, max(left, 0.05)))
        if not progress.remote_done:
            await self._remote(foreign_cluster, local, left=left)
            progress.remote_done = True
        await self._local(name, str(nested(foreign_cluster, "spec", "clusterID") or ""))
        removed = await self._remove_finalizer(foreign_cluster)
        progress.finished_version = version
        if removed:
            logger.info("%s: unpeered", name)
        return None

    def _time_left(self, meta: JSON) -> float:
        try:
            deleted_at = parse_rfc3339(str(meta.get("deletionTimestamp")))
        except ValueError:
            return 0.0
        elapsed = (datetime.now(UTC) - deleted_at).total_seconds()
        return self._options.unpeer_timeout - elapsed

    async def _virtual_node_gone(self, name: str, progress: _Progress, *, forced: bool) -> bool:
        namespace = tenant_namespace_name(name)
        virtual_node = self._caches.virtual_nodes.get(name, namespace=namespace)
        if virtual_node is None:
            return True
        meta = virtual_node.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        if not meta.get("deletionTimestamp") and not (uid and uid == progress.virtual_node_uid):
            with contextlib.suppress(NotFoundError):
                await self._client.delete(VIRTUALNODES, name, namespace=namespace)
                logger.info("%s: deleting the VirtualNode %s/%s", name, namespace, name)
            progress.virtual_node_uid = uid
        if forced:
            logger.warning(
                "%s: the VirtualNode %s/%s is still being deleted; not waiting any longer",
                name,
                namespace,
                name,
            )
        return forced

    async def _remote(self, foreign_cluster: JSON, local: LocalCluster | None, *, left: float) -> None:
        """The provider side: delete the ResourceSlice and revoke; TemporaryError to retry within the bound."""
        name = str(foreign_cluster["metadata"]["name"])
        namespace = tenant_namespace_name(name)
        kubeconfig = objects.kubeconfig_of(
            self._caches.peering_secrets.get(objects.credential_secret_name(name), namespace=namespace)
        )
        key = keys.private_key(
            self._caches.peering_secrets.get(keys.keys_secret_name(name), namespace=namespace)
        )
        if local is None or kubeconfig is None:
            # never authenticated (or the credential is gone): nothing of ours to remove on the provider
            return
        try:
            spec = PeeringSpec.parse(foreign_cluster, default_namespace=self._options.namespace)
        except ValueError:
            logger.warning("%s: the spec is invalid: nothing can be removed on the provider", name)
            return
        timeout = max(MIN_REQUEST_TIMEOUT, min(self._options.remote_timeout, left))
        problems: list[str] = []
        try:
            async with negotiate.remote_client(kubeconfig, request_timeout=timeout) as remote:
                await negotiate.withdraw(remote, spec, local)
        except negotiate.CredentialRejectedError as exc:
            logger.info("%s: the provider no longer accepts the credential (%s); only revoking", name, exc)
        except APIError as exc:
            problems.append(
                f"the ResourceSlice could not be deleted: {explain(exc, cluster=f'the API server of {name}', advice=False)}"
            )
        if key is None:
            problems.append("the key pair is gone, so the identity cannot be revoked")
        else:
            service = authclient.AuthClient(
                spec.auth_url,
                timeout=min(timeout, self._options.auth_timeout),
                pinned=authclient.trusted_key(
                    foreign_cluster, self._caches.identities.get(name, namespace=spec.tenant_namespace)
                ),
            )
            try:
                await service.revoke(cluster_id=local.cluster_id, sign=key.sign)
                logger.info("%s: the provider revoked this cluster's identity", name)
            except (authclient.AuthenticationFailedError, authclient.RequestRefusedError) as exc:
                logger.info("%s: nothing to revoke on the provider (%s)", name, exc)
            except authclient.AuthServiceError as exc:
                problems.append(f"the identity could not be revoked ({exc})")
        if not problems:
            return
        if left > 0:
            raise TemporaryError(f"{name}: {'; '.join(problems)}", delay=min(REMOTE_RETRY, left))
        tenant = tenant_namespace_name(local.cluster_name)
        message = (
            f"gave up on {name} after {self._options.unpeer_timeout:g} s: {'; '.join(problems)}. Left on {name}: the"
            f" tenant namespace {tenant} with this cluster's Tenant, ResourceSlice {local.cluster_name} and"
            f" credential (they expire with it) — delete the namespace {tenant} on {name} to clean up"
        )
        logger.warning("%s: %s", name, message)
        await self._recorder.record(foreign_cluster, reason="UnpeerForced", message=message, type="Warning")

    async def _local(self, name: str, cluster_id: str) -> None:
        namespace = tenant_namespace_name(name)
        deletions = (
            (IDENTITIES, name),
            (SECRETS, objects.credential_secret_name(name)),
            (SECRETS, keys.keys_secret_name(name)),
        )
        for resource, object_name in deletions:
            with contextlib.suppress(NotFoundError):
                await self._client.delete(resource, object_name, namespace=namespace)
        if any(nested(t, "metadata", "namespace") == namespace for t in self._caches.tenants):
            logger.info(
                "%s: keeping the namespace %s: the Tenant of %s's own peering lives there",
                name,
                namespace,
                name,
            )
            return
        found = self._caches.namespaces.get(namespace)
        if found is None or nested(found, "metadata", "deletionTimestamp"):
            return
        labels = nested(found, "metadata", "labels") or {}
        if cluster_id and labels.get(c.LABEL_REMOTE_CLUSTER_ID) != cluster_id:
            return
        with contextlib.suppress(NotFoundError):
            await self._client.delete(NAMESPACES, namespace)
            logger.info("%s: deleting the tenant namespace %s", name, namespace)

    async def _remove_finalizer(self, foreign_cluster: JSON) -> bool:
        """Remove the finalizer; False if the ForeignCluster was already gone."""
        meta = foreign_cluster["metadata"]
        finalizers = [f for f in meta.get("finalizers") or [] if f != c.FINALIZER_FOREIGNCLUSTER]
        patch = {"metadata": {"finalizers": finalizers, "resourceVersion": meta.get("resourceVersion")}}
        try:
            await self._client.patch(FOREIGNCLUSTERS, str(meta["name"]), patch)
        except NotFoundError:
            return False
        return True
