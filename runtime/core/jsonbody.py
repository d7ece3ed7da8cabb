"""JSON written by someone else (a peer, a consumer, an API server's review): parsed without a crash.

`json.loads` turns deep nesting into a RecursionError and accepts any depth below that,
which handlers then walk; both become one `JSONBodyError` here, with words a 400 can
carry. The webhook and the authentication service read their request bodies with it,
the consumer's authentication client the service's answers. Size is bounded where the
bytes are read (a server's `client_max_size`, a client's bounded read), not here.
"""

from __future__ import annotations

import json
from typing import Any

#: how deep a body may nest (objects in lists in objects...): Kubernetes objects, their managedFields
#: included, stay far below, and the authentication contract's bodies nest two levels
MAX_DEPTH = 100


class JSONBodyError(ValueError):
    """The bytes are not JSON, or nest deeper than allowed; the message says which, as a predicate
    ("is not JSON (...)", "nests deeper than 100 levels") that follows what was read ("the body")."""


def parse(raw: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value in `raw`; JSONBodyError when it is not JSON or nests deeper than `max_depth`."""
    try:
        value = json.loads(raw)
    except RecursionError:
        raise JSONBodyError(f"nests deeper than {max_depth} levels") from None
    except ValueError as exc:
        raise JSONBodyError(f"is not JSON ({exc})") from None
    if depth(value, limit=max_depth) > max_depth:
        raise JSONBodyError(f"nests deeper than {max_depth} levels")
    return value


def depth(value: Any, *, limit: int = MAX_DEPTH) -> int:
    """How deep a JSON value nests (a scalar: 0), found without recursion; the walk stops past `limit`."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, level = pending.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        pending.extend((child, level + 1) for child in children)
    return deepest
