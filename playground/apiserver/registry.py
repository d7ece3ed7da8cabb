"""The generic store: every verb's rules that do not depend on the kind.

For each write: decode checks, strategy defaults and preparation, mutating admission,
validation, validating admission, then optimistic concurrency, uid / generation /
timestamps / managedFields, and the finalizer and graceful-deletion lifecycle. Kinds
add only their `Strategy` (resources/). Objects cross this boundary in the served
version (`rt.api_version`); storage holds them in the storage version.
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import copy
import json
import logging
import secrets
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import yaml

from . import apply as ssa
from . import crds, decoding, errors, patch
from .errors import Cause
from .fieldvalidation import IGNORE, FieldValidator
from .identity import UserInfo
from .listtypes import ListTypes, builtin_list_types, crd_list_types
from .resources.base import Obj, ResourceType
from .resources.catalog import Catalog
from .selectors import FieldSelector, LabelSelector
from .storage import Event, Storage, Subscription
from .validation import validate_metadata

logger = logging.getLogger(__name__)

SERVER_MANAGED = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")
#: rest.EnsureObjectNamespaceMatchesRequestNamespace's answer to a body naming another namespace
NAMESPACE_MISMATCH = "the namespace of the provided object does not match the namespace sent on the request"
ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
#: the type of the marker an idle watch's subscription gets when a BOOKMARK is due
BOOKMARK = "BOOKMARK"


def now_iso(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class AdmissionAttributes:
    operation: str  # CREATE, UPDATE, DELETE, CONNECT
    rt: ResourceType
    subresource: str
    namespace: str
    name: str
    obj: Obj | None
    old: Obj | None
    user: UserInfo
    dry_run: bool
    options: Obj
    #: admission warnings, sent back as `Warning` headers
    warnings: list[str] = field(default_factory=list)


class Admission(Protocol):
    """Mutating then validating admission; raising APIError rejects the request."""

    async def mutate(self, attrs: AdmissionAttributes) -> Obj | None: ...

    async def validate(self, attrs: AdmissionAttributes) -> None: ...


class NoAdmission:
    async def mutate(self, attrs: AdmissionAttributes) -> Obj | None:
        return attrs.obj

    async def validate(self, attrs: AdmissionAttributes) -> None:
        return None


@dataclass
class WriteOptions:
    user: UserInfo
    dry_run: bool = False
    field_manager: str = ""
    admit: bool = True
    warnings: list[str] = field(default_factory=list)
    #: `?fieldValidation=`: Strict, Warn or (for the server's own writes) Ignore
    field_validation: str = IGNORE


@dataclass
class ListResult:
    items: list[Obj]
    resource_version: str
    continue_token: str = ""
    remaining: int | None = None


@dataclass
class DeleteResult:
    obj: Obj
    finished: bool


class Registry:
    def __init__(
        self,
        storage: Storage,
        catalog: Catalog,
        *,
        admission: Admission | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        fields: FieldValidator | None = None,
    ) -> None:
        self.storage = storage
        self.catalog = catalog
        self.admission: Admission = admission or NoAdmission()
        self.clock = clock
        self.fields = fields or FieldValidator()

    # conversion between served and stored versions

    def _to_storage(self, rt: ResourceType, obj: Obj) -> Obj:
        if rt.to_storage is not None:
            return rt.to_storage(obj)
        target = self.catalog.storage_version(rt.storage_key) or rt
        return {**obj, "apiVersion": target.api_version, "kind": target.kind}

    def _from_storage(self, rt: ResourceType, obj: Obj) -> Obj:
        if rt.from_storage is not None:
            return rt.from_storage(obj)
        if obj.get("apiVersion") == rt.api_version:
            return obj
        return {**obj, "apiVersion": rt.api_version, "kind": rt.kind}

    # reads

    def get(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        stored = self.storage.get(rt.storage_key, namespace, name)
        if stored is None:
            raise errors.not_found(rt.plural, name, group=rt.group)
        return self._from_storage(rt, stored)

    def find(self, rt: ResourceType, namespace: str, name: str) -> Obj | None:
        stored = self.storage.get(rt.storage_key, namespace, name)
        return None if stored is None else self._from_storage(rt, stored)

    def matcher(
        self, rt: ResourceType, label_selector: str | None, field_selector: str | None
    ) -> Callable[[Obj], bool]:
        labels = LabelSelector.parse(label_selector or "")
        fields = FieldSelector.parse(field_selector or "")
        supported = {"metadata.name", "metadata.namespace"}
        field_keys = fields.keys()
        if field_keys:
            own = set(rt.strategy.field_labels({}).keys())
            fields.check_supported(supported | own, generic=not own)
        if labels.empty and not field_keys:
            return match_everything

        def matches(obj: Obj) -> bool:
            meta = obj.get("metadata") or {}
            if not labels.empty and not labels.matches(meta.get("labels") or {}):
                return False
            if field_keys:
                values = {
                    "metadata.name": meta.get("name", ""),
                    "metadata.namespace": meta.get("namespace", ""),
                }
                values.update(rt.strategy.field_labels(obj))
                return fields.matches(values)
            return True

        return matches

    def list_objects(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = 0,
        continue_token: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> ListResult:
        matches = self.matcher(rt, label_selector, field_selector)
        current = self.storage.resource_version
        list_rv = current
        start_after = ""
        if continue_token:
            list_rv, start_after = _decode_continue(continue_token, compacted=self.storage.compacted_rv)
        else:
            _check_list_rv(resource_version, resource_version_match, current)
        items = self.storage.objects(rt.storage_key, namespace)
        if start_after:
            items = items[bisect.bisect_right(items, _position(start_after), key=_position_of) :]
        selected: list[Obj] = []
        next_token = ""
        remaining: int | None = None
        for index, obj in enumerate(items):
            if matches is not match_everything and not matches(obj):
                continue
            if limit and len(selected) == limit:
                next_token = _encode_continue(list_rv, _sort_key(selected[-1]))
                rest = items[index:]
                everything = matches is match_everything
                remaining = len(rest) if everything else sum(1 for o in rest if matches(o))
                break
            selected.append(obj)
        return ListResult(
            items=[self._from_storage(rt, o) for o in selected],
            resource_version=str(list_rv),
            continue_token=next_token,
            remaining=remaining,
        )

    # writes

    async def create(
        self, rt: ResourceType, namespace: str, body: Obj, opts: WriteOptions, *, applied: bool = False
    ) -> Obj:
        """Create; `applied` objects come from server-side apply and keep the managedFields it computed."""
        obj = self._decode(rt, namespace, body)
        if not applied:
            obj = self._typed_body(rt, obj)
        meta = obj["metadata"]
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = _generated_name(str(meta["generateName"]))
        self._check_crd_accepts_creates(rt, str(meta.get("name") or ""))
        for key in (*SERVER_MANAGED, "resourceVersion", *(() if applied else ("managedFields",))):
            meta.pop(key, None)
        now = self.clock()
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_iso(now)
        if rt.strategy.has_generation:
            meta["generation"] = 1
        rt.strategy.default(obj)
        rt.strategy.prepare_for_create(obj, status_subresource=rt.has_subresource("status"))
        obj = await self._admit_mutating("CREATE", rt, "", obj, None, opts)
        self._validate(rt, obj, None)
        await self._admit_validating("CREATE", rt, "", obj, None, opts)
        name = obj["metadata"]["name"]
        if self.storage.get(rt.storage_key, namespace, name) is not None:
            raise errors.already_exists(rt.plural, name, group=rt.group)
        if not applied:
            obj = ssa.record_update(
                None,
                obj,
                manager=self._manager(opts),
                list_types=self.list_types(rt),
                now=now_iso(now),
                status_subresource=rt.has_subresource("status"),
            )
        if opts.dry_run:
            return obj
        stored = self.storage.put(rt.storage_key, self._to_storage(rt, obj), old=None)
        return self._from_storage(rt, stored)

    async def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Obj,
        opts: WriteOptions,
        *,
        subresource: str = "",
    ) -> tuple[Obj, bool]:
        """PUT: returns the object and whether it was created (Leases and friends allow that)."""
        _check_name(body, name, namespace)
        new = self._typed_body(rt, self._decode(rt, namespace, body))
        old = self.find(rt, namespace, name)
        if old is None:
            if subresource or not rt.strategy.allow_create_on_update:
                raise errors.not_found(rt.plural, name, group=rt.group)
            if new["metadata"].get("resourceVersion"):
                raise errors.conflict(
                    rt.plural, name, group=rt.group, why="the object has been deleted or its UID changed"
                )
            return await self.create(rt, namespace, new, opts), True
        return await self._write_update(rt, new, old, opts, subresource=subresource), False

    async def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        body: bytes,
        opts: WriteOptions,
        *,
        subresource: str = "",
        force: bool = False,
    ) -> tuple[Obj, bool]:
        ctype = content_type.split(";")[0].strip()
        if ctype not in PATCH_TYPES:
            raise errors.unsupported_media_type(ctype, list(PATCH_TYPES))
        doc = _parse_patch(body, ctype)
        old = self.find(rt, namespace, name)
        list_types = self.list_types(rt)
        if ctype == "application/apply-patch+yaml":
            return await self._apply(
                rt, namespace, name, doc, old, opts, subresource=subresource, force=force, body=body
            )
        if old is None:
            raise errors.not_found(rt.plural, name, group=rt.group)
        base = copy.deepcopy(old)
        if ctype == "application/json-patch+json":
            if not isinstance(doc, list):
                raise errors.bad_request(
                    "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
                )
            new = patch.json_patch(base, doc)
        elif ctype == "application/merge-patch+json":
            new = patch.merge_patch(base, _require_object(doc))
        else:
            if rt.crd:
                raise errors.unsupported_media_type(
                    ctype,
                    [
                        "application/json-patch+json",
                        "application/merge-patch+json",
                        "application/apply-patch+yaml",
                    ],
                )
            new = patch.strategic_merge_patch(base, _require_object(doc), list_types=list_types)
        if not isinstance(new, dict):
            raise errors.bad_request("the patch did not produce an object")
        try:
            new = self._typed(rt, new)
        except decoding.TypeMismatch as exc:
            raise errors.invalid(
                "", "", [Cause("patch", f"Invalid value: {json.dumps(new)!r}: {exc}")]
            ) from None
        self.fields.check_patched(
            rt, ctype, body, new, old, directive=opts.field_validation, warnings=opts.warnings
        )
        new.setdefault("metadata", {})
        if new["metadata"].get("name", name) != name:
            raise errors.bad_request(
                f"the name of the object ({new['metadata'].get('name')}) does not match the name on the URL ({name})"
            )
        new["metadata"]["name"] = name
        if rt.namespaced:
            new["metadata"]["namespace"] = namespace
        new = self._decode(rt, namespace, new)
        return await self._write_update(rt, new, old, opts, subresource=subresource), False

    async def _apply(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        doc: Any,
        old: Obj | None,
        opts: WriteOptions,
        *,
        subresource: str,
        force: bool,
        body: bytes,
    ) -> tuple[Obj, bool]:
        applied = _require_object(doc)
        if not opts.field_manager:
            raise errors.bad_request("PATCH, Content-Type application/apply-patch+yaml requires fieldManager")
        meta = applied.get("metadata") or {}
        if meta.get("name") not in (None, name):
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
            )
        applied = self._decode(rt, namespace, {**applied, "metadata": {**meta, "name": name}})
        try:
            self._typed(rt, applied)
        except decoding.TypeMismatch as exc:
            raise patch.unexpected(
                f"failed to create typed patch object ({namespace}/{name}; {rt.group}/{rt.version}, "
                f"Kind={rt.kind}): {exc}"
            ) from None
        if doc.get("apiVersion") != rt.api_version:
            raise errors.bad_request(
                f"Incorrect version specified in apply patch. Specified patch version: {doc.get('apiVersion')}, "
                f"expected: {rt.api_version}"
            )
        directive, warnings = opts.field_validation, opts.warnings
        self.fields.check_applied(rt, applied, self.list_types(rt), directive=directive, warnings=warnings)
        now = now_iso(self.clock())
        merged = ssa.apply(
            old,
            applied,
            manager=opts.field_manager,
            force=force,
            list_types=self.list_types(rt),
            now=now,
            subresource=subresource,
            status_subresource=rt.has_subresource("status"),
        )
        self.fields.check_apply_yaml(body, directive=directive, warnings=warnings)
        if old is None:
            if subresource:
                raise errors.not_found(rt.plural, name, group=rt.group)
            return await self.create(rt, namespace, merged, opts, applied=True), True
        return await self._write_update(rt, merged, old, opts, subresource=subresource, managed=True), False

    async def _write_update(
        self,
        rt: ResourceType,
        new: Obj,
        old: Obj,
        opts: WriteOptions,
        *,
        subresource: str,
        managed: bool = False,
    ) -> Obj:
        name = old["metadata"]["name"]
        requested_rv = new["metadata"].get("resourceVersion")
        if requested_rv and requested_rv != old["metadata"].get("resourceVersion"):
            raise errors.conflict(rt.plural, name, group=rt.group)
        meta = new["metadata"]
        for key in SERVER_MANAGED:
            if key in old["metadata"]:
                meta[key] = old["metadata"][key]
            else:
                meta.pop(key, None)
        meta["resourceVersion"] = old["metadata"].get("resourceVersion")
        if subresource == "status":
            managed_fields = meta.get("managedFields")
            rt.strategy.prepare_for_status_update(new, old)
            if managed_fields is not None:
                new["metadata"]["managedFields"] = managed_fields
        else:
            rt.strategy.default(new)
            rt.strategy.prepare_for_update(new, old, status_subresource=rt.has_subresource("status"))
        if old["metadata"].get("deletionTimestamp") and set(meta.get("finalizers") or []) - set(
            old["metadata"].get("finalizers") or []
        ):
            raise errors.forbidden(
                f'{rt.kind} "{name}" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if '
                "the object is being deleted",
                resource=rt.plural,
                name=name,
                group=rt.group,
            )
        new = await self._admit_mutating("UPDATE", rt, subresource, new, old, opts)
        self._validate(rt, new, old)
        await self._admit_validating("UPDATE", rt, subresource, new, old, opts)
        if rt.strategy.has_generation and rt.strategy.spec_of(new) != rt.strategy.spec_of(old):
            new["metadata"]["generation"] = int(old["metadata"].get("generation") or 0) + 1
        now = now_iso(self.clock())
        if not managed:
            new = ssa.record_update(
                old,
                new,
                manager=self._manager(opts),
                list_types=self.list_types(rt),
                now=now,
                subresource=subresource,
                status_subresource=rt.has_subresource("status"),
            )
        if _same(new, old):
            return old
        if opts.dry_run:
            return new
        if _finalized(rt, new):
            return self._from_storage(rt, self.storage.remove(rt.storage_key, self._to_storage(rt, new)))
        stored = self.storage.put(rt.storage_key, self._to_storage(rt, new), old=self._to_storage(rt, old))
        return self._from_storage(rt, stored)

    async def write_internal(self, rt: ResourceType, new: Obj, old: Obj, *, user: UserInfo) -> Obj:
        """Store a change a subresource handler made itself (binding, finalize, approval).

        Only optimistic concurrency and the deletion lifecycle apply: the handler already
        decided which fields may change.
        """
        name = old["metadata"]["name"]
        requested_rv = new["metadata"].get("resourceVersion")
        if requested_rv and requested_rv != old["metadata"].get("resourceVersion"):
            raise errors.conflict(rt.plural, name, group=rt.group)
        if _same(new, old):
            return old
        if _finalized(rt, new):
            return self._from_storage(rt, self.storage.remove(rt.storage_key, self._to_storage(rt, new)))
        stored = self.storage.put(rt.storage_key, self._to_storage(rt, new), old=self._to_storage(rt, old))
        return self._from_storage(rt, stored)

    async def delete(
        self, rt: ResourceType, namespace: str, name: str, options: Obj, opts: WriteOptions
    ) -> DeleteResult:
        old = self.get(rt, namespace, name)
        _check_preconditions(rt, old, options.get("preconditions") or {})
        if opts.admit:
            await self._admit_validating("DELETE", rt, "", None, old, opts, options=options)
        meta = old["metadata"]
        new_finalizers = list(meta.get("finalizers") or [])
        policy = options.get("propagationPolicy") or ("Orphan" if options.get("orphanDependents") else "")
        if policy == "Orphan" and ORPHAN_FINALIZER not in new_finalizers:
            new_finalizers.append(ORPHAN_FINALIZER)
        if policy == "Foreground" and FOREGROUND_FINALIZER not in new_finalizers:
            new_finalizers.append(FOREGROUND_FINALIZER)
        requested = options.get("gracePeriodSeconds")
        grace = rt.strategy.graceful_delete_seconds(old, requested if isinstance(requested, int) else None)
        pending_spec = (
            bool((old.get("spec") or {}).get("finalizers"))
            if rt.kind == "Namespace" and not rt.group
            else False
        )
        if not new_finalizers and not grace and not pending_spec:
            if opts.dry_run:
                return DeleteResult(old, True)
            gone = self.storage.remove(rt.storage_key, self._to_storage(rt, old))
            return DeleteResult(self._from_storage(rt, gone), True)
        now = self.clock()
        updated = copy.deepcopy(old)
        umeta = updated["metadata"]
        umeta["finalizers"] = new_finalizers
        if not umeta["finalizers"]:
            umeta.pop("finalizers")
        if not umeta.get("deletionTimestamp"):
            umeta["deletionTimestamp"] = now_iso(now + timedelta(seconds=grace or 0))
            umeta["deletionGracePeriodSeconds"] = grace or 0
        elif grace is not None and grace < int(umeta.get("deletionGracePeriodSeconds") or 0):
            umeta["deletionTimestamp"] = now_iso(now + timedelta(seconds=grace))
            umeta["deletionGracePeriodSeconds"] = grace
        if pending_spec:
            updated.setdefault("status", {})["phase"] = "Terminating"
        if grace == 0 and not new_finalizers and not pending_spec:
            gone = self.storage.remove(rt.storage_key, self._to_storage(rt, old))
            return DeleteResult(self._from_storage(rt, gone), True)
        if _same(updated, old) or opts.dry_run:
            return DeleteResult(updated, False)
        stored = self.storage.put(
            rt.storage_key, self._to_storage(rt, updated), old=self._to_storage(rt, old)
        )
        return DeleteResult(self._from_storage(rt, stored), False)

    async def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        options: Obj,
        opts: WriteOptions,
        *,
        label_selector: str | None,
        field_selector: str | None,
    ) -> list[Obj]:
        result = self.list_objects(
            rt, namespace, label_selector=label_selector, field_selector=field_selector
        )
        deleted = []
        for obj in result.items:
            meta = obj["metadata"]
            try:
                outcome = await self.delete(rt, meta.get("namespace", ""), meta["name"], options, opts)
            except errors.APIError as exc:
                if exc.code == 404:
                    continue
                raise
            deleted.append(outcome.obj)
        return deleted

    # watch

    def watch(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str = "",
        send_initial_events: bool | None = None,
        bookmark_interval: float | None = None,
    ) -> AsyncIterator[Obj]:
        """Watch events as dicts: {"type": ..., "object": ...}; ends when the storage closes the watch.

        With `bookmark_interval`, a BOOKMARK comes after every that many seconds without events.
        Bad selectors or resourceVersions raise here, before any event is produced.
        """
        matches = self.matcher(rt, label_selector, field_selector)
        initial = send_initial_events if send_initial_events is not None else resource_version in ("", "0")
        since = 0 if initial else _parse_rv(resource_version)
        return self._events(
            rt,
            namespace,
            matches,
            since=since,
            initial=initial,
            end_marker=bool(send_initial_events),
            bookmark_interval=bookmark_interval,
        )

    async def _events(
        self,
        rt: ResourceType,
        namespace: str | None,
        matches: Callable[[Obj], bool],
        *,
        since: int,
        initial: bool,
        end_marker: bool,
        bookmark_interval: float | None,
    ) -> AsyncIterator[Obj]:
        sub = self.storage.subscribe(rt.storage_key, namespace)
        ticker: _IdleTicker | None = None
        try:
            start = self.storage.resource_version
            if initial:
                for obj in self.storage.objects(rt.storage_key, namespace):
                    if matches(obj):
                        yield {"type": "ADDED", "object": self._from_storage(rt, obj)}
                if end_marker:
                    yield self._bookmark(rt, start, initial_end=True)
            else:
                if since < self.storage.compacted_rv:
                    yield _expired(since, self.storage.compacted_rv)
                    return
                for event in self.storage.events_since(since, rt.storage_key):
                    if event.rv > start:
                        break
                    if namespace is None or event.obj["metadata"].get("namespace", "") == namespace:
                        out = self._filter_event(rt, event, matches)
                        if out:
                            yield out
            if bookmark_interval is not None:
                ticker = _IdleTicker(self.storage, sub, bookmark_interval)
            while True:
                item = await sub.queue.get()
                if item is None:
                    if sub.overflowed:
                        yield _expired(start, self.storage.resource_version)
                    return
                if item.type == BOOKMARK:
                    yield self._bookmark(rt, item.rv, initial_end=False)
                    continue
                if item.rv <= start:
                    continue
                out = self._filter_event(rt, item, matches)
                if out:
                    if ticker is not None:
                        ticker.touch()
                    yield out
        finally:
            if ticker is not None:
                ticker.cancel()
            self.storage.unsubscribe(sub)

    def _bookmark(self, rt: ResourceType, rv: int, *, initial_end: bool) -> Obj:
        meta: Obj = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        return {
            "type": "BOOKMARK",
            "object": {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta},
        }

    def _filter_event(self, rt: ResourceType, event: Event, matches: Callable[[Obj], bool]) -> Obj | None:
        """Selectors see transitions: an object leaving the selection is DELETED for this watcher."""
        new_match = matches(event.obj)
        if event.type == "ADDED":
            kind = "ADDED" if new_match else None
        elif event.type == "DELETED":
            kind = "DELETED" if new_match else None
        else:
            old_match = event.old is not None and matches(event.old)
            kind = {(True, True): "MODIFIED", (False, True): "ADDED", (True, False): "DELETED"}.get(
                (old_match, new_match)
            )
        if kind is None:
            return None
        return {"type": kind, "object": self._from_storage(rt, event.obj)}

    # helpers

    def list_types(self, rt: ResourceType) -> ListTypes:
        return crd_list_types(rt.schema or {}) if rt.crd else builtin_list_types(rt.group, rt.kind)

    def _manager(self, opts: WriteOptions) -> str:
        return opts.field_manager or "unknown"

    def _typed(self, rt: ResourceType, obj: Obj) -> Obj:
        """`obj` as decoding into the kind's Go type leaves it; custom resources have their schemas instead."""
        return obj if rt.crd else dict(decoding.typed(rt.group, rt.version, rt.kind, obj))

    def _typed_body(self, rt: ResourceType, obj: Obj) -> Obj:
        try:
            return self._typed(rt, obj)
        except decoding.TypeMismatch as exc:
            raise errors.bad_request(
                f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {exc}'
            ) from None

    def _decode(self, rt: ResourceType, namespace: str, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise errors.bad_request(f"Object 'Kind' is missing in '{json.dumps(body)[:200]}'")
        obj = copy.deepcopy(body)
        api_version = obj.get("apiVersion")
        kind = obj.get("kind")
        if api_version and api_version != rt.api_version:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version ({rt.api_version})"
            )
        if kind and kind != rt.kind:
            raise errors.bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
            )
        obj["apiVersion"] = rt.api_version
        obj["kind"] = rt.kind
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata: must be an object")
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise errors.bad_request(NAMESPACE_MISMATCH)
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        return obj

    def _check_crd_accepts_creates(self, rt: ResourceType, name: str) -> None:
        """A custom resource whose CRD is Terminating serves everything but creates (403, naming the object)."""
        crd = self.storage.get(crds.STORAGE_KEY, "", rt.crd) if rt.crd else None
        if crd is not None and crds.condition_true(crd, "Terminating"):
            qualified = f"{rt.plural}.{rt.group}"
            subject = f'{qualified} "{name}"' if name else qualified
            raise errors.forbidden(
                f"{subject} is forbidden: create not allowed while custom resource definition is terminating",
                resource=rt.plural,
                name=name or None,
                group=rt.group,
            )

    def _validate(self, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        meta = obj["metadata"]
        causes: list[Cause] = validate_metadata(
            meta, name_rule=rt.strategy.name_rule, namespaced=rt.namespaced
        )
        causes += rt.strategy.validate(obj) if old is None else rt.strategy.validate_update(obj, old)
        if causes:
            raise errors.invalid(
                rt.kind, str(meta.get("name") or meta.get("generateName") or ""), causes, group=rt.group
            )

    async def _admit_mutating(
        self, op: str, rt: ResourceType, sub: str, obj: Obj, old: Obj | None, opts: WriteOptions
    ) -> Obj:
        if not opts.admit:
            return obj
        attrs = AdmissionAttributes(
            op,
            rt,
            sub,
            obj["metadata"].get("namespace", ""),
            obj["metadata"].get("name", ""),
            obj,
            old,
            opts.user,
            opts.dry_run,
            _request_options(opts, None),
            opts.warnings,
        )
        mutated = await self.admission.mutate(attrs)
        return mutated if mutated is not None else obj

    async def _admit_validating(
        self,
        op: str,
        rt: ResourceType,
        sub: str,
        obj: Obj | None,
        old: Obj | None,
        opts: WriteOptions,
        *,
        options: Obj | None = None,
    ) -> None:
        if not opts.admit:
            return
        meta = (obj or old or {}).get("metadata") or {}
        attrs = AdmissionAttributes(
            op,
            rt,
            sub,
            meta.get("namespace", ""),
            meta.get("name", ""),
            obj,
            old,
            opts.user,
            opts.dry_run,
            _request_options(opts, options),
            opts.warnings,
        )
        await self.admission.validate(attrs)


def _check_name(body: Any, name: str, namespace: str) -> None:
    """An update's body must name the object of the URL.

    The namespace comes first, worded as rest.EnsureObjectNamespaceMatchesRequestNamespace
    words it (kube-apiserver 1.36 answers a body with another name *and* namespace so),
    then the name, as the update handler's checkName words it.
    """
    meta = body.get("metadata") if isinstance(body, dict) else None
    if not isinstance(meta, dict):
        return
    if namespace and meta.get("namespace") and meta["namespace"] != namespace:
        raise errors.bad_request(NAMESPACE_MISMATCH)
    if meta.get("name") != name:
        raise errors.bad_request(
            f"the name of the object ({meta.get('name') or ''}) does not match the name on the URL ({name})"
        )


def _request_options(opts: WriteOptions, options: Obj | None) -> Obj:
    """The request's Create/Update/DeleteOptions as admission sees them: dryRun is one of them."""
    return {**({"dryRun": ["All"]} if opts.dry_run else {}), **(options or {})}


def _finalized(rt: ResourceType, obj: Obj) -> bool:
    """A deleting object whose last finalizer went is removed by the write that took it."""
    meta = obj["metadata"]
    if not meta.get("deletionTimestamp") or meta.get("finalizers"):
        return False
    if rt.kind == "Namespace" and not rt.group and (obj.get("spec") or {}).get("finalizers"):
        return False
    return not (rt.kind == "Pod" and not rt.group and int(meta.get("deletionGracePeriodSeconds") or 0) > 0)


def _same(new: Obj, old: Obj) -> bool:
    """A write that changes nothing keeps the resourceVersion (and sends no event).

    Only managedFields timestamps do not count: a new co-owner of unchanged fields is a change.
    """

    def strip(o: Obj) -> Obj:
        meta = {
            k: v for k, v in o.get("metadata", {}).items() if k not in ("resourceVersion", "managedFields")
        }
        entries = o.get("metadata", {}).get("managedFields") or []
        meta["managedFields"] = [
            {k: v for k, v in e.items() if k != "time"} for e in entries if isinstance(e, dict)
        ]
        return {**o, "metadata": meta}

    return strip(new) == strip(old)


def _check_preconditions(rt: ResourceType, obj: Obj, pre: Obj) -> None:
    """rest.BeforeDelete's precondition checks: a 409 naming the object by its kind (`ConfigMap "x"`)."""
    meta = obj["metadata"]
    for key, label, why in (
        ("uid", "UID", "The object might have been deleted and then recreated"),
        ("resourceVersion", "ResourceVersion", "The object might have been modified"),
    ):
        if pre.get(key) is not None and pre[key] != meta.get(key):
            raise errors.conflict(
                rt.kind,
                meta["name"],
                group=rt.group,
                why=f"the {label} in the precondition ({pre[key]}) does not match the {label} in record "
                f"({meta.get(key)}). {why}",
            )


def _generated_name(prefix: str) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    return prefix[:58] + "".join(secrets.choice(alphabet) for _ in range(5))


def match_everything(obj: Obj) -> bool:
    """The matcher of a request without selectors."""
    return True


def _sort_key(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def _position(sort_key: str) -> tuple[str, str]:
    """A continue token's `namespace/name` as a position in storage order (namespace, then name).

    Compared as strings, `a-b/x` would sort before `a/x` although namespace `a` lists first.
    """
    namespace, _, name = sort_key.partition("/")
    return namespace, name


def _position_of(obj: Obj) -> tuple[str, str]:
    meta = obj["metadata"]
    return meta.get("namespace", ""), meta["name"]


def _encode_continue(rv: int, start: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_continue(token: str, *, compacted: int) -> tuple[int, str]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded))
        rv, start = int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError) as exc:
        raise errors.bad_request(f"continue key is not valid: {exc}") from None
    if rv < compacted:
        raise errors.gone(
            "The provided continue parameter is too old to display a consistent list result. You can start a new "
            "list without the continue parameter, or use the continue token in this response to retrieve the "
            "remainder of the results. Continuing with the provided token results in an inconsistent list - "
            "objects that were created, modified, or deleted between the time the first chunk was returned and "
            "now may show up in the list."
        )
    return rv, start


def _parse_rv(value: str) -> int:
    try:
        rv = int(value)
    except ValueError:
        raise errors.bad_request(
            f'invalid resource version: strconv.ParseUint: parsing "{value}": invalid syntax'
        ) from None
    if rv < 0:
        raise errors.bad_request(f'invalid resource version "{value}"')
    return rv


def _check_list_rv(resource_version: str, match: str, current: int) -> None:
    if match and match not in ("Exact", "NotOlderThan"):
        raise errors.invalid(
            "ListOptions",
            "",
            [Cause("resourceVersionMatch", f'Unsupported value: "{match}"', "FieldValueNotSupported")],
        )
    if match and not resource_version:
        raise errors.invalid(
            "ListOptions",
            "",
            [
                Cause(
                    "resourceVersionMatch",
                    "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
                    "FieldValueForbidden",
                )
            ],
        )
    if not resource_version or resource_version == "0":
        return
    rv = _parse_rv(resource_version)
    if rv > current:
        raise errors.timeout(f"Too large resource version: {rv}, current: {current}")
    if match == "Exact" and rv != current:
        raise errors.gone(f"too old resource version: {rv} ({current})")


class _IdleTicker:
    """Queues a BOOKMARK marker on a watch that delivered nothing for `interval` seconds.

    One timer per interval, re-armed from the last delivery, rather than a timeout per event.
    The marker carries the resourceVersion of its moment, so it sorts among the queued events.
    """

    def __init__(self, storage: Storage, sub: Subscription, interval: float) -> None:
        self._storage = storage
        self._sub = sub
        self._interval = interval
        self._loop = asyncio.get_running_loop()
        self._last = self._loop.time()
        self._handle = self._loop.call_at(self._last + interval, self._check)

    def touch(self) -> None:
        self._last = self._loop.time()

    def cancel(self) -> None:
        self._handle.cancel()

    def _check(self) -> None:
        now = self._loop.time()
        if now >= self._last + self._interval:
            self._sub.queue.put_nowait(
                Event(self._storage.resource_version, self._sub.key, BOOKMARK, {}, None)
            )
            self._last = now
        self._handle = self._loop.call_at(self._last + self._interval, self._check)


def _expired(rv: int, current: int) -> Obj:
    status = errors.gone(f"too old resource version: {rv} ({current})").status()
    return {"type": "ERROR", "object": status}


def _parse_patch(body: bytes, ctype: str) -> Any:
    if ctype == "application/apply-patch+yaml":
        try:
            return decoding.loads_yaml(body)
        except (yaml.YAMLError, ValueError) as exc:
            raise errors.bad_request(f"error decoding YAML: {exc}") from None
    try:
        return decoding.loads_json(body)
    except ValueError as exc:
        raise errors.bad_request(f"error decoding patch: {exc}") from None


def _require_object(doc: Any) -> Obj:
    if not isinstance(doc, dict):
        raise errors.bad_request("json: cannot unmarshal array into Go value of type map[string]interface {}")
    return doc
