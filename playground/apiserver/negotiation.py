"""Content negotiation: which representation a client asked for in `Accept`.

kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io` (with JSON as a
fallback); controller libraries may ask for `as=PartialObjectMetadata`. We serve JSON
in every shape and answer 406 only when a client accepts nothing JSON-like (e.g.
protobuf alone).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import errors


@dataclass(frozen=True)
class MediaType:
    type: str
    params: dict[str, str]

    @property
    def as_(self) -> str:
        return self.params.get("as", "")


def parse_accept(header: str | None) -> list[MediaType]:
    out = []
    for part in (header or "").split(","):
        part = part.strip()
        if not part:
            continue
        pieces = [p.strip() for p in part.split(";")]
        params = {}
        for p in pieces[1:]:
            key, _, value = p.partition("=")
            params[key.strip().lower()] = value.strip().strip('"')
        out.append(MediaType(pieces[0].lower(), params))
    return out


JSON_TYPES = ("application/json", "*/*", "application/*")
SERVED = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]


@dataclass(frozen=True)
class Representation:
    """What to render: a plain object, a Table, or metadata only."""

    shape: str  # "object", "Table", "PartialObjectMetadata"
    include_object: str = "Metadata"


def negotiate(header: str | None, *, include_object: str | None) -> Representation:
    types = parse_accept(header)
    if not types:
        return Representation("object")
    for media in types:
        if media.type not in JSON_TYPES:
            continue
        if (
            media.as_ == "Table"
            and media.params.get("g") == "meta.k8s.io"
            and media.params.get("v") in ("v1", "v1beta1")
        ):
            return Representation("Table", include_object or "Metadata")
        if (
            media.as_ in ("PartialObjectMetadata", "PartialObjectMetadataList")
            and media.params.get("g") == "meta.k8s.io"
        ):
            return Representation("PartialObjectMetadata")
        if not media.as_:
            return Representation("object")
    raise errors.not_acceptable(SERVED)
