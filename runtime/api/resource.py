"""Where a kind is served: the one description of a resource every client call takes.

It lives in `runtime.api` (below `runtime.core`) because it is part of the contract:
the constants in `kinds.py` and the runtime's own CRDs are `Resource` values, and the
front ends and the playground name kinds with them too.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True)
class Resource:
    """Where a kind is served: `/api/v1/...` for the core group, `/apis/<group>/<version>/...` otherwise."""

    group: str
    version: str
    plural: str
    namespaced: bool = True
    kind: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, *, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The URL path of the collection (all namespaces when `namespace` is None), an object or its subresource."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        parts = [base]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name is not None:
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        elif subresource:
            raise ValueError(f"subresource {subresource!r} of {self.plural} needs an object name")
        return "/".join(parts)
