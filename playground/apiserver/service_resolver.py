"""Where a webhook's `clientConfig.service` is reached: kube-apiserver's endpoint routing.

kube-apiserver started with `--enable-aggregator-routing=true` (as real-binary mode
starts it) dials a Service webhook at one of the Service's endpoints, not at its
ClusterIP (k8s.io/apiserver/pkg/util/proxy ResolveEndpoint, behind the kube-aggregator's
endpoint service resolver; `default/kubernetes` on 443 is the API server itself):

- the Service must exist and be of type ClusterIP, NodePort or LoadBalancer;
- the webhook's `port` names a *Service* port (by number); the endpoint port is the
  EndpointSlice port with that Service port's name;
- the Service's EndpointSlices (label `kubernetes.io/service-name`) are tried in random
  order, those of the Service's primary IP family first; in the first that has the port
  and endpoints, a ready endpoint (no `ready` condition counts as ready) is picked from
  a random starting point, and its first address is used;
- otherwise the call fails with kube's reason (`no endpoints available for service
  "<name>"`, `no service port <port> found for service "<name>"`, `service "<name>" not
  found`, `unsupported service type "<type>"`).

The TLS server name stays `<name>.<namespace>.svc`, whatever address is dialled.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

from .resources.base import Obj

ROUTABLE_TYPES = ("ClusterIP", "LoadBalancer", "NodePort")


class ResolveError(Exception):
    """The Service cannot be reached; the message is kube-apiserver's."""


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int

    @property
    def address(self) -> str:
        """`host:port`, with an IPv6 host in brackets (net.JoinHostPort)."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def resolve_endpoint(
    service: Obj | None,
    slices: Iterable[Obj],
    *,
    name: str,
    port: int,
    rng: random.Random | None = None,
) -> Endpoint:
    """One endpoint of Service `name` serving its port `port`, chosen as kube-apiserver chooses it."""
    rng = rng or random.Random()
    if service is None:
        raise ResolveError(f'service "{name}" not found')
    spec = service.get("spec") or {}
    service_type = spec.get("type") or "ClusterIP"
    if service_type not in ROUTABLE_TYPES:
        raise ResolveError(f'unsupported service type "{service_type}"')
    service_port = next((p for p in spec.get("ports") or [] if p.get("port") == port), None)
    if service_port is None:
        raise ResolveError(f'no service port {port} found for service "{name}"')
    port_name = str(service_port.get("name") or "")
    candidates = list(slices)
    if not candidates:
        raise ResolveError(f'no endpoints available for service "{name}"')
    rng.shuffle(candidates)
    families = spec.get("ipFamilies") or []
    if len(candidates) > 1 and families:
        candidates.sort(key=lambda s: s.get("addressType") != families[0])
    for endpoint_slice in candidates:
        endpoints = endpoint_slice.get("endpoints") or []
        for slice_port in endpoint_slice.get("ports") or []:
            if slice_port.get("name") is None or slice_port["name"] != port_name:
                continue
            if slice_port.get("port") is None or not endpoints:
                continue
            offset = rng.randrange(len(endpoints))
            for index in range(len(endpoints)):
                endpoint = endpoints[(index + offset) % len(endpoints)]
                if (endpoint.get("conditions") or {}).get("ready") in (None, True):
                    return Endpoint(str((endpoint.get("addresses") or [""])[0]), int(slice_port["port"]))
    raise ResolveError(f'no endpoints available for service "{name}"')
