"""API errors and the `Status` bodies kube-apiserver answers them with.

Every failure the emulator reports is an `APIError`: it carries the HTTP code, the
`reason` clients switch on (`NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, ...)
and a message worded like kube-apiserver's, so client libraries and kubectl print the
same text they would against a real cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_BODY_BYTES = 3 * 1024 * 1024


@dataclass(frozen=True)
class Cause:
    """One field-level problem, as in `Status.details.causes`."""

    field: str
    message: str
    reason: str = "FieldValueInvalid"

    def as_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}


@dataclass
class APIError(Exception):
    code: int
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "code": self.code,
        }
        if self.reason:
            body["reason"] = self.reason
        if self.details:
            body["details"] = self.details
        return body


def _details(resource: str, name: str | None, group: str = "") -> dict[str, Any]:
    details: dict[str, Any] = {"kind": resource}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    return details


def _ref(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, name: str, *, group: str = "") -> APIError:
    return APIError(
        404, "NotFound", f'{_ref(resource, group)} "{name}" not found', _details(resource, name, group)
    )


def path_not_found() -> APIError:
    return APIError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(resource: str, name: str, *, group: str = "") -> APIError:
    return APIError(
        409,
        "AlreadyExists",
        f'{_ref(resource, group)} "{name}" already exists',
        _details(resource, name, group),
    )


def conflict(resource: str, name: str, *, group: str = "", why: str | None = None) -> APIError:
    why = why or "the object has been modified; please apply your changes to the latest version and try again"
    return APIError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_ref(resource, group)} "{name}": {why}',
        _details(resource, name, group),
    )


def invalid(kind: str, name: str, causes: list[Cause], *, group: str = "") -> APIError:
    summary = ", ".join(f"{c.field}: {c.message}" if c.field else c.message for c in causes)
    if len(causes) > 1:
        summary = f"[{summary}]"
    details: dict[str, Any] = {"name": name, "kind": kind, "causes": [c.as_dict() for c in causes]}
    if group:
        details["group"] = group
    return APIError(
        422, "Invalid", f'{kind}{"." + group if group else ""} "{name}" is invalid: {summary}', details
    )


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message, {})


def forbidden(message: str, *, resource: str = "", name: str | None = None, group: str = "") -> APIError:
    return APIError(403, "Forbidden", message, _details(resource, name, group) if resource else {})


def unauthorized() -> APIError:
    return APIError(401, "Unauthorized", "Unauthorized", {})


def method_not_allowed() -> APIError:
    return APIError(
        405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {}
    )


def gone(message: str) -> APIError:
    return APIError(410, "Expired", message, {})


def too_large() -> APIError:
    return APIError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_BODY_BYTES}", {})


def unsupported_media_type(content_type: str, accepted: list[str]) -> APIError:
    return APIError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: {', '.join(accepted)}",
        {"causes": [{"reason": "UnexpectedServerResponse", "message": content_type}]},
    )


def not_acceptable(accepted: list[str]) -> APIError:
    return APIError(
        406, "NotAcceptable", f"only the following media types are accepted: {', '.join(accepted)}", {}
    )


def internal(message: str) -> APIError:
    return APIError(500, "InternalError", f"Internal error occurred: {message}", {})


def timeout(message: str) -> APIError:
    return APIError(504, "Timeout", message, {})
