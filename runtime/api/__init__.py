"""The contract: how kinds are addressed (`Resource`), the built-in kinds the runtime and the
playground touch (`kinds`), and, with the runtime's own API, its constants and CRDs;
how objects are typed and read (`objects`: the `JSON` alias and `nested`; `views`: TypedDict
views of the runtime's kinds) and the RFC 3339 timestamps they carry (`timestamps`).

Nothing here does I/O; every other layer of the runtime, the front ends and the
playground may import it.
"""

from .resource import Resource

__all__ = ["Resource"]
