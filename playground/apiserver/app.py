"""The route table: one entry point that authenticates, authorizes and dispatches.

Every request goes the way kube-apiserver's handler chain sends it: body-size limit,
authentication (client certificate, bearer token; 401 otherwise), impersonation,
authorization (Node, then RBAC; 403 `Status` otherwise), then the resource,
subresource, review or non-resource handler. Any `APIError` becomes its `Status` body; anything else is
logged and answered 500 without leaking internals.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from aiohttp import web

from . import discovery, errors, rbac, requestinfo
from .authn import Authenticator
from .authorizer import Authorizer
from .handlers import ResourceHandlers
from .identity import ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP, RequestAttributes, UserInfo
from .resources.base import Obj
from .resources.builtin import REVIEW_RESOURCES
from .resources.catalog import Catalog
from .reviews import Reviews
from .selectors import FieldSelector
from .subresources import Subresources
from .wire import json_response

logger = logging.getLogger(__name__)

HEALTH_PATHS = ("/healthz", "/livez", "/readyz")
#: The checks behind every health endpoint, in kube-apiserver's order; /readyz adds READY_CHECKS.
HEALTH_CHECKS = (
    "ping",
    "log",
    "etcd",
    "poststarthook/start-apiextensions-controllers",
    "poststarthook/crd-informer-synced",
    "poststarthook/rbac/bootstrap-roles",
    "poststarthook/bootstrap-controller",
)
READY_CHECKS = ("etcd-readiness", "informer-sync", "shutdown")
_AGGREGATED = "apidiscovery.k8s.io"


@dataclass(frozen=True)
class Endpoints:
    """What the dispatcher sends requests to, and the little it says itself (version, address, OpenAPI)."""

    authenticator: Authenticator
    authorizer: Authorizer
    catalog: Catalog
    resources: ResourceHandlers
    subresources: Subresources
    reviews: Reviews
    #: the `/openapi/v2` and `/openapi/v3/...` answers, by the path's parts after `openapi`
    openapi: Callable[[web.Request, list[str]], web.Response]
    version_info: Obj
    #: host:port the server is reached at (known once it listens)
    address: Callable[[], str]
    now: Callable[[], datetime]


def build_app(endpoints: Endpoints) -> web.Application:
    app = web.Application(client_max_size=errors.MAX_BODY_BYTES + 1024)
    dispatcher = Dispatcher(endpoints)
    app.router.add_route("*", "/{tail:.*}", dispatcher.dispatch)
    return app


def _wants_aggregated(request: web.Request) -> bool:
    return f"g={_AGGREGATED}" in request.headers.get("Accept", "")


class Dispatcher:
    def __init__(self, endpoints: Endpoints) -> None:
        self._to = endpoints

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        try:
            return await self._dispatch(request)
        except errors.APIError as exc:
            return json_response(exc.status(), status=exc.code)
        except Exception:
            logger.exception("%s %s: unexpected error", request.method, request.path)
            return json_response(
                errors.internal("an unexpected error occurred; see the server log").status(), status=500
            )

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        info = requestinfo.parse(request.method, request.path, request.query)
        fields = _field_terms(info, request)
        user = self._authenticate(request, info)
        user = self._impersonate(request, user)
        attrs = RequestAttributes(
            user=user,
            verb=info.verb,
            resource_request=info.resource_request,
            api_group=info.group,
            api_version=info.version,
            resource=info.resource,
            subresource=info.subresource,
            name=info.name or _name_from_field_selector(fields),
            namespace=info.namespace or _namespace_of_namespace(info),
            path=info.path,
            fields=fields,
        )
        decision = self._to.authorizer.authorize(attrs)
        if not decision.allowed:
            raise rbac.forbidden_error(attrs, decision.reason)
        if not info.resource_request:
            return await self._non_resource(request, info)
        rt = self._to.catalog.get(info.group, info.version, info.resource)
        if rt is None:
            raise errors.path_not_found()
        if info.namespace and not rt.namespaced:
            raise errors.path_not_found()
        if info.parts:
            raise errors.path_not_found()
        if (rt.group, rt.plural) in REVIEW_RESOURCES:
            if rt.plural == "bindings":
                return await self._to.subresources.binding_resource(request, info, user)
            return await self._to.reviews.handle(request, info, rt, user)
        if info.subresource:
            return await self._to.subresources.handle(request, info, rt, user)
        return await self._to.resources.handle(request, info, rt, user)

    def _authenticate(self, request: web.Request, info: requestinfo.RequestInfo) -> UserInfo:
        ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
        peer = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        user = self._to.authenticator.authenticate(
            peer_cert_der=peer, authorization=request.headers.get("Authorization"), now=self._to.now()
        )
        if user is not None:
            return user
        if not info.resource_request and _is_health(info.path):
            return UserInfo(name="system:anonymous", groups=("system:unauthenticated",))
        raise errors.unauthorized()

    def _impersonate(self, request: web.Request, user: UserInfo) -> UserInfo:
        name = request.headers.get("Impersonate-User")
        groups = request.headers.getall("Impersonate-Group", [])
        if not name and not groups:
            return user
        if not name:
            raise errors.bad_request("requested impersonation of groups without impersonating a user")
        for resource, value in [("users", name)] + [("groups", g) for g in groups]:
            attrs = RequestAttributes(
                user=user, verb="impersonate", api_group="", resource=resource, name=value
            )
            if resource == "users" and name.startswith("system:serviceaccount:"):
                parts = name.split(":")
                if len(parts) == 4:
                    attrs = RequestAttributes(
                        user=user,
                        verb="impersonate",
                        resource="serviceaccounts",
                        namespace=parts[2],
                        name=parts[3],
                    )
            if not self._to.authorizer.authorize(attrs).allowed:
                raise errors.forbidden(
                    f'{resource} "{value}" is forbidden: User "{user.name}" cannot impersonate resource '
                    f'"{resource}" in API group "" at the cluster scope',
                    resource=resource,
                    name=value,
                )
        return UserInfo(name=name, groups=_impersonated_groups(name, tuple(groups)))

    async def _non_resource(self, request: web.Request, info: requestinfo.RequestInfo) -> web.StreamResponse:
        path = "/" + info.path.strip("/")
        catalog = self._to.catalog
        if request.method not in ("GET", "HEAD"):
            raise errors.method_not_allowed()
        if _is_health(path):
            return _health(path, request.query.getall("exclude", []), verbose="verbose" in request.query)
        if path == "/version":
            return json_response(self._to.version_info)
        if path == "/api":
            if _wants_aggregated(request):
                return self._aggregated(discovery.aggregated(catalog, legacy=True))
            return json_response(discovery.api_versions(self._to.address()))
        if path == "/apis":
            if _wants_aggregated(request):
                return self._aggregated(discovery.aggregated(catalog, legacy=False))
            return json_response(discovery.api_group_list(catalog))
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) == 2:
            return _found(discovery.api_resource_list(catalog, "", parts[1]))
        if parts[0] == "apis" and len(parts) == 2:
            return _found(discovery.api_group(catalog, parts[1]))
        if parts[0] == "apis" and len(parts) == 3:
            return _found(discovery.api_resource_list(catalog, parts[1], parts[2]))
        if parts[0] == "openapi":
            return self._to.openapi(request, parts[1:])
        raise errors.path_not_found()

    def _aggregated(self, body: dict[str, object]) -> web.Response:
        response = json_response(body)
        response.content_type = "application/json"
        response.headers["Content-Type"] = f"application/json;g={_AGGREGATED};v=v2;as=APIGroupDiscoveryList"
        return response


def _impersonated_groups(name: str, groups: tuple[str, ...]) -> tuple[str, ...]:
    """Anonymous gains system:unauthenticated, anyone else system:authenticated, unless either is named."""
    if name == ANONYMOUS_USER:
        return groups if UNAUTHENTICATED_GROUP in groups else (*groups, UNAUTHENTICATED_GROUP)
    if AUTHENTICATED_GROUP in groups or UNAUTHENTICATED_GROUP in groups:
        return groups
    return (*groups, AUTHENTICATED_GROUP)


def _field_terms(info: requestinfo.RequestInfo, request: web.Request) -> tuple[tuple[str, str], ...]:
    """The `key=value` terms of a list or watch's field selector, as the authorizers see them."""
    if info.verb not in ("list", "watch") or not request.query.get("fieldSelector"):
        return ()
    try:
        selector = FieldSelector.parse(request.query["fieldSelector"])
    except errors.APIError:
        return ()
    return tuple((term.key, term.value) for term in selector.terms if not term.negated)


def _name_from_field_selector(fields: tuple[tuple[str, str], ...]) -> str:
    """A list or watch narrowed to `metadata.name=<x>` is authorized as a request for <x>."""
    return next((value for key, value in fields if key == "metadata.name"), "")


def _namespace_of_namespace(info: requestinfo.RequestInfo) -> str:
    """RequestInfoFactory puts a Namespace's own name in the request's namespace (`/api/v1/namespaces/x`)."""
    return info.name if info.resource_request and not info.group and info.resource == "namespaces" else ""


def _health(path: str, excluded: list[str], *, verbose: bool) -> web.Response:
    """`/readyz`, `/readyz/<check>`, `?verbose` and `?exclude=` as the apiserver's healthz handler answers."""
    endpoint, _, check = path.strip("/").partition("/")
    checks = HEALTH_CHECKS + (READY_CHECKS if endpoint == "readyz" else ())
    if check and check not in checks:
        raise errors.path_not_found()
    if check or not verbose:
        return web.Response(text="ok", content_type="text/plain")
    lines = [f"[+]{name} excluded: ok" if name in excluded else f"[+]{name} ok" for name in checks]
    unknown = [f'"{name}"' for name in sorted(set(excluded) - set(checks))]
    if unknown:
        lines.append(f"warn: some health checks cannot be excluded: no matches for {','.join(unknown)}")
    return web.Response(text="\n".join([*lines, f"{endpoint} check passed", ""]), content_type="text/plain")


def _is_health(path: str) -> bool:
    path = "/" + path.strip("/")
    return any(path == p or path.startswith(p + "/") for p in HEALTH_PATHS)


def _found(body: dict[str, object] | None) -> web.Response:
    if body is None:
        raise errors.path_not_found()
    return json_response(body)
