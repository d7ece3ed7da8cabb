"""The IPAM of peerings (both sides): every Configuration's remote pod networks mapped here, persistently.

For each Configuration (one per peering, in the remote cluster's tenant namespace) the
controller writes this cluster's own networks into `spec.local` (from the identity
ConfigMap: pod CIDR, and Liqo's default external CIDR), keeps one `Network` (ipam.liqo.io,
owned by the Configuration) per remote pod CIDR, allocates it (`runtime.forge.ipam`: the
CIDR itself when free and in the pool, else a remapped one) and reports the result in
`status.remote`.

What the peer wrote is the peer's, and hostile until checked: every network of `spec.remote`
goes through `runtime.forge.cidrs` (a canonical IPv4 CIDR, not special-purpose, not wider than
/8, at most 4 of a kind); a refused one is left out, and the Configuration's `Accepted`
condition (False, NetworksRefused) and a Warning Event name it and say why. The IPAM owns
what it writes: `status.remote` is rewritten from the checked `spec.remote` on every
reconcile (emptied when nothing is accepted), and `spec.local` from the identity ConfigMap,
whatever the peer patched there. A Network no longer asked for is deleted, and what this
process remembers giving is forgotten with it and with the Configuration, so the pool never
leaks.

Allocations are conflict-free across peerings because one worker makes them, against every
Network's recorded allocation plus what this process gave since (the cache may not show
its own writes yet); they survive restarts because they are read back from the Networks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging

from runtime.api import constants as c
from runtime.api.crds import CONFIGURATIONS, NETWORKS
from runtime.api.kinds import CONFIGMAPS, NODES
from runtime.api.objects import JSON, nested
from runtime.core import (
    AlreadyExistsError,
    Client,
    EventRecorder,
    Informer,
    Manager,
    NotFoundError,
    Request,
    Result,
)
from runtime.forge import cidrs, conditions, ipam
from runtime.forge import networking as forge
from runtime.forge.networking import Cidrs

from ..options import ControllerOptions

logger = logging.getLogger(__name__)


NAME = "configuration"
FIELD_MANAGER = "liqo-ipam"


@dataclasses.dataclass(frozen=True)
class _Given:
    """A network this process gave (the cache may lag behind its own writes), and whose request it was."""

    namespace: str
    configuration: str
    network: str
    cidr: str


def node_networks(nodes: list[JSON]) -> tuple[str, ...]:
    """The nodes' networks, reserved: the /16 around each address of a real node (the API does not say the nodes'
    prefix; a /16 covers the usual node subnets, and a peer asking inside it is only remapped)."""
    found: set[str] = set()
    for node in nodes:
        if nested(node["metadata"], "labels", c.LABEL_TYPE) == c.TYPE_VIRTUAL_NODE:
            continue
        for entry in nested(node, "status", "addresses") or []:
            try:
                address = cidrs.address(entry.get("address"))
            except cidrs.CidrError:
                continue
            found.add(str(cidrs.Network(f"{address}/16", strict=False)))
    return tuple(sorted(found))


class ConfigurationReconciler:
    def __init__(
        self,
        client: Client,
        *,
        configurations: Informer,
        networks: Informer,
        identity: Informer,
        nodes: Informer,
        recorder: EventRecorder,
    ) -> None:
        self._client = client
        self._configurations = configurations
        self._networks = networks
        self._identity = identity
        self._nodes = nodes
        self._recorder = recorder
        #: Network uid -> what this process gave it
        self._given: dict[str, _Given] = {}

    def given(self) -> dict[str, str]:
        """Network uid -> CIDR, for every network this process remembers giving."""
        return {uid: given.cidr for uid, given in self._given.items()}

    async def reconcile(self, request: Request) -> Result | None:
        configuration = self._configurations.store.get(request.name, namespace=request.namespace)
        if configuration is None or configuration["metadata"].get("deletionTimestamp"):
            self._forget(request.namespace, request.name, keep=())
            return None  # its Networks go with it (owner reference)
        data = (next(iter(self._identity.store), None) or {}).get("data") or {}
        pod_cidr, service_cidr = (
            str(data.get(c.IDENTITY_POD_CIDR) or ""),
            str(data.get(c.IDENTITY_SERVICE_CIDR) or ""),
        )
        if not pod_cidr or not service_cidr:
            return Result(requeue_after=5.0)
        spec = configuration.get("spec") or {}
        local = Cidrs(pod=(pod_cidr,), external=(ipam.DEFAULT_EXTERNAL_CIDR,))
        if (spec.get("local") or {}) != {"cidr": local.json()}:
            await self._client.apply(
                CONFIGURATIONS,
                {
                    "metadata": {"name": request.name, "namespace": request.namespace},
                    "spec": {"local": {"cidr": local.json()}},
                },
                field_manager=FIELD_MANAGER,
                force=True,
            )
        remote = Cidrs.of(spec.get("remote"))
        refused = [f"spec.remote: {reason}" for reason in Cidrs.refused(spec.get("remote"))]
        reserved = ipam.Reserved(
            pod_cidr=pod_cidr, service_cidr=service_cidr, others=node_networks(list(self._nodes.store))
        )
        mapped: list[str] = []
        for cidr in remote.pod:
            try:
                mapped.append(await self._allocate(configuration, cidr, reserved))
            except ipam.IPAMError as exc:
                refused.append(f"spec.remote: {cidr}: {exc}")
        await self._release(configuration, keep=remote.pod)
        await self._report(configuration, Cidrs(pod=tuple(mapped), external=remote.external), refused)
        return None

    async def _report(self, configuration: JSON, wanted: Cidrs, refused: list[str]) -> None:
        """`status.remote` as the IPAM derived it and the Accepted condition, written when either differs."""
        meta = configuration["metadata"]
        status = configuration.get("status") or {}
        accepted = conditions.condition(
            c.CONDITION_ACCEPTED,
            not refused,
            reason=c.REASON_NETWORKS_REFUSED if refused else c.REASON_NETWORKS_ACCEPTED,
            message="; ".join(refused) if refused else "every network of spec.remote is accepted",
        )
        current_conditions = status.get("conditions") or []
        if (status.get("remote") or {}) == {"cidr": wanted.json()} and not conditions.differs(
            current_conditions, [accepted]
        ):
            return
        body = forge.configuration_status(meta["name"], namespace=meta["namespace"], remote=wanted)
        body["status"]["conditions"] = conditions.merged(current_conditions, [accepted], at=conditions.now())
        await self._client.apply(
            CONFIGURATIONS, body, field_manager=FIELD_MANAGER, subresource="status", force=True
        )
        if refused and conditions.differs(current_conditions, [accepted]):
            await self._recorder.record(
                configuration,
                type="Warning",
                reason=c.REASON_NETWORKS_REFUSED,
                message=f"networks refused (never routed here): {accepted['message']}",
            )
            logger.warning("%s/%s: %s", meta["namespace"], meta["name"], accepted["message"])
        elif wanted.pod:
            logger.info(
                "%s/%s: remote pod CIDR is %s here", meta["namespace"], meta["name"], ", ".join(wanted.pod)
            )

    async def _allocate(self, configuration: JSON, cidr: str, reserved: ipam.Reserved) -> str:
        meta = configuration["metadata"]
        name = forge.network_name(meta["name"], cidr)
        network = self._networks.store.get(name, namespace=meta["namespace"])
        if network is None:
            try:
                network = await self._client.create(
                    NETWORKS, forge.network(configuration, cidr), field_manager=FIELD_MANAGER
                )
            except AlreadyExistsError:
                network = await self._client.get(NETWORKS, name, namespace=meta["namespace"])
        uid = network["metadata"]["uid"]
        others = {
            str(other["metadata"]["uid"]): str(nested(other, "status", "cidr") or "")
            for other in self._networks.store
        }
        others.update(self.given())
        others.pop(uid, None)
        recorded = str(nested(network, "status", "cidr") or "")
        current = self._given[uid].cidr if uid in self._given else recorded
        given = ipam.allocate(
            cidr, reserved=reserved, allocated=[other for other in others.values() if other], current=current
        )
        if given != recorded:
            await self._client.apply(
                NETWORKS,
                {"metadata": {"name": name, "namespace": meta["namespace"]}, "status": {"cidr": given}},
                field_manager=FIELD_MANAGER,
                subresource="status",
                force=True,
            )
        self._given[uid] = _Given(meta["namespace"], meta["name"], name, given)
        return given

    async def _release(self, configuration: JSON, *, keep: tuple[str, ...]) -> None:
        """Delete the Networks of `configuration` no longer asked for (a peer changing its networks frees them)."""
        meta = configuration["metadata"]
        wanted = {forge.network_name(meta["name"], cidr) for cidr in keep}
        for network in self._networks.store.items(namespace=meta["namespace"]):
            owners = network["metadata"].get("ownerReferences") or []
            if network["metadata"]["name"] in wanted or not any(o.get("uid") == meta["uid"] for o in owners):
                continue
            with contextlib.suppress(NotFoundError):
                await self._client.delete(NETWORKS, network["metadata"]["name"], namespace=meta["namespace"])
            logger.info(
                "%s/%s: network %s released", meta["namespace"], meta["name"], network["metadata"]["name"]
            )
        self._forget(meta["namespace"], meta["name"], keep=tuple(wanted))

    def _forget(self, namespace: str, configuration: str, *, keep: tuple[str, ...]) -> None:
        """Forget what this process gave the Networks of a Configuration but those named in `keep`."""
        for uid, given in list(self._given.items()):
            if (
                given.namespace == namespace
                and given.configuration == configuration
                and given.network not in keep
            ):
                del self._given[uid]


def setup(manager: Manager, options: ControllerOptions) -> None:
    """Register the IPAM of Configurations with `manager` (one worker: allocations are made one at a time)."""
    configurations = manager.informer(CONFIGURATIONS)
    networks = manager.informer(NETWORKS)
    identity = manager.informer(
        CONFIGMAPS,
        namespace=options.namespace,
        field_selector=f"metadata.name={c.CLUSTER_IDENTITY_CONFIGMAP}",
    )
    nodes = manager.informer(NODES)
    single = dataclasses.replace(
        manager.settings, queueing=dataclasses.replace(manager.settings.queueing, workers=1)
    )
    reconciler = ConfigurationReconciler(
        manager.client,
        configurations=configurations,
        networks=networks,
        identity=identity,
        nodes=nodes,
        recorder=EventRecorder(manager.client, component=FIELD_MANAGER),
    )
    controller = manager.controller(NAME, reconciler, primary=configurations, settings=single)
    controller.owns(networks)
    controller.watches(identity, lambda _: [Request.of(item) for item in configurations.store])
