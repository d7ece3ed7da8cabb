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
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Container
from typing import Any, Final

from runtime.api import constants as c
from runtime.api.crds import SHADOWENDPOINTSLICES

from .meta import metadata_differs, reflected_metadata

JSON = dict[str, Any]

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
        or (current.get("spec") or {}).get("template") != desired["spec"]["template"]
    )


def service_of(endpoint_slice: JSON) -> str:
    """The name of the Service an EndpointSlice belongs to ("" when it names none)."""
    return str(((endpoint_slice.get("metadata") or {}).get("labels") or {}).get(c.LABEL_SERVICE_NAME) or "")


# the provider's EndpointSlice


def endpoint_slice(shadow: JSON) -> JSON:
    """The EndpointSlice a provider keeps for a ShadowEndpointSlice: its template, owned by it, ours to manage."""
    meta = shadow["metadata"]
    template = (shadow.get("spec") or {}).get("template") or {}
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
        "endpoints": copy.deepcopy(template.get("endpoints") or []),
        "ports": copy.deepcopy(template.get("ports") or []),
    }


def endpoint_slice_differs(current: JSON, desired: JSON) -> bool:
    return metadata_differs(current, desired) or any(
        (current.get(key) or []) != (desired.get(key) or []) for key in ("endpoints", "ports")
    )
