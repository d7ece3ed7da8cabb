"""What the API server serves: every top-level resource of each group's preferred version, with its verbs.

The namespace controller (which kinds can hold objects in a namespace) and the garbage
collector (which kinds to watch for ownerReferences) both start from this list, as
kube-controller-manager's do from `ServerPreferredResources`. Discovery is partial by
nature: a group whose document cannot be read (an aggregated API that is down) is
reported by name next to what was found, so a caller can go on with the rest.

`runtime.core.Client` only resolves one kind at a time (`resource_for`), so the
documents are read here with its `get_path`; nothing else talks HTTP.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from runtime.api.resource import Resource
from runtime.core import APIError, Client
from runtime.core.client import group_version_path


@dataclass(frozen=True)
class ServedResource:
    resource: Resource
    verbs: frozenset[str]

    def supports(self, *verbs: str) -> bool:
        return self.verbs.issuperset(verbs)


@dataclass(frozen=True)
class Discovery:
    resources: list[ServedResource]
    #: groupVersion -> why its resource list could not be read
    failed: dict[str, str]

    @property
    def error(self) -> str:
        """client-go's ErrGroupDiscoveryFailed message ("" when every group answered)."""
        if not self.failed:
            return ""
        details = ", ".join(f"{gv}: {why}" for gv, why in sorted(self.failed.items()))
        return f"unable to retrieve the complete list of server APIs: {details}"


async def preferred_resources(client: Client) -> Discovery:
    """Top-level resources (no subresources) of the core group and of each group's preferred version.

    Raises `APIError` only when the group list itself cannot be read.
    """
    groups = await client.get_path("/apis")
    versions = ["v1"] + [
        str(group["preferredVersion"]["groupVersion"])
        for group in groups.get("groups") or []
        if group.get("preferredVersion")
    ]
    answers = await asyncio.gather(*(_resource_list(client, gv) for gv in versions), return_exceptions=True)
    resources: list[ServedResource] = []
    failed: dict[str, str] = {}
    for gv, answer in zip(versions, answers, strict=True):
        if isinstance(answer, APIError):
            failed[gv] = str(answer)
        elif isinstance(answer, BaseException):
            raise answer
        else:
            resources.extend(answer)
    return Discovery(resources, failed)


async def _resource_list(client: Client, group_version: str) -> list[ServedResource]:
    group, _, version = group_version.rpartition("/")
    listing = await client.get_path(group_version_path(group_version))
    found = []
    for entry in listing.get("resources") or []:
        name = str(entry.get("name", ""))
        if not name or "/" in name:
            continue
        resource = Resource(group, version, name, bool(entry.get("namespaced")), str(entry.get("kind", "")))
        found.append(ServedResource(resource, frozenset(entry.get("verbs") or ())))
    return found
