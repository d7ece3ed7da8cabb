"""Discovery documents: /api, /apis, /apis/<group>, resource lists, aggregated discovery.

kubectl and every controller library find resources here first, so the shapes follow
kube-apiserver exactly: legacy `APIVersions`/`APIGroupList`/`APIResourceList`, and the
aggregated `apidiscovery.k8s.io/v2` `APIGroupDiscoveryList` kubectl 1.30+ prefers.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from .resources.base import ResourceType
from .resources.catalog import Catalog

Obj = dict[str, Any]

#: subresources whose verbs differ from the main resource's
_SUBRESOURCE_VERBS = {
    "status": ["get", "patch", "update"],
    "scale": ["get", "patch", "update"],
    "finalize": ["update"],
    "approval": ["get", "patch", "update"],
    "binding": ["create"],
    "eviction": ["create"],
    "token": ["create"],
    "log": ["get"],
    "exec": ["create", "get"],
    "attach": ["create", "get"],
    "portforward": ["create", "get"],
    "proxy": ["create", "delete", "get", "patch", "update"],
    "ephemeralcontainers": ["get", "patch", "update"],
    "resize": ["get", "patch", "update"],
}
_SUBRESOURCE_KINDS = {
    "scale": ("autoscaling", "v1", "Scale"),
    "binding": ("", "v1", "Binding"),
    "eviction": ("policy", "v1", "Eviction"),
    "token": ("authentication.k8s.io", "v1", "TokenRequest"),
}


def server_address_by_client_cidrs(address: str) -> list[Obj]:
    return [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}]


def api_versions(address: str) -> Obj:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": server_address_by_client_cidrs(address),
    }


def _group(name: str, versions: list[str]) -> Obj:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(catalog: Catalog) -> Obj:
    groups = [_group(name, versions) for name, versions in catalog.groups().items() if name]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(catalog: Catalog, name: str) -> Obj | None:
    versions = catalog.groups().get(name)
    if not versions or not name:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def _resource_entry(rt: ResourceType) -> Obj:
    entry: Obj = {
        "name": rt.plural,
        "singularName": rt.singular_name,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": sorted(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    if rt.storage_version and "create" in rt.verbs and len(rt.verbs) > 1:
        entry["storageVersionHash"] = _hash(rt.storage_key)
    return entry


def _subresource_entries(rt: ResourceType) -> list[Obj]:
    out = []
    for sub in rt.subresources:
        entry: Obj = {
            "name": f"{rt.plural}/{sub}",
            "singularName": "",
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": _SUBRESOURCE_VERBS.get(sub, ["get"]),
        }
        if sub in _SUBRESOURCE_KINDS:
            group, version, kind = _SUBRESOURCE_KINDS[sub]
            entry.update(kind=kind)
            if group:
                entry.update(group=group, version=version)
        elif sub in ("log", "exec", "attach", "portforward", "proxy"):
            entry["kind"] = {"log": "Pod", "proxy": f"{rt.kind}ProxyOptions"}.get(
                sub, f"Pod{sub.capitalize()}Options"
            )
        out.append(entry)
    return out


def api_resource_list(catalog: Catalog, group: str, version: str) -> Obj | None:
    types = sorted(catalog.in_group_version(group, version), key=lambda r: r.plural)
    if not types:
        return None
    resources = []
    for rt in types:
        resources.append(_resource_entry(rt))
        resources.extend(_subresource_entries(rt))
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


def aggregated(catalog: Catalog, *, legacy: bool) -> Obj:
    """apidiscovery.k8s.io/v2 APIGroupDiscoveryList for /api (legacy) or /apis."""
    items = []
    for name, versions in catalog.groups().items():
        if bool(name) == legacy:
            continue
        version_entries = []
        for version in versions:
            resources = []
            for rt in sorted(catalog.in_group_version(name, version), key=lambda r: r.plural):
                entry: Obj = {
                    "resource": rt.plural,
                    "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
                    "scope": "Namespaced" if rt.namespaced else "Cluster",
                    "singularResource": rt.singular_name,
                    "verbs": sorted(rt.verbs),
                }
                if rt.short_names:
                    entry["shortNames"] = list(rt.short_names)
                if rt.categories:
                    entry["categories"] = list(rt.categories)
                subs = []
                for sub in rt.subresources:
                    group, sub_version, kind = _SUBRESOURCE_KINDS.get(sub, (rt.group, rt.version, rt.kind))
                    subs.append(
                        {
                            "subresource": sub,
                            "responseKind": {"group": group, "version": sub_version, "kind": kind},
                            "verbs": _SUBRESOURCE_VERBS.get(sub, ["get"]),
                        }
                    )
                if subs:
                    entry["subresources"] = subs
                resources.append(entry)
            version_entries.append({"version": version, "resources": resources, "freshness": "Current"})
        items.append({"metadata": {"name": name, "creationTimestamp": None}, "versions": version_entries})
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }


def _hash(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode()).digest()[:8]).decode()
