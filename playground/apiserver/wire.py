"""The HTTP helpers every handler shares: read a request's body, decode it, write a JSON answer.

A leaf of the emulator: it knows bodies, content types and `Warning` headers, and no
component (registry, handlers, reviews, subresources) or the server that wires them.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from aiohttp import web

from . import decoding, errors, protobuf


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def json_response(obj: Any, *, status: int = 200, warnings: list[str] | None = None) -> web.Response:
    headers = [
        ("Warning", warning_header(text)) for text in dict.fromkeys(warnings or []) if text.isprintable()
    ]
    return web.Response(body=dumps(obj), status=status, content_type="application/json", headers=headers)


def warning_header(text: str) -> str:
    """One `Warning` header value as kube-apiserver writes it: code 299, no agent, a quoted string."""
    return '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


async def read_body(request: web.Request) -> bytes:
    """The whole body, up to its end (a stream's `read(n)` returns what has arrived so far: a body sent in
    several segments would be decoded cut short); 413 past the API server's limit."""
    if request.content_length is not None and request.content_length > errors.MAX_BODY_BYTES:
        raise errors.too_large()
    body = bytearray()
    while chunk := await request.content.read(errors.MAX_BODY_BYTES + 1 - len(body)):
        body += chunk
        if len(body) > errors.MAX_BODY_BYTES:
            raise errors.too_large()
    return bytes(body)


def decode_json(body: bytes, content_type: str, *, kind: str = "") -> Any:
    """The body as a JSON value; `kind` names the type a create or update decodes into, for its errors."""
    ctype = content_type.split(";")[0].strip().lower()
    if ctype == "application/yaml":
        try:
            return decoding.loads_yaml(body)
        except decoding.UnsupportedKeyError as exc:
            if not kind:
                raise errors.bad_request(f"error decoding YAML: {exc}") from None
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {kind}): {exc} "
                f"({decoding.summarize_data(body)})"
            ) from None
        except (yaml.YAMLError, ValueError) as exc:
            raise errors.bad_request(f"error decoding YAML: {exc}") from None
    if ctype == protobuf.PROTOBUF_CONTENT_TYPE:
        return protobuf.decode(body)
    if ctype not in ("application/json", "", "*/*"):
        raise errors.unsupported_media_type(
            ctype, ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]
        )
    if not body:
        raise errors.bad_request("the body of the request was empty")
    try:
        return decoding.loads_json(body)
    except ValueError as exc:
        raise errors.bad_request(f"couldn't get version/kind; json parse error: {exc}") from None
