"""HTTP handlers for resource requests: parse the request, call the registry, render.

One function per verb family; subresources and reviews live in their own modules.
Nothing here decides semantics (that is the registry's and the strategies' job): this
is the `responses.py` of moto's split.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from . import errors, fieldvalidation, rbac
from .authorizer import Authorizer
from .identity import RequestAttributes
from .negotiation import Representation, negotiate
from .printers import table
from .registry import Registry, WriteOptions
from .requestinfo import RequestInfo
from .resources.base import Obj, ResourceType
from .storage import Storage
from .wire import decode_json, dumps, json_response, read_body

logger = logging.getLogger(__name__)

DEFAULT_WATCH_SECONDS = 1800
#: how a watch line of a stored object's event starts; the object's kept encoding follows
_EVENT_PREFIXES = {
    kind: b'{"type":"%s","object":' % kind.encode() for kind in ("ADDED", "MODIFIED", "DELETED")
}
#: the options kind a write's query parameters decode into, per method
OPTIONS_KINDS = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions"}


def write_options(request: web.Request, user: Any) -> WriteOptions:
    query = request.query
    dry_run = query.getall("dryRun", [])
    for value in dry_run:
        if value != "All":
            raise errors.invalid(
                "CreateOptions",
                "",
                [
                    errors.Cause(
                        "dryRun",
                        f'Unsupported value: "{value}": supported values: "All"',
                        "FieldValueNotSupported",
                    )
                ],
            )
    manager = query.get("fieldManager", "")
    if manager and (len(manager) > 128 or not manager.isprintable()):
        raise errors.invalid(
            "CreateOptions",
            "",
            [
                errors.Cause(
                    "fieldManager", f'Invalid value: "{manager}": must be at most 128 printable characters'
                )
            ],
        )
    if not manager and request.method != "PATCH":
        manager = request.headers.get("User-Agent", "unknown").split("/")[0] or "unknown"
    validation = query.get("fieldValidation", "")
    if validation not in fieldvalidation.ACCEPTED and request.method in OPTIONS_KINDS:
        cause = fieldvalidation.unsupported(validation)
        raise errors.invalid(OPTIONS_KINDS[request.method], "", [cause], group="meta.k8s.io")
    return WriteOptions(
        user=user,
        dry_run=bool(dry_run),
        field_manager=manager,
        field_validation=validation or fieldvalidation.WARN,
    )


def render_object(
    rt: ResourceType, obj: Obj, rep: Representation, *, headers: bool = True, subresource: str = ""
) -> Obj:
    if rep.shape == "Table":
        meta = {"resourceVersion": (obj.get("metadata") or {}).get("resourceVersion", "")}
        return table.table(
            rt,
            [obj],
            include_object=rep.include_object,
            now=datetime.now(UTC),
            list_meta=meta,
            no_headers=not headers,
            subresource=subresource,
        )
    if rep.shape == "PartialObjectMetadata":
        return {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata", {}),
        }
    return obj


def deleted_response(rt: ResourceType, obj: Obj, *, finished: bool, options: Obj) -> web.Response:
    """The DELETE answer: the object while it stays (202 only for `orphanDependents: false`, as
    kube-apiserver's delete handler keeps it for old clients), else a Status (or the deleted object)."""
    if not finished or rt.strategy.return_deleted_object:
        accepted = not finished and options.get("orphanDependents") is False
        return json_response(obj, status=202 if accepted else 200)
    meta = obj.get("metadata", {})
    status: Obj = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": meta.get("name", ""), "kind": rt.plural, "uid": meta.get("uid", "")},
    }
    if rt.group:
        status["details"]["group"] = rt.group
    return json_response(status)


def delete_options(request: web.Request, body: bytes) -> Obj:
    options: Obj = {}
    if body.strip():
        parsed = decode_json(body, request.headers.get("Content-Type", "application/json"))
        if not isinstance(parsed, dict):
            raise errors.bad_request("DeleteOptions must be an object")
        options = parsed
    query = request.query
    if "gracePeriodSeconds" in query:
        try:
            options["gracePeriodSeconds"] = int(query["gracePeriodSeconds"])
        except ValueError:
            raise errors.bad_request(f'invalid gracePeriodSeconds "{query["gracePeriodSeconds"]}"') from None
    if "propagationPolicy" in query:
        options["propagationPolicy"] = query["propagationPolicy"]
    policy = options.get("propagationPolicy")
    if policy not in (None, "Orphan", "Background", "Foreground"):
        raise errors.invalid(
            "DeleteOptions",
            "",
            [
                errors.Cause(
                    "propagationPolicy",
                    f'Unsupported value: "{policy}": supported values: "Foreground", "Background", "Orphan", "nil"',
                    "FieldValueNotSupported",
                )
            ],
        )
    return options


class ResourceHandlers:
    def __init__(
        self, registry: Registry, storage: Storage, authorizer: Authorizer, *, bookmark_interval: float
    ) -> None:
        self._registry = registry
        self._storage = storage
        self._authorizer = authorizer
        self._bookmark_interval = bookmark_interval

    async def handle(
        self, request: web.Request, info: RequestInfo, rt: ResourceType, user: Any
    ) -> web.StreamResponse:
        verb = info.verb
        if (verb not in rt.verbs and not info.subresource and verb != "watch") or (
            verb == "watch" and "watch" not in rt.verbs
        ):
            raise errors.method_not_allowed()
        if verb in ("update", "patch") and not info.name:
            raise errors.method_not_allowed()
        if verb == "get":
            return self.get(request, info, rt)
        if verb == "list":
            return self.list(request, info, rt)
        if verb == "watch":
            return await self.watch(request, info, rt)
        if verb == "create":
            return await self.create(request, info, rt, user)
        if verb == "update":
            return await self.update(request, info, rt, user)
        if verb == "patch":
            return await self.patch(request, info, rt, user)
        if verb == "delete":
            return await self.delete(request, info, rt, user)
        if verb == "deletecollection":
            return await self.delete_collection(request, info, rt, user)
        raise errors.method_not_allowed()

    def _rep(self, request: web.Request) -> Representation:
        return negotiate(request.headers.get("Accept"), include_object=request.query.get("includeObject"))

    def get(self, request: web.Request, info: RequestInfo, rt: ResourceType) -> web.Response:
        obj = self._registry.get(rt, info.namespace, info.name)
        rep = self._rep(request)
        if rep.shape == "object":
            return web.Response(body=self._encoded(rt, obj), content_type="application/json")
        return json_response(render_object(rt, obj, rep))

    def list(self, request: web.Request, info: RequestInfo, rt: ResourceType) -> web.Response:
        query = request.query
        try:
            limit = int(query.get("limit", "0") or 0)
        except ValueError:
            raise errors.bad_request(f'invalid limit "{query.get("limit")}"') from None
        result = self._registry.list_objects(
            rt,
            info.namespace or None if rt.namespaced else None,
            label_selector=query.get("labelSelector"),
            field_selector=query.get("fieldSelector"),
            limit=max(limit, 0),
            continue_token=query.get("continue", ""),
            resource_version=query.get("resourceVersion", ""),
            resource_version_match=query.get("resourceVersionMatch", ""),
        )
        meta: Obj = {"resourceVersion": result.resource_version}
        if result.continue_token:
            meta["continue"] = result.continue_token
        if result.remaining is not None:
            meta["remainingItemCount"] = result.remaining
        rep = self._rep(request)
        if rep.shape == "Table":
            body = table.table(
                rt, result.items, include_object=rep.include_object, now=datetime.now(UTC), list_meta=meta
            )
        elif rep.shape == "PartialObjectMetadata":
            body = {
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": meta,
                "items": [render_object(rt, o, rep) for o in result.items],
            }
        else:
            # the items' kept encodings spliced into the list: `..."items":[` + items + `]}`
            head = dumps({"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta, "items": []})
            items = b",".join(self._encoded(rt, obj) for obj in result.items)
            return web.Response(body=head[:-2] + items + b"]}", content_type="application/json")
        return json_response(body)

    async def create(
        self, request: web.Request, info: RequestInfo, rt: ResourceType, user: Any
    ) -> web.Response:
        if info.name:
            raise errors.method_not_allowed()
        raw, content_type = await read_body(request), request.headers.get("Content-Type", "application/json")
        body = decode_json(raw, content_type, kind=rt.kind)
        opts = write_options(request, user)
        self._check_fields(rt, raw, content_type, opts)
        obj = await self._registry.create(rt, info.namespace, body, opts)
        return json_response(render_object(rt, obj, self._rep(request)), status=201, warnings=opts.warnings)

    async def update(
        self, request: web.Request, info: RequestInfo, rt: ResourceType, user: Any
    ) -> web.Response:
        raw, content_type = await read_body(request), request.headers.get("Content-Type", "application/json")
        body = decode_json(raw, content_type, kind=rt.kind)
        opts = write_options(request, user)
        self._check_fields(
            rt, raw, content_type, opts, stored=self._registry.find(rt, info.namespace, info.name)
        )
        obj, created = await self._registry.update(
            rt, info.namespace, info.name, body, opts, subresource=info.subresource
        )
        return json_response(
            render_object(rt, obj, self._rep(request)), status=201 if created else 200, warnings=opts.warnings
        )

    def _check_fields(
        self,
        rt: ResourceType,
        raw: bytes,
        content_type: str,
        opts: WriteOptions,
        *,
        stored: Obj | None = None,
    ) -> None:
        """Strict decoding of a create or update body: unknown and repeated fields."""
        self._registry.fields.check_body(
            rt, raw, content_type, directive=opts.field_validation, warnings=opts.warnings, stored=stored
        )

    async def patch(
        self, request: web.Request, info: RequestInfo, rt: ResourceType, user: Any
    ) -> web.Response:
        body = await read_body(request)
        opts = write_options(request, user)
        force = request.query.get("force", "").lower() in ("1", "true")
        content_type = request.headers.get("Content-Type", "")
        applying = content_type.startswith("application/apply-patch")
        if "force" in request.query and not applying:
            cause = errors.Cause(
                "force", "Forbidden: may not be specified for non-apply patch", "FieldValueForbidden"
            )
            raise errors.invalid("PatchOptions", "", [cause], group="meta.k8s.io")
        if applying and not opts.field_manager:
            cause = errors.Cause(
                "fieldManager", "Required value: is required for apply patch", "FieldValueRequired"
            )
            raise errors.invalid("PatchOptions", "", [cause], group="meta.k8s.io")
        if not opts.field_manager and not content_type.startswith("application/apply-patch"):
            opts.field_manager = request.headers.get("User-Agent", "unknown").split("/")[0] or "unknown"
        if applying and not info.subresource and self._registry.find(rt, info.namespace, info.name) is None:
            self._authorize_create(info, rt, user)
        obj, created = await self._registry.patch(
            rt, info.namespace, info.name, content_type, body, opts, subresource=info.subresource, force=force
        )
        return json_response(
            render_object(rt, obj, self._rep(request)), status=201 if created else 200, warnings=opts.warnings
        )

    def _authorize_create(self, info: RequestInfo, rt: ResourceType, user: Any) -> None:
        """An apply that creates is also a create, authorized by name (the patch handler's `withAuthorization`)."""
        attrs = RequestAttributes(
            user=user,
            verb="create",
            api_group=rt.group,
            api_version=rt.version,
            resource=rt.plural,
            name=info.name,
            namespace=info.namespace,
            path=info.path,
        )
        decision = self._authorizer.authorize(attrs)
        if not decision.allowed:
            raise rbac.forbidden_error(attrs, decision.reason)

    async def delete(
        self, request: web.Request, info: RequestInfo, rt: ResourceType, user: Any
    ) -> web.Response:
        options = delete_options(request, await read_body(request))
        opts = write_options(request, user)
        outcome = await self._registry.delete(rt, info.namespace, info.name, options, opts)
        return deleted_response(rt, outcome.obj, finished=outcome.finished, options=options)

    async def delete_collection(
        self, request: web.Request, info: RequestInfo, rt: ResourceType, user: Any
    ) -> web.Response:
        options = delete_options(request, await read_body(request))
        opts = write_options(request, user)
        deleted = await self._registry.delete_collection(
            rt,
            info.namespace or None,
            options,
            opts,
            label_selector=request.query.get("labelSelector"),
            field_selector=request.query.get("fieldSelector"),
        )
        meta = {"resourceVersion": str(self._storage.resource_version)}
        return json_response(
            {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta, "items": deleted}
        )

    async def watch(self, request: web.Request, info: RequestInfo, rt: ResourceType) -> web.StreamResponse:
        query = request.query
        try:
            timeout = int(query.get("timeoutSeconds", "") or DEFAULT_WATCH_SECONDS)
        except ValueError:
            raise errors.bad_request(f'invalid timeoutSeconds "{query.get("timeoutSeconds")}"') from None
        namespace: str | None = info.namespace or None
        if info.name:
            field = f"metadata.name={info.name}"
            existing = query.get("fieldSelector")
            query_fields = f"{existing},{field}" if existing else field
        else:
            query_fields = query.get("fieldSelector") or ""
        send_initial = query.get("sendInitialEvents")
        initial = None if send_initial is None else send_initial.lower() == "true"
        if initial and query.get("resourceVersionMatch") != "NotOlderThan":
            raise errors.invalid(
                "ListOptions",
                "",
                [
                    errors.Cause(
                        "resourceVersionMatch",
                        "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                        "FieldValueForbidden",
                    )
                ],
            )
        rep = self._rep(request)
        bookmarks = query.get("allowWatchBookmarks", "").lower() == "true"
        events = self._registry.watch(
            rt,
            namespace,
            label_selector=query.get("labelSelector"),
            field_selector=query_fields,
            resource_version=query.get("resourceVersion", ""),
            send_initial_events=initial,
            bookmark_interval=self._bookmark_interval if bookmarks else None,
        )
        response = web.StreamResponse(
            status=200, headers={"Content-Type": "application/json", "Cache-Control": "no-cache"}
        )
        response.enable_chunked_encoding()
        await response.prepare(request)
        first = True
        with contextlib.suppress(TimeoutError, ConnectionResetError):
            async with asyncio.timeout(timeout):
                async for event in events:
                    await response.write(self._event_line(rt, event, rep, headers=first))
                    first = first and event["type"] in ("BOOKMARK", "ERROR")
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
        return response

    def _encoded(self, rt: ResourceType, obj: Obj) -> bytes:
        """JSON of an object; a stored one is encoded once per version for every reader and watcher."""
        return self._storage.encoded(rt.storage_key, obj)

    def _event_line(self, rt: ResourceType, event: Obj, rep: Representation, *, headers: bool) -> bytes:
        prefix = _EVENT_PREFIXES.get(event["type"]) if rep.shape == "object" else None
        if prefix is None:
            return dumps(self._render_event(rt, event, rep, headers=headers)) + b"\n"
        return prefix + self._encoded(rt, event["object"]) + b"}\n"

    def _render_event(self, rt: ResourceType, event: Obj, rep: Representation, *, headers: bool) -> Obj:
        """Table watches carry one-row Tables; only the first one has column definitions."""
        if event["type"] in ("ERROR", "BOOKMARK") or rep.shape == "object":
            return event
        return {"type": event["type"], "object": render_object(rt, event["object"], rep, headers=headers)}
