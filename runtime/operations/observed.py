"""What the operations return about one object they observed: the object, with its spec and status."""

from __future__ import annotations

from runtime.api.objects import JSON


class ObservedObject:
    """A view of `obj` (a dataclass field of the subclass): copies of its spec and status, never null."""

    obj: JSON

    @property
    def spec(self) -> JSON:
        return dict(self.obj.get("spec") or {})

    @property
    def status(self) -> JSON:
        return dict(self.obj.get("status") or {})
