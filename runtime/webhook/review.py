"""AdmissionReview v1 in and out: what a handler sees and what the API server reads back.

Validators are pure functions from the review's `request` to a list of problems (empty:
allowed); mutators return a `Mutation` (problems, or the JSON Patch to apply), so both
are tested without HTTP. A denial carries every problem at once, in
Kubernetes' field-error wording (`spec.clusterID: Invalid value: "x": must be a UUID`),
with code 422 and reason Invalid: the API server passes both on, so clients see the
same `InvalidError` as for a schema violation.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from runtime.api.objects import JSON, nested
from runtime.core import jsonbody

API_VERSION = "admission.k8s.io/v1"
#: how deep a review may nest: deeper is refused before any handler walks it
MAX_DEPTH = jsonbody.MAX_DEPTH
#: the fields of a request the handlers read, and the JSON types they must have when present
_TYPES: dict[str, type] = {
    "operation": str,
    "namespace": str,
    "name": str,
    "object": dict,
    "oldObject": dict,
    "dryRun": bool,
    "kind": dict,
}

#: request -> problems (empty: allowed)
Validator = Callable[[JSON], Sequence[str]]


@dataclass(frozen=True)
class Mutation:
    """A mutating handler's answer: denied with `problems`, or allowed with the JSON Patch `patch` (maybe empty)."""

    problems: Sequence[str] = ()
    patch: Sequence[JSON] = field(default_factory=list)


#: request -> the mutation
Mutator = Callable[[JSON], Mutation]


class ReviewError(ValueError):
    """The body is not an AdmissionReview v1 request."""


def parse_review(text: bytes) -> JSON:
    """The `request` of an AdmissionReview v1 in `text`; ReviewError naming what is wrong otherwise (not
    JSON, nested deeper than `MAX_DEPTH`, not a review, a field the handlers read of the wrong type: the
    API server decodes every object before admission, so only a hand-made review is refused here)."""
    try:
        body = jsonbody.parse(text, max_depth=MAX_DEPTH)
    except jsonbody.JSONBodyError as exc:
        raise ReviewError(f"the body {exc}") from None
    if not isinstance(body, dict):
        raise ReviewError("the body is not a JSON object")
    if body.get("apiVersion") != API_VERSION or body.get("kind") != "AdmissionReview":
        raise ReviewError(
            f"expected an {API_VERSION} AdmissionReview, got {body.get('apiVersion')!r} {body.get('kind')!r}"
        )
    request = body.get("request")
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str) or not request["uid"]:
        raise ReviewError("the AdmissionReview has no request with a uid")
    for key, kind in _TYPES.items():
        if request.get(key) is not None and not isinstance(request[key], kind):
            raise ReviewError(f"request.{key} is not a JSON {'object' if kind is dict else kind.__name__}")
    for key in ("object", "oldObject"):
        for part in ("metadata", "spec"):
            if not isinstance(nested(request, key, part) or {}, dict):
                raise ReviewError(f"request.{key}.{part} is not a JSON object")
    return request


def invalid(path: str, value: Any, detail: str) -> str:
    """One problem, worded as Kubernetes' field errors."""
    return f"{path}: Invalid value: {json.dumps(value)}: {detail}"


def forbidden(path: str, detail: str) -> str:
    return f"{path}: Forbidden: {detail}"


def object_ref(request: JSON) -> str:
    """`Kind namespace/name` of the object under review, for messages."""
    obj = _object(request.get("object")) or _object(request.get("oldObject"))
    meta = _object(obj.get("metadata"))
    name = meta.get("name") or request.get("name") or "<generated>"
    namespace = meta.get("namespace") or request.get("namespace")
    kind = _object(request.get("kind")).get("kind") or obj.get("kind") or "object"
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _object(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def response(request: JSON, problems: Sequence[str], *, patch: Sequence[JSON] = ()) -> JSON:
    """The AdmissionReview answering `request`: allowed (with `patch` applied), or denied with every problem."""
    answer: JSON = {"uid": request["uid"], "allowed": not problems}
    if patch and not problems:
        answer["patchType"] = "JSONPatch"
        answer["patch"] = base64.b64encode(json.dumps(list(patch)).encode()).decode("ascii")
    if problems:
        answer["status"] = {
            "status": "Failure",
            "code": 422,
            "reason": "Invalid",
            "message": f"{object_ref(request)} is invalid: {'; '.join(problems)}",
        }
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": answer}
