"""Schema elements `tf` lacks: nested attributes, single nested blocks, write-only attributes and
the plan-modifier flags our planner reads.

- `Attribute` takes every flag by keyword and requires a description (registry docs are
  generated from it). `write_only` (tfplugin6.9, Terraform 1.11+) is field 11 of
  `Schema.Attribute`, newer than tf's generated protobuf: it is added to the encoded
  message as an unknown field, which protobuf keeps when it serializes (older Terraform
  ignores it and treats the attribute as an ordinary sensitive one).
- `NestedAttribute` is the plugin framework's SingleNestedAttribute
  (`kubernetes = { config_path = ... }`): an object whose fields have their own flags and
  descriptions, sent as `nested_type`; `ListNestedAttribute` its ListNestedAttribute
  (`terms = [{ key = ... }]`), a list of such objects.
- `SingleNestedBlock` is a `name { ... }` block holding at most one object (`timeouts`).
- `Object` is the value type of both: dicts in, dicts out, field by field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from tf import schema as tf_schema
from tf.gen import tfplugin_pb2 as pb
from tf.types import List, Map, TfType, Unknown

#: tfplugin6 `Schema.Attribute.write_only = 11` (varint key 11 << 3 | 0, value true)
_WRITE_ONLY_TRUE = bytes([11 << 3, 1])


class Attribute(tf_schema.Attribute):
    """One attribute; `requires_replace` and `use_state_for_unknown` drive `framework.plan`."""

    def __init__(
        self,
        name: str,
        type: TfType,
        *,
        description: str,
        required: bool = False,
        optional: bool = False,
        computed: bool = False,
        sensitive: bool = False,
        write_only: bool = False,
        requires_replace: bool = False,
        use_state_for_unknown: bool = False,
        default: Any = Unknown,
    ) -> None:
        if write_only and (computed or requires_replace):
            raise ValueError(f"{name}: a write-only attribute cannot be computed or force a replacement")
        super().__init__(
            name,
            type,
            description=description,
            required=required,
            optional=optional,
            computed=computed,
            sensitive=sensitive or write_only,
            requires_replace=requires_replace,
            default=default,
        )
        self.write_only = write_only
        self.use_state_for_unknown = use_state_for_unknown

    def to_pb(self) -> pb.Schema.Attribute:
        message: pb.Schema.Attribute = super().to_pb()
        if self.write_only:
            message.MergeFromString(_WRITE_ONLY_TRUE)
        return message


class Object(TfType):
    """An object value whose fields are `attributes`: each field encodes, decodes and compares by its type."""

    def __init__(self, attributes: Sequence[Attribute]) -> None:
        self.attributes = list(attributes)
        self.by_name = {attribute.name: attribute for attribute in self.attributes}

    def encode(self, value: Any) -> Any:
        if value is None or value is Unknown:
            return value
        return {a.name: _encode(a.type, value.get(a.name)) for a in self.attributes}

    def decode(self, value: Any) -> Any:
        if value is None or value is Unknown:
            return value
        return {a.name: _decode(a.type, value.get(a.name)) for a in self.attributes}

    def semantically_equal(self, a_decoded: Any, b_decoded: Any) -> bool:
        if a_decoded is None or b_decoded is None or a_decoded is Unknown or b_decoded is Unknown:
            return a_decoded is b_decoded
        return all(
            a.type.semantically_equal(a_decoded.get(a.name), b_decoded.get(a.name)) for a in self.attributes
        )

    def tf_type(self) -> bytes:
        fields = {a.name: json.loads(a.type.tf_type()) for a in self.attributes}
        return json.dumps(["object", fields], separators=(",", ":")).encode()


class NestedAttribute(Attribute):
    """A single nested attribute: `name = { field = ... }`, each field with its own flags."""

    def __init__(self, name: str, attributes: Sequence[Attribute], **flags: Any) -> None:
        super().__init__(name, Object(attributes), **flags)

    @property
    def object(self) -> Object:
        assert isinstance(self.type, Object)
        return self.type

    def to_pb(self) -> pb.Schema.Attribute:
        return _nested_pb(self, self.object, pb.Schema.Object.NestingMode.SINGLE)


class ListNestedAttribute(Attribute):
    """A list nested attribute: `name = [{ field = ... }, ...]`, each element's fields with their own flags."""

    def __init__(self, name: str, attributes: Sequence[Attribute], **flags: Any) -> None:
        super().__init__(name, List(Object(attributes)), **flags)

    @property
    def object(self) -> Object:
        element = self.type.element_type  # type: ignore[attr-defined]
        assert isinstance(element, Object)
        return element

    def to_pb(self) -> pb.Schema.Attribute:
        return _nested_pb(self, self.object, pb.Schema.Object.NestingMode.LIST)


def _nested_pb(attribute: Attribute, nested: Object, nesting: Any) -> pb.Schema.Attribute:
    """A nested attribute's message: its fields as `nested_type` with `nesting`, its own flags."""
    message = pb.Schema.Attribute(
        name=attribute.name,
        nested_type=pb.Schema.Object(attributes=[a.to_pb() for a in nested.attributes], nesting=nesting),
        description=attribute.description or "",
        description_kind=pb.StringKind.MARKDOWN,
        required=bool(attribute.required),
        optional=bool(attribute.optional),
        computed=bool(attribute.computed),
        sensitive=bool(attribute.sensitive),
    )
    if attribute.write_only:
        message.MergeFromString(_WRITE_ONLY_TRUE)
    return message


def nested_object(type_: TfType) -> Object | None:
    """The object a type holds (itself, or a list's or map's element), None for other types."""
    if isinstance(type_, Object):
        return type_
    if isinstance(type_, List | Map) and isinstance(type_.element_type, Object):
        return type_.element_type
    return None


class SingleNestedBlock(tf_schema.NestedBlock):
    """`name { ... }` holding at most one object (null when the block is absent)."""

    def __init__(self, name: str, attributes: Sequence[Attribute], *, description: str) -> None:
        super().__init__(
            name,
            tf_schema.NestMode.Single,
            tf_schema.Block(attributes=list(attributes), description=description),
        )
        self.object = Object(attributes)
        self.description = description

    def encode(self, value: Any) -> Any:
        return self.object.encode(value)

    def decode(self, value: Any) -> Any:
        return self.object.decode(value)

    def semantically_equal(self, a_decoded: Any, b_decoded: Any) -> bool:
        return self.object.semantically_equal(a_decoded, b_decoded)


def _encode(type_: TfType, value: Any) -> Any:
    return value if value is None or value is Unknown else type_.encode(value)


def _decode(type_: TfType, value: Any) -> Any:
    return value if value is None or value is Unknown else type_.decode(value)


def walk(
    attributes: Sequence[tf_schema.Attribute], prefix: tuple[str, ...] = ()
) -> Iterator[tuple[str, Any]]:
    """Every attribute with its dotted path, nested ones after their parent (for docs and checks)."""
    for attribute in attributes:
        path = (*prefix, attribute.name)
        yield ".".join(path), attribute
        nested = nested_object(attribute.type)
        if nested is not None:
            yield from walk(nested.attributes, path)
