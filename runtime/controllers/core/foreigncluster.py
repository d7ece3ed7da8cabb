"""The ForeignCluster controller (consumer side): from a ForeignCluster and a peering token to a Ready virtual node.

A ForeignCluster (created by `liqo_peer`, named after the provider) names the provider's
cluster id, authentication URL and the Secret with the peering token. Each reconcile walks
the peering's steps in order, each reading from the caches and writing only what is missing
or differs:

1. authentication (`authenticate.py`): tenant namespace, key pair, credential and Identity;
2. resources (`negotiate.py`): the ResourceSlice on the provider and its answer;
3. the VirtualNode here (`runtime.forge.virtualnode`) with the granted resources, the
   provider's cluster labels and the peering's node labels; its controller runs the virtual
   kubelet, whose Node readiness comes back in the VirtualNode's status.

The first step that cannot finish stops the walk; the status (`status.py`) then says which
one and why, with a reason a user can act on, and the key is looked at again after that
step's delay (TemporaryError) while anything it waits on (token Secret, Identity,
VirtualNode, Tenant, identity ConfigMap) also wakes it. Only an invalid spec is a
PermanentError. Deletion runs `unpeer.py` behind the `core.liqo.io/foreigncluster` finalizer.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from datetime import UTC, datetime

from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS, IDENTITIES, TENANTS, VIRTUALNODES
from runtime.api.kinds import CONFIGMAPS, NAMESPACES, SECRETS
from runtime.api.objects import JSON, nested
from runtime.controllers.options import ControllerOptions
from runtime.core import (
    APIError,
    Client,
    EventRecorder,
    Manager,
    MapFunc,
    NotFoundError,
    PermanentError,
    Request,
    Result,
    Store,
    TemporaryError,
)
from runtime.forge import conditions
from runtime.forge import virtualnode as forge_vn

from . import negotiate, network, objects
from .authenticate import Authentication, Session
from .peering import Blocked, Caches, LocalCluster, PeeringSpec, SpecError, has_incoming
from .status import Observed, Step, done, failed, foreign_cluster_status, waiting
from .unpeer import Unpeering

logger = logging.getLogger(__name__)


NAME = "foreigncluster"
EVENT_COMPONENT = "liqo-controller-manager"
#: the secrets of peerings (key pairs, credentials) carry this component label
PEERING_SECRETS = f"{c.LABEL_COMPONENT}={c.COMPONENT_PEERING}"
_CLUSTER_ID_INDEX = "foreigncluster.spec.clusterID"
#: how soon a peering whose network fabric is not up yet looks again
NETWORK_POLL = 2.0
#: how soon a peering waiting for this cluster's own identity ConfigMap looks again
IDENTITY_MISSING_RETRY = 5.0


class ForeignClusterReconciler:
    def __init__(
        self, client: Client, caches: Caches, *, options: ControllerOptions, recorder: EventRecorder
    ) -> None:
        self._client = client
        self._caches = caches
        self._options = options
        self._authentication = Authentication(client, caches, options=options, recorder=recorder)
        self._unpeering = Unpeering(client, caches, options=options, recorder=recorder)

    async def reconcile(self, request: Request) -> Result | None:
        foreign_cluster = self._caches.foreign_clusters.get(request.name)
        if foreign_cluster is None:
            self._authentication.forget(request.name)
            self._unpeering.forget(request.name)
            return None
        local = LocalCluster.of(next(iter(self._caches.cluster_identity), None))
        meta = foreign_cluster["metadata"]
        if meta.get("deletionTimestamp"):
            await self._write_status(foreign_cluster, _disconnecting(foreign_cluster))
            return await self._unpeering.run(foreign_cluster, local)
        if c.FINALIZER_FOREIGNCLUSTER not in (meta.get("finalizers") or []):
            await self._add_finalizer(foreign_cluster)
            return None
        try:
            spec = PeeringSpec.parse(foreign_cluster, default_namespace=self._options.namespace)
            if local is not None and spec.cluster_id == local.cluster_id:
                raise SpecError(
                    f"spec.clusterID {spec.cluster_id} is this cluster's own id: a cluster cannot peer with itself"
                )
        except SpecError as exc:
            step = failed(c.REASON_INVALID_SPEC, str(exc))
            await self._write_status(foreign_cluster, self._observed(foreign_cluster, None, auth=step))
            raise PermanentError(f"{request}: {exc}") from None
        if local is None:
            step = waiting(
                c.REASON_AUTHENTICATION_PENDING,
                f"this cluster's identity ({self._options.namespace}/{c.CLUSTER_IDENTITY_CONFIGMAP}) is missing — is"
                " the runtime installed here?",
            )
            await self._write_status(foreign_cluster, self._observed(foreign_cluster, spec, auth=step))
            raise TemporaryError(step.message, delay=IDENTITY_MISSING_RETRY)
        return await self._peer(foreign_cluster, spec, local)

    async def _peer(self, foreign_cluster: JSON, spec: PeeringSpec, local: LocalCluster) -> Result | None:
        try:
            session = await self._authentication.ensure(foreign_cluster, spec, local)
        except Blocked as blocked:
            await self._write_status(
                foreign_cluster, self._observed(foreign_cluster, spec, auth=blocked.step)
            )
            raise TemporaryError(blocked.step.message, delay=blocked.delay) from None
        if not spec.outgoing:
            await self._withdraw(spec, local, session)
            await self._write_status(foreign_cluster, self._observed(foreign_cluster, spec, session=session))
            return Result(requeue_after=self._resync_after(session))
        try:
            async with negotiate.remote_client(
                session.kubeconfig, request_timeout=self._options.remote_timeout
            ) as remote:
                grant = await negotiate.negotiate(remote, spec, local)
        except negotiate.CredentialRejectedError as exc:
            await self._drop_credential(spec, reason=str(exc))
            step = waiting(
                c.REASON_AUTHENTICATION_PENDING,
                f"{spec.name} no longer accepts this cluster's credential ({exc}) — authenticating again",
            )
            await self._write_status(foreign_cluster, self._observed(foreign_cluster, spec, auth=step))
            raise TemporaryError(step.message, delay=1.0) from None
        except Blocked as blocked:
            observed = self._observed(foreign_cluster, spec, session=session, resources=blocked.step)
            await self._write_status(foreign_cluster, observed)
            raise TemporaryError(blocked.step.message, delay=blocked.delay) from None
        vn_step = await self._virtual_node(spec, session, grant, local)
        net_step = await self._network(spec, session, grant, local)
        observed = self._observed(
            foreign_cluster,
            spec,
            session=session,
            resources=grant.step,
            virtual_node=vn_step,
            remote_ns=grant.remote_namespace,
            networking=net_step,
        )
        await self._write_status(foreign_cluster, observed)
        if not grant.step.done:
            return Result(requeue_after=self._options.resource_slice_poll if not grant.step.failed else 30.0)
        if net_step is not None and not net_step.done:
            return Result(requeue_after=NETWORK_POLL)
        return Result(requeue_after=self._resync_after(session))

    async def _network(
        self, spec: PeeringSpec, session: Session, grant: negotiate.Grant, local: LocalCluster
    ) -> Step | None:
        """The network fabric's step (None when disabled); it never stops the peering's other steps."""
        if not spec.networking:
            return None
        if not grant.step.done:
            return waiting(network.REASON_PENDING, f"waiting for the resources step with {spec.name}")
        try:
            async with negotiate.remote_client(
                session.kubeconfig, request_timeout=self._options.remote_timeout
            ) as remote:
                return await network.exchange(
                    self._client,
                    remote,
                    spec,
                    local,
                    remote_namespace=grant.remote_namespace,
                    options=self._options,
                )
        except negotiate.CredentialRejectedError as exc:
            return failed(network.REASON_ERROR, str(exc))

    def _resync_after(self, session: Session) -> float:
        until_expiry = (session.expires_at - datetime.now(UTC)).total_seconds()
        return max(1.0, min(self._options.peering_resync, until_expiry))

    async def _virtual_node(
        self, spec: PeeringSpec, session: Session, grant: negotiate.Grant, local: LocalCluster
    ) -> Step:
        namespace = spec.tenant_namespace
        current = self._caches.virtual_nodes.get(spec.name, namespace=namespace)
        node = forge_vn.node_name_for(spec.name)
        if not grant.step.done:
            return waiting(
                c.REASON_VIRTUAL_NODE_NOT_READY,
                f"the virtual node {node} waits for resources from {spec.name}",
            )
        desired = forge_vn.virtual_node(
            spec.name,
            namespace=namespace,
            cluster_id=spec.cluster_id,
            resource_slice_name=local.cluster_name,
            resources=grant.resources,
            credential_secret=objects.credential_secret_name(spec.name),
            cluster_labels=session.cluster_labels,
            node_labels=spec.node_labels,
            pod_security=spec.pod_security,
        )
        if current is None or not _covers(current, desired):
            current = await self._client.apply(
                VIRTUALNODES, desired, field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER, force=True
            )
            logger.info("%s: applied the VirtualNode %s/%s", spec.name, namespace, spec.name)
        return virtual_node_step(current, node=node)

    async def _withdraw(self, spec: PeeringSpec, local: LocalCluster, session: Session) -> None:
        """Outgoing peering disabled: no VirtualNode here, no ResourceSlice there (the credential stays)."""
        namespace = spec.tenant_namespace
        if self._caches.virtual_nodes.get(spec.name, namespace=namespace) is not None:
            with contextlib.suppress(NotFoundError):
                await self._client.delete(VIRTUALNODES, spec.name, namespace=namespace)
        try:
            async with negotiate.remote_client(
                session.kubeconfig, request_timeout=self._options.remote_timeout
            ) as remote:
                await negotiate.withdraw(remote, spec, local)
        except (negotiate.CredentialRejectedError, APIError) as exc:
            logger.info("%s: could not delete the ResourceSlice on the provider: %s", spec.name, exc)

    async def _drop_credential(self, spec: PeeringSpec, *, reason: str) -> None:
        logger.warning("%s: dropping the credential: %s", spec.name, reason)
        namespace = spec.tenant_namespace
        for resource, name in ((IDENTITIES, spec.name), (SECRETS, objects.credential_secret_name(spec.name))):
            with contextlib.suppress(NotFoundError):
                await self._client.delete(resource, name, namespace=namespace)

    def _observed(
        self,
        foreign_cluster: JSON,
        spec: PeeringSpec | None,
        *,
        auth: Step | None = None,
        session: Session | None = None,
        resources: Step | None = None,
        virtual_node: Step | None = None,
        remote_ns: str = "",
        networking: Step | None = None,
    ) -> Observed:
        current = foreign_cluster.get("status") or {}
        name = str(foreign_cluster["metadata"]["name"])
        node = forge_vn.node_name_for(name)
        cluster_id = (
            spec.cluster_id if spec is not None else str(nested(foreign_cluster, "spec", "clusterID") or "")
        )
        namespace = spec.tenant_namespace if spec is not None else ""
        if auth is None and session is not None:
            auth = session.step
        auth = auth or waiting(c.REASON_AUTHENTICATION_PENDING, "authenticating")
        has_vn = bool(namespace) and self._caches.virtual_nodes.get(name, namespace=namespace) is not None
        return Observed(
            generation=foreign_cluster["metadata"].get("generation"),
            authentication=auth,
            resources=resources
            or waiting(c.REASON_RESOURCES_PENDING, f"waiting for the authentication with {name}"),
            virtual_node=virtual_node
            or waiting(
                c.REASON_VIRTUAL_NODE_NOT_READY, f"the virtual node {node} waits for resources from {name}"
            ),
            outgoing_enabled=spec.outgoing if spec is not None else True,
            incoming=bool(cluster_id) and has_incoming(self._caches.tenants, cluster_id),
            local_tenant_namespace=namespace
            if self._caches.namespaces.get(namespace) is not None or session
            else "",
            remote_tenant_namespace=remote_ns or str(nested(current, "tenantNamespace", "remote") or ""),
            remote_version=(session.remote_version if session else "")
            or str(current.get("remoteVersion") or ""),
            api_server_url=(session.api_server_url if session else "")
            or str(current.get("apiServerUrl") or ""),
            auth_service_key_fingerprint=(spec.trusted_key if spec is not None else "")
            or (session.key_fingerprint if session else "")
            or str(current.get(c.AUTH_KEY_FINGERPRINT_FIELD) or ""),
            virtual_nodes=[node] if has_vn or (virtual_node is not None and virtual_node.done) else [],
            networking=networking
            if networking is not None or spec is None or not (spec.networking and spec.outgoing)
            else waiting(network.REASON_PENDING, f"waiting for the peering with {name}"),
        )

    async def _write_status(self, foreign_cluster: JSON, status: Observed | JSON) -> None:
        current = foreign_cluster.get("status") or {}
        wanted = (
            foreign_cluster_status(current, status, at=conditions.now())
            if isinstance(status, Observed)
            else status
        )
        if all(current.get(key) == value for key, value in wanted.items()):
            return
        await self._client.patch_status(
            FOREIGNCLUSTERS,
            str(foreign_cluster["metadata"]["name"]),
            {"status": wanted},
            field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER,
        )

    async def _add_finalizer(self, foreign_cluster: JSON) -> None:
        meta = foreign_cluster["metadata"]
        patch = {
            "metadata": {
                "finalizers": [*(meta.get("finalizers") or []), c.FINALIZER_FOREIGNCLUSTER],
                "resourceVersion": meta.get("resourceVersion"),
            }
        }
        await self._client.patch(
            FOREIGNCLUSTERS, str(meta["name"]), patch, field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER
        )


def virtual_node_step(virtual_node: JSON, *, node: str) -> Step:
    """The VirtualNode's readiness as a step: an Error only once its Node was registered and is not Ready
    (the provider fails its health checks); while the virtual kubelet starts, it is in progress."""
    found = nested(virtual_node, "status", "conditions")
    ready = conditions.find(found, c.CONDITION_READY)
    if ready is not None and ready.get("status") == "True":
        return done(c.REASON_VIRTUAL_NODE_READY, f"the node {node} is Ready")
    if ready is None:
        return waiting(
            c.REASON_VIRTUAL_NODE_NOT_READY, f"waiting for the virtual kubelet to register the node {node}"
        )
    detail = str(ready.get("message") or ready.get("reason") or "")
    registered = conditions.find(found, c.CONDITION_NODE)
    if registered is not None and registered.get("reason") == "NotReady":
        return failed(c.REASON_VIRTUAL_NODE_NOT_READY, f"the node {node} is not Ready: {detail}")
    return waiting(c.REASON_VIRTUAL_NODE_NOT_READY, f"the node {node} is starting: {detail}")


def _disconnecting(foreign_cluster: JSON) -> JSON:
    status = dict(foreign_cluster.get("status") or {})
    status["outgoingPeering"] = "Disconnecting"
    return status


def _covers(current: JSON, desired: JSON) -> bool:
    spec = current.get("spec") or {}
    labels = nested(current, "metadata", "labels") or {}
    return all(spec.get(k) == v for k, v in desired["spec"].items()) and all(
        labels.get(k) == v for k, v in desired["metadata"]["labels"].items()
    )


# what wakes a ForeignCluster up


def _by_cluster_id(foreign_clusters: Store, cluster_ids: Iterable[str]) -> list[Request]:
    return [
        Request("", str(fc["metadata"]["name"]))
        for cluster_id in cluster_ids
        if cluster_id
        for fc in foreign_clusters.by_index(_CLUSTER_ID_INDEX, cluster_id)
    ]


def _tenant_mapper(foreign_clusters: Store) -> MapFunc:
    def map_tenant(tenant: JSON) -> list[Request]:
        return _by_cluster_id(foreign_clusters, [str(nested(tenant, "spec", "clusterID") or "")])

    return map_tenant


def _label_mapper(foreign_clusters: Store) -> MapFunc:
    """Objects labelled with a remote cluster id (peering Secrets, Identities, VirtualNodes, tenant namespaces)."""

    def map_labelled(obj: JSON) -> list[Request]:
        labels = nested(obj, "metadata", "labels") or {}
        return _by_cluster_id(foreign_clusters, [str(labels.get(c.LABEL_REMOTE_CLUSTER_ID) or "")])

    return map_labelled


def _token_mapper(foreign_clusters: Store, *, default_namespace: str) -> MapFunc:
    def map_token(secret: JSON) -> list[Request]:
        meta = secret.get("metadata") or {}
        requests = []
        for fc in foreign_clusters:
            ref = nested(fc, "spec", "tokenSecretRef") or {}
            if ref.get("name") == meta.get("name") and (
                ref.get("namespace") or default_namespace
            ) == meta.get("namespace"):
                requests.append(Request("", str(fc["metadata"]["name"])))
        return requests

    return map_token


def _every(foreign_clusters: Store) -> MapFunc:
    def map_all(_: JSON) -> list[Request]:
        return [Request("", str(fc["metadata"]["name"])) for fc in foreign_clusters]

    return map_all


def _cluster_ids(foreign_cluster: JSON) -> list[str]:
    cluster_id = nested(foreign_cluster, "spec", "clusterID")
    return [str(cluster_id)] if cluster_id else []


def setup(manager: Manager, options: ControllerOptions) -> None:
    """Register the ForeignCluster controller with `manager`."""
    foreign_clusters = manager.informer(FOREIGNCLUSTERS)
    foreign_clusters.store.add_index(_CLUSTER_ID_INDEX, _cluster_ids)
    tenants = manager.informer(TENANTS)
    namespaces = manager.informer(NAMESPACES, label_selector=c.LABEL_TENANT_NAMESPACE)
    peering_secrets = manager.informer(SECRETS, label_selector=PEERING_SECRETS)
    runtime_secrets = manager.informer(SECRETS, namespace=options.namespace)
    identities = manager.informer(IDENTITIES)
    virtual_nodes = manager.informer(VIRTUALNODES)
    cluster_identity = manager.informer(
        CONFIGMAPS,
        namespace=options.namespace,
        field_selector=f"metadata.name={c.CLUSTER_IDENTITY_CONFIGMAP}",
    )
    caches = Caches(
        foreign_clusters=foreign_clusters.store,
        tenants=tenants.store,
        namespaces=namespaces.store,
        peering_secrets=peering_secrets.store,
        runtime_secrets=runtime_secrets.store,
        identities=identities.store,
        virtual_nodes=virtual_nodes.store,
        cluster_identity=cluster_identity.store,
    )
    recorder = EventRecorder(manager.client, component=EVENT_COMPONENT)
    reconciler = ForeignClusterReconciler(manager.client, caches, options=options, recorder=recorder)
    controller = manager.controller(NAME, reconciler, primary=foreign_clusters)
    controller.watches(tenants, _tenant_mapper(caches.foreign_clusters))
    for informer in (namespaces, peering_secrets, identities, virtual_nodes):
        controller.watches(informer, _label_mapper(caches.foreign_clusters))
    controller.watches(
        runtime_secrets, _token_mapper(caches.foreign_clusters, default_namespace=options.namespace)
    )
    controller.watches(cluster_identity, _every(caches.foreign_clusters))
