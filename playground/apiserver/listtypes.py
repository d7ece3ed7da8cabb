"""How the lists and maps of an object merge: the schema facts patching and apply share.

Strategic merge patch and server-side apply both need to know, for a field, whether a
list is replaced whole or merged item by item, and by which key. kube-apiserver reads
that from Go struct tags (`patchStrategy`/`patchMergeKey`) and OpenAPI markers
(`listType`/`listMapKeys`/`mapType`/`structType`); for custom resources from the
`x-kubernetes-list-type`/`x-kubernetes-list-map-keys`/`x-kubernetes-map-type`
extensions of the CRD schema. This module answers the same questions for the built-in
kinds the emulator serves and for any CRD schema.

A field path is a tuple of field names from the object root with list elements
skipped and free-form map keys included, e.g. `("spec", "template", "spec",
"containers", "ports")`. The same path names a list and the maps that are its items.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Path = tuple[str, ...]
ListKind = Literal["atomic", "set", "map"]


@dataclass(frozen=True)
class ListType:
    """One list's merge rules.

    `kind`/`keys`/`key_defaults` are the server-side apply view (`listType`,
    `listMapKeys`, and the defaults of key fields an item may omit); `strategy` and
    `merge_key` are the strategic-merge-patch view (`patchStrategy`, `patchMergeKey`).
    """

    kind: ListKind = "atomic"
    keys: tuple[str, ...] = ()
    key_defaults: Mapping[str, Any] = field(default_factory=dict)
    strategy: Literal["merge", "replace"] = "replace"
    merge_key: str = ""


ATOMIC = ListType()
SET = ListType("set", strategy="merge")


def keyed(*keys: str, merge_key: str | None = None, smp: bool = True, **defaults: Any) -> ListType:
    """A list map keyed by `keys`; SMP merges it by `merge_key` (the first key) unless `smp` is False."""
    if not smp:
        return ListType("map", keys, defaults)
    return ListType("map", keys, defaults, "merge", merge_key or keys[0])


class ListTypes(Protocol):
    """Schema questions about the lists and maps of one kind."""

    def list_type(self, path: Path) -> ListType:
        """Merge rules of the list at `path`."""
        ...

    def atomic_map(self, path: Path) -> bool:
        """Whether the object at `path` (or each item of the list at `path`) is owned and replaced whole."""
        ...

    def is_field(self, path: Path) -> bool:
        """Whether the last name of `path` is a schema field rather than a key of a free-form map."""
        ...


@dataclass(frozen=True)
class TableListTypes:
    """List types given as tables of exact paths; anything not listed is atomic / a plain struct."""

    lists: Mapping[Path, ListType]
    atomic_maps: frozenset[Path] = frozenset()
    free_maps: frozenset[Path] = frozenset()

    def list_type(self, path: Path) -> ListType:
        return self.lists.get(path, ATOMIC)

    def atomic_map(self, path: Path) -> bool:
        return path in self.atomic_maps

    def is_field(self, path: Path) -> bool:
        return path[:-1] not in self.free_maps


_META: dict[Path, ListType] = {
    ("metadata", "finalizers"): SET,
    ("metadata", "ownerReferences"): keyed("uid"),
    ("metadata", "managedFields"): ATOMIC,
}
_META_ATOMIC_MAPS: frozenset[Path] = frozenset({("metadata", "ownerReferences")})
_META_FREE_MAPS: frozenset[Path] = frozenset({("metadata", "labels"), ("metadata", "annotations")})

_CONTAINER_LISTS: dict[Path, ListType] = {
    ("ports",): keyed("containerPort", "protocol", protocol="TCP"),
    ("env",): keyed("name"),
    ("volumeMounts",): keyed("mountPath"),
    ("volumeDevices",): keyed("devicePath"),
    ("resources", "claims"): keyed("name", smp=False),
}
_CONTAINER_ATOMIC_MAPS: tuple[Path, ...] = tuple(
    ("env", "valueFrom", ref) for ref in ("configMapKeyRef", "secretKeyRef", "fieldRef", "resourceFieldRef")
)
_CONTAINER_FREE_MAPS: tuple[Path, ...] = (("resources", "limits"), ("resources", "requests"))
_CONTAINER_LIST_NAMES = ("containers", "initContainers", "ephemeralContainers")

_POD_SPEC_LISTS: dict[Path, ListType] = {
    **{(name,): keyed("name") for name in _CONTAINER_LIST_NAMES},
    ("volumes",): keyed("name"),
    ("imagePullSecrets",): keyed("name"),
    ("hostAliases",): keyed("ip"),
    ("topologySpreadConstraints",): keyed("topologyKey", "whenUnsatisfiable"),
    ("schedulingGates",): keyed("name"),
    ("resourceClaims",): keyed("name"),
}
_POD_SPEC_ATOMIC_MAPS: tuple[Path, ...] = (
    ("nodeSelector",),
    ("imagePullSecrets",),
    ("topologySpreadConstraints", "labelSelector"),
)
_POD_SPEC_FREE_MAPS: tuple[Path, ...] = (("overhead",),)

_POD_STATUS_LISTS: dict[Path, ListType] = {
    ("status", "conditions"): keyed("type"),
    ("status", "podIPs"): keyed("ip"),
    ("status", "hostIPs"): keyed("ip"),
    ("status", "resourceClaimStatuses"): keyed("name"),
}

_CONDITIONS: dict[Path, ListType] = {("status", "conditions"): keyed("type")}
_SELECTOR: frozenset[Path] = frozenset({("spec", "selector")})


@dataclass(frozen=True)
class _Rules:
    lists: dict[Path, ListType] = field(default_factory=dict)
    atomic_maps: frozenset[Path] = frozenset()
    free_maps: frozenset[Path] = frozenset()

    def __or__(self, other: _Rules) -> _Rules:
        return _Rules(
            {**self.lists, **other.lists},
            self.atomic_maps | other.atomic_maps,
            self.free_maps | other.free_maps,
        )


def _under(
    root: Path,
    lists: Mapping[Path, ListType] | None = None,
    *,
    atomic: Iterable[Path] = (),
    free: Iterable[Path] = (),
) -> _Rules:
    """Rules given relative to `root`, moved under it."""
    return _Rules(
        {root + path: lt for path, lt in (lists or {}).items()},
        frozenset(root + path for path in atomic),
        frozenset(root + path for path in free),
    )


def _pod_spec(root: Path) -> _Rules:
    rules = _under(root, _POD_SPEC_LISTS, atomic=_POD_SPEC_ATOMIC_MAPS, free=_POD_SPEC_FREE_MAPS)
    for name in _CONTAINER_LIST_NAMES:
        rules |= _under(
            (*root, name), _CONTAINER_LISTS, atomic=_CONTAINER_ATOMIC_MAPS, free=_CONTAINER_FREE_MAPS
        )
    return rules


def _pod_template(root: Path) -> _Rules:
    """A PodTemplateSpec at `root`: its metadata maps and its pod spec."""
    return _pod_spec((*root, "spec")) | _under((*root, "metadata"), free=(("labels",), ("annotations",)))


def _workload(*, conditions: Mapping[Path, ListType] = _CONDITIONS) -> _Rules:
    """A controller with a pod template at spec.template and an atomic label selector at spec.selector."""
    return _pod_template(("spec", "template")) | _Rules(dict(conditions), _SELECTOR)


_DATA_MAPS = frozenset({("data",), ("binaryData",), ("stringData",)})
_WEBHOOKS = _Rules({("webhooks",): keyed("name"), ("webhooks", "matchConditions"): keyed("name")})

_KINDS: dict[tuple[str, str], _Rules] = {
    ("", "Pod"): _pod_spec(("spec",)) | _Rules(dict(_POD_STATUS_LISTS)),
    ("", "PodTemplate"): _pod_template(("template",)),
    ("", "ReplicationController"): _workload(),
    ("apps", "Deployment"): _workload(),
    ("apps", "ReplicaSet"): _workload(),
    ("apps", "DaemonSet"): _workload(),
    ("apps", "StatefulSet"): _workload(),
    ("batch", "Job"): _workload(
        conditions={("status", "conditions"): ListType(strategy="merge", merge_key="type")}
    ),
    ("batch", "CronJob"): _pod_template(("spec", "jobTemplate", "spec", "template")),
    ("", "Service"): _Rules(
        {("spec", "ports"): keyed("port", "protocol", protocol="TCP"), **_CONDITIONS},
        frozenset({("spec", "selector")}),
    ),
    ("", "Node"): _Rules(
        {("spec", "podCIDRs"): SET, ("status", "addresses"): keyed("type"), **_CONDITIONS},
        free_maps=frozenset({("status", "capacity"), ("status", "allocatable")}),
    ),
    ("", "Namespace"): _Rules(dict(_CONDITIONS)),
    ("", "ConfigMap"): _Rules(free_maps=_DATA_MAPS),
    ("", "Secret"): _Rules(free_maps=_DATA_MAPS),
    ("", "ServiceAccount"): _Rules({("secrets",): keyed("name")}, frozenset({("secrets",)})),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): _WEBHOOKS,
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): _WEBHOOKS,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _Rules(
        {("status", "conditions"): keyed("type", smp=False)}
    ),
}

_META_RULES = _Rules(dict(_META), _META_ATOMIC_MAPS, _META_FREE_MAPS)


def builtin_list_types(group: str, kind: str) -> ListTypes:
    """List types of a built-in kind, following the k8s.io/api markers; unknown kinds get metadata rules only.

    Lists without markers are atomic (SSA) and replaced (SMP): RBAC rules and subjects,
    tolerations, Endpoints subsets, EndpointSlice endpoints, Ingress rules, CRD versions.
    """
    rules = _META_RULES | _KINDS.get((group, kind), _Rules())
    return TableListTypes(rules.lists, rules.atomic_maps, rules.free_maps)


@dataclass(frozen=True)
class SchemaListTypes:
    """List types read from a CRD's openAPIV3Schema; `metadata` follows ObjectMeta's rules."""

    schema: Mapping[str, Any]

    def list_type(self, path: Path) -> ListType:
        if path in _META:
            return _META[path]
        node = self._node(path)
        if node is None:
            return ATOMIC
        kind = node.get("x-kubernetes-list-type")
        if kind == "set":
            return SET
        if kind == "map":
            keys = tuple(node.get("x-kubernetes-list-map-keys") or ())
            properties = _items(node).get("properties") or {}
            defaults = {k: properties[k]["default"] for k in keys if "default" in properties.get(k, {})}
            return keyed(*keys, **defaults) if keys else ATOMIC
        return ATOMIC

    def atomic_map(self, path: Path) -> bool:
        if path[:1] == ("metadata",):
            return path in _META_ATOMIC_MAPS
        node = self._node(path)
        return node is not None and _items(node).get("x-kubernetes-map-type") == "atomic"

    def is_field(self, path: Path) -> bool:
        if len(path) == 1 or (path[0] == "metadata" and len(path) == 2):
            return True
        if path[0] == "metadata":
            return path[:-1] not in _META_FREE_MAPS
        parent = self._node(path[:-1])
        return parent is not None and path[-1] in (_items(parent).get("properties") or {})

    def _node(self, path: Path) -> Mapping[str, Any] | None:
        """The schema of the value at `path`; None where the schema says nothing (unknown fields)."""
        node: Mapping[str, Any] = self.schema
        for name in path:
            node = _items(node)
            properties = node.get("properties") or {}
            additional = node.get("additionalProperties")
            if name in properties:
                node = properties[name]
            elif isinstance(additional, Mapping):
                node = additional
            else:
                return None
        return node


def _items(node: Mapping[str, Any]) -> Mapping[str, Any]:
    """Step through array schemas to their item schema, since paths skip list elements."""
    while node.get("type") == "array" and isinstance(node.get("items"), Mapping):
        node = node["items"]
    return node


def crd_list_types(schema: Mapping[str, Any] | None) -> ListTypes:
    """List types of a custom resource from its openAPIV3Schema (lists without a list type are atomic)."""
    return SchemaListTypes(schema or {})
