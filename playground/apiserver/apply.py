"""Server-side apply and field ownership: `metadata.managedFields`, as kube-apiserver keeps it.

kube-apiserver records, for every write, which manager set which fields
(sigs.k8s.io/structured-merge-diff behind k8s.io/apiserver's fieldmanager). That is what
makes server-side apply work: an Apply merges the applied configuration into the live
object, removes fields the same manager applied before and no longer applies, and
refuses (409 Conflict) to change a field another manager owns unless forced. Because
ordinary writes are recorded too, an Apply after a `kubectl edit` conflicts as it would
against a real cluster.

Ownership is a `FieldSet` of paths in the `fieldsV1` notation: `f:<field>` for a field,
`k:{"name":"x"}` for an item of a list map, `v:"x"` for an item of a set. Lists and maps
merge by the rules of `listtypes`. Fields the server manages itself (name, namespace,
uid, resourceVersion, generation, creationTimestamp, managedFields, ...) are never
owned; writes through the status subresource own only status, and writes to the main
resource of a kind with a status subresource never own status.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .errors import APIError, Cause, bad_request
from .listtypes import ListType, ListTypes, Path
from .patch import json_equal, unexpected

Obj = dict[str, Any]
FieldPath = tuple[str, ...]

BEFORE_FIRST_APPLY = "before-first-apply"

_SERVER_FIELDS: frozenset[FieldPath] = frozenset(
    {("f:apiVersion",), ("f:kind",), ("f:metadata",)}
    | {
        ("f:metadata", f"f:{name}")
        for name in (
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "clusterName",
            "generation",
            "managedFields",
            "resourceVersion",
        )
    }
)


# --- field sets and their fieldsV1 form ----------------------------------------------------------------


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass
class _Node:
    member: bool = False
    children: dict[str, _Node] = field(default_factory=dict)


def _element_order(element: str) -> tuple[Any, ...]:
    """structured-merge-diff's PathElement order: fields, then keys, then values, then indexes."""
    kind, body = element[0], element[2:]
    if kind == "f":
        return (0, body)
    if kind == "k":
        return (1, [(name, _value_order(value)) for name, value in json.loads(body).items()])
    if kind == "v":
        return (2, _value_order(json.loads(body)))
    return (3, int(body))


def _value_order(value: Any) -> tuple[Any, ...]:
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, int | float):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    return (3, _dump(value))


def _canonical(element: str) -> str:
    """One fieldsV1 key in this module's spelling (keys and values re-encoded with sorted keys)."""
    kind, body = element[:2], element[2:]
    if kind == "f:":
        return element
    if kind in ("k:", "v:"):
        return kind + _dump(json.loads(body))
    if kind == "i:":
        return f"i:{int(body)}"
    raise ValueError(f"unknown fieldsV1 path element {element!r}")


def path_string(path: FieldPath) -> str:
    """A path as kube-apiserver prints it in conflicts: `.spec.containers[name="x"].image`."""
    parts = []
    for element in path:
        kind, body = element[0], element[2:]
        if kind == "f":
            parts.append(f".{body}")
        elif kind == "k":
            parts.append("[" + ",".join(f"{k}={_dump(v)}" for k, v in json.loads(body).items()) + "]")
        elif kind == "v":
            parts.append(f"[={body}]")
        else:
            parts.append(f"[{body}]")
    return "".join(parts)


@dataclass(frozen=True)
class FieldSet:
    """A set of owned field paths."""

    paths: frozenset[FieldPath] = frozenset()

    @classmethod
    def of(cls, paths: Iterable[FieldPath]) -> FieldSet:
        return cls(frozenset(paths))

    @classmethod
    def from_fields_v1(cls, fields: Mapping[str, Any]) -> FieldSet:
        """Parse a managedFields entry's `fieldsV1`; raises ValueError when it is malformed."""
        found: set[FieldPath] = set()
        _parse_fields_v1(fields, (), found)
        return cls(frozenset(found))

    def to_fields_v1(self) -> Obj:
        root = _Node()
        for path in self.paths:
            node = root
            for element in path:
                node = node.children.setdefault(element, _Node())
            node.member = True
        return _emit_fields_v1(root)

    def ordered(self) -> list[FieldPath]:
        """The paths in structured-merge-diff's iteration order (members of a level before its children)."""
        root = _Node()
        for path in self.paths:
            node = root
            for element in path:
                node = node.children.setdefault(element, _Node())
            node.member = True
        return list(_iterate(root, ()))

    def __or__(self, other: FieldSet) -> FieldSet:
        return FieldSet(self.paths | other.paths)

    def __and__(self, other: FieldSet) -> FieldSet:
        return FieldSet(self.paths & other.paths)

    def __sub__(self, other: FieldSet) -> FieldSet:
        return FieldSet(self.paths - other.paths)

    def __contains__(self, path: object) -> bool:
        return path in self.paths

    def __iter__(self) -> Iterator[FieldPath]:
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)


def _parse_fields_v1(fields: Mapping[str, Any], prefix: FieldPath, found: set[FieldPath]) -> None:
    if not isinstance(fields, Mapping):
        raise ValueError("fieldsV1 must be an object")
    for key, sub in fields.items():
        if key == ".":
            if prefix:
                found.add(prefix)
            continue
        path = (*prefix, _canonical(key))
        if not isinstance(sub, Mapping):
            raise ValueError(f"fieldsV1 entry {key!r} must be an object")
        if sub:
            _parse_fields_v1(sub, path, found)
        else:
            found.add(path)


def _emit_fields_v1(node: _Node) -> Obj:
    out: Obj = {".": {}} if node.member and node.children else {}
    for element in sorted(node.children, key=_element_order):
        out[element] = _emit_fields_v1(node.children[element])
    return out


def _iterate(node: _Node, prefix: FieldPath) -> Iterator[FieldPath]:
    children = sorted(node.children.items(), key=lambda item: _element_order(item[0]))
    yield from ((*prefix, element) for element, child in children if child.member)
    for element, child in children:
        yield from _iterate(child, (*prefix, element))


# --- typed views of objects ------------------------------------------------------------------------------


class _ShapeError(Exception):
    """The object does not fit its list types (missing or duplicate list-map keys)."""


class _Branch:
    """Marks a path that is owned as a whole item but whose value is compared field by field."""


_BRANCH = _Branch()


def _names(path: FieldPath) -> Path:
    """The list-types path of a field path: field names, list items skipped."""
    return tuple(element[2:] for element in path if element.startswith("f:"))


def _element(item: Any, list_type: ListType) -> str:
    """The path element naming one item of a set or list map."""
    if list_type.kind == "set":
        if isinstance(item, dict | list):
            raise _ShapeError("expected a scalar item in a set")
        return f"v:{_dump(item)}"
    if not isinstance(item, dict):
        raise _ShapeError("expected an object item in an associative list")
    key: Obj = {}
    for name in list_type.keys:
        if item.get(name) is not None:
            key[name] = item[name]
        elif name in list_type.key_defaults:
            key[name] = list_type.key_defaults[name]
        else:
            raise _ShapeError(
                f'associative list with keys has an element that omits key field "{name}" '
                "(and doesn't have default value)"
            )
    return f"k:{_dump(key)}"


def fields_of(obj: Obj, *, list_types: ListTypes) -> FieldSet:
    """Every field path `obj` sets (server-managed fields included), as structured-merge-diff counts them."""
    return FieldSet.of(_Flattener(list_types, allow_duplicates=True).flatten(obj))


@dataclass
class _Flattener:
    """Maps each path of an object to its leaf value, or `_BRANCH` where it is compared field by field.

    By default the paths are those an applier of the object would own (structured-merge-diff's
    ToFieldSet). With `containers`, every nested object is a path too, as in its Compare,
    so that a write which adds an object owns it as a whole (the `.` entries of Update managers).
    """

    types: ListTypes
    allow_duplicates: bool
    containers: bool = False
    out: dict[FieldPath, Any] = field(default_factory=dict)

    def flatten(self, obj: Obj) -> dict[FieldPath, Any]:
        self.out = {}
        self._walk(obj, ())
        return self.out

    def _walk(self, value: Any, path: FieldPath) -> None:
        names = _names(path)
        if isinstance(value, dict):
            if path and (not value or self.types.atomic_map(names)):
                self.out[path] = value
                return
            for key, child in value.items():
                child_path = (*path, f"f:{key}")
                self._walk(child, child_path)
                if self.containers or not self.types.is_field((*names, key)):
                    self.out.setdefault(child_path, _BRANCH)
        elif isinstance(value, list):
            list_type = self.types.list_type(names)
            if list_type.kind == "atomic":
                self.out[path] = value
            else:
                self._walk_items(value, path, list_type)
        else:
            self.out[path] = value

    def _walk_items(self, items: list[Any], path: FieldPath, list_type: ListType) -> None:
        seen: dict[str, list[Any]] = {}
        for index, item in enumerate(items):
            try:
                element = _element(item, list_type)
            except _ShapeError as err:
                raise _ShapeError(f"{path_string(path)}: element {index}: {err}") from None
            if element in seen and not self.allow_duplicates:
                raise _ShapeError(f"{path_string(path)}: duplicate entries for key {path_string((element,))}")
            seen.setdefault(element, []).append(item)
            if len(seen[element]) == 1:
                self._walk(item, (*path, element))
                self.out.setdefault((*path, element), _BRANCH)
        for element, group in seen.items():
            if len(group) > 1:
                self._atomic_duplicates((*path, element), group)

    def _atomic_duplicates(self, item_path: FieldPath, group: list[Any]) -> None:
        """Items sharing a key (tolerated in stored objects) are owned together, as one value."""
        for owned in [p for p in self.out if p[: len(item_path)] == item_path]:
            del self.out[owned]
        self.out[item_path] = group


def _diff_view(obj: Obj, types: ListTypes) -> dict[FieldPath, Any]:
    return _Flattener(types, allow_duplicates=True, containers=True).flatten(obj)


@dataclass(frozen=True)
class _Diff:
    touched: FieldSet
    removed: FieldSet


def _compare(old: dict[FieldPath, Any], new: dict[FieldPath, Any], scope: _Scope) -> _Diff:
    """What a write added or modified, and what it removed, among the paths `scope` tracks."""
    touched = (p for p, value in new.items() if p not in old or _changed(old[p], value))
    return _Diff(scope.owned(touched), scope.owned(old.keys() - new.keys()))


def _changed(old: Any, new: Any) -> bool:
    if isinstance(old, _Branch) or isinstance(new, _Branch):
        return old is not new
    return not json_equal(old, new)


@dataclass(frozen=True)
class _Scope:
    """Which paths a write may own: it depends on the subresource written and whether status has one."""

    subresource: str
    status_subresource: bool

    def tracks(self, path: FieldPath) -> bool:
        if path in _SERVER_FIELDS or path[:2] == ("f:metadata", "f:managedFields"):
            return False
        if self.subresource == "status":
            return path[:1] == ("f:status",)
        return not (self.status_subresource and path[:1] == ("f:status",))

    def owned(self, paths: Iterable[FieldPath]) -> FieldSet:
        return FieldSet.of(p for p in paths if self.tracks(p))


# --- managedFields entries -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Manager:
    """A manager's identity: Update entries are per API version, Apply entries are not."""

    manager: str
    operation: str
    api_version: str
    subresource: str

    def describe(self) -> str:
        """How kube-apiserver names a manager in conflict messages."""
        text = json.dumps(self.manager, ensure_ascii=False)
        if self.subresource:
            text += f' with subresource "{self.subresource}"'
        return f"{text} using {self.api_version}" if self.operation == "Update" else text


@dataclass(frozen=True)
class _Entry:
    who: _Manager
    api_version: str
    time: str | None
    fields: FieldSet

    def encode(self) -> Obj:
        entry: Obj = {"manager": self.who.manager} if self.who.manager else {}
        entry |= {"operation": self.who.operation, "apiVersion": self.api_version}
        if self.time:
            entry["time"] = self.time
        entry |= {"fieldsType": "FieldsV1", "fieldsV1": self.fields.to_fields_v1()}
        if self.who.subresource:
            entry["subresource"] = self.who.subresource
        return entry


def _identity(manager: str, operation: str, api_version: str, subresource: str) -> _Manager:
    return _Manager(manager, operation, api_version if operation == "Update" else "", subresource)


def _decode(entries: Any) -> dict[_Manager, _Entry]:
    """Decode managedFields; anything malformed yields no entries, as kube-apiserver's fallback does."""
    if not isinstance(entries, list):
        return {}
    decoded: dict[_Manager, _Entry] = {}
    try:
        for raw in entries:
            if raw.get("fieldsType") != "FieldsV1" or raw.get("operation") not in ("Apply", "Update"):
                return {}
            version = str(raw.get("apiVersion", ""))
            who = _identity(
                str(raw.get("manager", "")), raw["operation"], version, str(raw.get("subresource", ""))
            )
            fields = FieldSet.from_fields_v1(raw.get("fieldsV1") or {})
            decoded[who] = _Entry(who, version, raw.get("time"), fields)
    except (AttributeError, TypeError, ValueError):
        return {}
    return decoded


def _encode(managers: Mapping[_Manager, _Entry]) -> list[Obj]:
    """Non-empty entries in kube-apiserver's order: operation, time, manager, apiVersion, subresource."""
    kept = [entry for entry in managers.values() if entry.fields]
    kept.sort(key=lambda e: (e.who.operation, e.time or "", e.who.manager, e.api_version, e.who.subresource))
    return [entry.encode() for entry in kept]


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _without_managed_fields(obj: Obj) -> Obj:
    clean = copy.deepcopy(obj)
    meta = clean.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return clean


def _with_managed_fields(obj: Obj, managers: Mapping[_Manager, _Entry]) -> Obj:
    entries = _encode(managers)
    meta = obj.setdefault("metadata", {})
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)
    return obj


def _typed_error(stage: str, obj: Obj, err: _ShapeError) -> APIError:
    """The 500 kube-apiserver answers when an object does not fit its schema's list types."""
    meta = _metadata(obj)
    group_version = str(obj.get("apiVersion", ""))
    group, _, version = group_version.rpartition("/")
    where = (
        f"{meta.get('namespace', '')}/{meta.get('name', '')}; {group}/{version}, Kind={obj.get('kind', '')}"
    )
    return unexpected(f"failed to create typed {stage} object ({where}): {err}")


# --- updates -------------------------------------------------------------------------------------------


def record_update(
    old: Obj | None,
    new: Obj,
    *,
    manager: str,
    list_types: ListTypes,
    now: str,
    operation: Literal["Update"] = "Update",
    subresource: str = "",
    status_subresource: bool = False,
) -> Obj:
    """Return `new` with managedFields updated for an ordinary create, update or patch by `manager`.

    The manager's `Update` entry gains every field the write added or changed; other
    managers lose those fields and any the write removed; empty entries disappear. A
    client may replace managedFields in the body (`[]` or `[{}]` resets them), except
    through a subresource.
    """
    result = copy.deepcopy(new)
    managers = _base_managers(old, new, subresource=subresource)
    try:
        before = _diff_view(_without_managed_fields(old or {"metadata": {}}), list_types)
        after = _diff_view(_without_managed_fields(new), list_types)
    except _ShapeError:
        return _with_managed_fields(result, {})
    diff = _compare(before, after, _Scope(subresource, status_subresource))
    version = str(new.get("apiVersion", ""))
    who = _identity(manager, operation, version, subresource)
    for other, entry in list(managers.items()):
        if other != who:
            managers[other] = replace(entry, fields=entry.fields - diff.touched - diff.removed)
    previous = managers.get(who)
    kept = previous.fields - diff.removed if previous else FieldSet()
    if diff.touched:
        managers[who] = _Entry(who, version, now, kept | diff.touched)
    elif previous:
        managers[who] = replace(previous, fields=kept)
    return _with_managed_fields(result, managers)


def _base_managers(old: Obj | None, new: Obj, *, subresource: str) -> dict[_Manager, _Entry]:
    """The ownership a write starts from: the body's managedFields when it sets them, else the stored ones."""
    live = _decode(_metadata(old or {}).get("managedFields"))
    if subresource:
        return live
    sent = _metadata(new).get("managedFields")
    if sent == [] or sent == [{}]:
        return {}
    return _decode(sent) or live


# --- apply -----------------------------------------------------------------------------------------------


def apply(
    live: Obj | None,
    applied: Obj,
    *,
    manager: str,
    force: bool,
    list_types: ListTypes,
    now: str,
    subresource: str = "",
    status_subresource: bool = False,
) -> Obj:
    """Server-side apply `applied` by `manager` onto `live` (None to create); returns the new object.

    Raises a 409 `Conflict` listing every field another manager owns that the applied
    configuration would change, unless `force` moves those fields to `manager`.
    """
    meta = _metadata(applied)
    if meta.get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    scope = _Scope(subresource, status_subresource)
    current = _without_managed_fields(live or {})
    config = copy.deepcopy(applied)
    try:
        config_fields = FieldSet.of(_Flattener(list_types, allow_duplicates=False).flatten(config))
    except _ShapeError as err:
        raise _typed_error("patch", config, err) from None
    try:
        before = _diff_view(current, list_types)
    except _ShapeError as err:
        raise _typed_error("live", current, err) from None
    managers = _decode(_metadata(live or {}).get("managedFields"))
    if live is not None and not managers:
        managers = _before_first_apply(current, before, scope, now)
    who = _identity(manager, "Apply", "", subresource)
    previous = managers.pop(who, None)
    merged = _merge(current, config, (), list_types)
    if previous is not None:
        owned = config_fields.paths.union(*(entry.fields.paths for entry in managers.values()))
        merged = _prune(merged, previous.fields, FieldSet(owned), list_types)
    diff = _compare(before, _diff_view(merged, list_types), scope)
    _take_ownership(managers, diff, force=force)
    result = _without_nulls(merged)
    fields = scope.owned(config_fields)
    unchanged = previous is not None and previous.fields == fields and json_equal(result, current)
    version = str(applied.get("apiVersion", ""))
    managers[who] = _Entry(who, version, previous.time if previous and unchanged else now, fields)
    return _with_managed_fields(result, managers)


def _before_first_apply(
    obj: Obj, fields: Mapping[FieldPath, Any], scope: _Scope, now: str
) -> dict[_Manager, _Entry]:
    """An object nobody owns yet is owned by `before-first-apply` when first applied to."""
    version = str(obj.get("apiVersion", ""))
    who = _identity(BEFORE_FIRST_APPLY, "Update", version, "")
    return {who: _Entry(who, version, now, scope.owned(fields))}


def _take_ownership(managers: dict[_Manager, _Entry], diff: _Diff, *, force: bool) -> None:
    """Apply's effect on the other managers: conflicts (or, forced, losing the fields) and removals."""
    conflicts = {who: entry.fields & diff.touched for who, entry in managers.items()}
    conflicts = {who: fields for who, fields in conflicts.items() if fields}
    if conflicts and not force:
        raise _conflict_error(conflicts)
    for who, entry in list(managers.items()):
        managers[who] = replace(entry, fields=entry.fields - diff.touched - diff.removed)


def _conflict_error(conflicts: Mapping[_Manager, FieldSet]) -> APIError:
    ordered = sorted(conflicts, key=lambda m: (m.manager, m.operation, m.api_version, m.subresource))
    found = [(who, path_string(path)) for who in ordered for path in conflicts[who].ordered()]
    causes = [
        Cause(path, f"conflict with {who.describe()}", "FieldManagerConflict").as_dict()
        for who, path in found
    ]
    if len(found) == 1:
        who, path = found[0]
        message = f"Apply failed with 1 conflict: conflict with {who.describe()}: {path}"
    else:
        lines: list[str] = []
        for who in ordered:
            lines.append(f"conflicts with {who.describe()}:")
            lines.extend(f"- {path_string(path)}" for path in conflicts[who].ordered())
        message = f"Apply failed with {len(found)} conflicts: " + "\n".join(lines)
    return APIError(409, "Conflict", message, {"causes": causes})


def _merge(live: Any, config: Any, names: Path, types: ListTypes) -> Any:
    """structured-merge-diff's merge: the applied value wins, maps and non-atomic lists merge item by item."""
    if isinstance(live, dict) and isinstance(config, dict) and not (names and types.atomic_map(names)):
        merged = dict(live)
        for key, value in config.items():
            merged[key] = _merge(live[key], value, (*names, key), types) if key in live else value
        return merged
    if isinstance(live, list) and isinstance(config, list):
        list_type = types.list_type(names)
        if list_type.kind != "atomic":
            return _merge_items(live, config, names, list_type, types)
    return config


def _merge_items(
    live: list[Any], config: list[Any], names: Path, list_type: ListType, types: ListTypes
) -> list[Any]:
    """Merge two keyed lists, keeping live-only items in place and shared items in the applied order."""
    lhs = [_element(item, list_type) for item in live]
    rhs = [_element(item, list_type) for item in config]
    live_by: dict[str, Any] = {}
    for element, item in zip(lhs, live, strict=True):
        live_by.setdefault(element, item)
    config_by = dict(zip(rhs, config, strict=True))
    shared = [element for element in rhs if element in live_by]

    def merged_item(element: str) -> Any:
        if element in live_by and list_type.kind == "map":
            return _merge(live_by[element], config_by[element], names, types)
        return config_by[element]

    out: list[Any] = []
    done: set[str] = set()
    li = ri = 0
    while li < len(lhs) or ri < len(rhs):
        if li < len(lhs) and ri < len(rhs):
            if lhs[li] == rhs[ri]:
                done.add(rhs[ri])
                out.append(merged_item(rhs[ri]))
                shared = shared[1:] if shared and shared[0] == rhs[ri] else shared
                li, ri = li + 1, ri + 1
                continue
            if lhs[li] in config_by and shared and shared[0] != lhs[li]:
                li += 1
                continue
        if li < len(lhs) and lhs[li] not in config_by:
            out.append(live[li])
            li += 1
        elif li < len(lhs) and lhs[li] in done:
            li += 1
        elif ri < len(rhs):
            done.add(rhs[ri])
            out.append(merged_item(rhs[ri]))
            shared = shared[1:] if shared and shared[0] == rhs[ri] else shared
            ri += 1
    return out


def _prune(merged: Obj, last: FieldSet, owned: FieldSet, types: ListTypes) -> Obj:
    """Remove what the applier applied last time, no longer applies, and nobody else owns."""
    kept = {path[:i] for path in _with_named_parents(owned, types) for i in range(1, len(path) + 1)}
    doomed = sorted((p for p in _with_named_parents(last, types) if p not in kept), key=len)
    result: Any = merged
    for path in doomed:
        if path not in _SERVER_FIELDS:
            result = _remove(result, path, (), types)
    return result if isinstance(result, dict) else {}


def _with_named_parents(fields: FieldSet, types: ListTypes) -> set[FieldPath]:
    """The set plus every schema field above its paths (SMD's EnsureNamedFieldsAreMembers)."""
    out = set(fields.paths)
    for path in fields.paths:
        for i in range(1, len(path)):
            if path[i - 1].startswith("f:") and types.is_field(_names(path[:i])):
                out.add(path[:i])
    return out


class _Gone:
    """What removing the last entry of a container leaves: the container goes too."""


_GONE = _Gone()


def _remove(node: Any, path: FieldPath, names: Path, types: ListTypes) -> Any:
    head, rest = path[0], path[1:]
    if isinstance(node, dict) and head.startswith("f:"):
        key = head[2:]
        if key not in node:
            return node
        child = _remove(node[key], rest, (*names, key), types) if rest else _GONE
        if child is node[key]:
            return node
        updated = {k: v for k, v in node.items() if k != key}
        if not isinstance(child, _Gone):
            updated[key] = child
        return updated or _GONE
    if isinstance(node, list) and head[0] in "kv":
        list_type = types.list_type(names)
        for index, item in enumerate(node):
            if _element_or_none(item, list_type) == head:
                child = _remove(item, rest, names, types) if rest else _GONE
                items = node[:index] + ([] if isinstance(child, _Gone) else [child]) + node[index + 1 :]
                return items or _GONE
    return node


def _element_or_none(item: Any, list_type: ListType) -> str | None:
    try:
        return _element(item, list_type)
    except _ShapeError:
        return None


def _without_nulls(value: Any) -> Any:
    """Applied nulls remove a field: drop null members of objects."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value
