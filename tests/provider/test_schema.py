"""Schema elements tf lacks: write-only flag on the wire, nested attributes, single nested blocks."""

from __future__ import annotations

import json

import pytest
from tf.gen import tfplugin_pb2 as pb
from tf.types import List, String, Unknown

from provider.framework.schema import Attribute, NestedAttribute, Object, SingleNestedBlock, walk

#: tfplugin6 Schema.Attribute field 11 (write_only) = true, as Terraform 1.11+ reads it
WRITE_ONLY = bytes([0x58, 0x01])


def test_write_only_is_sent_as_field_11_and_implies_sensitive() -> None:
    attribute = Attribute("token", String(), optional=True, write_only=True, description="A token.")

    message = pb.Schema(block=pb.Schema.Block(attributes=[attribute.to_pb()]))
    decoded = pb.Schema.FromString(message.SerializeToString())

    assert WRITE_ONLY in decoded.block.attributes[0].SerializeToString()
    assert decoded.block.attributes[0].sensitive
    assert (
        WRITE_ONLY not in Attribute("x", String(), optional=True, description="d").to_pb().SerializeToString()
    )


@pytest.mark.parametrize(
    "flags", [{"computed": True}, {"requires_replace": True}], ids=["computed", "replace"]
)
def test_write_only_cannot_be_computed_or_force_replacement(flags: dict[str, bool]) -> None:
    with pytest.raises(ValueError, match="write-only"):
        Attribute("token", String(), optional=True, write_only=True, description="d", **flags)


def test_nested_attribute_is_sent_as_a_single_nested_type() -> None:
    nested = NestedAttribute(
        "kubernetes",
        [
            Attribute("host", String(), optional=True, description="The host."),
            Attribute("token", String(), optional=True, sensitive=True, description="The token."),
        ],
        optional=True,
        description="How to reach the cluster.",
    )

    message = nested.to_pb()

    assert message.type == b""
    assert message.nested_type.nesting == pb.Schema.Object.NestingMode.SINGLE
    assert [(a.name, a.optional, a.sensitive) for a in message.nested_type.attributes] == [
        ("host", True, False),
        ("token", True, True),
    ]
    assert (message.description, message.optional) == ("How to reach the cluster.", True)


def test_object_values_encode_decode_and_compare_field_by_field() -> None:
    value_type = Object(
        [
            Attribute("args", List(String()), optional=True, description="d"),
            Attribute("name", String(), optional=True, description="d"),
        ]
    )

    assert value_type.decode({"args": ["a"], "name": None, "extra": 1}) == {"args": ["a"], "name": None}
    assert value_type.encode({"args": ["a"]}) == {"args": ["a"], "name": None}
    assert value_type.semantically_equal({"args": ["a"], "name": "n"}, {"args": ["a"], "name": "n"})
    assert not value_type.semantically_equal({"args": ["a"], "name": "n"}, {"args": ["b"], "name": "n"})
    assert value_type.decode(Unknown) is Unknown
    assert json.loads(value_type.tf_type()) == ["object", {"args": ["list", "string"], "name": "string"}]


def test_single_nested_block_is_a_single_block_of_its_attributes() -> None:
    block = SingleNestedBlock(
        "timeouts", [Attribute("create", String(), optional=True, description="d")], description="Bounds."
    )
    message = block.to_pb()
    assert (message.type_name, message.nesting) == ("timeouts", pb.Schema.NestedBlock.NestingMode.SINGLE)
    assert block.decode({"create": "1m"}) == {"create": "1m"}
    assert block.decode(None) is None


def test_walk_lists_nested_attributes_after_their_parent() -> None:
    attributes = [
        NestedAttribute(
            "a", [Attribute("b", String(), optional=True, description="d")], optional=True, description="d"
        ),
        Attribute("c", String(), optional=True, description="d"),
    ]
    assert [path for path, _ in walk(attributes)] == ["a", "a.b", "c"]
