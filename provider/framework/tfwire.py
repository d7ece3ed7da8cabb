"""The one module that reaches into `tf`'s private helpers: a resource's state to and from the wire, and
an attribute path as tfplugin6 sends it.

tf (pinned exactly in pyproject.toml, since these names are not its API) encodes and
decodes states in `ProviderServicer`'s own handlers only; our servicer takes over
PlanResourceChange and ApplyResourceChange and needs the same conversions. They are
named here once, typed, so a tf upgrade that moves them breaks this module and nothing
else.
"""

from __future__ import annotations

from typing import Any

from tf.gen import tfplugin_pb2 as pb
from tf.provider import _decode_state, _encode_state
from tf.utils import AttributePath, Diagnostics, _to_attribute_path


def decode_state(
    diags: Diagnostics, attributes: dict[str, Any], blocks: dict[str, Any], value: pb.DynamicValue
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the encoded state, the decoded state) of a state on the wire; None for a null state."""
    encoded, decoded = _decode_state(diags, attributes, blocks, value)
    return encoded, decoded


def encode_state(
    attributes: dict[str, Any],
    blocks: dict[str, Any],
    state: dict[str, Any] | None,
    old: dict[str, Any] | None,
) -> pb.DynamicValue:
    """A state for the wire; values equal to those of `old` (encoded) keep its encoding byte for byte."""
    encoded: pb.DynamicValue = _encode_state(attributes, blocks, state, old)
    return encoded


def attribute_path(path: AttributePath) -> pb.AttributePath:
    """An attribute path as tfplugin6 sends it."""
    converted: pb.AttributePath = _to_attribute_path(path)
    return converted
