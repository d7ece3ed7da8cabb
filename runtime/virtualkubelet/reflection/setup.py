"""Which reflectors a virtual kubelet runs: one per kind of `ReflectionOptions` with workers.

A kind with 0 workers gets no reflector at all (Liqo's no-op reflector, without one): none
of its informers is ever started, on either cluster, and nothing of it is reflected.
"""

from __future__ import annotations

from runtime.api import constants as c
from runtime.api.kinds import NODES
from runtime.core import Informer, Manager
from runtime.forge.reflection import ReflectionOptions

from .configuration import ConfigMapReflector, SecretReflector
from .events import EventReflector
from .exposition import EndpointSliceReflector, IngressReflector, ServiceReflector
from .generic import Reflector
from .outgoing import ReflectionContext
from .workload import PodReflectionOptions, PodReflector


def reflectors(
    manager: Manager,
    *,
    options: ReflectionOptions,
    context: ReflectionContext,
    pods: Informer,
    pod_options: PodReflectionOptions,
    provider_cluster_id: str,
) -> list[Reflector]:
    """The reflectors the options turn on, registered with `manager`."""
    found: list[Reflector] = []
    if options.pod_workers:
        found.append(
            PodReflector(
                manager,
                local=pods,
                local_client=context.local_client,
                remote=context.remote,
                options=pod_options,
                translator=context.translator,
                recorder=context.recorder,
                workers=options.pod_workers,
                metrics=context.metrics,
            )
        )
    if options.configmap_workers:
        found.append(ConfigMapReflector(manager, context=context, workers=options.configmap_workers))
    if options.secret_workers:
        found.append(SecretReflector(manager, context=context, workers=options.secret_workers))
    if options.service_workers:
        found.append(ServiceReflector(manager, context=context, workers=options.service_workers))
    if options.endpointslice_workers:
        # this provider's virtual nodes: the endpoints on them are the provider's own
        provider_nodes = manager.informer(
            NODES, label_selector=f"{c.LABEL_REMOTE_CLUSTER_ID}={provider_cluster_id}"
        )
        found.append(
            EndpointSliceReflector(
                manager,
                context=context,
                workers=options.endpointslice_workers,
                provider_nodes=provider_nodes.store,
            )
        )
    if options.ingress_workers:
        found.append(
            IngressReflector(
                manager, context=context, workers=options.ingress_workers, classes=options.ingress_classes
            )
        )
    if options.event_workers:
        found.append(
            EventReflector(
                manager,
                context=context,
                workers=options.event_workers,
                pods=pods.store,
                provider_cluster_id=provider_cluster_id,
            )
        )
    return found
