"""Subresources with their own request/response shapes.

`status` goes through the generic handlers (the registry knows what a status write may
touch). The ones here translate: `scale` (autoscaling/v1 Scale <-> spec.replicas),
`finalize` (Namespace spec.finalizers), `approval` (CSR conditions), `binding`
(Binding -> spec.nodeName), `eviction` (Eviction -> graceful delete) and
`token` (TokenRequest -> a signed ServiceAccount token). `log` is proxied to the
pod's kubelet (`podlogs.py`).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from . import errors, patch
from .admission_chain import AdmissionChain
from .handlers import ResourceHandlers, render_object, write_options
from .identity import UserInfo
from .negotiation import negotiate
from .podlogs import PodLogs
from .registry import Registry, now_iso
from .requestinfo import RequestInfo
from .resources.base import Obj, ResourceType
from .resources.catalog import Catalog
from .storage import Storage
from .tokens import TokenSigner, bind_object
from .wire import decode_json, json_response, read_body

DEFAULT_TOKEN_SECONDS = 3600


def _jsonpath_field(path: str) -> list[str]:
    return [p for p in path.strip(".").split(".") if p]


def _dig(obj: Obj, path: str) -> Any:
    cur: Any = obj
    for part in _jsonpath_field(path):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def _set(obj: Obj, path: str, value: Any) -> None:
    parts = _jsonpath_field(path)
    cur = obj
    for part in parts[:-1]:
        cur = cur.setdefault(part, {})
    cur[parts[-1]] = value


class Subresources:
    def __init__(
        self,
        *,
        registry: Registry,
        catalog: Catalog,
        storage: Storage,
        resources: ResourceHandlers,
        admission: AdmissionChain,
        signer: TokenSigner,
        pod_logs: PodLogs,
    ) -> None:
        self._registry = registry
        self._catalog = catalog
        self._storage = storage
        self._resources = resources
        self._admission = admission
        self._signer = signer
        self._pod_logs = pod_logs

    async def handle(
        self, request: web.Request, info: RequestInfo, rt: ResourceType, user: UserInfo
    ) -> web.StreamResponse:
        sub = info.subresource
        if not rt.has_subresource(sub):
            raise errors.path_not_found()
        handler = {
            "scale": self.scale,
            "finalize": self.finalize,
            "approval": self.approval,
            "binding": self.binding,
            "eviction": self.eviction,
            "token": self.token,
            "log": self.log,
        }.get(sub)
        if handler is not None:
            return await handler(request, info, rt, user)
        if sub == "status":
            return await self._resources.handle(request, info, rt, user)
        raise errors.APIError(
            400,
            "BadRequest",
            f"the {sub} subresource is served by the kubelet of a node, not by this API server",
            {},
        )

    async def log(
        self, request: web.Request, info: RequestInfo, rt: ResourceType, user: UserInfo
    ) -> web.StreamResponse:
        return await self._pod_logs.handle(request, self._registry.get(rt, info.namespace, info.name))

    async def scale(
        self, request: web.Request, info: RequestInfo, rt: ResourceType, user: UserInfo
    ) -> web.Response:
        registry = self._registry
        scale_spec = rt.scale
        assert scale_spec is not None
        obj = registry.get(rt, info.namespace, info.name)
        if request.method == "GET":
            rep = negotiate(request.headers.get("Accept"), include_object=request.query.get("includeObject"))
            return json_response(render_object(rt, self._scale_of(rt, obj), rep, subresource="scale"))
        if request.method not in ("PUT", "PATCH"):
            raise errors.method_not_allowed()
        body = await read_body(request)
        current = self._scale_of(rt, obj)
        if request.method == "PUT":
            new_scale = decode_json(body, request.headers.get("Content-Type", "application/json"))
        else:
            ctype = request.headers.get("Content-Type", "").split(";")[0]
            doc = decode_json(body, "application/json")
            if ctype == "application/json-patch+json":
                new_scale = patch.json_patch(copy.deepcopy(current), doc)
            else:
                new_scale = patch.merge_patch(copy.deepcopy(current), doc)
        if not isinstance(new_scale, dict):
            raise errors.bad_request("Scale must be an object")
        replicas = (new_scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise errors.invalid(
                "Scale",
                info.name,
                [
                    errors.Cause(
                        "spec.replicas", f"Invalid value: {replicas}: must be greater than or equal to 0"
                    )
                ],
                group="autoscaling",
            )
        rv = (new_scale.get("metadata") or {}).get("resourceVersion")
        updated = copy.deepcopy(obj)
        if rv:
            updated["metadata"]["resourceVersion"] = rv
        _set(updated, scale_spec.spec_replicas_path, replicas)
        opts = write_options(request, user)
        stored, _ = await registry.update(rt, info.namespace, info.name, updated, opts)
        return json_response(self._scale_of(rt, stored))

    def _scale_of(self, rt: ResourceType, obj: Obj) -> Obj:
        assert rt.scale is not None
        meta = obj["metadata"]
        status: Obj = {"replicas": _dig(obj, rt.scale.status_replicas_path) or 0}
        selector = _dig(obj, ".spec.selector")
        if rt.scale.label_selector_path and isinstance(_dig(obj, rt.scale.label_selector_path), str):
            status["selector"] = _dig(obj, rt.scale.label_selector_path)
        elif isinstance(selector, dict):
            labels = selector.get("matchLabels") or {}
            status["selector"] = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                k: meta[k]
                for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                if k in meta
            },
            "spec": {"replicas": _dig(obj, rt.scale.spec_replicas_path) or 0},
            "status": status,
        }

    async def finalize(
        self, request: web.Request, info: RequestInfo, rt: ResourceType, user: UserInfo
    ) -> web.Response:
        if request.method != "PUT":
            raise errors.method_not_allowed()
        body = decode_json(await read_body(request), request.headers.get("Content-Type", "application/json"))
        old = self._registry.get(rt, "", info.name)
        new = copy.deepcopy(old)
        new.setdefault("spec", {})["finalizers"] = ((body or {}).get("spec") or {}).get("finalizers") or []
        rv = ((body or {}).get("metadata") or {}).get("resourceVersion")
        if rv:
            new["metadata"]["resourceVersion"] = rv
        stored = await self._registry.write_internal(rt, new, old, user=user)
        return json_response(stored)

    async def approval(
        self, request: web.Request, info: RequestInfo, rt: ResourceType, user: UserInfo
    ) -> web.Response:
        if request.method == "GET":
            return json_response(self._registry.get(rt, "", info.name))
        if request.method != "PUT":
            raise errors.method_not_allowed()
        body = decode_json(await read_body(request), request.headers.get("Content-Type", "application/json"))
        old = self._registry.get(rt, "", info.name)
        conditions = ((body or {}).get("status") or {}).get("conditions") or []
        causes = []
        types = [c.get("type") for c in conditions if isinstance(c, dict)]
        if "Approved" in types and "Denied" in types:
            causes.append(
                errors.Cause(
                    "status.conditions", "Invalid value: both Approved and Denied conditions are set"
                )
            )
        for i, cond in enumerate(conditions):
            if not isinstance(cond, dict) or cond.get("type") not in ("Approved", "Denied", "Failed"):
                causes.append(
                    errors.Cause(
                        f"status.conditions[{i}].type", "Unsupported value", "FieldValueNotSupported"
                    )
                )
        if causes:
            raise errors.invalid(rt.kind, info.name, causes, group=rt.group)
        now = now_iso(datetime.now(UTC))
        for cond in conditions:
            cond.setdefault("status", "True")
            cond.setdefault("lastUpdateTime", now)
            cond.setdefault("lastTransitionTime", now)
        new = copy.deepcopy(old)
        new.setdefault("status", {})["conditions"] = conditions
        rv = ((body or {}).get("metadata") or {}).get("resourceVersion")
        if rv:
            new["metadata"]["resourceVersion"] = rv
        stored = await self._registry.write_internal(rt, new, old, user=user)
        return json_response(stored)

    async def binding(
        self, request: web.Request, info: RequestInfo, rt: ResourceType, user: UserInfo
    ) -> web.Response:
        if request.method != "POST":
            raise errors.method_not_allowed()
        body = decode_json(await read_body(request), request.headers.get("Content-Type", "application/json"))
        await self.bind(info.namespace, info.name, body, user=user, dry_run="dryRun" in request.query)
        return json_response(_success(), status=201)

    async def binding_resource(self, request: web.Request, info: RequestInfo, user: UserInfo) -> web.Response:
        """POST /api/v1/namespaces/<ns>/bindings: the Binding names its pod in metadata.name."""
        if request.method != "POST":
            raise errors.method_not_allowed()
        body = decode_json(await read_body(request), request.headers.get("Content-Type", "application/json"))
        name = ((body or {}).get("metadata") or {}).get("name") if isinstance(body, dict) else None
        if not name:
            raise errors.invalid(
                "Binding", "", [errors.Cause("metadata.name", "Required value", "FieldValueRequired")]
            )
        await self.bind(info.namespace, str(name), body, user=user, dry_run="dryRun" in request.query)
        return json_response(_success(), status=201)

    async def bind(self, namespace: str, name: str, binding: Any, *, user: UserInfo, dry_run: bool) -> None:
        """Bind a pod to a node: only an unbound, undeleted pod may be bound (409 otherwise)."""
        pods = self._catalog.get("", "v1", "pods")
        assert pods is not None
        target = (binding or {}).get("target") or {} if isinstance(binding, dict) else {}
        node = target.get("name")
        if not node:
            raise errors.invalid(
                "Binding", name, [errors.Cause("target.name", "Required value", "FieldValueRequired")]
            )
        pod = self._registry.get(pods, namespace, name)
        if pod["metadata"].get("deletionTimestamp"):
            raise errors.conflict("pods", name, why="pod is being deleted, cannot be assigned to a host")
        current = (pod.get("spec") or {}).get("nodeName")
        if current:
            raise errors.conflict("pods", name, why=f'pod {name} is already assigned to node "{current}"')
        new = copy.deepcopy(pod)
        new["spec"]["nodeName"] = node
        now = now_iso(datetime.now(UTC))
        conditions = [
            c for c in (new.get("status") or {}).get("conditions") or [] if c.get("type") != "PodScheduled"
        ]
        conditions.append(
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
        )
        new.setdefault("status", {})["conditions"] = conditions
        if not dry_run:
            await self._registry.write_internal(pods, new, pod, user=user)

    async def eviction(
        self, request: web.Request, info: RequestInfo, rt: ResourceType, user: UserInfo
    ) -> web.Response:
        if request.method != "POST":
            raise errors.method_not_allowed()
        body = decode_json(await read_body(request), request.headers.get("Content-Type", "application/json"))
        if not isinstance(body, dict) or (body.get("metadata") or {}).get("name", info.name) != info.name:
            raise errors.bad_request("name in URL does not match name in Eviction object")
        options = body.get("deleteOptions") or {}
        opts = write_options(request, user)
        self._admission.admit_eviction(user, info.namespace, info.name)
        await self._registry.delete(rt, info.namespace, info.name, options, opts)
        return json_response(_success(), status=201)

    async def token(
        self, request: web.Request, info: RequestInfo, rt: ResourceType, user: UserInfo
    ) -> web.Response:
        if request.method != "POST":
            raise errors.method_not_allowed()
        body = decode_json(await read_body(request), request.headers.get("Content-Type", "application/json"))
        account = self._registry.get(rt, info.namespace, info.name)
        self._admission.admit_token_request(
            user, info.namespace, info.name, body if isinstance(body, dict) else {}
        )
        spec = ((body or {}).get("spec") or {}) if isinstance(body, dict) else {}
        seconds = spec.get("expirationSeconds", DEFAULT_TOKEN_SECONDS)
        if not isinstance(seconds, int):
            raise errors.bad_request("spec.expirationSeconds must be an integer")
        audiences = spec.get("audiences") or list(self._signer.api_audiences)
        bound = spec.get("boundObjectRef")
        bound_object = bind_object(
            bound, namespace=info.namespace, service_account=info.name, get=self._lookup
        )
        token, expires = self._signer.issue(
            namespace=info.namespace,
            service_account=info.name,
            service_account_uid=account["metadata"]["uid"],
            audiences=audiences,
            expiration_seconds=seconds,
            bound_object=bound_object,
            now=datetime.now(UTC),
        )
        response = {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": info.name, "namespace": info.namespace, "creationTimestamp": None},
            "spec": {"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": bound},
            "status": {"token": token, "expirationTimestamp": now_iso(expires)},
        }
        return json_response(response, status=201)

    def _lookup(self, kind: str, namespace: str, name: str) -> Obj | None:
        key = {"Pod": "pods", "Secret": "secrets", "Node": "nodes"}.get(kind)
        return None if key is None else self._storage.get(key, namespace, name)


def _success() -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
