"""JSON-shaped objects: the one alias every layer, the front ends and the playground annotate them with.

Objects at the boundaries stay the dicts the API server sends, with its camelCase keys
(design: no generated model classes). `JSON` is `dict[str, Any]` rather than a recursive
union of JSON values: code reads objects by key paths whose types the API's schema
fixes, and a recursive union would make every `obj["spec"]["replicas"]` narrow a union
first. Where the shape of one of the runtime's own kinds is known, its TypedDict view
says more.
"""

from __future__ import annotations

from typing import Any, TypeAlias

JSON: TypeAlias = dict[str, Any]
