"""JSON-shaped objects: the one alias every layer, the front ends and the playground annotate them with.

Objects at the boundaries stay the dicts the API server sends, with its camelCase keys
(design: no generated model classes). `JSON` is `dict[str, Any]` rather than a recursive
union of JSON values: code reads objects by key paths whose types the API's schema
fixes, and a recursive union would make every `obj["spec"]["replicas"]` narrow a union
first. Where the shape of one of the runtime's own kinds is known, its TypedDict view
says more.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

JSON: TypeAlias = dict[str, Any]


def nested(obj: Mapping[str, Any] | None, *path: str, default: Any = None) -> Any:
    """The value at `path` inside `obj`, or `default` where the path ends early.

    As apimachinery's `unstructured.NestedFieldNoCopy` and kopf's `dicts.resolve` read
    an object: `nested(pod, "spec", "nodeSelector", "zone")` for
    `((pod.get("spec") or {}).get("nodeSelector") or {}).get("zone")`. A missing, null or
    empty object on the way ends the walk with `default` (the API server omits empty
    fields, and clients send null); the last key's value is returned as stored, `default`
    only when the key is absent. A value on the way that is present but not an object is
    a malformed object: TypeError naming the path to it.
    """
    current: Any = obj
    for depth, key in enumerate(path):
        if not current:
            return default
        if not isinstance(current, Mapping):
            where = ".".join(path[:depth]) or "the object"
            raise TypeError(f"{where} is a {type(current).__name__}, not an object")
        current = current.get(key, default) if depth == len(path) - 1 else current.get(key)
    return current
