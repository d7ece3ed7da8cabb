"""The EndpointSlice and Endpoints controllers: which pods back each Service (kube's `endpointslice` and
`endpoints` controllers).

For every Service with a selector (ExternalName Services and Services without a
selector are left alone) both read the selected pods from the cache:

- `EndpointSliceReconciler` keeps the Service's EndpointSlices (`<svc>-<random>`,
  labelled `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by`,
  owned by the Service so the garbage collector removes them with it): one endpoint per
  pod IP of the slice's address type, with ready/serving/terminating conditions, node
  name, zone and target, ports resolved from targetPort, at most
  `max_endpoints_per_slice` per slice, an empty placeholder when nothing backs it;
- `EndpointsReconciler` keeps the legacy `Endpoints` object of the same name (what
  `kubectl get endpoints` and `kubectl describe svc` show): ready pods as addresses,
  the others as notReadyAddresses, terminating pods only with publishNotReadyAddresses;
  it is deleted with the Service.

The pure rules live in `workloads/endpoints.py`; these classes read caches and write.
"""

from __future__ import annotations

import logging

from playground.controlplane import ControlPlaneOptions, Credentials
from runtime.api.kinds import ENDPOINTS, ENDPOINTSLICES, NODES, PODS, SERVICES
from runtime.api.objects import JSON
from runtime.api.selectors import set_selector
from runtime.core import (
    AlreadyExistsError,
    Client,
    Informer,
    Manager,
    MapFunc,
    NotFoundError,
    Request,
    Result,
    Store,
)

from .workloads import endpoints as shapes
from .workloads import names
from .workloads.expectations import Expectations
from .workloads.ownership import is_deleting, labels, name, namespace
from .workloads.status import retry_on_conflict

logger = logging.getLogger(__name__)

#: the ServiceAccount kube-controller-manager runs this controller as (system:controller:endpointslice-controller)
ACCOUNT = "endpointslice-controller"
#: the ServiceAccount kube-controller-manager runs the Endpoints controller as (system:controller:endpoint-controller)
ENDPOINTS_ACCOUNT = "endpoint-controller"


def _selected_pods(service: JSON, pods: Store) -> list[JSON] | None:
    """The pods a Service selects, or None when this controller leaves the Service alone."""
    spec = service.get("spec") or {}
    if spec.get("type") == "ExternalName" or not spec.get("selector") or is_deleting(service):
        return None
    selector = set_selector(spec["selector"])
    return [pod for pod in pods.items(namespace=namespace(service)) if selector.matches(labels(pod))]


class EndpointSliceReconciler:
    def __init__(
        self,
        client: Client,
        *,
        services: Informer,
        pods: Informer,
        nodes: Informer,
        slices: Informer,
        expectations: Expectations,
        max_per_slice: int,
    ) -> None:
        self._client = client
        self._services = services
        self._pods = pods
        self._nodes = nodes
        self._slices = slices
        self._expectations = expectations
        self._max_per_slice = max_per_slice

    async def reconcile(self, request: Request) -> Result | None:
        return await retry_on_conflict(request, self._sync(request))

    async def _sync(self, request: Request) -> Result | None:
        key = str(request)
        service = self._services.store.get(request.name, namespace=request.namespace)
        if service is None:
            self._expectations.forget(key)
            return None
        selected = _selected_pods(service, self._pods.store)
        if selected is None:
            return None
        if not self._expectations.satisfied(key):
            # the cache does not show this controller's last writes yet; their events bring the key back
            return Result(requeue_after=self._expectations.expires_in(key))
        nodes = {name(node): node for node in self._nodes.store}
        desired = shapes.desired_endpoints(service, selected, nodes=nodes)
        existing = [
            current
            for current in self._slices.store.items(namespace=request.namespace)
            if labels(current).get(names.SERVICE_NAME) == request.name
            and labels(current).get(names.MANAGED_BY) == names.ENDPOINTSLICE_CONTROLLER
        ]
        plan = shapes.plan_slices(service, desired, existing, max_per_slice=self._max_per_slice)
        for doomed in plan.delete:
            try:
                await self._client.delete(ENDPOINTSLICES, name(doomed), namespace=request.namespace)
            except NotFoundError:
                continue
            self._expectations.expect_deleted(key, [doomed])
        for changed in plan.update:
            await self._client.replace(ENDPOINTSLICES, changed, field_manager=names.FIELD_MANAGER)
            self._expectations.expect_updated(key, [changed])
        for body in plan.create:
            created = await self._client.create(ENDPOINTSLICES, body, field_manager=names.FIELD_MANAGER)
            self._expectations.expect_created(key, [created])
        if plan.create or plan.update or plan.delete:
            logger.info(
                "%s: endpoint slices: %d created, %d updated, %d deleted",
                request,
                len(plan.create),
                len(plan.update),
                len(plan.delete),
            )
        return None


class EndpointsReconciler:
    def __init__(self, client: Client, *, services: Informer, pods: Informer, endpoints: Informer) -> None:
        self._client = client
        self._services = services
        self._pods = pods
        self._endpoints = endpoints

    async def reconcile(self, request: Request) -> Result | None:
        return await retry_on_conflict(request, self._sync(request))

    async def _sync(self, request: Request) -> Result | None:
        service = self._services.store.get(request.name, namespace=request.namespace)
        current = self._endpoints.store.get(request.name, namespace=request.namespace)
        if service is None:
            if current is not None and labels(current).get(names.SKIP_MIRROR) == "true":
                try:
                    await self._client.delete(ENDPOINTS, request.name, namespace=request.namespace)
                except NotFoundError:
                    return None
                logger.info("%s: deleted the endpoints of a deleted service", request)
            return None
        selected = _selected_pods(service, self._pods.store)
        if selected is None:
            return None
        subsets = shapes.endpoint_subsets(service, selected)
        wanted_labels = shapes.endpoints_labels(service)
        body: JSON = {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": request.name, "namespace": request.namespace, "labels": wanted_labels},
        }
        if subsets:
            body["subsets"] = subsets
        if current is None:
            try:
                await self._client.create(ENDPOINTS, body, field_manager=names.FIELD_MANAGER)
            except AlreadyExistsError:
                logger.debug("%s: endpoints exist but are not cached yet", request)
            return None
        if (current.get("subsets") or []) == subsets and labels(current) == wanted_labels:
            return None
        updated = {**current, "metadata": {**current["metadata"], "labels": wanted_labels}}
        updated.pop("subsets", None)
        if subsets:
            updated["subsets"] = subsets
        await self._client.replace(ENDPOINTS, updated, field_manager=names.FIELD_MANAGER)
        return None


def _services_selecting(services: Store) -> MapFunc:
    """A pod's change concerns every Service in its namespace that selects it."""

    def mapped(pod: JSON) -> list[Request]:
        return [
            Request.of(service)
            for service in services.items(namespace=namespace(pod))
            if (service.get("spec") or {}).get("selector")
            and set_selector((service.get("spec") or {})["selector"]).matches(labels(pod))
        ]

    return mapped


def _same_name(obj: JSON) -> list[Request]:
    return [Request.of(obj)]


def setup(manager: Manager, options: ControlPlaneOptions, credentials: Credentials) -> None:
    """Register the EndpointSlice and Endpoints controllers with `manager`."""
    services = manager.informer(SERVICES)
    pod_informer = manager.informer(PODS)
    nodes = manager.informer(NODES)
    slices = manager.informer(ENDPOINTSLICES)
    endpoints = manager.informer(ENDPOINTS)
    expectations = Expectations.of(slices)
    slice_controller = manager.controller(
        "endpointslice",
        EndpointSliceReconciler(
            credentials.client(ACCOUNT),
            services=services,
            pods=pod_informer,
            nodes=nodes,
            slices=slices,
            expectations=expectations,
            max_per_slice=options.max_endpoints_per_slice,
        ),
        primary=services,
    )
    slice_controller.watches(pod_informer, _services_selecting(services.store))
    slice_controller.owns(slices)
    endpoints_controller = manager.controller(
        "endpoints",
        EndpointsReconciler(
            credentials.client(ENDPOINTS_ACCOUNT), services=services, pods=pod_informer, endpoints=endpoints
        ),
        primary=services,
    )
    endpoints_controller.watches(pod_informer, _services_selecting(services.store))
    endpoints_controller.watches(endpoints, _same_name)
