"""Parse a request path into what it addresses, like k8s.io/apiserver's RequestInfoFactory.

`/api/v1/namespaces/ns/pods/web/status` -> resource request: group "", version v1,
namespace ns, resource pods, name web, subresource status, verb from the HTTP method.
Everything else (`/healthz`, `/version`, `/openapi/v3`) is a non-resource request.
"""

from __future__ import annotations

from dataclasses import dataclass

from multidict import MultiMapping

_NAMED_VERBS = {"GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete", "POST": "create"}
_COLLECTION_VERBS = {
    "GET": "list",
    "POST": "create",
    "DELETE": "deletecollection",
    "PUT": "update",
    "PATCH": "patch",
}


@dataclass(frozen=True)
class RequestInfo:
    resource_request: bool
    path: str
    verb: str
    api_prefix: str = ""
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    name: str = ""
    subresource: str = ""
    parts: tuple[str, ...] = ()


def parse(method: str, path: str, query: MultiMapping[str]) -> RequestInfo:
    segments = tuple(s for s in path.strip("/").split("/") if s)
    non_resource = RequestInfo(False, path, method.lower())
    if not segments or segments[0] not in ("api", "apis"):
        return non_resource
    prefix = segments[0]
    rest = segments[1:]
    if prefix == "api":
        group = ""
        if not rest:
            return non_resource
        version, rest = rest[0], rest[1:]
    else:
        if len(rest) < 2:
            return non_resource
        group, version, rest = rest[0], rest[1], rest[2:]
    if not rest:
        return non_resource
    watch_path = rest[0] == "watch"
    if watch_path:
        rest = rest[1:]
    namespace = ""
    if (
        len(rest) >= 2
        and rest[0] == "namespaces"
        and not (len(rest) == 3 and rest[2] in ("status", "finalize"))
    ):
        namespace, rest = rest[1], rest[2:]
        if not rest:
            rest = ("namespaces", namespace)
            namespace = ""
    if not rest:
        return non_resource
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    verb = (_NAMED_VERBS if name else _COLLECTION_VERBS).get(method, method.lower())
    if watch_path or (method == "GET" and query.get("watch", "").lower() in ("1", "true")):
        verb = "watch"
    return RequestInfo(
        True, path, verb, prefix, group, version, namespace, resource, name, subresource, tuple(rest[3:])
    )
