"""The IPAM of peerings (both sides): every Configuration's remote pod networks mapped here, persistently.

For each Configuration (one per peering, in the remote cluster's tenant namespace) the
controller writes this cluster's own networks into `spec.local` (from the identity
ConfigMap: pod CIDR, and Liqo's default external CIDR), keeps one `Network` (ipam.liqo.io,
owned by the Configuration) per remote pod CIDR, allocates it (`runtime.forge.ipam`: the
CIDR itself when free, else a remapped one) and reports the result in `status.remote`.

Allocations are conflict-free across peerings because one worker makes them, against every
Network's recorded allocation plus what this process gave since (the cache may not show
its own writes yet); they survive restarts because they are read back from the Networks.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from runtime.api import constants as c
from runtime.api.crds import CONFIGURATIONS, NETWORKS
from runtime.api.kinds import CONFIGMAPS
from runtime.core import AlreadyExistsError, Client, Informer, Manager, PermanentError, Request, Result
from runtime.forge import ipam
from runtime.forge import networking as forge
from runtime.forge.networking import Cidrs

from ..options import ControllerOptions

logger = logging.getLogger(__name__)

JSON = dict[str, Any]

NAME = "configuration"
FIELD_MANAGER = "liqo-ipam"


class ConfigurationReconciler:
    def __init__(
        self, client: Client, *, configurations: Informer, networks: Informer, identity: Informer
    ) -> None:
        self._client = client
        self._configurations = configurations
        self._networks = networks
        self._identity = identity
        #: Network uid -> CIDR given by this process (the cache may lag behind its own writes)
        self._given: dict[str, str] = {}

    async def reconcile(self, request: Request) -> Result | None:
        configuration = self._configurations.store.get(request.name, namespace=request.namespace)
        if configuration is None or configuration["metadata"].get("deletionTimestamp"):
            return None
        data = (next(iter(self._identity.store), None) or {}).get("data") or {}
        pod_cidr, service_cidr = (
            str(data.get(c.IDENTITY_POD_CIDR) or ""),
            str(data.get(c.IDENTITY_SERVICE_CIDR) or ""),
        )
        if not pod_cidr or not service_cidr:
            return Result(requeue_after=5.0)
        local = Cidrs(pod=(pod_cidr,), external=(ipam.DEFAULT_EXTERNAL_CIDR,))
        if Cidrs.of((configuration.get("spec") or {}).get("local")) != local:
            await self._client.apply(
                CONFIGURATIONS,
                {
                    "metadata": {"name": request.name, "namespace": request.namespace},
                    "spec": {"local": {"cidr": local.json()}},
                },
                field_manager=FIELD_MANAGER,
                force=True,
            )
        remote = Cidrs.of((configuration.get("spec") or {}).get("remote"))
        reserved = ipam.Reserved(pod_cidr=pod_cidr, service_cidr=service_cidr)
        mapped: list[str] = []
        for cidr in remote.pod:
            try:
                mapped.append(await self._allocate(configuration, cidr, reserved))
            except ipam.IPAMError as exc:
                raise PermanentError(f"{request}: {exc}") from None
        current = Cidrs.of((configuration.get("status") or {}).get("remote"))
        wanted = Cidrs(pod=tuple(mapped), external=remote.external)
        if mapped and current != wanted:
            await self._client.apply(
                CONFIGURATIONS,
                forge.configuration_status(request.name, namespace=request.namespace, remote=wanted),
                field_manager=FIELD_MANAGER,
                subresource="status",
                force=True,
            )
            logger.info(
                "%s: remote pod CIDR %s is %s here", request, ", ".join(remote.pod), ", ".join(mapped)
            )
        return None

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
            str(other["metadata"]["uid"]): str((other.get("status") or {}).get("cidr") or "")
            for other in self._networks.store
        }
        others.update(self._given)
        others.pop(uid, None)
        current = self._given.get(uid) or str((network.get("status") or {}).get("cidr") or "")
        given = ipam.allocate(
            cidr, reserved=reserved, allocated=[other for other in others.values() if other], current=current
        )
        if given != str((network.get("status") or {}).get("cidr") or ""):
            await self._client.apply(
                NETWORKS,
                {"metadata": {"name": name, "namespace": meta["namespace"]}, "status": {"cidr": given}},
                field_manager=FIELD_MANAGER,
                subresource="status",
                force=True,
            )
        self._given[uid] = given
        return given


def setup(manager: Manager, options: ControllerOptions) -> None:
    """Register the IPAM of Configurations with `manager` (one worker: allocations are made one at a time)."""
    configurations = manager.informer(CONFIGURATIONS)
    networks = manager.informer(NETWORKS)
    identity = manager.informer(
        CONFIGMAPS,
        namespace=options.namespace,
        field_selector=f"metadata.name={c.CLUSTER_IDENTITY_CONFIGMAP}",
    )
    single = dataclasses.replace(
        manager.settings, queueing=dataclasses.replace(manager.settings.queueing, workers=1)
    )
    reconciler = ConfigurationReconciler(
        manager.client, configurations=configurations, networks=networks, identity=identity
    )
    controller = manager.controller(NAME, reconciler, primary=configurations, settings=single)
    controller.owns(networks)
    controller.watches(identity, lambda _: [Request.of(item) for item in configurations.store])
