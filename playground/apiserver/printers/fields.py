"""Reading fields of untyped JSON objects without trusting their shape.

Printers run on whatever a client stored (the registry validates, but custom resources,
status writes and partial objects still reach them), so every read tolerates a missing
or mistyped field and yields the zero value Go's typed structs would hold.
"""

from __future__ import annotations

from typing import Any

from .columns import Obj


def get_map(obj: Any, *keys: str) -> Obj:
    """The dict at `keys` inside `obj`, or {} when any step is missing or not a dict."""
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj if isinstance(obj, dict) else {}


def get_value(obj: Any, *keys: str) -> Any:
    """The raw value at `keys` (None when any step is missing)."""
    *parents, last = keys
    return get_map(obj, *parents).get(last)


def get_list(obj: Any, *keys: str) -> list[Any]:
    value = get_value(obj, *keys)
    return value if isinstance(value, list) else []


def get_str(obj: Any, *keys: str) -> str:
    value = get_value(obj, *keys)
    return value if isinstance(value, str) else ""


def get_int(obj: Any, *keys: str, default: int = 0) -> int:
    value = get_value(obj, *keys)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def get_bool(obj: Any, *keys: str, default: bool = False) -> bool:
    value = get_value(obj, *keys)
    return value if isinstance(value, bool) else default


def name_of(obj: Obj) -> str:
    return get_str(obj, "metadata", "name")
