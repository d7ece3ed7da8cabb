"""The contract: how kinds are addressed (`Resource`), the built-in kinds the runtime and the
playground touch (`kinds`), and, with the runtime's own API, its constants and CRDs.

Nothing here does I/O; every other layer of the runtime, the front ends and the
playground may import it.
"""

from .resource import Resource

__all__ = ["Resource"]
