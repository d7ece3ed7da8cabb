"""The PATCH bodies kube-apiserver accepts besides apply: JSON patch, merge patch, strategic merge patch.

Each function takes the stored object and the decoded patch body and returns a new
object; inputs are never mutated. Failures raise `APIError` with the code, reason and
wording kube-apiserver uses (k8s.io/apiserver endpoints/handlers/patch.go and
k8s.io/apimachinery strategicpatch), because clients and kubectl surface them as-is:

- a JSON patch that is not a list of operations is a 400; an operation that cannot be
  applied (missing path, failed `test`, unknown op) is the famously terse 422
  "the server rejected our request due to an error in our request";
- a merge patch that is not an object is a 400 "Invalid JSON Patch";
- a strategic merge patch that is not an object, or a malformed directive, is a 400;
  errors kube-apiserver does not classify come back as a bare 500 (empty reason).

A patch whose result is no longer an object fails like the decode step after it: 422.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

from .errors import APIError, Cause, bad_request, invalid
from .listtypes import ListTypes, Path
from .schema import go_json_type, go_print

Obj = dict[str, Any]

MAX_JSON_PATCH_OPERATIONS = 10000
REJECTED = "the server rejected our request due to an error in our request"

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList/"
SET_ELEMENT_ORDER = "$setElementOrder/"


def json_equal(a: Any, b: Any) -> bool:
    """Equality of decoded JSON values: numbers compare by value, booleans are not numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def unexpected(message: str) -> APIError:
    """An error kube-apiserver does not map to a Status reason: a 500 carrying the raw message."""
    return APIError(500, "", message)


def _not_an_object(result: Any) -> APIError:
    """The patched document must decode into an object, as kube-apiserver's decode step requires."""
    reason = f"json: cannot unmarshal {go_json_type(result)} into Go value of type map[string]interface {{}}"
    return invalid("", "", [Cause("patch", f"Invalid value: {json.dumps(result)!r}: {reason}")])


# --- JSON patch (RFC 6902) -------------------------------------------------------------------------


class _OpFailed(Exception):
    """One JSON patch operation could not be applied (kept as the cause of the 422)."""


def json_patch(obj: Obj, ops: Any) -> Obj:
    """Apply an RFC 6902 JSON patch document (a list of operations) to `obj`."""
    if not isinstance(ops, list):
        raise bad_request(f"json: cannot unmarshal {go_json_type(ops)} into Go value of type jsonpatch.Patch")
    for op in ops:
        if not isinstance(op, dict):
            raise bad_request(
                f"json: cannot unmarshal {go_json_type(op)} into Go value of type jsonpatch.Operation"
            )
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise APIError(
            413,
            "RequestEntityTooLarge",
            "Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{MAX_JSON_PATCH_OPERATIONS}, got {len(ops)}",
        )
    doc: Any = copy.deepcopy(obj)
    for op in ops:
        try:
            doc = _apply_operation(doc, op)
        except _OpFailed as err:
            raise APIError(422, "Invalid", REJECTED) from err
    if not isinstance(doc, dict):
        raise _not_an_object(doc)
    return doc


def _apply_operation(doc: Any, op: Obj) -> Any:
    kind = op.get("op")
    path = _pointer(op.get("path"), what="path")
    value = copy.deepcopy(op.get("value"))
    if kind == "add":
        return _add(doc, path, value)
    if kind == "remove":
        return _remove(doc, path)[0]
    if kind == "replace":
        return _replace(doc, path, value)
    if kind in ("move", "copy"):
        source = _pointer(op.get("from"), what="from")
        moved = _get(doc, source)
        if kind == "copy":
            return _add(doc, path, copy.deepcopy(moved))
        if path[: len(source)] == source and len(path) > len(source):
            raise _OpFailed("move operation cannot move a value into one of its children")
        return _add(_remove(doc, source)[0], path, moved)
    if kind == "test":
        _test(doc, path, value)
        return doc
    raise _OpFailed(f"Unexpected kind: {kind}")


def _pointer(pointer: Any, *, what: str) -> list[str]:
    if not isinstance(pointer, str):
        raise _OpFailed(f"operation missing {what} string")
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise _OpFailed(f"JSON pointer must be empty or start with a slash: {pointer!r}")
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/")]


def _index(token: str, length: int, *, allow_end: bool = False) -> int:
    if not re.fullmatch(r"-?[0-9]+", token):
        raise _OpFailed(f"invalid array index {token!r}")
    index = int(token)
    if index < 0:
        index += length
    if not 0 <= index <= (length if allow_end else length - 1):
        raise _OpFailed(f"array index {token} out of bounds")
    return index


def _get(doc: Any, path: list[str]) -> Any:
    node = doc
    for token in path:
        if isinstance(node, dict):
            if token not in node:
                raise _OpFailed(f"missing key {token!r}")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(token, len(node))]
        else:
            raise _OpFailed(f"cannot descend into a scalar at {token!r}")
    return node


def _container(doc: Any, path: list[str]) -> dict[str, Any] | list[Any]:
    parent = _get(doc, path[:-1])
    if not isinstance(parent, dict | list):
        raise _OpFailed(f"parent of {path[-1]!r} is not a container")
    return parent


def _add(doc: Any, path: list[str], value: Any) -> Any:
    if not path:
        return value
    parent, token = _container(doc, path), path[-1]
    if isinstance(parent, dict):
        parent[token] = value
    elif token == "-":
        parent.append(value)
    else:
        parent.insert(_index(token, len(parent), allow_end=True), value)
    return doc


def _remove(doc: Any, path: list[str]) -> tuple[Any, Any]:
    """Remove the value at `path`; returns the document and the removed value."""
    if not path:
        raise _OpFailed("cannot remove the whole document")
    parent, token = _container(doc, path), path[-1]
    if isinstance(parent, dict):
        if token not in parent:
            raise _OpFailed(f"remove: missing key {token!r}")
        return doc, parent.pop(token)
    return doc, parent.pop(_index(token, len(parent)))


def _replace(doc: Any, path: list[str], value: Any) -> Any:
    if not path:
        return value
    parent, token = _container(doc, path), path[-1]
    if isinstance(parent, dict):
        if token not in parent:
            raise _OpFailed(f"replace: missing key {token!r}")
        parent[token] = value
    else:
        parent[_index(token, len(parent))] = value
    return doc


def _test(doc: Any, path: list[str], value: Any) -> None:
    try:
        actual = _get(doc, path)
    except _OpFailed:
        if value is None:
            return
        raise
    if not json_equal(actual, value):
        raise _OpFailed(f"testing value /{'/'.join(path)} failed")


# --- JSON merge patch (RFC 7386) ---------------------------------------------------------------------


def merge_patch(obj: Obj, patch: Any) -> Obj:
    """Apply an RFC 7386 merge patch: objects merge recursively, null deletes, anything else replaces."""
    if isinstance(patch, list):
        raise _not_an_object(patch)
    if not isinstance(patch, dict):
        raise bad_request("Invalid JSON Patch")
    return _merge_object(copy.deepcopy(obj), patch)


def _merge_object(target: Obj, patch: Obj) -> Obj:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            current = target.get(key)
            target[key] = _merge_object(current if isinstance(current, dict) else {}, value)
        else:
            target[key] = _without_nulls(copy.deepcopy(value))
    return target


def _without_nulls(value: Any) -> Any:
    """Drop null members of objects nested in a value that is set rather than merged."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


# --- strategic merge patch ---------------------------------------------------------------------------


def strategic_merge_patch(obj: Obj, patch: Any, *, list_types: ListTypes) -> Obj:
    """Apply a strategic merge patch, merging lists by the keys `list_types` gives."""
    if patch is None:
        return copy.deepcopy(obj)
    if not isinstance(patch, dict):
        raise bad_request(
            f"json: cannot unmarshal {go_json_type(patch)} into Go value of type map[string]interface {{}}"
        )
    return _Strategic(list_types).merge_map(copy.deepcopy(obj), copy.deepcopy(patch), ())


class _Strategic:
    """The merge half of k8s.io/apimachinery strategicpatch, on dicts this class owns and may mutate."""

    def __init__(self, list_types: ListTypes) -> None:
        self._types = list_types

    def merge_map(self, original: Obj, patch: Obj, path: Path) -> Obj:
        if DIRECTIVE in patch:
            return _map_directive(patch)
        _retain_keys(original, patch)
        self._ordered_lists(original, patch, path)
        for key, value in patch.items():
            self._merge_key(original, key, value, path)
        return original

    def _merge_key(self, original: Obj, key: str, value: Any, path: Path) -> None:
        delete_list = key.startswith(DELETE_FROM_PRIMITIVE_LIST)
        if delete_list:
            key = key[len(DELETE_FROM_PRIMITIVE_LIST) :]
            if not isinstance(value, list):
                raise bad_request("invalid patch format of primitive list")
        if value is None:
            original.pop(key, None)
            return
        if key not in original:
            if not delete_list:
                original[key] = self._fresh(value, (*path, key))
            return
        current = original[key]
        if isinstance(current, dict) and isinstance(value, dict):
            original[key] = self.merge_map(current, value, (*path, key))
        elif isinstance(current, list) and isinstance(value, list):
            original[key] = self._merge_list(current, value, (*path, key), delete_list=delete_list)
        elif not delete_list:
            original[key] = self._fresh(value, (*path, key))

    def _fresh(self, value: Any, path: Path) -> Any:
        """A patch value with nothing to merge into: its directives still apply, its nulls vanish."""
        if isinstance(value, dict):
            return self.merge_map({}, value, path)
        if isinstance(value, list):
            return self._merge_list([], value, path)
        return value

    def _merge_list(
        self, original: list[Any], patch: list[Any], path: Path, *, delete_list: bool = False
    ) -> list[Any]:
        list_type = self._types.list_type(path)
        if list_type.strategy != "merge":
            return patch
        if not original and not patch:
            return original
        if not _holds_maps(original, patch):
            if delete_list:
                return [v for v in original if not any(json_equal(v, d) for d in patch)]
            return _normalize(_dedup(original + patch), patch, original, "")
        key = list_type.merge_key
        if not key:
            raise unexpected(f"cannot merge lists without merge key for {'.'.join(path)}")
        original, patch = _special_items(original, patch, key)
        return _normalize(self._merge_items(original, patch, path, key), patch, original, key)

    def _merge_items(self, original: list[Any], patch: list[Any], path: Path, key: str) -> list[Any]:
        merged = list(original)
        for item in patch:
            if key not in item:
                raise unexpected(f"map: {go_print(item)} does not contain declared merge key: {key}")
            index = _find(merged, key, item[key])
            if index is None:
                merged.append(self.merge_map({}, item, path))
            else:
                merged[index] = self.merge_map(merged[index], item, path)
        return merged

    def _ordered_lists(self, original: Obj, patch: Obj, path: Path) -> None:
        """Process `$setElementOrder/<field>`: merge that list now and order it as the directive says."""
        for directive in [k for k in patch if k.startswith(SET_ELEMENT_ORDER)]:
            order = patch.pop(directive)
            if not isinstance(order, list):
                raise bad_request("invalid patch format of setElementOrder list")
            name = directive[len(SET_ELEMENT_ORDER) :]
            current, update = original.get(name), patch.get(name)
            if not isinstance(current, list) and not isinstance(update, list):
                continue
            patch.pop(name, None)
            list_path = (*path, name)
            if isinstance(current, list) and isinstance(update, list):
                merged = self._merge_list(current, update, list_path)
            else:
                merged = current if isinstance(current, list) else self._fresh(update, list_path)
            merge_key = self._types.list_type(list_path).merge_key
            original[name] = _normalize(
                merged, order, current if isinstance(current, list) else [], merge_key
            )


def _map_directive(patch: Obj) -> Obj:
    directive = patch[DIRECTIVE]
    if directive == "replace":
        return {k: v for k, v in patch.items() if k != DIRECTIVE}
    if directive == "delete":
        return {}
    raise unexpected(f"Unknown patch type: {directive} in map: {go_print(patch)}")


def _retain_keys(original: Obj, patch: Obj) -> None:
    """`$retainKeys`: drop every key of `original` not listed; the patch may only set listed keys."""
    if RETAIN_KEYS not in patch:
        return
    keep = patch.pop(RETAIN_KEYS)
    if not isinstance(keep, list):
        raise bad_request("invalid patch format of retainKeys")
    for key, value in patch.items():
        directive = key.startswith((DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER))
        if value is not None and not directive and key not in keep:
            raise bad_request("invalid patch format of retainKeys")
    for key in [k for k in original if k not in keep]:
        del original[key]


def _holds_maps(*lists: list[Any]) -> bool:
    """Whether the items are maps (True) or scalars (False); lists of lists and mixtures are errors."""
    items = [item for items in lists for item in items]
    if any(isinstance(item, list) for item in items):
        raise APIError(422, "Invalid", REJECTED)
    maps = sum(isinstance(item, dict) for item in items)
    if maps not in (0, len(items)):
        raise unexpected(f"list element types are not identical: {go_print(list(lists))}")
    return maps > 0


def _special_items(original: list[Any], patch: list[Any], key: str) -> tuple[list[Any], list[Any]]:
    """Apply the `$patch` items of a merging list; returns the new original and the plain patch items."""
    plain: list[Any] = []
    replace = False
    for item in patch:
        directive = item.get(DIRECTIVE)
        if DIRECTIVE not in item:
            plain.append(item)
        elif directive == "delete":
            if key not in item:
                raise unexpected(f"map: {go_print(item)} does not contain declared merge key: {key}")
            original = [o for o in original if not (key in o and json_equal(o[key], item[key]))]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise unexpected("merging lists cannot yet be specified in the patch")
        else:
            raise unexpected(f"Unknown patch type: {directive} in map: {go_print(item)}")
    return (plain, []) if replace else (original, plain)


def _find(items: list[Any], key: str, value: Any) -> int | None:
    for index, item in enumerate(items):
        if isinstance(item, dict) and key in item and json_equal(item[key], value):
            return index
    return None


def _dedup(items: list[Any]) -> list[Any]:
    unique: list[Any] = []
    for item in items:
        if not any(json_equal(item, seen) for seen in unique):
            unique.append(item)
    return unique


def _position(order: list[Any], key: str) -> Callable[[Any], int]:
    """Where an item sits in `order` (-1 if absent), matching maps by `key` and scalars by value."""

    def position(item: Any) -> int:
        for index, candidate in enumerate(order):
            if key:
                if (
                    isinstance(candidate, dict)
                    and key in candidate
                    and json_equal(candidate[key], item.get(key))
                ):
                    return index
            elif json_equal(candidate, item):
                return index
        return -1

    return position


def _normalize(merged: list[Any], patch_order: list[Any], server_order: list[Any], key: str) -> list[Any]:
    """Order a merged list the way strategicpatch does.

    Items named by the patch follow the patch's order; items only on the server keep
    their server order and are interleaved where the server had them.
    """
    in_patch, in_server = _position(patch_order, key), _position(server_order, key)
    patch_items = sorted((i for i in merged if in_patch(i) >= 0), key=in_patch)
    server_only = sorted(
        (i for i in merged if in_patch(i) < 0), key=lambda i: (in_server(i) < 0, in_server(i))
    )
    ordered: list[Any] = []
    while patch_items or server_only:
        if not server_only or (patch_items and not _before(server_only[0], patch_items[0], in_server)):
            ordered.append(patch_items.pop(0))
        else:
            ordered.append(server_only.pop(0))
    return ordered


def _before(left: Any, right: Any, position: Callable[[Any], int]) -> bool:
    """Whether a server-only item goes before a patch item: only when the server had both, in that order."""
    left_at, right_at = position(left), position(right)
    return left_at >= 0 and right_at >= 0 and left_at < right_at
