"""Reflected EndpointSlices, as pure functions: a consumer's EndpointSlice to a ShadowEndpointSlice, and the
EndpointSlice a provider keeps for it.

A provider's own control plane sees only the pods that run there, so the endpoints of a
reflected Service that live elsewhere (on the consumer, or on another provider) reach it
through reflection (Liqo's rules):

- `shadow_endpoint_slice`: the consumer's slice, minus the endpoints on this provider's
  virtual nodes (the provider lists those itself, from the pods it runs), each address
  translated to where the provider reaches it (the network fabric's `AddressTranslator`;
  FQDN slices are not translated), with what kube-proxy reads (addresses, conditions,
  hostname, zone, hints) and without what names objects of the consumer (target
  references, node names). It is written as a ShadowEndpointSlice of the same name, so
  the consumer's credential needs no right on EndpointSlices;
- `endpoint_slice`: on the provider, the EndpointSlice the runtime keeps for a
  ShadowEndpointSlice, owned by it, labelled `endpointslice.kubernetes.io/managed-by=
  endpointslice.reflection.liqo.io` so kube's EndpointSlice controller (which manages only
  its own slices) leaves it alone, and with the Service's name so kube-proxy uses it.

A ShadowEndpointSlice is written by the consumer, so what it lists is hostile until checked
(the CVE-2021-25740 class: an endpoint naming the provider's API server, a node, another
tenant's pods or a metadata service would make the provider's kube-proxy send a Service's
traffic there): the provider's EndpointSlice keeps only the IPv4 addresses inside the
networks the provider's IPAM gave that consumer (`allowed`), the only ones the fabric routes
to it; `foreign_addresses` lists the others (and whole IPv6 or FQDN slices: the fabric is
IPv4) so the refusal can be reported.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Container, Sequence
from typing import Final

from runtime.api import constants as c
from runtime.api.crds import SHADOWENDPOINTSLICES
from runtime.api.objects import JSON, nested

from .cidrs import CidrError, Network, address
from .meta import metadata_differs, reflected_metadata

#: an address on the consumer -> the address the provider reaches it at (the network fabric's job)
Translate = Callable[[str], str]
#: the fields of an endpoint a reflected one keeps
ENDPOINT_FIELDS: Final = ("conditions", "hostname", "zone", "hints")
_TRANSLATED: Final = ("IPv4", "IPv6")


def remote_endpoints(
    endpoints: list[JSON] | None, *, address_type: str, excluded_nodes: Container[str], translate: Translate
) -> list[JSON]:
    """The endpoints a provider needs: those not on its own virtual nodes, addresses translated."""
    reflected = []
    for endpoint in endpoints or []:
        if endpoint.get("nodeName") in excluded_nodes:
            continue
        addresses = [str(a) for a in endpoint.get("addresses") or []]
        if address_type in _TRANSLATED:
            addresses = [translate(a) for a in addresses]
        entry: JSON = {"addresses": addresses}
        for key in ENDPOINT_FIELDS:
            if endpoint.get(key) is not None:
                entry[key] = copy.deepcopy(endpoint[key])
        reflected.append(entry)
    return reflected


def shadow_endpoint_slice(
    local: JSON,
    *,
    namespace: str,
    origin_cluster_id: str,
    excluded_nodes: Container[str],
    translate: Translate,
) -> JSON:
    """The ShadowEndpointSlice standing for the consumer's EndpointSlice `local` in twin namespace `namespace`."""
    address_type = str(local.get("addressType") or "IPv4")
    template: JSON = {
        "addressType": address_type,
        "endpoints": remote_endpoints(
            local.get("endpoints"),
            address_type=address_type,
            excluded_nodes=excluded_nodes,
            translate=translate,
        ),
    }
    if local.get("ports") is not None:
        template["ports"] = copy.deepcopy(local["ports"])
    return {
        "apiVersion": SHADOWENDPOINTSLICES.api_version,
        "kind": SHADOWENDPOINTSLICES.kind,
        "metadata": reflected_metadata(
            local,
            name=str(local["metadata"]["name"]),
            namespace=namespace,
            origin_cluster_id=origin_cluster_id,
            labels={c.LABEL_ENDPOINTSLICE_MANAGED_BY: c.ENDPOINTSLICE_MANAGED_BY_REFLECTION},
        ),
        "spec": {"template": template},
    }


def shadow_differs(current: JSON, desired: JSON) -> bool:
    return (
        metadata_differs(current, desired)
        or nested(current, "spec", "template") != desired["spec"]["template"]
    )


def service_of(endpoint_slice: JSON) -> str:
    """The name of the Service an EndpointSlice belongs to ("" when it names none)."""
    return str(nested(endpoint_slice, "metadata", "labels", c.LABEL_SERVICE_NAME) or "")


# the provider's EndpointSlice


def _admitted(value: object, allowed: Sequence[Network]) -> bool:
    try:
        parsed = address(value)
    except CidrError:
        return False
    return any(parsed in network for network in allowed)


def foreign_addresses(shadow: JSON, *, allowed: Sequence[Network]) -> list[str]:
    """The addresses of a ShadowEndpointSlice outside `allowed` (every one, unless the slice is IPv4)."""
    template = nested(shadow, "spec", "template") or {}
    ipv4 = str(template.get("addressType") or "IPv4") == "IPv4"
    return [
        str(value)
        for endpoint in template.get("endpoints") or []
        if isinstance(endpoint, dict)
        for value in endpoint.get("addresses") or []
        if not (ipv4 and _admitted(value, allowed))
    ]


def _admitted_endpoints(template: JSON, allowed: Sequence[Network]) -> list[JSON]:
    """The template's endpoints with only their admitted addresses (an endpoint left with none is dropped)."""
    if str(template.get("addressType") or "IPv4") != "IPv4":
        return []
    admitted = []
    for endpoint in template.get("endpoints") or []:
        if not isinstance(endpoint, dict):
            continue
        addresses = [str(value) for value in endpoint.get("addresses") or [] if _admitted(value, allowed)]
        if addresses:
            admitted.append({**copy.deepcopy(endpoint), "addresses": addresses})
    return admitted


def endpoint_slice(shadow: JSON, *, allowed: Sequence[Network]) -> JSON:
    """The EndpointSlice a provider keeps for a ShadowEndpointSlice: its template with only the addresses in
    `allowed` (the networks given to the consumer that wrote it), owned by it, ours to manage."""
    meta = shadow["metadata"]
    template = nested(shadow, "spec", "template") or {}
    labels = {
        **(meta.get("labels") or {}),
        c.LABEL_ENDPOINTSLICE_MANAGED_BY: c.ENDPOINTSLICE_MANAGED_BY_REFLECTION,
        c.LABEL_REFLECTION_MANAGED_BY: c.MANAGED_BY_SHADOWENDPOINTSLICE,
    }
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "labels": labels,
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [
                {
                    "apiVersion": shadow.get("apiVersion", SHADOWENDPOINTSLICES.api_version),
                    "kind": SHADOWENDPOINTSLICES.kind,
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": False,
                }
            ],
        },
        "addressType": str(template.get("addressType") or "IPv4"),
        "endpoints": _admitted_endpoints(template, allowed),
        "ports": copy.deepcopy(template.get("ports") or []),
    }


def endpoint_slice_differs(current: JSON, desired: JSON) -> bool:
    return metadata_differs(current, desired) or any(
        (current.get(key) or []) != (desired.get(key) or []) for key in ("endpoints", "ports")
    )
