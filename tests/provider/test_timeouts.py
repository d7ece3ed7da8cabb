"""The `timeouts` block: plan-time errors on the attribute, per-operation bounds (durations: runtime.api.validation)."""

from __future__ import annotations

from tf.types import Unknown
from tf.utils import Diagnostics

from provider.framework import timeouts


def test_validate_reports_each_bad_value_on_its_attribute() -> None:
    diagnostics = Diagnostics()

    timeouts.validate(diagnostics, {"timeouts": {"create": "10", "update": Unknown, "delete": "5m"}})

    assert [(d.summary, d.path) for d in diagnostics.diagnostics] == [
        ("Invalid create timeout", ["timeouts", "create"])
    ]


def test_seconds_uses_the_block_else_the_default() -> None:
    assert timeouts.seconds({"timeouts": {"create": "2m"}}, "create", default=10) == 120
    assert timeouts.seconds({"timeouts": {"create": None}}, "create", default=10) == 10
    assert timeouts.seconds({"timeouts": None}, "delete", default=10) == 10


def test_the_block_documents_each_operation_and_its_default() -> None:
    block = timeouts.block({"create": 600, "delete": 90})
    descriptions = {a.name: a.description for a in block.block.attributes}
    assert set(descriptions) == {"create", "delete"}
    assert "(default 10m)" in str(descriptions["create"])
    assert "(default 90s)" in str(descriptions["delete"])
