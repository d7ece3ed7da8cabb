"""Service exposition reflected to the provider: Services, EndpointSlices, Ingresses (Liqo's `reflection/exposition`).

All three are `OutgoingReflector`s (`runtime.forge.services`, `.endpointslices`, `.ingresses`):

- a Service's copy gets the provider's own ClusterIP and node ports (unless
  `liqo.io/force-remote-node-port=true`); pods on either side find it by name;
- an EndpointSlice becomes a ShadowEndpointSlice of the same name, with the endpoints the
  provider cannot see (those not on this provider's virtual nodes: the consumer's pods,
  and other providers'), their addresses translated by the network fabric's
  `AddressTranslator`; the provider's runtime turns it into an EndpointSlice of its own
  (`runtime.controllers.offloading.shadowendpointslice`). A slice follows its Service's
  `liqo.io/skip-reflection` too, and the `kubernetes` Service's slices are never reflected;
- an Ingress's copy keeps no ingress class unless the install maps it to the provider's.

Services, EndpointSlices and Ingresses follow their kind's reflection type; an EndpointSlice
follows its Service's (reflected when its Service is) unless it carries
`liqo.io/skip-reflection` or `liqo.io/allow-reflection` itself, as in Liqo.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from runtime.api import constants as c
from runtime.api.crds import SHADOWENDPOINTSLICES
from runtime.api.kinds import ENDPOINTSLICES, INGRESSES, SERVICES
from runtime.api.objects import JSON
from runtime.core import Manager, Store
from runtime.forge import endpointslices, ingresses, services
from runtime.forge.reflection import annotated

from .generic import NamespacePair, Watched
from .outgoing import OutgoingReflector, ReflectionContext

#: the API server's own Service, never reflected
KUBERNETES_SERVICE = ("default", "kubernetes")


class ServiceReflector(OutgoingReflector):
    kind = "service"
    local_resource = SERVICES
    remote_resource = SERVICES

    def desired(self, local: JSON, pair: NamespacePair) -> JSON:
        return services.remote_service(
            local, namespace=pair.remote, origin_cluster_id=self.context.origin_cluster_id
        )

    def differs(self, current: JSON, desired: JSON) -> bool:
        return services.service_differs(current, desired)

    def update(self, current: JSON, desired: JSON) -> JSON:
        return services.service_update(current, desired)

    def skipped(self, local: JSON, pair: NamespacePair) -> bool:
        return super().skipped(local, pair) or (pair.local, local["metadata"]["name"]) == KUBERNETES_SERVICE


class EndpointSliceReflector(OutgoingReflector):
    """EndpointSlices as ShadowEndpointSlices; `provider_nodes` caches this provider's virtual nodes."""

    kind = "endpointslice"
    local_resource = ENDPOINTSLICES
    remote_resource = SHADOWENDPOINTSLICES

    def __init__(
        self, manager: Manager, *, context: ReflectionContext, workers: int, provider_nodes: Store
    ) -> None:
        super().__init__(manager, context=context, workers=workers)
        self._provider_nodes = provider_nodes

    def local_kinds(self) -> Sequence[Watched]:
        return (Watched(ENDPOINTSLICES), Watched(SERVICES, keys=self._slices_of))

    def _slices_of(self, service: JSON, pair: NamespacePair) -> Iterable[str]:
        """A Service -> its local EndpointSlices (they follow its reflection)."""
        slices = pair.local_store(ENDPOINTSLICES)
        if slices is None:
            return []
        name = str(service["metadata"]["name"])
        return [
            str(s["metadata"]["name"])
            for s in slices.items(namespace=pair.local, labels={c.LABEL_SERVICE_NAME: name})
        ]

    def skipped(self, local: JSON, pair: NamespacePair) -> bool:
        service_name = endpointslices.service_of(local)
        if (pair.local, service_name) == KUBERNETES_SERVICE:
            return True
        if annotated(local):
            return super().skipped(local, pair)
        service_store = pair.local_store(SERVICES)
        service = (
            service_store.get(service_name, namespace=pair.local) if service_store and service_name else None
        )
        return not self.context.options.reflects("service", service)

    def desired(self, local: JSON, pair: NamespacePair) -> JSON:
        return endpointslices.shadow_endpoint_slice(
            local,
            namespace=pair.remote,
            origin_cluster_id=self.context.origin_cluster_id,
            excluded_nodes={str(node["metadata"]["name"]) for node in self._provider_nodes},
            translate=self.context.translator.to_remote,
        )

    def differs(self, current: JSON, desired: JSON) -> bool:
        return endpointslices.shadow_differs(current, desired)


class IngressReflector(OutgoingReflector):
    kind = "ingress"
    local_resource = INGRESSES
    remote_resource = INGRESSES

    def __init__(
        self, manager: Manager, *, context: ReflectionContext, workers: int, classes: Mapping[str, str]
    ) -> None:
        super().__init__(manager, context=context, workers=workers)
        self._classes = dict(classes)

    def desired(self, local: JSON, pair: NamespacePair) -> JSON:
        return ingresses.remote_ingress(
            local,
            namespace=pair.remote,
            origin_cluster_id=self.context.origin_cluster_id,
            classes=self._classes,
        )

    def differs(self, current: JSON, desired: JSON) -> bool:
        return ingresses.ingress_differs(current, desired)
