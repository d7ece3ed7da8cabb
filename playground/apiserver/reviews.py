"""Create-only review APIs: access reviews, rules reviews, token reviews, whoami.

They are answered, never stored: `kubectl auth can-i` (SelfSubjectAccessReview),
`kubectl auth can-i --list` (SelfSubjectRulesReview), `kubectl auth whoami`
(SelfSubjectReview), and TokenReview for components that authenticate tokens.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from . import errors
from .authn import Authenticator
from .authorizer import Authorizer
from .identity import RequestAttributes, UserInfo
from .requestinfo import RequestInfo
from .resources.base import Obj, ResourceType
from .wire import decode_json, json_response, read_body


def _attributes(spec: Obj, user: UserInfo, *, namespace_override: str | None = None) -> RequestAttributes:
    resource = spec.get("resourceAttributes")
    non_resource = spec.get("nonResourceAttributes")
    if isinstance(resource, dict):
        return RequestAttributes(
            user=user,
            verb=str(resource.get("verb", "")),
            resource_request=True,
            api_group=str(resource.get("group", "")),
            api_version=str(resource.get("version", "")),
            resource=str(resource.get("resource", "")),
            subresource=str(resource.get("subresource", "")),
            name=str(resource.get("name", "")),
            namespace=namespace_override
            if namespace_override is not None
            else str(resource.get("namespace", "")),
        )
    if isinstance(non_resource, dict):
        return RequestAttributes(
            user=user,
            verb=str(non_resource.get("verb", "")),
            resource_request=False,
            path=str(non_resource.get("path", "")),
        )
    raise errors.invalid(
        "SubjectAccessReview",
        "",
        [
            errors.Cause(
                "spec.resourceAttributes",
                "Required value: exactly one of nonResourceAttributes or resourceAttributes must be specified",
                "FieldValueRequired",
            )
        ],
        group="authorization.k8s.io",
    )


def _spec_user(spec: Obj) -> UserInfo:
    extra = spec.get("extra") or {}
    return UserInfo(
        name=str(spec.get("user", "")),
        groups=tuple(spec.get("groups") or ()),
        uid=str(spec.get("uid", "")),
        extra={k: tuple(v) for k, v in extra.items()} if isinstance(extra, dict) else {},
    )


class Reviews:
    def __init__(self, authenticator: Authenticator, authorizer: Authorizer) -> None:
        self._authenticator = authenticator
        self._authorizer = authorizer

    async def handle(
        self, request: web.Request, info: RequestInfo, rt: ResourceType, user: UserInfo
    ) -> web.Response:
        if info.verb != "create" or info.name:
            raise errors.method_not_allowed()
        body = decode_json(await read_body(request), request.headers.get("Content-Type", "application/json"))
        if not isinstance(body, dict):
            raise errors.bad_request(f"the body of a {rt.kind} must be an object")
        spec = body.get("spec") or {}
        status = self._status(rt, info, spec, user)
        out = {
            "kind": rt.kind,
            "apiVersion": rt.api_version,
            "metadata": {**(body.get("metadata") or {}), "creationTimestamp": None},
            "spec": spec,
            "status": status,
        }
        if rt.plural == "selfsubjectreviews":
            out.pop("spec")
        return json_response(out, status=201)

    def _status(self, rt: ResourceType, info: RequestInfo, spec: Obj, user: UserInfo) -> Obj:
        if rt.plural == "selfsubjectreviews":
            return {"userInfo": user.as_dict()}
        if rt.plural == "tokenreviews":
            token = spec.get("token")
            if not token:
                raise errors.invalid(
                    "TokenReview",
                    "",
                    [errors.Cause("spec.token", "Required value", "FieldValueRequired")],
                    group="authentication.k8s.io",
                )
            return self._authenticator.review(
                str(token), audiences=list(spec.get("audiences") or []), now=datetime.now(UTC)
            )
        if rt.plural == "selfsubjectrulesreviews":
            rules = self._authorizer.rules_for(user, str(spec.get("namespace", "")))
            status: Obj = {
                "resourceRules": rules.resource_rules,
                "nonResourceRules": rules.non_resource_rules,
                "incomplete": rules.incomplete,
            }
            if rules.evaluation_error:
                status["evaluationError"] = rules.evaluation_error
            return status
        if rt.plural == "selfsubjectaccessreviews":
            attrs = _attributes(spec, user)
        elif rt.plural == "localsubjectaccessreviews":
            resource = spec.get("resourceAttributes") or {}
            if resource.get("namespace") not in (None, "", info.namespace):
                raise errors.bad_request(
                    f"spec.resourceAttributes.namespace must match namespace: {info.namespace}"
                )
            attrs = _attributes(spec, _spec_user(spec), namespace_override=info.namespace)
        else:
            subject = _spec_user(spec)
            if not subject.name and not subject.groups:
                raise errors.invalid(
                    "SubjectAccessReview",
                    "",
                    [
                        errors.Cause(
                            "spec.user", 'Invalid value: "": at least one of user or group must be specified'
                        )
                    ],
                    group="authorization.k8s.io",
                )
            attrs = _attributes(spec, subject)
        decision = self._authorizer.authorize(attrs)
        answer: dict[str, Any] = {"allowed": decision.allowed}
        if decision.reason:
            answer["reason"] = decision.reason
        return answer
