"""The set of resources the server serves, built-in and from CRDs.

Lookups by URL coordinates (group, version, plural), by kind and by storage key.
CRDs add and remove types at run time; `generation` changes whenever the set does so
discovery and OpenAPI caches know when to rebuild.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .base import ResourceType


class Catalog:
    def __init__(self, types: Iterable[ResourceType] = ()) -> None:
        self._by_path: dict[tuple[str, str, str], ResourceType] = {}
        self._by_crd: dict[str, list[ResourceType]] = {}
        self.generation = 0
        for rt in types:
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        self._by_path[(rt.group, rt.version, rt.plural)] = rt
        if rt.crd:
            self._by_crd.setdefault(rt.crd, []).append(rt)
        self.generation += 1

    def replace_crd(self, crd_name: str, types: list[ResourceType]) -> None:
        self.remove_crd(crd_name)
        for rt in types:
            self.add(rt)

    def remove_crd(self, crd_name: str) -> list[ResourceType]:
        removed = self._by_crd.pop(crd_name, [])
        for rt in removed:
            self._by_path.pop((rt.group, rt.version, rt.plural), None)
        if removed:
            self.generation += 1
        return removed

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_path.get((group, version, plural))

    def all(self) -> list[ResourceType]:
        return list(self._by_path.values())

    def by_kind(self, group: str, version: str, kind: str) -> ResourceType | None:
        for rt in self._by_path.values():
            if rt.group == group and rt.version == version and rt.kind == kind:
                return rt
        return None

    def storage_version(self, key: str) -> ResourceType | None:
        """The served type whose version objects are stored in."""
        candidates = [rt for rt in self._by_path.values() if rt.storage_key == key]
        for rt in candidates:
            if rt.storage_version:
                return rt
        return candidates[0] if candidates else None

    def groups(self) -> dict[str, list[str]]:
        """Group -> served versions, preferred (first registered storage version) first."""
        out: dict[str, list[str]] = {}
        for rt in self._by_path.values():
            versions = out.setdefault(rt.group, [])
            if rt.version not in versions:
                versions.append(rt.version)
        for group, versions in out.items():
            versions.sort(key=lambda v: _version_priority(v), reverse=True)
            out[group] = versions
        return out

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [rt for rt in self._by_path.values() if rt.group == group and rt.version == version]


def _version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes version ordering: GA > beta > alpha, then by numbers (v1 < v2, v1beta1 < v1beta2)."""
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not m:
        return (-1, 0, 0)
    major = int(m.group(1))
    stage = {"alpha": 0, "beta": 1, None: 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, major, minor)
