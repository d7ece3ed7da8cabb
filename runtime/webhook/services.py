"""Admission of Services in twin namespaces: exposed on the provider's nodes only as far as it allows.

A consumer's credential may write Services in its twin namespaces (its virtual kubelet
reflects its own there). A NodePort opens a port on every node of the provider, a
LoadBalancer buys one: a Service asking for more than the install's
`max_consumer_service_type` (ClusterIP by default) is converted to that type
(`runtime.forge.services.converted`), not refused, because offloaded pods still need to
find it by name on the provider, which a ClusterIP gives them; the consumer's users reach
it through the consumer's own Service. The reflector takes a converted copy as in sync.

A Service with `spec.externalIPs` is refused, whatever the type: kube-proxy sends the
traffic of every pod and node of the provider to those addresses to the Service's
endpoints, so a consumer could intercept any address it names (CVE-2020-8554). Reflection
never carries the field, so only a hand-made Service meets this.
"""

from __future__ import annotations

from collections.abc import Callable

from runtime.api.objects import JSON
from runtime.forge.services import ServiceType, converted

from .review import Mutation, forbidden


def service_mutator(widest: ServiceType) -> Callable[[JSON], Mutation]:
    """The handler of `/mutate/services`: Services narrowed to `widest`."""

    def mutate(request: JSON) -> Mutation:
        obj = request.get("object")
        spec = obj.get("spec") if isinstance(obj, dict) else None
        if not isinstance(spec, dict):
            return Mutation()
        if spec.get("externalIPs"):
            return Mutation(
                problems=[
                    forbidden(
                        "spec.externalIPs",
                        "a consumer's Service may not claim external IPs on this cluster: kube-proxy would send "
                        "its pods' and nodes' traffic for them to the Service (CVE-2020-8554)",
                    )
                ]
            )
        narrowed = converted(spec, widest=widest)
        if narrowed is spec:
            return Mutation()
        return Mutation(patch=[{"op": "add", "path": "/spec", "value": narrowed}])

    return mutate
